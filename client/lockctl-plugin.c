/* lockctl plugin test|lint: a plugin directory checked and run offline, under lockd's own sandbox.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-event.h>

#include "oom-watch.h"
#include "config.h"
#include "escape.h"
#include "fd-util.h"
#include "inputs.h"
#include "lockctl-console.h"
#include "lockctl.h"
#include "macro.h"
#include "manifest.h"
#include "runner.h"
#include "sandbox.h"
#include "scope.h"
#include "uidpool.h"

#define FIXTURE_BYTES_MAX (1024 * MiB)

/* --scope: the slice lockd uses, the wait for the start job, and the limits beyond the manifest. */
#define SCOPE_SLICE           "lockd-plugins.slice"
#define SCOPE_WAIT_USEC       (10 * 1000000ULL)
#define SCOPE_TASKS_MAX       513 /* the plugin and the 512 threads its RLIMIT_NPROC leaves it */
#define SCOPE_RUNTIME_EXTRA_S 5   /* RuntimeMaxUSec= is the manifest's timeout plus this */

/* Reads and validates DIR/plugin.toml; prints the error itself. 0 or LOCKCTL_EXIT_*. */
static int load_manifest(int dirfd, const char *dir, Manifest **ret, FILE *diag_out, int err_exit) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        ManifestDiag diag = {};
        size_t len;
        int r;

        fd = openat(dirfd, "plugin.toml", O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        if (fd < 0) {
                fprintf(stderr, "lockctl: %s/plugin.toml: %s\n", dir, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        r = read_full_fd(fd, MANIFEST_BYTES_MAX, &buf, &len);
        if (r == -EFBIG) {
                fprintf(diag_out, "error: %s: plugin.toml is larger than %d bytes (1:1)\n",
                        manifest_error_name(E_MANIFEST_TOO_LARGE), MANIFEST_BYTES_MAX);
                return err_exit;
        }
        if (r < 0) {
                fprintf(stderr, "lockctl: %s/plugin.toml: %s\n", dir, strerror(-r));
                return LOCKCTL_EXIT_USAGE;
        }
        r = manifest_parse(buf, len, ret, &diag);
        if (r == -EINVAL) {
                fprintf(diag_out, "error: %s: %s (%u:%u)\n", manifest_error_name(diag.code),
                        diag.message, diag.line, diag.column);
                return err_exit;
        }
        if (r < 0) {
                fprintf(stderr, "lockctl: %s/plugin.toml: %s\n", dir, strerror(-r));
                return LOCKCTL_EXIT_USAGE;
        }
        return 0;
}

static int verb_plugin_lint(int argc, char **argv) {
        _cleanup_(manifest_freep) Manifest *m = NULL;
        _cleanup_close_ int dirfd = -1;
        _cleanup_free_ char *diag = NULL;
        bool json = console_take_json(&argc, argv);
        size_t diag_len = 0;
        FILE *out;
        int r;

        if (argc != 1) {
                fprintf(stderr, "usage: lockctl plugin lint DIR [--json]\n");
                return LOCKCTL_EXIT_USAGE;
        }
        dirfd = open(argv[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", argv[0], strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        if (!json) {
                r = load_manifest(dirfd, argv[0], &m, stdout, LOCKCTL_EXIT_FAIL);
                if (r != 0)
                        return r;
                printf("ok\n");
                return LOCKCTL_EXIT_OK;
        }
        /* --json: the same verdict, the error line as lint prints it, as {"ok", "error"}. */
        out = open_memstream(&diag, &diag_len);
        if (!out)
                return LOCKCTL_EXIT_FAIL;
        r = load_manifest(dirfd, argv[0], &m, out, LOCKCTL_EXIT_FAIL);
        fclose(out);
        if (r == LOCKCTL_EXIT_USAGE)
                return r;
        if (diag_len > 0 && diag[diag_len - 1] == '\n')
                diag[--diag_len] = 0;
        if (console_print_json_steal(
                    json_pack("{s:b, s:s?}", "ok", r == 0, "error", r == 0 ? NULL : diag)) != 0)
                return LOCKCTL_EXIT_FAIL;
        return r;
}

/*
 * Builds the canonical fd-6 JSON from the --input NAME=VALUE arguments: every declared input given
 * exactly once, nothing undeclared, each value fitting its kind and max_bytes.
 */
static int build_inputs(const Manifest *m, char **values, size_t n_values, char **ret) {
        const char *given[MANIFEST_INPUTS_MAX] = {};
        size_t bad = 0;
        int r;

        for (size_t i = 0; i < n_values; i++) {
                char *eq = strchr(values[i], '=');
                const ManifestInput *in;
                size_t k;

                if (!eq) {
                        fprintf(stderr, "lockctl: --input takes NAME=VALUE\n");
                        return -EINVAL;
                }
                *eq = 0;
                in = manifest_find_input(m, values[i]);
                if (!in) {
                        fprintf(stderr, "lockctl: the manifest declares no input '%s'\n",
                                values[i]);
                        return -EINVAL;
                }
                k = (size_t)(in - m->inputs);
                if (given[k]) {
                        fprintf(stderr, "lockctl: input '%s' given twice\n", values[i]);
                        return -EINVAL;
                }
                given[k] = eq + 1;
        }
        r = inputs_canonical_json(m, given, ret, &bad);
        if (r == -ENOENT)
                fprintf(stderr, "lockctl: missing --input %s=VALUE\n", m->inputs[bad].name);
        else if (r == -EINVAL)
                /* Never echo the value: it may be a secret the human typed. */
                fprintf(stderr,
                        "lockctl: input_invalid: the value of '%s' is not a valid %s of at most %u "
                        "bytes\n",
                        m->inputs[bad].name, input_kind_name(m->inputs[bad].kind),
                        m->inputs[bad].max_bytes);
        return r;
}

/* The run as one JSON object: what print_result() shows, on stdout. */
static int print_result_json(const RunResult *res) {
        /* The detail escaped as print_result() shows it: the plugin's bytes need not be UTF-8. */
        _cleanup_free_ char *esc =
                res->detail_total > 0 ? escape_bytes(res->detail, res->detail_len) : NULL;
        char cause[64];

        return console_print_json_steal(json_pack(
                "{s:s, s:s?, s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:s?, s:I}", "outcome",
                run_outcome_name(res->outcome), "cause",
                res->outcome == RUN_PLUGIN_ERROR ? run_cause_format(res, cause, sizeof(cause))
                                                 : NULL,
                "uid", (int)res->uid, "landlock_abi", res->landlock_abi, "cpu_usec",
                (json_int_t)res->cpu_usec, "peak_memory_bytes", (json_int_t)res->peak_rss_bytes,
                "wall_usec", (json_int_t)res->wall_usec, "setup_usec", (json_int_t)res->setup_usec,
                "stdout_bytes", (json_int_t)res->stdout_bytes, "stderr_bytes",
                (json_int_t)res->stderr_bytes, "detail", esc, "detail_bytes",
                (json_int_t)res->detail_total));
}

static void print_result(const RunResult *res) {
        char cause[64];

        printf("%s\n", run_outcome_name(res->outcome));
        fflush(stdout);
        if (res->outcome == RUN_PLUGIN_ERROR)
                fprintf(stderr, "cause: %s\n", run_cause_format(res, cause, sizeof(cause)));
        fprintf(stderr,
                "uid: %u, landlock abi: %d, cpu: %.3f s, peak memory: %.1f MiB, wall: %.3f s "
                "(from execve; %.3f s before it), stdout: %" PRIu64 " bytes, stderr: %" PRIu64
                " bytes (discarded)\n",
                (unsigned)res->uid, res->landlock_abi, res->cpu_usec / 1e6,
                res->peak_rss_bytes / (double)MiB, res->wall_usec / 1e6, res->setup_usec / 1e6,
                res->stdout_bytes, res->stderr_bytes);
        if (res->detail_total > 0) {
                _cleanup_free_ char *esc = escape_bytes(res->detail, res->detail_len);
                fprintf(stderr, "detail (shown here only%s): %s\n",
                        res->detail_total > res->detail_len ? ", first 4 KiB" : "",
                        esc ? esc : "(out of memory)");
        }
}

/*
 * --scope: the run inside a transient scope of a systemd manager, through the daemon's own code
 * (scope.c): an sd-event loop in a helper thread owns the connection, and the runner's start hook
 * waits there for the scope, as lockd's runner threads wait for its main loop.
 */
typedef struct ScopeRun {
        pthread_t thread;
        sd_event *event;
        ScopeManager *manager;
        int quit_fd, ready_fd;
        int error; /* of the loop thread: connecting, or the loop itself */
        const char *bus;
        char unit[64];
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
        snprintf(s->unit, sizeof(s->unit), "lockctl-test-%d-%u.scope", (int)getpid(), 0U);
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

/* Stops the loop thread (after it sent what was queued) and frees what the run held. */
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

static int verb_plugin_test(int argc, char **argv) {
        _cleanup_(manifest_freep) Manifest *m = NULL;
        _cleanup_(sandbox_freep) Sandbox *sb = NULL;
        _cleanup_close_ int dirfd = -1, bin = -1, fix = -1, snap = -1, input = -1;
        _cleanup_free_ char *inputs = NULL;
        char *values[64];
        size_t n_values = 0;
        const char *dir = NULL, *fixture = NULL;
        RunParams p = {};
        RunResult res;
        UidPool pool = {};
        ScopeRun scope = {.quit_fd = -1, .ready_fd = -1};
        bool use_scope = false, json = console_take_json(&argc, argv);
        int r;

        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--scope") == 0) {
                        use_scope = true;
                } else if (strcmp(argv[i], "--input") == 0) {
                        if (i + 1 >= argc || n_values >= ELEMENTSOF(values))
                                goto usage;
                        values[n_values++] = argv[++i];
                } else if (strncmp(argv[i], "--input=", 8) == 0) {
                        if (n_values >= ELEMENTSOF(values))
                                goto usage;
                        values[n_values++] = argv[i] + 8;
                } else if (argv[i][0] == '-' && argv[i][1] != 0) {
                        fprintf(stderr, "lockctl: unknown option '%s'\n", argv[i]);
                        goto usage;
                } else if (!dir) {
                        dir = argv[i];
                } else if (!fixture) {
                        fixture = argv[i];
                } else {
                        goto usage;
                }
        }
        if (!dir || !fixture)
                goto usage;

        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", dir, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        /* stdout is the answer's line only: a manifest error goes to stderr here. */
        r = load_manifest(dirfd, dir, &m, stderr, LOCKCTL_EXIT_USAGE);
        if (r != 0)
                return r;
        if (m->n_inputs > 0) {
                if (build_inputs(m, values, n_values, &inputs) < 0)
                        return LOCKCTL_EXIT_USAGE;
        } else if (n_values > 0) {
                fprintf(stderr, "lockctl: the manifest declares no inputs\n");
                return LOCKCTL_EXIT_USAGE;
        }

        bin = openat(dirfd, "plugin", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (bin < 0) {
                fprintf(stderr, "lockctl: %s/plugin: %s\n", dir, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        SandboxSpec spec = {
                .protocol = m->protocol,
                .inputs = m->n_inputs > 0,
                .detail = m->detail,
                .limits = {.cpu_s = m->cpu_s,
                           .memory_bytes = m->memory_bytes,
                           .timeout_s = m->timeout_s},
        };
        r = sandbox_new(bin, &spec, &sb);
        if (r < 0) {
                fprintf(stderr, "lockctl: %s/plugin: %s\n", dir, sandbox_strerror(r));
                return LOCKCTL_EXIT_USAGE;
        }

        /* The fixture is snapshotted like a granted file: a sealed copy, opened read-only. */
        fix = open(fixture, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fix < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", fixture, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        snap = memfd_snapshot(fix, "lockd-input", FIXTURE_BYTES_MAX, false);
        if (snap < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", fixture, strerror(-snap));
                return LOCKCTL_EXIT_USAGE;
        }
        input = fd_reopen_readonly(snap);
        if (input < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", fixture, strerror(-input));
                return LOCKCTL_EXIT_USAGE;
        }

        p.input_fd = input;
        p.inputs_json = inputs;
        p.inputs_len = inputs ? strlen(inputs) : 0;
        if (geteuid() == 0) {
                /* As root the plugin gets an ephemeral uid of the default range, as under lockd. */
                r = uid_pool_init(&pool, LOCKD_UID_MIN_DEFAULT, LOCKD_UID_MAX_DEFAULT);
                if (r < 0) {
                        fprintf(stderr, "lockctl: uid range: %s\n", strerror(-r));
                        return LOCKCTL_EXIT_USAGE;
                }
                pool.next = pool.min + (uid_t)((unsigned)getpid() % (pool.max - pool.min + 1));
                r = uid_pool_acquire(&pool, &p.uid);
                uid_pool_done(&pool);
                if (r < 0)
                        return LOCKCTL_EXIT_USAGE;
                p.gid = (gid_t)p.uid;
                p.drop_to_uid = true;
        }

        if (use_scope) {
                /* No manager, no run: like lockd, never a silent fallback to no scope. */
                r = scope_run_start(&scope, &spec.limits);
                if (r < 0) {
                        fprintf(stderr, "lockctl: --scope: cannot use the manager at '%s': %s\n",
                                scope.bus, strerror(-r));
                        scope_run_close(&scope);
                        return LOCKCTL_EXIT_USAGE;
                }
                p.start_hook = scope_run_hook;
                p.start_hook_userdata = &scope;
                p.oom_check = scope_run_oom;
                p.oom_check_userdata = &scope;
        }

        r = runner_run(sb, &p, &res);
        if (use_scope) {
                /* lockd's timeout killed the plugin; the unit goes too, whatever it still holds. */
                if (r == 0 && res.cause == RUN_CAUSE_TIMEOUT)
                        (void)scope_kill(scope.manager, scope.unit);
                scope_run_stop(&scope);
                scope_run_close(&scope);
        }
        if (r < 0) {
                fprintf(stderr, "lockctl: cannot run the plugin: %s\n", strerror(-r));
                return LOCKCTL_EXIT_USAGE;
        }
        if (json) {
                if (print_result_json(&res) != 0)
                        return LOCKCTL_EXIT_FAIL;
        } else
                print_result(&res);
        if (use_scope && scope.start_error < 0)
                fprintf(stderr, "scope: %s: could not be started through '%s': %s\n", scope.unit,
                        scope.bus, strerror(-scope.start_error));
        else if (use_scope)
                fprintf(stderr,
                        "scope: %s in %s (MemoryMax=%" PRIu64 ", TasksMax=%" PRIu64
                        ", RuntimeMaxUSec=%" PRIu64 ")\n",
                        scope.unit, SCOPE_SLICE, scope.limits.memory_max, scope.limits.tasks_max,
                        scope.limits.runtime_max_usec);
        return res.outcome == RUN_PLUGIN_ERROR ? LOCKCTL_EXIT_FAIL : LOCKCTL_EXIT_OK;

usage:
        fprintf(stderr, "usage: lockctl plugin test DIR FIXTURE [--input NAME=VALUE]... [--scope] "
                        "[--json]\n");
        return LOCKCTL_EXIT_USAGE;
}

int verb_plugin(int argc, char **argv) {
        if (argc >= 1 && strcmp(argv[0], "test") == 0)
                return verb_plugin_test(argc - 1, argv + 1);
        if (argc >= 1 && strcmp(argv[0], "lint") == 0)
                return verb_plugin_lint(argc - 1, argv + 1);
        if (argc >= 1 && strcmp(argv[0], "install") == 0)
                return verb_plugin_install(argc - 1, argv + 1);
        if (argc >= 1 && strcmp(argv[0], "list") == 0)
                return verb_plugin_list(argc - 1, argv + 1);
        if (argc >= 1 && strcmp(argv[0], "remove") == 0)
                return verb_plugin_remove(argc - 1, argv + 1);
        if (argc >= 1 && strcmp(argv[0], "run") == 0)
                return verb_plugin_run(argc - 1, argv + 1);
        fprintf(stderr, "usage: lockctl plugin test|lint|install|list|remove|run ...\n");
        return LOCKCTL_EXIT_USAGE;
}
