/* The engine's side of the spawner's channel: RUN and CONFINE requests out, EXITED and CONFINED
 * answers in, each checked as strictly as the spawner checks the engine's; the plugins' output is
 * read and classified here, never by the root process. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "macro.h"
#include "engine-fds.h"
#include "spawner-link.h"
#include "spawner-proto.h"

#define HELLO_TIMEOUT_MS 10000
#define SEND_TIMEOUT_SEC 10

typedef struct LinkRun {
        SpawnerLink *link;
        RunRequest *req;
        int out_fd, err_fd, det_fd; /* read ends; -1 at EOF */
        sd_event_source *out_src, *err_src, *det_src;
        uint8_t out[RUN_STDOUT_KEEP];
        size_t out_len;
        uint64_t out_total;
        bool exited; /* the spawner's EXITED arrived */
        SpawnerReplyExited x;
        struct LinkRun *next;
} LinkRun;

struct SpawnerCheck {
        SpawnerLink *link;
        uint64_t id;
        ConfinementDoneFn done;
        void *userdata;
        SpawnerCheck *next;
};

struct SpawnerLink {
        sd_event *event;
        int fd;
        sd_event_source *io;
        int landlock_abi;
        bool scopes, stopping, broken;
        unsigned runs_max, n_runs;
        LinkRun *runs;
        SpawnerCheck *checks;
        unsigned n_checks;
        uint64_t check_seq;
};

/* The spawner cannot be believed or reached any more: the engine ends (systemd restarts lockd). */
static void broken(SpawnerLink *l, const char *why) {
        if (l->broken)
                return;
        l->broken = true;
        log_struct(LOG_ERR, NULL, NULL, "the spawner %s: the engine ends", why);
        l->io = sd_event_source_disable_unref(l->io);
        (void)sd_event_exit(l->event, 1);
}

static int send_message(SpawnerLink *l, const void *msg, size_t size, const int *fds, size_t n) {
        union {
                struct cmsghdr align;
                uint8_t space[CMSG_SPACE(sizeof(int) * SPAWNER_FDS_MAX)];
        } control = {};
        struct iovec iov = {.iov_base = (void *)msg, .iov_len = size};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
        ssize_t k;

        if (n > 0) {
                struct cmsghdr *c;

                mh.msg_control = &control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
                c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * n);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
        }
        do
                k = sendmsg(l->fd, &mh, MSG_NOSIGNAL);
        while (k < 0 && errno == EINTR);
        if (k != (ssize_t)size) {
                int r = k < 0 ? negative_errno() : -EIO;

                broken(l, "does not take requests");
                return r;
        }
        return 0;
}

static void run_unlink(SpawnerLink *l, LinkRun *lr) {
        for (LinkRun **p = &l->runs; *p; p = &(*p)->next)
                if (*p == lr) {
                        *p = lr->next;
                        break;
                }
        l->n_runs--;
}

static void run_close(LinkRun *lr) {
        lr->out_src = sd_event_source_disable_unref(lr->out_src);
        lr->err_src = sd_event_source_disable_unref(lr->err_src);
        lr->det_src = sd_event_source_disable_unref(lr->det_src);
        lr->out_fd = safe_close(lr->out_fd);
        lr->err_fd = safe_close(lr->err_fd);
        lr->det_fd = safe_close(lr->det_fd);
}

