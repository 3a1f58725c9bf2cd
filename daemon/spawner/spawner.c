/* The spawner: the root side of lockd, serving the engine's closed request table (spawner-proto.h)
 * with the run pool, the scopes and the agent confinement check (ARCHITECTURE.md). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "confinement.h"
#include "fd-util.h"
#include "log.h"
#include "macro.h"
#include "spawner-proto.h"
#include "spawner.h"
#include "standby.h"

#ifndef F_GET_SEALS
#define F_GET_SEALS 1034
#endif
#ifndef __NR_pidfd_send_signal
#define __NR_pidfd_send_signal 424
#endif

/* A send that the engine does not take within this long ends the spawner. */
#define SEND_TIMEOUT_SEC 10
/* The longest the way out serves the manager's bus for the run scopes' answers (spawner_end()). */
#define DRAIN_USEC ((uint64_t)5 * 1000000)
/*
 * What the sandbox cache may hold for the engine (ARCHITECTURE.md, two processes): the bytes of
 * the plugin binaries it pins, together, at most two of the largest binary a plugin may have
 * (PLUGIN_BINARY_MAX, 256 MiB); and an entry no run holds is freed this long after its last run
 * ended (it pins the engine's memfd meanwhile). A run that would pass the bound while every
 * entry is in use fails (-ENOSPC) rather than hold more.
 */
#define CACHE_BYTES_MAX   ((uint64_t)512 * 1024 * 1024)
#define CACHE_LINGER_USEC ((uint64_t)500 * 1000)
/* Cache entries beyond one per run the engine may hold: plugins run recently, lingering. */
#define SPAWNER_CACHE_SPARE 64
/* NOTIFY is coalesced: the latest state goes to systemd at most this often. */
#define NOTIFY_INTERVAL_USEC ((uint64_t)250 * 1000)

/* One plugin's sandbox, built here from the engine's memfd and spec, shared by its runs. */
typedef struct CachedSandbox {
        dev_t dev;
        ino_t ino;
        int key_fd; /* the engine's memfd, held so its inode number cannot name another file */
        SandboxSpec spec;
        Sandbox *sandbox; /* NULL: a free slot */
        uint64_t bytes;   /* the size of its copy of the binary */
        unsigned refs;    /* runs in flight */
        uint64_t last_use;
        uint64_t idle_since; /* CLOCK_MONOTONIC usec when refs last fell to 0 */
} CachedSandbox;

typedef struct SpawnerRunState {
        Spawner *spawner;
        CachedSandbox *cached;
        bool answered; /* its EXITED went out from the worker's thread */
} SpawnerRunState;

typedef struct Check {
        Spawner *spawner;
        uint64_t id;
        int pidfd;
        ConfinementCheck *check;
        struct Check *next;
} Check;

struct Spawner {
        sd_event *event;
        int fd;
        sd_event_source *io;
        pid_t engine_pid;
        ScopeManager *scope;
        RunPool *pool;
        SpawnerConfig cfg;
        bool hello, stopping;
        /*
         * Shared with the run workers, which answer EXITED themselves (one wakeup less per run
         * than through the loop): under lock. A worker whose send fails says so on fail_fd.
         */
        pthread_mutex_t lock;
        bool failed;
        unsigned n_runs, runs_max;
        uint64_t *run_ids; /* runs_max slots; 0: free */
        int fail_fd;
        sd_event_source *fail_source;
        CachedSandbox *cache;
        size_t n_cache, cache_max;
        uint64_t use_clock, cache_bytes;
        sd_event_source *cache_timer;
        /* The engine's pidfd, watched: its death ends the spawner whoever holds the channel. */
        sd_event_source *engine_source;
        /* NOTIFY, coalesced: the latest text, sent at most every NOTIFY_INTERVAL_USEC. */
        char notify_text[160];
        bool notify_pending, notify_ready;
        uint64_t notify_last;
        sd_event_source *notify_timer;
        int notify_fd;
        struct sockaddr_un notify_addr;
        socklen_t notify_addr_len;
        Check *checks;
        unsigned n_checks;
        /* On the way out (spawner_end()): the code the loop exits with once drained. */
        bool ending;
        int exit_code;
        sd_event_source *drain_check, *drain_deadline;
};

static bool failed(Spawner *s) {
        bool f;

        pthread_mutex_lock(&s->lock);
        f = s->failed;
        pthread_mutex_unlock(&s->lock);
        return f;
}

/* Marks the spawner failed; true when it was not yet. */
static bool set_failed(Spawner *s) {
        bool was;

        pthread_mutex_lock(&s->lock);
        was = s->failed;
        s->failed = true;
        pthread_mutex_unlock(&s->lock);
        return !was;
}

static int on_drain_check(sd_event_source *src, void *userdata) {
        Spawner *s = userdata;

        if (run_pool_idle(s->pool) && scope_manager_idle(s->scope))
                return sd_event_exit(s->event, s->exit_code);
        return 0;
}

static int on_drain_deadline(sd_event_source *src, uint64_t usec, void *userdata) {
        Spawner *s = userdata;

        log_struct(LOG_WARNING, NULL, NULL,
                   "the manager did not answer for every run scope within %u s: leaving anyway",
                   (unsigned)(DRAIN_USEC / 1000000));
        return sd_event_exit(s->event, s->exit_code);
}

/*
 * The way out (ARCHITECTURE.md): no request is read any more, every run is killed, and the loop
 * goes on serving the manager's bus until every scope start has its answer and every run's unit
 * its stop (run_pool_idle(), scope_manager_idle()), for DRAIN_USEC at most; then it exits with
 * code. Leaving at once would strand a worker waiting for a job nobody reads any more, and a unit
 * whose child died before the manager moved it into it, which never empties.
 */
