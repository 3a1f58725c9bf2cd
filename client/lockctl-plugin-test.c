/*
 * lockctl plugin test: a plugin directory run offline under lockd's own sandbox, on one fixture
 * (optionally checked against an expected answer) or on every fixture of fixtures/one/ and
 * fixtures/zero/ (ARCHITECTURE.md "Testing a plugin").
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <systemd/sd-event.h>

#include "config.h"
#include "escape.h"
#include "fd-util.h"
#include "inputs.h"
#include "lockctl-console.h"
#include "lockctl-plugin.h"
#include "lockctl.h"
#include "macro.h"
#include "manifest.h"
#include "oom-watch.h"
#include "runner.h"
#include "sandbox.h"
#include "scope.h"
#include "uidpool.h"

#define FIXTURE_BYTES_MAX     (1024 * MiB)
#define INPUTS_FILE_BYTES_MAX (64 * 1024) /* a NAME.inputs.json or --inputs file */
#define INPUTS_SUFFIX         ".inputs.json"
#define FIXTURES_MAX          1024 /* per answer directory */
#define VALUES_MAX            64   /* --input arguments */
#define STDERR_SHOW_MAX       (64 * 1024) /* --stderr: bytes of a run's stderr kept and shown */

/* --scope: the slice lockd uses, the wait for the start job, and the limits beyond the manifest. */
#define SCOPE_SLICE           "lockd-plugins.slice"
#define SCOPE_WAIT_USEC       (10 * 1000000ULL)
#define SCOPE_TASKS_MAX       513 /* the plugin and the 512 threads its RLIMIT_NPROC leaves it */
#define SCOPE_RUNTIME_EXTRA_S 5   /* RuntimeMaxUSec= is the manifest's timeout plus this */

/* Drops a reference and returns NULL, for "o = json_drop(o)". */
static json_t *json_drop(json_t *o) {
        json_decref(o);
        return NULL;
}

/*
 * The values of a plugin's inputs as given (--input NAME=VALUE, --inputs FILE, or a fixture's
 * NAME.inputs.json), before they are checked against the manifest.
 */
typedef struct Values {
        const char *name[VALUES_MAX];
        const char *value[VALUES_MAX];
        size_t n;
        json_t *owner; /* holds the strings of a JSON file */
} Values;

static void values_done(Values *v) {
        v->owner = json_drop(v->owner);
        v->n = 0;
}

/*
 * Parses a JSON object of strings (an inputs file) into v. 0, or -EINVAL with the reason in why.
 * Duplicate keys and non-string values are refused: the file stands for what a human would type.
 */
static int values_from_json(Values *v, const char *buf, size_t len, char *why, size_t why_size) {
        json_error_t err;
        const char *key;
        json_t *value;

        v->owner = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
        if (!v->owner) {
                snprintf(why, why_size, "not JSON: %s (%d:%d)", err.text, err.line, err.column);
                return -EINVAL;
        }
        if (!json_is_object(v->owner)) {
                snprintf(why, why_size, "not a JSON object of input names and values");
                return -EINVAL;
        }
        json_object_foreach(v->owner, key, value) {
                if (!json_is_string(value)) {
                        snprintf(why, why_size, "the value of '%s' is not a string", key);
                        return -EINVAL;
                }
                if (v->n >= VALUES_MAX) {
                        snprintf(why, why_size, "more than %d values", VALUES_MAX);
                        return -EINVAL;
                }
                v->name[v->n] = key;
                v->value[v->n++] = json_string_value(value);
        }
        return 0;
}

/*
 * Builds the canonical fd-6 JSON from v: every input the manifest declares given exactly once,
 * nothing undeclared; source names the inputs file, NULL for the command line. 0 with *ret (NULL
 * for a manifest without inputs); -EINVAL for a usage error and -EDOM for a value that does not fit
 * its input's kind or max_bytes (input_invalid), both with the reason in why, which never holds the
 * value: it may be a secret a human typed.
 */
static int values_to_inputs(const Manifest *m, const Values *v, const char *source, char **ret,
                            char *why, size_t why_size) {
        const char *given[MANIFEST_INPUTS_MAX] = {};
        size_t bad = 0;
        int r;

        if (m->n_inputs == 0) {
                if (v->n > 0) {
                        snprintf(why, why_size, "the manifest declares no inputs");
                        return -EINVAL;
                }
                *ret = NULL;
                return 0;
        }
        for (size_t i = 0; i < v->n; i++) {
                const ManifestInput *in = manifest_find_input(m, v->name[i]);
                size_t k;

                if (!in) {
                        snprintf(why, why_size, "the manifest declares no input '%s'", v->name[i]);
                        return -EINVAL;
                }
                k = (size_t)(in - m->inputs);
                if (given[k]) {
                        snprintf(why, why_size, "input '%s' given twice", v->name[i]);
                        return -EINVAL;
                }
                given[k] = v->value[i];
        }
        r = inputs_canonical_json(m, given, ret, &bad);
        if (r == -ENOENT) {
                if (source)
                        snprintf(why, why_size, "%s: no value for input '%s'", source,
                                 m->inputs[bad].name);
                else
                        snprintf(why, why_size, "missing --input %s=VALUE", m->inputs[bad].name);
                return -EINVAL;
        }
        if (r == -EINVAL) {
                snprintf(why, why_size,
                         "input_invalid: the value of '%s' is not a valid %s of at most %u bytes",
                         m->inputs[bad].name, input_kind_name(m->inputs[bad].kind),
                         m->inputs[bad].max_bytes);
                return -EDOM;
        }
        if (r < 0) {
                snprintf(why, why_size, "%s", strerror(-r));
                return r;
        }
        return 0;
}