/* The result of a run the spawner reported: its end, and what the engine read of its output. */
static void fill_result(LinkRun *lr) {
        RunRequest *req = lr->req;
        const SpawnerReplyExited *x = &lr->x;
        RunResult *res = &req->result;
        RunExit e = {
                .exited = x->flags & SPAWNER_EXITED_EXITED,
                .exit_status = x->exit_status,
                .signal = x->signal,
                .timed_out = x->flags & SPAWNER_EXITED_TIMED_OUT,
                .oom = x->flags & SPAWNER_EXITED_OOM,
        };

        req->error = x->error;
        /* Scoped only with a unit of the spawner's form (spawner_reply_decode()), and only when
         * the spawner makes scopes (on_exited()). */
        req->scoped = x->flags & SPAWNER_EXITED_SCOPED;
        snprintf(req->unit, sizeof(req->unit), "%s", req->scoped ? x->unit : "");
        res->wall_usec = x->wall_usec;
        res->setup_usec = x->setup_usec;
        res->scope_wait_usec = x->scope_wait_usec;
        res->cpu_usec = x->cpu_usec;
        res->peak_rss_bytes = x->peak_rss_bytes;
        res->uid = (uid_t)x->uid;
        res->landlock_abi = x->landlock_abi;
        if (x->flags & SPAWNER_EXITED_SPAWN) {
                res->outcome = RUN_PLUGIN_ERROR;
                res->cause = RUN_CAUSE_SPAWN;
                res->spawn_stage = x->spawn_stage < _SPAWN_STAGE_MAX ? (SpawnStage)x->spawn_stage
                                                                     : SPAWN_STAGE_EXEC;
                res->spawn_errno = x->spawn_errno;
        } else
                run_classify(lr->out, lr->out_len, lr->out_total, &e, res);
}

/* Hands the run to its callback once both the EXITED and the pipes' EOF are in. */
static void maybe_done(LinkRun *lr) {
        SpawnerLink *l = lr->link;
        RunRequest *req = lr->req;

        if (!lr->exited || lr->out_fd >= 0 || lr->err_fd >= 0 || lr->det_fd >= 0)
                return;
        fill_result(lr);
        run_unlink(l, lr);
        free(lr);
        req->done(req, req->userdata);
}

static int on_output(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        LinkRun *lr = userdata;
        RunResult *res = &lr->req->result;
        size_t unused = 0;
        bool open;

        if (fd == lr->out_fd)
                open = run_drain(fd, lr->out, sizeof(lr->out), &lr->out_len, &lr->out_total);
        else if (fd == lr->err_fd)
                open = run_drain(fd, NULL, 0, &unused, &res->stderr_bytes);
        else
                open = run_drain(fd, (uint8_t *)res->detail, sizeof(res->detail), &res->detail_len,
                                 &res->detail_total);
        if (open)
                return 0;
        if (fd == lr->out_fd) {
                lr->out_src = sd_event_source_disable_unref(lr->out_src);
                lr->out_fd = safe_close(lr->out_fd);
        } else if (fd == lr->err_fd) {
                lr->err_src = sd_event_source_disable_unref(lr->err_src);
                lr->err_fd = safe_close(lr->err_fd);
        } else {
                lr->det_src = sd_event_source_disable_unref(lr->det_src);
                lr->det_fd = safe_close(lr->det_fd);
        }
        maybe_done(lr);
        return 0;
}

static void on_exited(SpawnerLink *l, const SpawnerMessage *m) {
        const SpawnerReplyExited *x = &m->exited;
        LinkRun *lr = l->runs;

        while (lr && (lr->req->id != x->run_id || lr->exited))
                lr = lr->next;
        if (!lr)
                return broken(l, "reported a run the engine did not ask for");
        /* The unit's form was checked with the message; a spawner without scopes names none. */
        if ((x->flags & SPAWNER_EXITED_SCOPED) && !l->scopes)
                return broken(l, "named a unit that is not a run's scope");
        lr->exited = true;
        lr->x = *x;
        maybe_done(lr);
}

static void on_confined(SpawnerLink *l, const SpawnerMessage *m) {
        const SpawnerReplyConfined *x = &m->confined;
        SpawnerCheck *c = l->checks, **p = &l->checks;
        ConfinementReason why;

        if (x->check_id > l->check_seq)
                return broken(l, "answered a check the engine did not ask for");
        while (c && c->id != x->check_id) {
                p = &c->next;
                c = c->next;
        }
        if (!c)
                return; /* freed (its peer went) before the answer came */
        *p = c->next;
        l->n_checks--;
        why = x->reason < _CONFINEMENT_REASON_MAX ? (ConfinementReason)x->reason
                                                  : CONFINEMENT_BAD_ANSWER;
        if (x->error < 0)
                why = CONFINEMENT_NO_MANAGER;
        /* Answered: unlinked, and still the caller's to free with spawner_check_free(). */
        c->next = NULL;
        c->done(x->error == 0 && x->ok, x->unit, x->error == 0 && x->ok ? CONFINEMENT_OK : why,
                c->userdata);
}