static void spawner_end(Spawner *s, int code) {
        s->io = sd_event_source_disable_unref(s->io);
        run_pool_kill_all(s->pool);
        if (s->ending)
                return;
        s->ending = true;
        s->exit_code = code;
        if (sd_event_add_post(s->event, &s->drain_check, on_drain_check, s) < 0 ||
            sd_event_add_time_relative(s->event, &s->drain_deadline, CLOCK_MONOTONIC, DRAIN_USEC, 0,
                                       on_drain_deadline, s) < 0)
                (void)sd_event_exit(s->event, code);
        else
                /* A post source is marked only by sources dispatched after it was added: this
                 * iteration's check is made here (nothing in flight: out at once). */
                (void)on_drain_check(s->drain_check, s);
}

/* Ends the spawner on a request it cannot believe: the loop exits, and lockd with it. */
static void fail(Spawner *s, const char *why, const char *detail) {
        if (!set_failed(s))
                return;
        log_struct(LOG_ERR, NULL, NULL,
                   "the engine sent %s%s%s: ending every run and lockd (it restarts)", why,
                   detail ? ": " : "", detail ? detail : "");
        spawner_end(s, 1);
}

/* One datagram to the engine (atomic: workers and the loop may send at once); 0 or -errno. */
static int send_datagram(Spawner *s, const void *msg, size_t size) {
        ssize_t n;

        do
                n = send(s->fd, msg, size, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        return n == (ssize_t)size ? 0 : n < 0 ? negative_errno() : -EIO;
}

/* The loop's end after a send failed: a peer that does not take an answer within
 * SEND_TIMEOUT_SEC ends the spawner. */
static void send_failed(Spawner *s, int error) {
        log_struct_errno(LOG_ERR, -error, NULL, NULL,
                         "cannot answer the engine: %m; ending every run and lockd");
        spawner_end(s, 1);
}

/* Sends one reply from the loop. */
static void send_reply(Spawner *s, const void *msg, size_t size) {
        int r;

        if (failed(s))
                return;
        r = send_datagram(s, msg, size);
        if (r < 0 && set_failed(s))
                send_failed(s, r);
}

static int on_worker_failed(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        Spawner *s = userdata;
        uint64_t v;

        (void)!read(fd, &v, sizeof(v));
        s->fail_source = sd_event_source_disable_unref(s->fail_source);
        send_failed(s, -EIO);
        return 0;
}

static int run_slot(Spawner *s, uint64_t id) {
        for (unsigned i = 0; i < s->runs_max; i++)
                if (s->run_ids[i] == id)
                        return (int)i;
        return -1;
}

/* Empties a slot: the copy, the ruleset and the engine's memfd go. */
static void cache_drop(Spawner *s, CachedSandbox *c) {
        sandbox_free(c->sandbox);
        safe_close(c->key_fd);
        s->cache_bytes -= c->bytes;
        *c = (CachedSandbox){.key_fd = -1, .dev = (dev_t)-1};
}

static int on_cache_timer(sd_event_source *src, uint64_t usec, void *userdata);

/*
 * Frees every entry idle for CACHE_LINGER_USEC and arms the timer for the next one to come due.
 * The engine cannot tell the spawner that it closed a memfd (the kernel sends no close event for
 * a memfd), so an entry lives while its runs do and briefly after: a burst of runs of one plugin
 * shares one copy, and a binary the engine let go is not kept.
 */
static void cache_expire(Spawner *s) {
        uint64_t now = clock_monotonic_usec(), next = UINT64_MAX;

        for (size_t i = 0; i < s->n_cache; i++) {
                CachedSandbox *c = &s->cache[i];

                if (!c->sandbox || c->refs > 0)
                        continue;
                if (now - c->idle_since >= CACHE_LINGER_USEC)
                        cache_drop(s, c);
                else if (c->idle_since + CACHE_LINGER_USEC < next)
                        next = c->idle_since + CACHE_LINGER_USEC;
        }
        while (s->n_cache > 0 && !s->cache[s->n_cache - 1].sandbox)
                s->n_cache--;
        if (next == UINT64_MAX) {
                if (s->cache_timer)
                        (void)sd_event_source_set_enabled(s->cache_timer, SD_EVENT_OFF);
                return;
        }
        if (s->cache_timer) {
                (void)sd_event_source_set_time(s->cache_timer, next);
                (void)sd_event_source_set_enabled(s->cache_timer, SD_EVENT_ONESHOT);
        } else if (sd_event_add_time(s->event, &s->cache_timer, CLOCK_MONOTONIC, next, 0,
                                     on_cache_timer, s) < 0)
                /* No timer: nothing lingers, the idle entries go now. */
                for (size_t i = 0; i < s->n_cache; i++)
                        if (s->cache[i].sandbox && s->cache[i].refs == 0)
                                cache_drop(s, &s->cache[i]);
}

static int on_cache_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        cache_expire(userdata);
        return 0;
}

/* A run lets go of its sandbox (on the loop); the last one starts the entry's linger. */
static void cache_release(Spawner *s, CachedSandbox *c) {
        if (!c || c->refs == 0)
                return;
        if (--c->refs == 0) {
                c->idle_since = clock_monotonic_usec();
                cache_expire(s);
        }
}

/* Room for bytes more under CACHE_BYTES_MAX, made by dropping idle entries, least recently used
 * first; -ENOSPC when the entries in use leave none. */