/*
 * --scope: the run inside a transient scope of a systemd manager, through the daemon's own code
 * (daemon/sandbox/scope.c): an sd-event loop in a helper thread owns the connection, and the
 * runner's start hook waits there for the scope, as the spawner's run-pool workers wait for its
 * main loop (daemon/spawner/runpool.c). One loop serves every run of the command; each run gets a
 * unit of its own.
 */
typedef struct ScopeRun {
        pthread_t thread;
        sd_event *event;
        ScopeManager *manager;
        int quit_fd, ready_fd;
        int error; /* of the loop thread: connecting, or the loop itself */
        const char *bus;
        char unit[64];
        unsigned n_units;
        ScopeLimits limits;
        OomWatch *watch;
        int start_error;
} ScopeRun;

static int scope_run_on_quit(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static void *scope_run_loop(void *userdata) {
        ScopeRun *s = userdata;
        ScopeConfig cfg = {.bus = s->bus, .slice = SCOPE_SLICE};
        uint64_t one = 1;
        int r;

        r = sd_event_new(&s->event);
        if (r >= 0)
                r = scope_manager_new(s->event, &cfg, &s->manager);
        if (r >= 0)
                r = sd_event_add_io(s->event, NULL, s->quit_fd, EPOLLIN, scope_run_on_quit, s);
        s->error = r < 0 ? r : 0;
        (void)loop_write(s->ready_fd, &one, sizeof(one));
        if (r >= 0) {
                r = sd_event_loop(s->event);
                s->error = r < 0 ? r : 0;
        }
        /* Frees the manager on its own thread; queued kills are still sent. */
        s->manager = scope_manager_free(s->manager);
        s->event = sd_event_unref(s->event);
        return NULL;
}

/* Connects to the manager (bus "user", or $LOCKD_SCOPE_BUS) from a new loop thread. */
static int scope_run_start(ScopeRun *s, const SandboxLimits *l) {
        uint64_t v;
        int r;

        s->bus = getenv("LOCKD_SCOPE_BUS");
        if (!s->bus || !s->bus[0])
                s->bus = "user";
        s->limits = (ScopeLimits){
                .memory_max = l->memory_bytes,
                .tasks_max = SCOPE_TASKS_MAX,
                .runtime_max_usec = (l->timeout_s + SCOPE_RUNTIME_EXTRA_S) * 1000000ULL,
        };
        s->quit_fd = eventfd(0, EFD_CLOEXEC);
        s->ready_fd = eventfd(0, EFD_CLOEXEC);
        if (s->quit_fd < 0 || s->ready_fd < 0)
                return negative_errno();
        r = pthread_create(&s->thread, NULL, scope_run_loop, s);
        if (r != 0)
                return -r;
        if (loop_read(s->ready_fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
                s->error = -EIO;
        if (s->error < 0) {
                (void)pthread_join(s->thread, NULL);
                return s->error;
        }
        return 0;
}

/* Names the next run's unit: lockctl-test-PID-N.scope, N counting the command's runs from 0. */
static void scope_run_next(ScopeRun *s) {
        snprintf(s->unit, sizeof(s->unit), "lockctl-test-%d-%u.scope", (int)getpid(), s->n_units++);
        s->start_error = 0;
        s->watch = oom_watch_free(s->watch);
}

/* Stops the loop thread (after it sent what was queued) and frees what the runs held. */
static void scope_run_stop(ScopeRun *s) {
        uint64_t one = 1;

        (void)loop_write(s->quit_fd, &one, sizeof(one));
        (void)pthread_join(s->thread, NULL);
        s->watch = oom_watch_free(s->watch);
}

static void scope_run_close(ScopeRun *s) {
        s->quit_fd = safe_close(s->quit_fd);
        s->ready_fd = safe_close(s->ready_fd);
}

/* The runner's start hook: the child waits until it is in its scope, or ends. */
static int scope_run_hook(pid_t pid, int pidfd, void *userdata) {
        ScopeRun *s = userdata;

        s->start_error = scope_start_wait(s->manager, s->unit, pid, &s->limits, SCOPE_WAIT_USEC);
        if (s->start_error < 0)
                return s->start_error;
        /* Without a memory cgroup to watch, an OOM kill reads as signal:SIGKILL: no failure. */
        (void)oom_watch_new(pid, &s->watch);
        return 0;
}

static bool scope_run_oom(void *userdata) {
        ScopeRun *s = userdata;

        return s->watch && oom_watch_fired(s->watch);
}

/* The scope's peak: the plugin's own memory, not lockctl's (runner.h). */
static int scope_run_peak(void *userdata, uint64_t *ret) {
        ScopeRun *s = userdata;

        return s->watch ? oom_watch_peak(s->watch, ret) : -ENOENT;
}

/*
 * --stderr: the run's output read here instead of by the runner, which then only waits for the
 * plugin's end (RunFds, as lockd's engine reads it): a thread drains the three pipes while
 * runner_run() waits, keeps what the runner would (the answer's first bytes, the detail) and the
 * first STDERR_SHOW_MAX bytes of stderr for the author. lockd itself still discards stderr.
 */
typedef struct OutputReader {
        pthread_t thread;
        int out_fd, err_fd, det_fd; /* read ends, non-blocking; det_fd -1 without detail */
        uint8_t out[RUN_STDOUT_KEEP];
        size_t out_len;
        uint64_t out_total;
        uint8_t err[STDERR_SHOW_MAX];
        size_t err_len;
        uint64_t err_total;
        uint8_t detail[RUN_DETAIL_MAX];
        size_t detail_len;
        uint64_t detail_total;
} OutputReader;

/* Drains the pipes until every write end is closed (the plugin reaped, our copies gone). */
static void *output_reader_loop(void *userdata) {
        OutputReader *o = userdata;
        bool out_open = true, err_open = true, det_open = o->det_fd >= 0;

        while (out_open || err_open || det_open) {
                struct pollfd p[3] = {
                        {.fd = out_open ? o->out_fd : -1, .events = POLLIN},
                        {.fd = err_open ? o->err_fd : -1, .events = POLLIN},
                        {.fd = det_open ? o->det_fd : -1, .events = POLLIN},
                };

                if (poll(p, 3, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (out_open && p[0].revents)
                        out_open = run_drain(o->out_fd, o->out, sizeof(o->out), &o->out_len,
                                             &o->out_total);
                if (err_open && p[1].revents)
                        err_open = run_drain(o->err_fd, o->err, sizeof(o->err), &o->err_len,
                                             &o->err_total);
                if (det_open && p[2].revents)
                        det_open = run_drain(o->det_fd, o->detail, sizeof(o->detail),
                                             &o->detail_len, &o->detail_total);
        }
        return NULL;
}

/* Prints a run's kept stderr for the author, each line escaped (a plugin's bytes). */
static void print_stderr(const char *what, const uint8_t *buf, size_t len, uint64_t total) {
        fprintf(stderr, "stderr%s%s (%" PRIu64 " bytes%s; lockd discards it):\n",
                what ? " of " : "", what ? what : "", total,
                total > len ? ", the first 64 KiB shown" : "");
        for (size_t i = 0; i < len;) {
                const uint8_t *nl = memchr(buf + i, '\n', len - i);
                size_t n = nl ? (size_t)(nl - (buf + i)) : len - i;
                _cleanup_free_ char *esc = escape_bytes(buf + i, n);

                fprintf(stderr, "  | %s\n", esc ? esc : "(out of memory)");
                i += n + (nl ? 1 : 0);
        }
}

/* One command's plugin, loaded once and run on each fixture. */
typedef struct Tester {
        const char *dir;
        int dirfd;
        Manifest *m;
        Sandbox *sb;
        SandboxSpec spec;
        UidPool pool;
        bool drop_to_uid;
        bool use_scope, scope_started;
        ScopeRun scope;
        bool json;
        bool show_stderr;     /* --stderr */
        OutputReader *output; /* with --stderr: the last run's output */
} Tester;

static void tester_done(Tester *t) {
        if (t->scope_started)
                scope_run_stop(&t->scope);
        scope_run_close(&t->scope);
        if (t->drop_to_uid)
                uid_pool_done(&t->pool);
        t->sb = sandbox_free(t->sb);
        t->m = manifest_free(t->m);
        t->dirfd = safe_close(t->dirfd);
        free(t->output);
        t->output = NULL;
}

/*
 * Loads DIR's manifest and the plugin (DIR/plugin, or binary) into a sandbox, and connects to the
 * manager for --scope. Prints its own errors. 0 or LOCKCTL_EXIT_USAGE.
 */
static int tester_init(Tester *t, const char *binary) {
        _cleanup_close_ int bin = -1;
        int r;

        t->dirfd = open(t->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (t->dirfd < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", t->dir, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        /* stdout is the answer's line only: a manifest error goes to stderr here. */
        r = plugin_load_manifest(t->dirfd, t->dir, &t->m, stderr, LOCKCTL_EXIT_USAGE);
        if (r != 0)
                return r;

        if (binary)
                bin = open(binary, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        else
                bin = openat(t->dirfd, "plugin", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (bin < 0) {
                if (binary)
                        fprintf(stderr, "lockctl: %s: %s\n", binary, strerror(errno));
                else
                        fprintf(stderr, "lockctl: %s/plugin: %s\n", t->dir, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        t->spec = (SandboxSpec){
                .protocol = t->m->protocol,
                .inputs = t->m->n_inputs > 0,
                .detail = t->m->detail,
                .limits = {.cpu_s = t->m->cpu_s,
                           .memory_bytes = t->m->memory_bytes,
                           .timeout_s = t->m->timeout_s},
        };
        r = sandbox_new(bin, &t->spec, &t->sb);
        if (r < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", binary ? binary : "plugin",
                        sandbox_strerror(r));
                return LOCKCTL_EXIT_USAGE;
        }

        if (geteuid() == 0) {
                /* As root the plugin gets an ephemeral uid of the default range, as under lockd. */
                r = uid_pool_init(&t->pool, LOCKD_UID_MIN_DEFAULT, LOCKD_UID_MAX_DEFAULT);
                if (r < 0) {
                        fprintf(stderr, "lockctl: uid range: %s\n", strerror(-r));
                        return LOCKCTL_EXIT_USAGE;
                }
                t->pool.next =
                        t->pool.min + (uid_t)((unsigned)getpid() % (t->pool.max - t->pool.min + 1));
                t->drop_to_uid = true;
        }

        if (t->use_scope) {
                /* No manager, no run: like lockd, never a silent fallback to no scope. */
                r = scope_run_start(&t->scope, &t->spec.limits);
                if (r < 0) {
                        fprintf(stderr, "lockctl: --scope: cannot use the manager at '%s': %s\n",
                                t->scope.bus, strerror(-r));
                        return LOCKCTL_EXIT_USAGE;
                }
                t->scope_started = true;
        }
        return 0;
}

static void close_pair(int p[2]) {
        p[0] = safe_close(p[0]);
        p[1] = safe_close(p[1]);
}

/*
 * --stderr: runner_run() with the output read by an OutputReader (t->output, kept for the
 * caller), then classified as the runner would. Same returns as runner_run().
 */
static int run_reading_output(Tester *t, RunParams *p, RunResult *ret) {
        _cleanup_close_ int inputs_mfd = -1, inputs_ro = -1;
        int out[2] = {-1, -1}, err[2] = {-1, -1}, det[2] = {-1, -1};
        RunExit e = {};
        RunFds fds;
        OutputReader *o = t->output;
        RunResult res = {};
        int r;

        if (!o) {
                o = t->output = malloc(sizeof(*o));
                if (!o)
                        return -ENOMEM;
        }
        *o = (OutputReader){.det_fd = -1};
        if (t->spec.inputs) {
                inputs_mfd = memfd_from_buffer(p->inputs_json, p->inputs_len, "lockd-inputs");
                if (inputs_mfd < 0)
                        return inputs_mfd;
                inputs_ro = fd_reopen_readonly(inputs_mfd);
                if (inputs_ro < 0)
                        return inputs_ro;
        }
        if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
            (t->spec.detail && pipe2(det, O_CLOEXEC) < 0)) {
                r = negative_errno();
                goto finish;
        }
        for (int *fd = (int[]){out[0], err[0], det[0], -1}; *fd >= 0; fd++)
                (void)fcntl(*fd, F_SETFL, O_NONBLOCK);
        o->out_fd = out[0];
        o->err_fd = err[0];
        o->det_fd = det[0];
        r = -pthread_create(&o->thread, NULL, output_reader_loop, o);
        if (r < 0)
                goto finish;
        fds = (RunFds){.inputs_fd = inputs_ro,
                       .stdout_fd = out[1],
                       .stderr_fd = err[1],
                       .detail_fd = det[1],
                       .exit = &e};
        p->fds = &fds;
        r = runner_run(t->sb, p, &res);
        p->fds = NULL;
        /* Our write ends go: once the plugin is reaped, the reader sees EOF on each pipe. */
        out[1] = safe_close(out[1]);
        err[1] = safe_close(err[1]);
        det[1] = safe_close(det[1]);
        (void)pthread_join(o->thread, NULL);
        if (r < 0)
                goto finish;
        /* A run that reached the plugin is classified here; a spawn failure already is. */
        if (res.cause != RUN_CAUSE_SPAWN)
                run_classify(o->out, o->out_len, o->out_total, &e, &res);
        res.stderr_bytes = o->err_total;
        memcpy(res.detail, o->detail, o->detail_len);
        res.detail_len = o->detail_len;
        res.detail_total = o->detail_total;
        *ret = res;
finish:
        close_pair(out);
        close_pair(err);
        close_pair(det);
        return r;
}

/*
 * Runs the plugin once on a sealed snapshot of fixture_fd (as lockd snapshots a granted file)
 * with inputs as fd 6. 0 with *ret filled; a negative errno when the run could not happen, with
 * the step that failed in why.
 */
static int tester_run(Tester *t, int fixture_fd, const char *inputs, RunResult *ret, char *why,
                      size_t why_size) {
        _cleanup_close_ int snap = -1, input = -1;
        RunParams p = {};
        int r;

        snap = memfd_snapshot(fixture_fd, "lockd-input", FIXTURE_BYTES_MAX, false);
        if (snap < 0) {
                snprintf(why, why_size, "cannot snapshot the fixture: %s", strerror(-snap));
                return snap;
        }
        input = fd_reopen_readonly(snap);
        if (input < 0) {
                snprintf(why, why_size, "cannot snapshot the fixture: %s", strerror(-input));
                return input;
        }

        p.input_fd = input;
        p.inputs_json = inputs;
        p.inputs_len = inputs ? strlen(inputs) : 0;
        if (t->drop_to_uid) {
                r = uid_pool_acquire(&t->pool, &p.uid);
                if (r < 0) {
                        snprintf(why, why_size, "no free uid: %s", strerror(-r));
                        return r;
                }
                p.gid = (gid_t)p.uid;
                p.drop_to_uid = true;
        }
        if (t->use_scope) {
                scope_run_next(&t->scope);
                p.start_hook = scope_run_hook;
                p.start_hook_userdata = &t->scope;
                p.oom_check = scope_run_oom;
                p.oom_check_userdata = &t->scope;
                p.peak_check = scope_run_peak;
        }

        if (t->show_stderr)
                r = run_reading_output(t, &p, ret);
        else
                r = runner_run(t->sb, &p, ret);
        if (t->drop_to_uid)
                uid_pool_release(&t->pool, p.uid);
        /* lockd's timeout killed the plugin; the unit goes too, whatever it still holds. */
        if (t->use_scope && r == 0 && ret->cause == RUN_CAUSE_TIMEOUT)
                (void)scope_kill(t->scope.manager, t->scope.unit);
        if (r < 0) {
                snprintf(why, why_size, "cannot run the plugin: %s", strerror(-r));
                return r;
        }
        return 0;
}

/* The run as one JSON object: what print_result() shows. expect is NULL without --expect. */
static json_t *result_json(const RunResult *res, const char *expect) {
        /* The detail escaped as print_result() shows it: the plugin's bytes need not be UTF-8. */
        _cleanup_free_ char *esc =
                res->detail_total > 0 ? escape_bytes(res->detail, res->detail_len) : NULL;
        const char *outcome = run_outcome_name(res->outcome);
        char cause[64];
        json_t *o;

        o = json_pack("{s:s, s:s?, s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:s?, s:I}", "outcome",
                      outcome, "cause",
                      res->outcome == RUN_PLUGIN_ERROR ? run_cause_format(res, cause, sizeof(cause))
                                                       : NULL,
                      "uid", (int)res->uid, "landlock_abi", res->landlock_abi, "cpu_usec",
                      (json_int_t)res->cpu_usec, "wall_usec", (json_int_t)res->wall_usec,
                      "setup_usec", (json_int_t)res->setup_usec, "stdout_bytes",
                      (json_int_t)res->stdout_bytes, "stderr_bytes", (json_int_t)res->stderr_bytes,
                      "detail", esc, "detail_bytes", (json_int_t)res->detail_total);
        /* Absent when unknown (runner.h): never lockctl's own size passed off as the plugin's. */
        if (o && res->peak_rss_bytes > 0 &&
            json_object_set_new(o, "peak_memory_bytes",
                                json_integer((json_int_t)res->peak_rss_bytes)) < 0)
                o = json_drop(o);
        if (o && expect &&
            (json_object_set_new(o, "expect", json_string(expect)) < 0 ||
             json_object_set_new(o, "ok", json_boolean(strcmp(outcome, expect) == 0)) < 0))
                o = json_drop(o);
        return o;
}

static void print_result(const RunResult *res) {
        char cause[64], peak[32] = "unknown";

        printf("%s\n", run_outcome_name(res->outcome));
        fflush(stdout);
        if (res->outcome == RUN_PLUGIN_ERROR)
                fprintf(stderr, "cause: %s\n", run_cause_format(res, cause, sizeof(cause)));
        if (res->peak_rss_bytes > 0)
                snprintf(peak, sizeof(peak), "%.1f MiB", res->peak_rss_bytes / (double)MiB);
        fprintf(stderr,
                "uid: %u, landlock abi: %d, cpu: %.3f s, peak memory: %s, wall: %.3f s "
                "(from execve; %.3f s before it), stdout: %" PRIu64 " bytes, stderr: %" PRIu64
                " bytes (discarded)\n",
                (unsigned)res->uid, res->landlock_abi, res->cpu_usec / 1e6, peak,
                res->wall_usec / 1e6, res->setup_usec / 1e6, res->stdout_bytes, res->stderr_bytes);
        if (res->detail_total > 0) {
                _cleanup_free_ char *esc = escape_bytes(res->detail, res->detail_len);
                fprintf(stderr, "detail (shown here only%s): %s\n",
                        res->detail_total > res->detail_len ? ", first 4 KiB" : "",
                        esc ? esc : "(out of memory)");
        }
}

/* Reads an inputs file (at most 64 KiB) into v. 0, or -EINVAL/-errno with the reason in why. */
static int values_from_file(Values *v, int atfd, const char *path, char *why, size_t why_size) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        fd = openat(atfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                snprintf(why, why_size, "%s: %s", path, strerror(errno));
                return negative_errno();
        }
        r = read_full_fd(fd, INPUTS_FILE_BYTES_MAX, &buf, &len);
        if (r < 0) {
                snprintf(why, why_size, "%s: %s", path,
                         r == -EFBIG ? "larger than 64 KiB" : strerror(-r));
                return r;
        }
        return values_from_json(v, buf, len, why, why_size);
}

/* One fixture's verdict under --fixtures. */
typedef struct Verdict {
        char fixture[PATH_MAX];
        const char *expect;
        const char *outcome; /* 1, 0, plugin_error, or NULL when it could not run */
        char cause[64];
        char error[512]; /* why it could not run */
        bool ok;
        bool have_result;
        RunResult res;
} Verdict;

static bool has_suffix(const char *s, const char *suffix) {
        size_t n = strlen(s), k = strlen(suffix);

        return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* A fixture's name, or its inputs file's: anything not hidden ("." and ".." included). */
static bool not_hidden(const char *name) {
        return name[0] != '.';
}

/*
 * Lists the fixtures of fixtures/SUB (files not starting with '.', sorted by name, at most
 * FIXTURES_MAX). An inputs file must sit beside a fixture of its name. 0 with a new array; a
 * negative errno with the reason in why.
 */
static int fixtures_list(int subfd, const char *sub, char ***ret, size_t *ret_n, char *why,
                         size_t why_size) {
        char **names = NULL;
        size_t n = 0;
        int r;

        r = dir_names_sorted(subfd, not_hidden, FIXTURES_MAX, &names, &n);
        if (r == -E2BIG)
                snprintf(why, why_size, "fixtures/%s: more than %d files", sub, FIXTURES_MAX);
        if (r < 0)
                return r;

        /* An inputs file without its fixture is a mistake in the directory, not a fixture. */
        for (size_t i = 0; i < n; i++) {
                char base[NAME_MAX + 1];
                size_t len = strlen(names[i]) - strlen(INPUTS_SUFFIX);
                bool found = false;

                if (!has_suffix(names[i], INPUTS_SUFFIX))
                        continue;
                snprintf(base, sizeof(base), "%.*s", (int)len, names[i]);
                for (size_t j = 0; j < n && !found; j++)
                        found = strcmp(names[j], base) == 0;
                if (!found) {
                        snprintf(why, why_size, "fixtures/%s/%s: inputs for no fixture '%s'", sub,
                                 names[i], base);
                        strv_free_n(names, n);
                        return -EINVAL;
                }
        }
        *ret = names;
        *ret_n = n;
        return 0;
}

/* Runs one fixture of fixtures/SUB and fills v. Never fails: a fixture that can not run fails. */
static void fixture_run(Tester *t, int subfd, const char *sub, const char *name, Verdict *v) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *inputs = NULL;
        Values values = {};
        char ipath[NAME_MAX + sizeof(INPUTS_SUFFIX) + 1];
        struct stat st;
        int r;

        *v = (Verdict){.expect = strcmp(sub, "one") == 0 ? "1" : "0"};
        snprintf(v->fixture, sizeof(v->fixture), "%s/%s", sub, name);

        fd = openat(subfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0 || fstat(fd, &st) < 0) {
                snprintf(v->error, sizeof(v->error), "%s", strerror(errno));
                return;
        }
        if (!S_ISREG(st.st_mode)) {
                snprintf(v->error, sizeof(v->error), "not a regular file");
                return;
        }

        snprintf(ipath, sizeof(ipath), "%s%s", name, INPUTS_SUFFIX);
        if (faccessat(subfd, ipath, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
                r = values_from_file(&values, subfd, ipath, v->error, sizeof(v->error));
                if (r < 0)
                        goto done;
        } else if (t->m->n_inputs > 0) {
                snprintf(v->error, sizeof(v->error),
                         "no %s beside it, and the manifest declares inputs", ipath);
                goto done;
        }
        r = values_to_inputs(t->m, &values, ipath, &inputs, v->error, sizeof(v->error));
        if (r == -EDOM) {
                v->outcome = "input_invalid";
                goto done;
        }
        if (r < 0)
                goto done;

        r = tester_run(t, fd, inputs, &v->res, v->error, sizeof(v->error));
        if (r < 0)
                goto done;
        v->have_result = true;
        v->outcome = run_outcome_name(v->res.outcome);
        if (v->res.outcome == RUN_PLUGIN_ERROR)
                run_cause_format(&v->res, v->cause, sizeof(v->cause));
        v->ok = strcmp(v->outcome, v->expect) == 0;
done:
        values_done(&values);
}

/* --stderr with --json: the run's stderr, escaped, as "stderr" in its object. Takes o. */
static json_t *with_stderr(const Tester *t, json_t *o) {
        _cleanup_free_ char *esc = NULL;

        if (!o || !t->show_stderr || !t->output)
                return o;
        esc = escape_bytes(t->output->err, t->output->err_len);
        if (!esc || json_object_set_new(o, "stderr", json_string(esc)) < 0)
                return json_drop(o);
        return o;
}

/* Prints one verdict line: "ok   one/x: 1", or "FAIL zero/y: expected 0, got ...". */
static void verdict_print(const Verdict *v) {
        if (v->ok)
                printf("ok   %s: %s\n", v->fixture, v->outcome);
        else if (v->have_result && v->cause[0])
                printf("FAIL %s: expected %s, got %s (%s)\n", v->fixture, v->expect, v->outcome,
                       v->cause);
        else if (v->have_result)
                printf("FAIL %s: expected %s, got %s\n", v->fixture, v->expect, v->outcome);
        else
                printf("FAIL %s: expected %s, not run: %s\n", v->fixture, v->expect, v->error);
}

static json_t *verdict_json(const Verdict *v) {
        /* "expect" and "ok" are the verdict's, set below for a fixture that ran or not. */
        json_t *o = v->have_result ? result_json(&v->res, NULL) : json_object();

        if (!o)
                return NULL;
        if (json_object_set_new(o, "fixture", json_string(v->fixture)) < 0 ||
            json_object_set_new(o, "expect", json_string(v->expect)) < 0 ||
            json_object_set_new(o, "ok", json_boolean(v->ok)) < 0 ||
            (!v->have_result &&
             json_object_set_new(o, "outcome", v->outcome ? json_string(v->outcome) : json_null()) <
                     0) ||
            (v->error[0] && json_object_set_new(o, "error", json_string(v->error)) < 0))
                return json_drop(o);
        return o;
}

/*
 * --fixtures: every fixture of DIR/fixtures/one (expected 1) and DIR/fixtures/zero (expected 0),
 * with NAME.inputs.json beside a fixture as its inputs. Each answer needs at least one fixture:
 * a plugin's fixtures are for both answers. Exit 0 when every fixture gave its answer, 1 else.
 */
static int fixtures_run(Tester *t) {
        static const char *const subs[] = {"one", "zero"};
        _cleanup_(json_decrefp) json_t *list = t->json ? json_array() : NULL;
        unsigned passed = 0, failed = 0;
        char problems[2][512] = {};
        int subfd[2] = {-1, -1}, ret = LOCKCTL_EXIT_FAIL;
        char **names[2] = {};
        size_t n[2] = {};

        if (t->json && !list)
                return LOCKCTL_EXIT_FAIL;
        /* Both directories are listed before anything runs: a mistake in either is found first. */
        for (size_t s = 0; s < ELEMENTSOF(subs); s++) {
                char path[32], why[512] = "";
                int r;

                snprintf(path, sizeof(path), "fixtures/%s", subs[s]);
                subfd[s] = openat(t->dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (subfd[s] < 0) {
                        fprintf(stderr, "lockctl: %s/%s: %s\n", t->dir, path, strerror(errno));
                        ret = LOCKCTL_EXIT_USAGE;
                        goto out;
                }
                r = fixtures_list(subfd[s], subs[s], &names[s], &n[s], why, sizeof(why));
                if (r < 0) {
                        fprintf(stderr, "lockctl: %s/%s\n", t->dir, why[0] ? why : strerror(-r));
                        ret = LOCKCTL_EXIT_USAGE;
                        goto out;
                }
        }

        for (size_t s = 0; s < ELEMENTSOF(subs); s++) {
                size_t n_fixtures = 0;

                for (size_t i = 0; i < n[s]; i++) {
                        Verdict v;

                        if (has_suffix(names[s][i], INPUTS_SUFFIX))
                                continue;
                        n_fixtures++;
                        fixture_run(t, subfd[s], subs[s], names[s][i], &v);
                        if (v.ok)
                                passed++;
                        else
                                failed++;
                        if (t->json) {
                                json_t *o = verdict_json(&v);

                                if (v.have_result)
                                        o = with_stderr(t, o);
                                if (!o || json_array_append_new(list, o) < 0)
                                        goto out;
                        } else {
                                verdict_print(&v);
                                fflush(stdout);
                                if (t->show_stderr && v.have_result)
                                        print_stderr(v.fixture, t->output->err, t->output->err_len,
                                                     t->output->err_total);
                        }
                }
                if (n_fixtures == 0) {
                        snprintf(problems[s], sizeof(problems[s]),
                                 "fixtures/%s/ holds no fixture: a plugin needs fixtures for "
                                 "both answers",
                                 subs[s]);
                        failed++;
                }
        }

        if (t->json) {
                json_t *msgs = json_array();

                for (size_t s = 0; msgs && s < ELEMENTSOF(subs); s++)
                        if (problems[s][0] &&
                            json_array_append_new(msgs, json_string(problems[s])) < 0)
                                msgs = json_drop(msgs);
                if (!msgs || console_print_json_steal(json_pack(
                                     "{s:O, s:i, s:i, s:o}", "fixtures", list, "passed",
                                     (int)passed, "failed", (int)failed, "errors", msgs)) != 0)
                        goto out;
        } else {
                for (size_t s = 0; s < ELEMENTSOF(subs); s++)
                        if (problems[s][0])
                                printf("FAIL %s\n", problems[s]);
                printf("%u passed, %u failed\n", passed, failed);
        }
        ret = failed == 0 ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
out:
        for (size_t s = 0; s < ELEMENTSOF(subs); s++) {
                strv_free_n(names[s], n[s]);
                safe_close(subfd[s]);
        }
        return ret;
}

/* One fixture, with --input/--inputs values, optionally checked against --expect. */
static int fixture_one(Tester *t, const char *fixture, Values *given, const char *expect) {
        _cleanup_close_ int fix = -1;
        _cleanup_free_ char *inputs = NULL;
        char why[512] = "";
        RunResult res;
        int r;

        r = values_to_inputs(t->m, given, NULL, &inputs, why, sizeof(why));
        if (r == -EDOM && t->json)
                (void)console_print_json_steal(
                        json_pack("{s:s, s:s}", "outcome", "input_invalid", "error", why));
        if (r < 0) {
                fprintf(stderr, "lockctl: %s\n", why);
                return LOCKCTL_EXIT_USAGE;
        }

        fix = open(fixture, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fix < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", fixture, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        r = tester_run(t, fix, inputs, &res, why, sizeof(why));
        if (r < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", fixture, why);
                return LOCKCTL_EXIT_USAGE;
        }
        if (t->json) {
                if (console_print_json_steal(with_stderr(t, result_json(&res, expect))) != 0)
                        return LOCKCTL_EXIT_FAIL;
        } else {
                print_result(&res);
                if (t->show_stderr)
                        print_stderr(NULL, t->output->err, t->output->err_len,
                                     t->output->err_total);
        }
        if (t->use_scope && t->scope.start_error < 0)
                fprintf(stderr, "scope: %s: could not be started through '%s': %s\n", t->scope.unit,
                        t->scope.bus, strerror(-t->scope.start_error));
        else if (t->use_scope)
                fprintf(stderr,
                        "scope: %s in %s (MemoryMax=%" PRIu64 ", TasksMax=%" PRIu64
                        ", RuntimeMaxUSec=%" PRIu64 ")\n",
                        t->scope.unit, SCOPE_SLICE, t->scope.limits.memory_max,
                        t->scope.limits.tasks_max, t->scope.limits.runtime_max_usec);
        if (expect) {
                const char *got = run_outcome_name(res.outcome);

                if (strcmp(got, expect) != 0) {
                        fprintf(stderr, "expected %s, got %s\n", expect, got);
                        return LOCKCTL_EXIT_FAIL;
                }
                return LOCKCTL_EXIT_OK;
        }
        return res.outcome == RUN_PLUGIN_ERROR ? LOCKCTL_EXIT_FAIL : LOCKCTL_EXIT_OK;
}

/* Adds the values of the --inputs file path to given, which takes the file's memory: 0, or
 * LOCKCTL_EXIT_USAGE after saying why. */
static int values_add_file(Values *given, const char *path) {
        Values file = {};
        char why[512] = "";
        int r;

        r = values_from_file(&file, AT_FDCWD, path, why, sizeof(why));
        if (r >= 0 && given->n + file.n > VALUES_MAX) {
                snprintf(why, sizeof(why), "more than %d values", VALUES_MAX);
                r = -E2BIG;
        }
        if (r < 0) {
                fprintf(stderr, "lockctl: --inputs: %s\n", why);
                values_done(&file);
                return LOCKCTL_EXIT_USAGE;
        }
        for (size_t k = 0; k < file.n; k++) {
                given->name[given->n] = file.name[k];
                given->value[given->n++] = file.value[k];
        }
        given->owner = TAKE_PTR(file.owner);
        return 0;
}

int verb_plugin_test(int argc, char **argv) {
        Tester t = {.dirfd = -1, .scope = {.quit_fd = -1, .ready_fd = -1}};
        Values given = {};
        const char *fixture = NULL, *expect = NULL, *binary = NULL, *inputs_file = NULL;
        bool fixtures = false;
        int r;

        t.json = console_take_json(&argc, argv);
        for (int i = 0; i < argc; i++) {
                const char *arg = argv[i];

                if (strcmp(arg, "--scope") == 0) {
                        t.use_scope = true;
                } else if (strcmp(arg, "--stderr") == 0) {
                        t.show_stderr = true;
                } else if (strcmp(arg, "--fixtures") == 0) {
                        fixtures = true;
                } else if (strcmp(arg, "--input") == 0 || strncmp(arg, "--input=", 8) == 0) {
                        char *pair = arg[7] == '=' ? argv[i] + 8 : NULL, *eq;

                        if (!pair && i + 1 < argc)
                                pair = argv[++i];
                        if (!pair || given.n >= VALUES_MAX)
                                goto usage;
                        eq = strchr(pair, '=');
                        if (!eq) {
                                fprintf(stderr, "lockctl: --input takes NAME=VALUE\n");
                                return LOCKCTL_EXIT_USAGE;
                        }
                        *eq = 0;
                        given.name[given.n] = pair;
                        given.value[given.n++] = eq + 1;
                } else if (strcmp(arg, "--inputs") == 0 || strcmp(arg, "--expect") == 0 ||
                           strcmp(arg, "--plugin") == 0) {
                        if (i + 1 >= argc)
                                goto usage;
                        if (strcmp(arg, "--inputs") == 0)
                                inputs_file = argv[++i];
                        else if (strcmp(arg, "--expect") == 0)
                                expect = argv[++i];
                        else
                                binary = argv[++i];
                } else if (arg[0] == '-' && arg[1] != 0) {
                        fprintf(stderr, "lockctl: unknown option '%s'\n", arg);
                        goto usage;
                } else if (!t.dir) {
                        t.dir = arg;
                } else if (!fixture) {
                        fixture = arg;
                } else {
                        goto usage;
                }
        }
        if (!t.dir || (fixtures == !!fixture))
                goto usage;
        if (fixtures && (expect || given.n > 0 || inputs_file)) {
                fprintf(stderr, "lockctl: --fixtures takes each fixture's answer from its "
                                "directory and its inputs from NAME.inputs.json\n");
                return LOCKCTL_EXIT_USAGE;
        }
        if (expect && strcmp(expect, "1") != 0 && strcmp(expect, "0") != 0) {
                fprintf(stderr, "lockctl: --expect takes 1 or 0\n");
                return LOCKCTL_EXIT_USAGE;
        }
        if (inputs_file) {
                r = values_add_file(&given, inputs_file);
                if (r != 0)
                        return r;
        }

        r = tester_init(&t, binary);
        if (r == 0)
                r = fixtures ? fixtures_run(&t) : fixture_one(&t, fixture, &given, expect);
        tester_done(&t);
        values_done(&given);
        return r;

usage:
        fprintf(stderr, "usage: lockctl plugin test DIR FIXTURE [--input NAME=VALUE]... "
                        "[--inputs FILE] [--expect 1|0] [--plugin FILE] [--scope] [--stderr] "
                        "[--json]\n"
                        "       lockctl plugin test DIR --fixtures [--plugin FILE] [--scope] "
                        "[--stderr] [--json]\n");
        values_done(&given);
        return LOCKCTL_EXIT_USAGE;
}