static void on_hello_again(SpawnerLink *l, const SpawnerMessage *m) {
        broken(l, "said HELLO twice");
}

/* What the engine does with each reply, one row per reply type of spawner_messages[]: the
 * spawner's HELLO is read once, by hello(), before the loop runs. */
static const struct {
        uint16_t type;
        void (*handle)(SpawnerLink *l, const SpawnerMessage *m);
} reply_handlers[] = {
        {SPAWNER_REPLY_HELLO, on_hello_again},
        {SPAWNER_REPLY_EXITED, on_exited},
        {SPAWNER_REPLY_CONFINED, on_confined},
};

/* Whether every reply type of spawner_messages[] has exactly one row above, and every row one. */
static bool reply_handlers_valid(void) {
        for (size_t i = 0; i < spawner_n_messages; i++) {
                size_t rows = 0;

                for (size_t k = 0; k < ELEMENTSOF(reply_handlers); k++)
                        rows += reply_handlers[k].type == spawner_messages[i].type;
                if (rows != (spawner_messages[i].type >= 0x80 ? 1 : 0))
                        return false;
        }
        for (size_t k = 0; k < ELEMENTSOF(reply_handlers); k++)
                if (!spawner_message_row(reply_handlers[k].type) || reply_handlers[k].type < 0x80)
                        return false;
        return true;
}

static int on_reply(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        SpawnerLink *l = userdata;
        SpawnerReceived rx;
        int r;

        /* Replies carry no fds: any that came are closed, and the count refuses the reply. */
        r = spawner_receive(fd, false, &rx);
        if (r == -EAGAIN || r == -EINTR)
                return 0;
        if (r == -EBADMSG)
                broken(l, spawner_error_name(rx.error));
        else if (r < 0)
                broken(l, "channel failed");
        else if (r == 0)
                broken(l, "is gone");
        else
                for (size_t i = 0; i < ELEMENTSOF(reply_handlers); i++)
                        if (reply_handlers[i].type == rx.m.h.type)
                                reply_handlers[i].handle(l, &rx.m);
        return 0;
}

/* HELLO, and the answer to it, before the loop runs: the engine is not ready without it. */
static int hello(SpawnerLink *l) {
        SpawnerHello h = {.pid = (uint32_t)getpid()};
        struct pollfd pfd = {.fd = l->fd, .events = POLLIN};
        SpawnerReceived rx;
        int r;

        /* A reply table that names a type twice or not at all is the build's fault. */
        if (!reply_handlers_valid())
                return -EPROTO;
        spawner_header_init(&h.h, SPAWNER_HELLO);
        r = send_message(l, &h, sizeof(h), NULL, 0);
        if (r < 0)
                return r;
        r = poll(&pfd, 1, HELLO_TIMEOUT_MS);
        if (r <= 0)
                return r < 0 ? negative_errno() : -ETIMEDOUT;
        r = spawner_receive(l->fd, false, &rx);
        if (r == 0 || r == -EBADMSG || (r > 0 && rx.m.h.type != SPAWNER_REPLY_HELLO))
                return -EBADMSG;
        if (r < 0)
                return r;
        l->landlock_abi = (int)rx.m.reply_hello.landlock_abi;
        l->scopes = rx.m.reply_hello.scopes;
        /* The spawner's cap, never more than ours: one run too many would end it. */
        if (rx.m.reply_hello.runs_max < l->runs_max)
                l->runs_max = rx.m.reply_hello.runs_max;
        return 0;
}