static int cache_make_room(Spawner *s, uint64_t bytes) {
        while (s->cache_bytes + bytes > CACHE_BYTES_MAX) {
                CachedSandbox *lru = NULL;

                for (size_t i = 0; i < s->n_cache; i++) {
                        CachedSandbox *c = &s->cache[i];
                        if (c->sandbox && c->refs == 0 && (!lru || c->last_use < lru->last_use))
                                lru = c;
                }
                if (!lru)
                        return -ENOSPC;
                cache_drop(s, lru);
        }
        return 0;
}

/*
 * The sandbox for this memfd and spec: the cached one, or one built now by sandbox_new(), which
 * checks the ELF and builds the Landlock ruleset (the seccomp filter is the same for every plugin,
 * built once by the runner); the memfd is sealed (the dispatcher checked), so it runs as it is,
 * with no copy. NULL with *ret_error on failure.
 */
static CachedSandbox *cache_get(Spawner *s, int binary_fd, const SandboxSpec *spec,
                                int *ret_error) {
        CachedSandbox *slot = NULL;
        struct stat st;
        int r;

        if (fstat(binary_fd, &st) < 0) {
                *ret_error = negative_errno();
                return NULL;
        }
        for (size_t i = 0; i < s->n_cache; i++) {
                CachedSandbox *c = &s->cache[i];

                if (c->sandbox && c->dev == st.st_dev && c->ino == st.st_ino &&
                    memcmp(&c->spec, spec, sizeof(*spec)) == 0) {
                        c->refs++;
                        c->last_use = ++s->use_clock;
                        return c;
                }
        }
        /* The bound is checked on the engine's size (sealed: it cannot change under us). */
        if (st.st_size < 0 || (uint64_t)st.st_size > CACHE_BYTES_MAX) {
                *ret_error = -EFBIG;
                return NULL;
        }
        r = cache_make_room(s, (uint64_t)st.st_size);
        if (r < 0) {
                *ret_error = r;
                return NULL;
        }
        for (size_t i = 0; i < s->n_cache && !slot; i++)
                if (!s->cache[i].sandbox)
                        slot = &s->cache[i];
        if (!slot && s->n_cache < s->cache_max)
                slot = &s->cache[s->n_cache++];
        if (!slot) {
                /* The least recently used one that no run holds. */
                for (size_t i = 0; i < s->n_cache; i++) {
                        CachedSandbox *c = &s->cache[i];
                        if (c->refs == 0 && (!slot || c->last_use < slot->last_use))
                                slot = c;
                }
                if (!slot) {
                        *ret_error = -ENOSPC;
                        return NULL;
                }
                cache_drop(s, slot);
        }
        *slot = (CachedSandbox){.key_fd = -1, .dev = (dev_t)-1};
        r = sandbox_new(binary_fd, spec, &slot->sandbox);
        if (r >= 0) {
                slot->key_fd = fcntl(binary_fd, F_DUPFD_CLOEXEC, 3);
                if (slot->key_fd < 0)
                        r = negative_errno();
        }
        if (r < 0) {
                /* The slot stays, empty: no inode matches it and no run holds it. */
                slot->sandbox = sandbox_free(slot->sandbox);
                *ret_error = r;
                return NULL;
        }
        slot->dev = st.st_dev;
        slot->ino = st.st_ino;
        slot->spec = *spec;
        slot->bytes = (uint64_t)st.st_size;
        s->cache_bytes += slot->bytes;
        slot->refs = 1;
        slot->last_use = ++s->use_clock;
        return slot;
}

/* The EXITED of req: what the run did, never a byte of its output. */
static void exited_message(const RunRequest *req, SpawnerReplyExited *x) {
        *x = (SpawnerReplyExited){};
        spawner_header_init(&x->h, SPAWNER_REPLY_EXITED);
        x->run_id = req->id;
        x->error = req->error < 0 ? req->error : 0;
        if (req->error < 0)
                return;
        const RunResult *res = &req->result;

        x->flags = (req->scoped ? SPAWNER_EXITED_SCOPED : 0);
        if (req->scoped)
                snprintf(x->unit, sizeof(x->unit), "%s", req->unit);
        if (res->cause == RUN_CAUSE_SPAWN) {
                x->flags |= SPAWNER_EXITED_SPAWN;
                x->spawn_stage = (uint32_t)res->spawn_stage;
                x->spawn_errno = res->spawn_errno;
        } else {
                x->flags |= (req->exit.exited ? SPAWNER_EXITED_EXITED : 0) |
                            (req->exit.timed_out ? SPAWNER_EXITED_TIMED_OUT : 0) |
                            (req->exit.oom ? SPAWNER_EXITED_OOM : 0);
                x->exit_status = req->exit.exit_status;
                x->signal = req->exit.signal;
        }
        x->wall_usec = res->wall_usec;
        x->cpu_usec = res->cpu_usec;
        x->peak_rss_bytes = res->peak_rss_bytes;
        x->uid = (uint32_t)res->uid;
        x->landlock_abi = res->landlock_abi;
        x->setup_usec = res->setup_usec;
        x->scope_wait_usec = res->scope_wait_usec;
}

/* The run leaves the count of runs in flight; before its EXITED goes, so that the engine, which
 * may send the next RUN at once, never finds the count a run too high. Under the lock. */
static void run_forget_locked(Spawner *s, uint64_t id) {
        for (unsigned i = 0; i < s->runs_max; i++)
                if (s->run_ids[i] == id) {
                        s->run_ids[i] = 0;
                        s->n_runs--;
                        return;
                }
}