int spawner_link_new(sd_event *e, int fd, unsigned runs_max, SpawnerLink **ret) {
        _cleanup_close_ int owned = fd;
        struct timeval tv = {.tv_sec = SEND_TIMEOUT_SEC};
        SpawnerLink *l;
        int r;

        if (!e || fd < 0 || runs_max == 0 || !ret)
                return -EINVAL;
        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->event = sd_event_ref(e);
        l->fd = TAKE_FD(owned);
        l->runs_max = runs_max;
        /* A blocking socket with a send timeout: a spawner that takes nothing ends the engine. */
        if (fcntl(l->fd, F_SETFD, FD_CLOEXEC) < 0 ||
            setsockopt(l->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0) {
                r = negative_errno();
                goto fail;
        }
        r = hello(l);
        if (r < 0)
                goto fail;
        r = sd_event_add_io(e, &l->io, l->fd, EPOLLIN, on_reply, l);
        if (r < 0)
                goto fail;
        *ret = l;
        return 0;
fail:
        spawner_link_free(l);
        return r;
}

SpawnerLink *spawner_link_free(SpawnerLink *l) {
        if (!l)
                return NULL;
        l->io = sd_event_source_disable_unref(l->io);
        while (l->runs) {
                LinkRun *lr = l->runs;
                RunRequest *req = lr->req;

                run_close(lr);
                run_unlink(l, lr);
                free(lr);
                /* Taken by the spawner, never reported: whether it ran is not known. */
                req->error = -ECONNABORTED;
                req->done(req, req->userdata);
        }
        while (l->checks) {
                SpawnerCheck *c = l->checks;
                l->checks = c->next;
                free(c);
        }
        safe_close(l->fd);
        sd_event_unref(l->event);
        free(l);
        return NULL;
}

int spawner_link_landlock_abi(const SpawnerLink *l) {
        return l ? l->landlock_abi : -1;
}

bool spawner_link_scopes(const SpawnerLink *l) {
        return l && l->scopes;
}

/* One pipe for the plugin's fd n: the read end ours (non-blocking), the write end to send. */
static int output_pipe(LinkRun *lr, int *ret_read, int *ret_write, sd_event_source **src) {
        int p[2];
        int r;

        if (pipe2(p, O_CLOEXEC) < 0)
                return negative_errno();
        if (fcntl(p[0], F_SETFL, O_NONBLOCK) < 0)
                goto fail;
        r = sd_event_add_io(lr->link->event, src, p[0], EPOLLIN, on_output, lr);
        if (r < 0) {
                errno = -r;
                goto fail;
        }
        *ret_read = p[0];
        *ret_write = p[1];
        return 0;
fail:
        r = negative_errno();
        safe_close(p[0]);
        safe_close(p[1]);
        return r;
}

int spawner_link_submit(SpawnerLink *l, RunRequest *req) {
        const PluginImage *sb;
        _cleanup_close_ int inputs = -1, out_w = -1, err_w = -1, det_w = -1;
        SpawnerRun m = {};
        int fds[SPAWNER_FDS_MAX];
        size_t n = 0;
        LinkRun *lr;
        int r;

        if (!l || !req || !req->image || !req->done || req->input_fd < 0 || req->id == 0)
                return -EINVAL;
        if (l->stopping || l->broken)
                return -ESHUTDOWN;
        if (l->n_runs >= l->runs_max)
                return -EAGAIN;
        sb = req->image;
        if (sb->spec.inputs) {
                if (!req->inputs_json)
                        return -EINVAL;
                /* fd 6: sealed here; the spawner checks the seals and opens it read-only. */
                inputs = memfd_from_buffer(req->inputs_json, req->inputs_len, "lockd-inputs");
                if (inputs < 0)
                        return inputs;
        }
        lr = calloc(1, sizeof(*lr));
        if (!lr)
                return -ENOMEM;
        *lr = (LinkRun){.link = l, .req = req, .out_fd = -1, .err_fd = -1, .det_fd = -1};
        r = output_pipe(lr, &lr->out_fd, &out_w, &lr->out_src);
        if (r >= 0)
                r = output_pipe(lr, &lr->err_fd, &err_w, &lr->err_src);
        if (r >= 0 && sb->spec.detail)
                r = output_pipe(lr, &lr->det_fd, &det_w, &lr->det_src);
        if (r < 0) {
                run_close(lr);
                free(lr);
                return r;
        }

        spawner_header_init(&m.h, SPAWNER_RUN);
        m.run_id = req->id;
        m.fairness_key = req->fairness_key;
        m.protocol = sb->spec.protocol;
        m.flags = (sb->spec.inputs ? SPAWNER_RUN_INPUTS : 0) |
                  (sb->spec.detail ? SPAWNER_RUN_DETAIL : 0);
        m.cpu_s = sb->spec.limits.cpu_s;
        m.memory_bytes = sb->spec.limits.memory_bytes;
        m.timeout_s = sb->spec.limits.timeout_s;
        fds[n++] = sb->binary_fd;
        fds[n++] = req->input_fd;
        if (sb->spec.inputs)
                fds[n++] = inputs;
        fds[n++] = out_w;
        fds[n++] = err_w;
        if (sb->spec.detail)
                fds[n++] = det_w;
        r = send_message(l, &m, sizeof(m), fds, n);
        if (r < 0) {
                run_close(lr);
                free(lr);
                return r;
        }
        /* Our copies of the write ends go with this function: EOF comes when the plugin's do. */
        lr->next = l->runs;
        l->runs = lr;
        l->n_runs++;
        return 0;
}

void spawner_link_kill_all(SpawnerLink *l) {
        SpawnerStop m = {};

        if (!l || l->stopping || l->broken)
                return;
        l->stopping = true;
        spawner_header_init(&m.h, SPAWNER_STOP);
        (void)send_message(l, &m, sizeof(m), NULL, 0);
}

void spawner_link_notify(SpawnerLink *l, SpawnerNotifyState state, unsigned plugins) {
        SpawnerNotify m = {};

        if (!l || l->broken)
                return;
        spawner_header_init(&m.h, SPAWNER_NOTIFY);
        m.state = (uint32_t)state;
        m.plugins = plugins;
        m.runs = l->n_runs;
        (void)send_message(l, &m, sizeof(m), NULL, 0);
}

void spawner_link_warm(SpawnerLink *l, const SandboxLimits *limits) {
        SpawnerWarm m = {};

        if (!l || l->broken || !l->scopes || !limits)
                return;
        spawner_header_init(&m.h, SPAWNER_WARM);
        m.memory_bytes = limits->memory_bytes;
        m.timeout_s = limits->timeout_s;
        (void)send_message(l, &m, sizeof(m), NULL, 0);
}

unsigned spawner_link_n_active(const SpawnerLink *l) {
        return l ? l->n_runs : 0;
}

int spawner_link_confine(SpawnerLink *l, pid_t pid, int pidfd, ConfinementDoneFn done,
                         void *userdata, SpawnerCheck **ret) {
        SpawnerConfine m = {};
        SpawnerCheck *c;
        int r;

        if (!l || pid <= 0 || pidfd < 0 || !done || !ret)
                return -EINVAL;
        if (l->broken || l->stopping)
                return -ESHUTDOWN;
        if (l->n_checks >= SPAWNER_CHECKS_MAX)
                return -EAGAIN;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (SpawnerCheck){.link = l, .id = ++l->check_seq, .done = done, .userdata = userdata};
        spawner_header_init(&m.h, SPAWNER_CONFINE);
        m.check_id = c->id;
        m.pid = (uint32_t)pid;
        r = send_message(l, &m, sizeof(m), &pidfd, 1);
        if (r < 0) {
                free(c);
                return r;
        }
        c->next = l->checks;
        l->checks = c;
        l->n_checks++;
        *ret = c;
        return 0;
}

SpawnerCheck *spawner_check_free(SpawnerCheck *c) {
        if (!c)
                return NULL;
        for (SpawnerCheck **p = &c->link->checks; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        c->link->n_checks--;
                        break;
                }
        free(c);
        return NULL;
}

int spawner_link_channel_fd(void) {
        const char *e = getenv(ENGINE_CHANNEL_ENV);
        int type = 0;
        socklen_t len = sizeof(type);
        char *end = NULL;
        long fd;

        if (!e)
                return -ENOENT;
        errno = 0;
        fd = strtol(e, &end, 10);
        if (errno != 0 || !end || *end || fd < 3 || fd > 1024)
                return -EBADF;
        (void)unsetenv(ENGINE_CHANNEL_ENV);
        /* A SEQPACKET socket, or it is not the spawner's channel. */
        if (getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_SEQPACKET)
                return -EBADF;
        return (int)fd;
}