/* A send from a worker's thread: on failure the loop is told (fail_fd) and ends the spawner. */
static void worker_send(Spawner *s, const void *msg, size_t size) {
        uint64_t one = 1;

        if (failed(s))
                return;
        if (send_datagram(s, msg, size) < 0 && set_failed(s))
                (void)!write(s->fail_fd, &one, sizeof(one));
}

/* On the worker's thread, as soon as the run ended: the EXITED goes out now. */
static void on_run_ended(RunRequest *req, void *userdata) {
        SpawnerRunState *st = userdata;
        Spawner *s = st->spawner;
        SpawnerReplyExited x;

        exited_message(req, &x);
        pthread_mutex_lock(&s->lock);
        run_forget_locked(s, req->id);
        pthread_mutex_unlock(&s->lock);
        st->answered = true;
        worker_send(s, &x, sizeof(x));
}

/* On the loop, after the worker: what is the loop's goes (the sandbox's hold, the request). A
 * run that never reached a worker (cancelled while queued, refused by the pool) is answered
 * here. */
static void on_run_done(RunRequest *req, void *userdata) {
        SpawnerRunState *st = userdata;
        Spawner *s = st->spawner;
        bool answered = st->answered;
        SpawnerReplyExited x;

        if (!answered) {
                exited_message(req, &x);
                pthread_mutex_lock(&s->lock);
                run_forget_locked(s, req->id);
                pthread_mutex_unlock(&s->lock);
        }
        cache_release(s, st->cached);
        free(st);
        run_request_free(req);
        if (!answered)
                send_reply(s, &x, sizeof(x));
}

/* Whether fd is the write end of a pipe, open for writing only. */
static bool pipe_write_end(int fd) {
        struct stat st;
        int fl = fcntl(fd, F_GETFL);

        return fl >= 0 && (fl & O_ACCMODE) == O_WRONLY && fstat(fd, &st) == 0 &&
               S_ISFIFO(st.st_mode);
}

static void handle_run(Spawner *s, const SpawnerMessage *msg, int *fds) {
        const SpawnerRun *m = &msg->run;
        bool inputs = m->flags & SPAWNER_RUN_INPUTS, detail = m->flags & SPAWNER_RUN_DETAIL;
        /* What each fd is, the dispatcher checked (fds_of_kinds()). */
        int binary = fds[0], input = fds[1], in6 = inputs ? fds[2] : -1;
        _cleanup_(run_request_freep) RunRequest *req = NULL;
        SpawnerRunState *st;
        SandboxSpec spec = {
                .protocol = m->protocol,
                .inputs = inputs,
                .detail = detail,
                .limits = {.cpu_s = m->cpu_s,
                           .memory_bytes = m->memory_bytes,
                           .timeout_s = m->timeout_s},
        };
        char id[32];
        int slot, r;

        snprintf(id, sizeof(id), "%" PRIu64, m->run_id);
        pthread_mutex_lock(&s->lock);
        r = s->n_runs >= s->runs_max ? -EDQUOT : run_slot(s, m->run_id) >= 0 ? -EEXIST : 0;
        pthread_mutex_unlock(&s->lock);
        if (r == -EDQUOT)
                return fail(s, "more runs than may be in flight", id);
        if (r == -EEXIST)
                return fail(s, "a run id already in flight", id);

        st = calloc(1, sizeof(*st));
        req = run_request_new();
        if (!st || !req) {
                free(st);
                return fail(s, "a run lockd has no memory for", id);
        }
        st->spawner = s;
        /* Fresh read-only opens: the plugin's own offsets, never the engine's descriptions. */
        req->input_fd = fd_reopen_readonly(input);
        req->inputs_fd = inputs ? fd_reopen_readonly(in6) : -1;
        if (req->input_fd < 0 || (inputs && req->inputs_fd < 0)) {
                free(st);
                return fail(s, "a run whose memfd cannot be opened again", id);
        }
        req->external = true;
        req->id = m->run_id;
        req->fairness_key = m->fairness_key;
        req->stdout_fd = TAKE_FD(fds[2 + inputs]);
        req->stderr_fd = TAKE_FD(fds[3 + inputs]);
        if (detail)
                req->detail_fd = TAKE_FD(fds[4 + inputs]);
        req->done = on_run_done;
        req->ended = on_run_ended;
        req->userdata = st;

        st->cached = cache_get(s, binary, &spec, &r);
        if (!st->cached) {
                SpawnerReplyExited x = {};

                /* Not the engine's fault alone (a binary this kernel cannot run): the run fails. */
                free(st);
                spawner_header_init(&x.h, SPAWNER_REPLY_EXITED);
                x.run_id = m->run_id;
                x.error = r < 0 && r >= -4095 ? r : -EIO;
                send_reply(s, &x, sizeof(x));
                return;
        }
        req->sandbox = st->cached->sandbox;
        pthread_mutex_lock(&s->lock);
        slot = run_slot(s, 0);
        s->run_ids[slot] = m->run_id;
        s->n_runs++;
        pthread_mutex_unlock(&s->lock);
        r = run_pool_submit(s->pool, req);
        if (r < 0) {
                RunRequest *q = TAKE_PTR(req);

                q->error = r;
                on_run_done(q, st);
                return;
        }
        TAKE_PTR(req);
}

static void on_confined(bool ok, const char *unit, ConfinementReason missing, void *userdata) {
        Check *c = userdata;
        Spawner *s = c->spawner;
        SpawnerReplyConfined x = {};

        spawner_header_init(&x.h, SPAWNER_REPLY_CONFINED);
        x.check_id = c->id;
        x.ok = ok;
        x.reason = (uint32_t)missing;
        snprintf(x.unit, sizeof(x.unit), "%s", unit ? unit : "");
        /* Unlinked before the reply: the check is over. */
        for (Check **p = &s->checks; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        break;
                }
        s->n_checks--;
        confinement_check_free(c->check);
        safe_close(c->pidfd);
        free(c);
        send_reply(s, &x, sizeof(x));
}

/* The pid in a pidfd's fdinfo: -1 for a pidfd whose process is gone, 0 for an fd that is no
 * pidfd (no "Pid:" line); the pidfd must name the pid the request says. */
static pid_t pidfd_pid(int fd) {
        char path[64], line[128];
        FILE *f;
        long pid = 0;

        snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
        f = fopen(path, "re");
        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "Pid: %ld", &pid) == 1)
                        break;
        fclose(f);
        return (pid_t)pid;
}

static void handle_confine(Spawner *s, const SpawnerMessage *msg, int *fds) {
        const SpawnerConfine *m = &msg->confine;
        SpawnerReplyConfined x = {};
        Check *c;
        pid_t pid;
        int r;

        if (s->n_checks >= SPAWNER_CHECKS_MAX)
                return fail(s, "more confinement checks than may be in flight", NULL);
        for (Check *i = s->checks; i; i = i->next)
                if (i->id == m->check_id)
                        return fail(s, "a confinement check id already in flight", NULL);
        /*
         * A pidfd (the dispatcher checked: fd_is()), and of exactly that pid. Its fdinfo's "Pid:"
         * line says which process it names: -1 once that process is gone. A dead pidfd proves
         * nothing of the pid the engine names, which may be another process by now: the check
         * answers "gone" without asking the manager about that pid. A peer that left at once is
         * no fault of the engine's.
         */
        pid = pidfd_pid(fds[0]);
        if (pid != (pid_t)m->pid && pid != -1)
                return fail(s, "a confinement check whose pidfd is another process", NULL);

        spawner_header_init(&x.h, SPAWNER_REPLY_CONFINED);
        x.check_id = m->check_id;
        if (pid == -1 || syscall(__NR_pidfd_send_signal, fds[0], 0, NULL, 0) < 0) {
                x.ok = false;
                x.reason = CONFINEMENT_PEER_GONE;
                return send_reply(s, &x, sizeof(x));
        }
        if (!s->scope) {
                x.error = -EHOSTUNREACH;
                return send_reply(s, &x, sizeof(x));
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                x.error = -ENOMEM;
                return send_reply(s, &x, sizeof(x));
        }
        *c = (Check){.spawner = s, .id = m->check_id, .pidfd = TAKE_FD(fds[0])};
        c->next = s->checks;
        s->checks = c;
        s->n_checks++;
        r = confinement_check_start(scope_manager_bus(s->scope), (pid_t)m->pid, c->pidfd,
                                    on_confined, c, &c->check);
        if (r < 0) {
                s->checks = c->next;
                s->n_checks--;
                safe_close(c->pidfd);
                free(c);
                x.error = r;
                send_reply(s, &x, sizeof(x));
        }
}

/*
 * Sends the latest state to systemd's notify socket, without blocking: a socket nobody reads
 * (its queue full) costs the loop nothing, and the state stays pending for the next tick.
 */
static void notify_flush(Spawner *s) {
        ssize_t n;

        if (!s->notify_pending)
                return;
        s->notify_last = clock_monotonic_usec();
        if (s->notify_fd < 0) {
                s->notify_pending = s->notify_ready = false;
                return;
        }
        n = sendto(s->notify_fd, s->notify_text, strlen(s->notify_text),
                   MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *)&s->notify_addr,
                   s->notify_addr_len);
        if (n >= 0 || (errno != EAGAIN && errno != EINTR))
                s->notify_pending = s->notify_ready = false;
}

static int on_notify_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        Spawner *s = userdata;

        notify_flush(s);
        if (s->notify_pending) {
                (void)sd_event_source_set_time_relative(src, NOTIFY_INTERVAL_USEC);
                (void)sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
        }
        return 0;
}

/*
 * Tells systemd what the engine reported, in the spawner's own words (NotifyAccess=main),
 * coalesced: only the latest state counts, and it goes out at most every NOTIFY_INTERVAL_USEC,
 * however many NOTIFYs the engine sends (each one is a datagram to the manager otherwise, sent
 * on this loop).
 */
static void handle_notify(Spawner *s, const SpawnerMessage *msg, int *fds) {
        const SpawnerNotify *m = &msg->notify;
        uint64_t now = clock_monotonic_usec();

        /* READY=1 once said stays in the text until it went out: a STATUS after it in the same
         * tick must not drop it (systemd would wait for it until its start timeout). */
        if (m->state == SPAWNER_NOTIFY_READY)
                s->notify_ready = true;
        switch (m->state) {
        case SPAWNER_NOTIFY_READY:
        case SPAWNER_NOTIFY_STATUS:
                snprintf(s->notify_text, sizeof(s->notify_text),
                         "%sSTATUS=Serving %" PRIu32 " plugin(s), %" PRIu32 " run(s) in flight",
                         s->notify_ready ? "READY=1\n" : "", m->plugins, m->runs);
                break;
        case SPAWNER_NOTIFY_RELOADING:
                snprintf(s->notify_text, sizeof(s->notify_text),
                         "%sRELOADING=1\nSTATUS=Reloading the policy",
                         s->notify_ready ? "READY=1\n" : "");
                break;
        default:
                snprintf(s->notify_text, sizeof(s->notify_text),
                         "%sSTOPPING=1\nSTATUS=Stopping: killing the runs in flight",
                         s->notify_ready ? "READY=1\n" : "");
                break;
        }
        s->notify_pending = true;
        if (now - s->notify_last >= NOTIFY_INTERVAL_USEC) {
                notify_flush(s);
                if (!s->notify_pending)
                        return;
        }
        if (s->notify_timer) {
                int on = 0;

                if (sd_event_source_get_enabled(s->notify_timer, &on) >= 0 && on)
                        return;
                (void)sd_event_source_set_time(s->notify_timer,
                                               s->notify_last + NOTIFY_INTERVAL_USEC);
                (void)sd_event_source_set_enabled(s->notify_timer, SD_EVENT_ONESHOT);
        } else if (sd_event_add_time(s->event, &s->notify_timer, CLOCK_MONOTONIC,
                                     s->notify_last + NOTIFY_INTERVAL_USEC, 0, on_notify_timer,
                                     s) < 0)
                notify_flush(s);
}

static void handle_hello(Spawner *s, const SpawnerMessage *m, int *fds) {
        SpawnerReplyHello x = {};

        if ((pid_t)m->hello.pid != s->engine_pid)
                return fail(s, "a HELLO from another process", NULL);
        s->hello = true;
        spawner_header_init(&x.h, SPAWNER_REPLY_HELLO);
        x.landlock_abi = (uint32_t)s->cfg.landlock_abi;
        x.scopes = s->scope != NULL;
        x.runs_max = s->runs_max;
        send_reply(s, &x, sizeof(x));
}

static void handle_kill(Spawner *s, const SpawnerMessage *m, int *fds) {
        /* An id not in flight is no error: its EXITED may be on its way. */
        run_pool_kill(s->pool, m->kill.run_id);
}

static void handle_stop(Spawner *s, const SpawnerMessage *m, int *fds) {
        s->stopping = true;
        run_pool_kill_all(s->pool);
}

static void handle_warm(Spawner *s, const SpawnerMessage *m, int *fds) {
        /* Bounded whatever the engine sends: the class table holds STANDBY_CLASSES_MAX, each
         * class a child or a few. */
        run_pool_warm(s->pool, &(const SandboxLimits){.memory_bytes = m->warm.memory_bytes,
                                                      .timeout_s = m->warm.timeout_s});
}

/* When a request may come: the order the dispatcher enforces before its handler runs. */
typedef enum HandlerFlags {
        ONLY_BEFORE_HELLO = 1 << 0, /* HELLO: first, and once */
        NEEDS_HELLO = 1 << 1,       /* nothing before HELLO */
        NOT_AFTER_STOP = 1 << 2,    /* nothing of it after STOP */
} HandlerFlags;

/*
 * What the spawner does with each request type: one row per request type of spawner_messages[]
 * (spawner_handlers_valid()), whose size, fds and fields proto/ checked before. what names the
 * request in the refusals: "<what> out of order", "<what> whose memfd is not sealed".
 */
static const struct Handler {
        uint16_t type;
        void (*handle)(Spawner *s, const SpawnerMessage *m, int *fds);
        HandlerFlags flags;
        const char *what;
} handlers[] = {
        {SPAWNER_HELLO, handle_hello, ONLY_BEFORE_HELLO, "a HELLO"},
        {SPAWNER_RUN, handle_run, NEEDS_HELLO | NOT_AFTER_STOP, "a run"},
        {SPAWNER_KILL, handle_kill, NEEDS_HELLO, "a KILL"},
        {SPAWNER_STOP, handle_stop, NEEDS_HELLO | NOT_AFTER_STOP, "a STOP"},
        {SPAWNER_CONFINE, handle_confine, NEEDS_HELLO | NOT_AFTER_STOP, "a confinement check"},
        {SPAWNER_NOTIFY, handle_notify, NEEDS_HELLO, "a NOTIFY"},
        {SPAWNER_WARM, handle_warm, NEEDS_HELLO | NOT_AFTER_STOP, "a WARM"},
};

static const struct Handler *handler_of(uint16_t type) {
        for (size_t i = 0; i < ELEMENTSOF(handlers); i++)
                if (handlers[i].type == type)
                        return &handlers[i];
        return NULL;
}

bool spawner_handlers_valid(uint16_t *ret_type) {
        uint16_t bad = 0;

        if (!spawner_table_valid(&bad)) {
                if (ret_type)
                        *ret_type = bad;
                return false;
        }
        /* Every request type of the table has exactly one row here, and every row a type. */
        for (size_t i = 0; i < spawner_n_messages && bad == 0; i++) {
                size_t rows = 0;

                for (size_t k = 0; k < ELEMENTSOF(handlers); k++)
                        rows += handlers[k].type == spawner_messages[i].type;
                if (rows != (spawner_messages[i].type < 0x80 ? 1 : 0))
                        bad = spawner_messages[i].type;
        }
        for (size_t k = 0; k < ELEMENTSOF(handlers) && bad == 0; k++)
                if (!spawner_message_row(handlers[k].type) || handlers[k].type >= 0x80 ||
                    !handlers[k].handle || !handlers[k].what)
                        bad = handlers[k].type ? handlers[k].type : UINT16_MAX;
        if (bad != 0 && ret_type)
                *ret_type = bad;
        return bad == 0;
}

/*
 * Whether fd is what the table says it must be. What a plugin gets is checked, not believed: its
 * binary, its input and its inputs sealed memfds (no byte can change under the run), its output
 * ends pipes open for writing only. A pidfd's fdinfo has a "Pid:" line; nothing else's has (a
 * /proc/<pid> directory takes a signal too, and names no pid).
 */
static bool fd_is(SpawnerFdKind kind, int fd) {
        switch (kind) {
        case SPAWNER_FD_SEALED_MEMFD:
                return memfd_is_sealed(fd);
        case SPAWNER_FD_PIPE_WRITE:
                return pipe_write_end(fd);
        case SPAWNER_FD_PIDFD:
                return pidfd_pid(fd) != 0;
        }
        return false;
}

/* Whether every fd of m is of the kind its slot says; else the spawner ends, naming the first. */
static bool fds_of_kinds(Spawner *s, const struct Handler *h, const SpawnerMessage *m,
                         const int *fds) {
        static const char *const refusals[] = {
                [SPAWNER_FD_SEALED_MEMFD] = "whose memfd is not sealed",
                [SPAWNER_FD_PIPE_WRITE] = "whose output is not a pipe's write end",
                [SPAWNER_FD_PIDFD] = "without a pidfd",
        };
        SpawnerFdKind kinds[SPAWNER_FDS_MAX];
        size_t n = spawner_message_fds(m, kinds);
        char why[96], id[32];

        for (size_t i = 0; i < n; i++) {
                if (fd_is(kinds[i], fds[i]))
                        continue;
                snprintf(why, sizeof(why), "%s %s", h->what, refusals[kinds[i]]);
                snprintf(id, sizeof(id), "%" PRIu64, m->run.run_id);
                fail(s, why, m->h.type == SPAWNER_RUN ? id : NULL);
                return false;
        }
        return true;
}

/* One request, decoded and in range: in order (its row's flags), its fds what they must be, then
 * its handler. Anything else ends the spawner. */
static void dispatch(Spawner *s, const SpawnerMessage *m, int *fds) {
        const struct Handler *h = handler_of(m->h.type);
        char why[96];

        if (!h)
                return fail(s, "an unknown request", NULL);
        snprintf(why, sizeof(why), "%s out of order", h->what);
        if ((h->flags & ONLY_BEFORE_HELLO) && s->hello)
                return fail(s, m->h.type == SPAWNER_HELLO ? "a second HELLO" : why, NULL);
        if ((h->flags & NEEDS_HELLO) && !s->hello)
                return fail(s, why, "before HELLO");
        if ((h->flags & NOT_AFTER_STOP) && s->stopping)
                return fail(s, why, "after STOP");
        if (!fds_of_kinds(s, h, m, fds))
                return;
        h->handle(s, m, fds);
}

static int on_message(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        Spawner *s = userdata;
        SpawnerReceived rx;
        int r;

        r = spawner_receive(fd, true, &rx);
        if (r == -EAGAIN || r == -EINTR)
                return 0;
        if (r == -EBADMSG) {
                fail(s, spawner_error_name(rx.error), NULL);
                return 0;
        }
        if (r < 0) {
                log_struct_errno(LOG_ERR, -r, NULL, NULL, "the engine's channel: %m");
                (void)set_failed(s);
                spawner_end(s, 1);
                return 0;
        }
        if (r == 0) {
                /* The engine is gone. After its STOP that is the way out; else lockd restarts. */
                if (!s->stopping)
                        log_struct(LOG_ERR, NULL, NULL,
                                   "the engine closed its channel: ending every run and lockd");
                spawner_end(s, s->stopping ? 0 : 1);
                return 0;
        }
        dispatch(s, &rx.m, rx.fds);
        spawner_received_close(&rx);
        return 0;
}

/* The socket and the address NOTIFY_SOCKET names (a path, or "@" for the abstract namespace);
 * none without it. */
static int notify_open(Spawner *s) {
        const char *e = getenv("NOTIFY_SOCKET");
        size_t n;

        s->notify_fd = -1;
        if (!e || (e[0] != '/' && e[0] != '@'))
                return 0;
        n = strlen(e);
        if (n >= sizeof(s->notify_addr.sun_path))
                return -EINVAL;
        s->notify_addr.sun_family = AF_UNIX;
        memcpy(s->notify_addr.sun_path, e, n);
        if (e[0] == '@')
                s->notify_addr.sun_path[0] = 0;
        s->notify_addr_len =
                (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (e[0] == '/' ? 1 : 0));
        s->notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        return s->notify_fd < 0 ? negative_errno() : 0;
}

/*
 * The engine died (its pidfd is readable). Whoever still holds the channel (a child of the
 * engine's that kept fd 5), the spawner ends as at EOF: no engine, no runs. Its status is read
 * without reaping it (spawner-run.c reaps) and said in the log.
 */
static int on_engine_gone(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        Spawner *s = userdata;
        siginfo_t si = {};
        bool clean;

        s->engine_source = sd_event_source_disable_unref(s->engine_source);
        if (waitid((idtype_t)P_PIDFD, (id_t)fd, &si, WEXITED | WNOWAIT | WNOHANG) < 0)
                si.si_pid = 0;
        clean = s->stopping && si.si_pid != 0 && si.si_code == CLD_EXITED && si.si_status == 0;
        if (!clean && si.si_pid != 0 && si.si_code == CLD_EXITED)
                log_struct(LOG_ERR, NULL, NULL,
                           "the engine (pid %d) exited with status %d: ending every run and "
                           "lockd",
                           (int)s->engine_pid, si.si_status);
        else if (!clean && si.si_pid != 0)
                log_struct(LOG_ERR, NULL, NULL,
                           "the engine (pid %d) was killed by signal %d (SIG%s%s): ending every "
                           "run and lockd",
                           (int)s->engine_pid, si.si_status,
                           sigabbrev_np(si.si_status) ? sigabbrev_np(si.si_status) : "?",
                           si.si_code == CLD_DUMPED ? ", core dumped" : "");
        else if (!clean)
                log_struct(LOG_ERR, NULL, NULL,
                           "the engine (pid %d) ended: ending every run and lockd",
                           (int)s->engine_pid);
        spawner_end(s, clean ? 0 : 1);
        return 0;
}

int spawner_watch_engine(Spawner *s, int pidfd) {
        if (!s || pidfd < 0)
                return -EINVAL;
        return sd_event_add_io(s->event, &s->engine_source, pidfd, EPOLLIN, on_engine_gone, s);
}

int spawner_new(sd_event *e, const SpawnerConfig *cfg, ScopeManager *scope, int fd,
                pid_t engine_pid, Spawner **ret) {
        _cleanup_close_ int owned = fd;
        struct timeval tv = {.tv_sec = SEND_TIMEOUT_SEC};
        Spawner *s;
        int r;

        if (!e || !cfg || fd < 0 || engine_pid <= 0 || !ret)
                return -EINVAL;
        /* A table that names a type twice or not at all is the build's fault: nothing is served. */
        if (!spawner_handlers_valid(NULL))
                return -EPROTO;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->event = sd_event_ref(e);
        s->fd = TAKE_FD(owned);
        pthread_mutex_init(&s->lock, NULL);
        s->notify_fd = -1;
        s->fail_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        r = s->fail_fd < 0 ? negative_errno() : notify_open(s);
        if (r < 0) {
                spawner_free(s);
                return r;
        }
        s->engine_pid = engine_pid;
        s->scope = scope;
        s->cfg = *cfg;
        /* What the engine may have in flight: the pool's workers and its queue. */
        s->runs_max = cfg->pool.workers + cfg->pool.queue_max;
        s->cache_max = (size_t)s->runs_max + SPAWNER_CACHE_SPARE;
        s->run_ids = calloc(s->runs_max, sizeof(*s->run_ids));
        s->cache = calloc(s->cache_max, sizeof(*s->cache));
        if (!s->run_ids || !s->cache) {
                spawner_free(s);
                return -ENOMEM;
        }
        if (setsockopt(s->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0) {
                r = negative_errno();
                spawner_free(s);
                return r;
        }
        r = run_pool_new(e, &cfg->pool, scope, &s->pool);
        if (r >= 0)
                r = sd_event_add_io(e, &s->io, s->fd, EPOLLIN, on_message, s);
        if (r >= 0)
                r = sd_event_add_io(e, &s->fail_source, s->fail_fd, EPOLLIN, on_worker_failed, s);
        if (r < 0) {
                spawner_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

Spawner *spawner_free(Spawner *s) {
        if (!s)
                return NULL;
        (void)set_failed(s); /* no reply any more, from the loop or a worker */
        s->io = sd_event_source_disable_unref(s->io);
        s->fail_source = sd_event_source_disable_unref(s->fail_source);
        s->drain_check = sd_event_source_disable_unref(s->drain_check);
        s->drain_deadline = sd_event_source_disable_unref(s->drain_deadline);
        s->engine_source = sd_event_source_disable_unref(s->engine_source);
        s->cache_timer = sd_event_source_disable_unref(s->cache_timer);
        /* The last state the engine reported still goes (it may be STOPPING). */
        notify_flush(s);
        s->notify_timer = sd_event_source_disable_unref(s->notify_timer);
        safe_close(s->notify_fd);
        s->pool = run_pool_free(s->pool);
        while (s->checks) {
                Check *c = s->checks;
                s->checks = c->next;
                confinement_check_free(c->check);
                safe_close(c->pidfd);
                free(c);
        }
        for (size_t i = 0; s->cache && i < s->n_cache; i++) {
                sandbox_free(s->cache[i].sandbox);
                safe_close(s->cache[i].key_fd);
        }
        free(s->cache);
        free(s->run_ids);
        safe_close(s->fail_fd);
        safe_close(s->fd);
        pthread_mutex_destroy(&s->lock);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}

uint64_t spawner_nofile_need(unsigned workers, unsigned standby_max) {
        uint64_t runs_max = (uint64_t)workers + SPAWNER_RUNS_MAX((uint64_t)workers);
        uint64_t children = (uint64_t)workers + (uint64_t)STANDBY_CLASSES_MAX * standby_max;
        uint64_t cached = runs_max + SPAWNER_CACHE_SPARE;

        return SPAWNER_NOFILE_BASE + (SPAWNER_FDS_MAX + 1) + SPAWNER_CHECKS_MAX +
               runs_max * SPAWNER_NOFILE_PER_QUEUED_RUN + children * SPAWNER_NOFILE_PER_CHILD +
               cached * SPAWNER_NOFILE_PER_CACHED;
}

bool spawner_engine_ready(const Spawner *s) {
        return s && s->hello;
}

unsigned spawner_n_runs(const Spawner *s) {
        unsigned n;

        if (!s)
                return 0;
        pthread_mutex_lock((pthread_mutex_t *)&s->lock);
        n = s->n_runs;
        pthread_mutex_unlock((pthread_mutex_t *)&s->lock);
        return n;
}
