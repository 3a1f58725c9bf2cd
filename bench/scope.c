/*
 * bench/scope: what a transient scope costs per answer, against the alternatives, in one run.
 * (a) lockd's path: runner_run() whose start hook waits in scope_start_wait() for a scope of the
 * manager at $LOCKD_TEST_BUS (or the system bus), the loop in a thread of its own as in lockd;
 * (b) `systemd-run --scope -q PLUGIN`; (c) the same around `bwrap --unshare-all`; (d) bare
 * fork+exec+wait. Prints per-run times and a/b (target <= 0.25), then the sustained throughput
 * of two threads each running plugins in scopes (target >= 300 runs/s).
 *
 * Usage: scope [N [PLUGIN]]   (N defaults to 200; run it through bench/run-scope)
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-event.h>

#include "fd-util.h"
#include "macro.h"
#include "runner.h"
#include "sandbox.h"
#include "scope.h"

#ifndef BENCH_PLUGIN_PATH
#error "BENCH_PLUGIN_PATH must name the answer plugin"
#endif

#define BENCH_UID          655520 /* uids of the default ephemeral range (as root), one per thread */
#define BENCH_WARMUP       10
#define BENCH_THREADS      2
#define BENCH_SUSTAIN_SECS 5
#define BENCH_SLICE        "lockd-plugins.slice"
#define BENCH_WAIT_USEC    (10 * 1000000ULL)

static const char bench_input[] = "the input every run reads on fd 3\n";

typedef struct Stats {
        double mean, median, p99, min; /* ms */
} Stats;

typedef int (*RunFunc)(void *userdata, int in);

static double now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

/* A read-only fd with its own offset on a sealed memfd holding bench_input: lockd's fd 3. */
static int sealed_input(void) {
        _cleanup_close_ int mfd =
                memfd_from_buffer(bench_input, strlen(bench_input), "bench-input");

        if (mfd < 0)
                return mfd;
        return fd_reopen_readonly(mfd);
}

/*
 * fork+exec+wait of argv with fd 3 = in, stdout a pipe, stderr errfd. 0 when the child printed
 * exactly "1\n" and exited 0, 1 when it did not (*ret_status), a negative errno when it could not
 * be started.
 */
static int run_exec(char *const argv[], int in, int errfd, int *ret_status) {
        extern char **environ;
        char out[16];
        size_t len = 0;
        int pipefd[2], status;
        pid_t pid;

        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return negative_errno();
        pid = fork();
        if (pid < 0) {
                int r = negative_errno();
                safe_close(pipefd[0]);
                safe_close(pipefd[1]);
                return r;
        }
        if (pid == 0) {
                if (dup2(pipefd[1], STDOUT_FILENO) < 0 || dup2(errfd, STDERR_FILENO) < 0 ||
                    dup2(in, 3) < 0)
                        _exit(126);
                /* The environment, for systemd-run: XDG_RUNTIME_DIR names the user manager. */
                execve(argv[0], argv, environ);
                _exit(127);
        }
        safe_close(pipefd[1]);
        for (;;) {
                ssize_t n = read(pipefd[0], out + len, sizeof(out) - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                len += (size_t)n;
                if (len == sizeof(out))
                        break;
        }
        safe_close(pipefd[0]);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return negative_errno();
        if (ret_status)
                *ret_status = status;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 && len == 2 &&
                               memcmp(out, "1\n", 2) == 0
                       ? 0
                       : 1;
}

typedef struct ExecRun {
        char *const *argv;
        int errfd;
} ExecRun;

static int exec_run(void *userdata, int in) {
        ExecRun *e = userdata;
        int status = 0, r;

        r = run_exec(e->argv, in, e->errfd, &status);
        if (r != 0)
                fprintf(stderr, "scope: %s: %s (wait status 0x%x)\n", e->argv[0],
                        r < 0 ? strerror(-r) : "no answer 1", status);
        return r;
}

/* The scope manager's event loop in a thread of its own, as in lockd. */
typedef struct Loop {
        pthread_t thread;
        const char *bus;
        sd_event *event;
        ScopeManager *manager;
        int quit_fd, ready_fd;
        int error;
} Loop;

static int on_quit(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static void *loop_main(void *userdata) {
        Loop *l = userdata;
        ScopeConfig cfg = {.bus = l->bus, .slice = BENCH_SLICE};
        uint64_t one = 1;
        int r;

        r = sd_event_new(&l->event);
        if (r >= 0)
                r = scope_manager_new(l->event, &cfg, &l->manager);
        if (r >= 0)
                r = sd_event_add_io(l->event, NULL, l->quit_fd, EPOLLIN, on_quit, l);
        l->error = r < 0 ? r : 0;
        (void)loop_write(l->ready_fd, &one, sizeof(one));
        if (r >= 0)
                (void)sd_event_loop(l->event);
        l->manager = scope_manager_free(l->manager);
        l->event = sd_event_unref(l->event);
        return NULL;
}

static int loop_start(Loop *l, const char *bus) {
        uint64_t v;
        int r;

        *l = (Loop){.bus = bus};
        l->quit_fd = eventfd(0, EFD_CLOEXEC);
        l->ready_fd = eventfd(0, EFD_CLOEXEC);
        if (l->quit_fd < 0 || l->ready_fd < 0)
                return negative_errno();
        r = pthread_create(&l->thread, NULL, loop_main, l);
        if (r != 0)
                return -r;
        if (loop_read(l->ready_fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
                l->error = -EIO;
        if (l->error < 0)
                (void)pthread_join(l->thread, NULL);
        return l->error;
}

static void loop_stop(Loop *l) {
        uint64_t one = 1;

        (void)loop_write(l->quit_fd, &one, sizeof(one));
        (void)pthread_join(l->thread, NULL);
        safe_close(l->quit_fd);
        safe_close(l->ready_fd);
}

/* lockd's path: one run, its child waiting in the start hook until it is in its scope. */
typedef struct ScopeRun {
        const Sandbox *sb;
        ScopeManager *manager;
        uid_t uid;
        unsigned thread, n;
} ScopeRun;

static int scope_hook(pid_t pid, int pidfd, void *userdata) {
        ScopeRun *s = userdata;
        ScopeLimits lim = {.memory_max = s->sb->spec.limits.memory_bytes,
                           .tasks_max = 16,
                           .runtime_max_usec = 30 * 1000000ULL};
        char unit[64];
        int r;

        snprintf(unit, sizeof(unit), "lockd-bench-%d-%u-%u.scope", (int)getpid(), s->thread,
                 s->n++);
        r = scope_start_wait(s->manager, unit, pid, &lim, BENCH_WAIT_USEC);
        if (r < 0)
                fprintf(stderr, "scope: %s: %s\n", unit, strerror(-r));
        return r;
}

static int scope_run(void *userdata, int in) {
        ScopeRun *s = userdata;
        RunParams p = {
                .input_fd = in,
                .drop_to_uid = geteuid() == 0,
                .uid = s->uid,
                .gid = s->uid,
                .start_hook = scope_hook,
                .start_hook_userdata = s,
        };
        RunResult res;
        char cause[64];
        int r;

        r = runner_run(s->sb, &p, &res);
        if (r < 0) {
                fprintf(stderr, "scope: runner_run: %s\n", strerror(-r));
                return r;
        }
        if (res.outcome != RUN_ONE) {
                fprintf(stderr, "scope: run in a scope answered %s (cause %s)\n",
                        run_outcome_name(res.outcome),
                        run_cause_format(&res, cause, sizeof(cause)));
                return 1;
        }
        return 0;
}

/* Times n runs of f after a short warm-up. 0, or the first failed run's code. */
static int measure(RunFunc f, void *userdata, int in, unsigned n, double *times, Stats *ret) {
        double sum = 0;
        int r;

        for (unsigned i = 0; i < BENCH_WARMUP + n; i++) {
                double t0;

                if (lseek(in, 0, SEEK_SET) < 0)
                        return negative_errno();
                t0 = now_ms();
                r = f(userdata, in);
                if (r != 0)
                        return r;
                if (i >= BENCH_WARMUP) {
                        times[i - BENCH_WARMUP] = now_ms() - t0;
                        sum += times[i - BENCH_WARMUP];
                }
        }
        qsort(times, n, sizeof(double), cmp_double);
        *ret = (Stats){
                .mean = sum / n,
                .median = times[n / 2],
                .p99 = times[(size_t)((n - 1) * 0.99)],
                .min = times[0],
        };
        return 0;
}

static void print_stats(const char *what, const Stats *s) {
        printf("  %-40s mean %7.3f ms  median %7.3f ms  p99 %7.3f ms  min %7.3f ms\n", what,
               s->mean, s->median, s->p99, s->min);
}

/* One thread of the sustained run: scopes back to back until the deadline. */
typedef struct Worker {
        pthread_t thread;
        ScopeRun run;
        double deadline;
        unsigned done;
        int error;
} Worker;

static void *worker_main(void *userdata) {
        Worker *w = userdata;
        _cleanup_close_ int in = sealed_input();

        if (in < 0) {
                w->error = in;
                return NULL;
        }
        while (now_ms() < w->deadline) {
                if (lseek(in, 0, SEEK_SET) < 0 || scope_run(&w->run, in) != 0) {
                        w->error = -EIO;
                        return NULL;
                }
                w->done++;
        }
        return NULL;
}

/* Finds name in $PATH; NULL when there is none. */
static char *find_program(const char *name) {
        const char *path = getenv("PATH") ?: "/usr/local/bin:/usr/bin:/bin";
        _cleanup_free_ char *copy = strdup(path);
        char *save = NULL;

        if (!copy)
                return NULL;
        for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
                char *p;

                if (asprintf(&p, "%s/%s", dir, name) < 0)
                        return NULL;
                if (access(p, X_OK) == 0)
                        return p;
                free(p);
        }
        return NULL;
}

/* Runs argv once; on failure says why in reason (its first stderr line, or how it ended). */
static bool probe(char *const argv[], int in, char *reason, size_t size) {
        _cleanup_close_ int errfd = -1;
        char buf[512];
        ssize_t n;
        int status = 0, r;

        errfd = memfd_create("probe-stderr", MFD_CLOEXEC);
        if (errfd < 0 || lseek(in, 0, SEEK_SET) < 0) {
                snprintf(reason, size, "%s", strerror(errno));
                return false;
        }
        r = run_exec(argv, in, errfd, &status);
        if (r == 0)
                return true;
        if (r < 0) {
                snprintf(reason, size, "%s", strerror(-r));
                return false;
        }
        n = pread(errfd, buf, sizeof(buf) - 1, 0);
        buf[n > 0 ? n : 0] = 0;
        buf[strcspn(buf, "\n")] = 0;
        if (buf[0])
                snprintf(reason, size, "%.200s", buf);
        else if (WIFEXITED(status))
                snprintf(reason, size, "exit status %d without the answer 1", WEXITSTATUS(status));
        else
                snprintf(reason, size, "killed by signal %d", WTERMSIG(status));
        return false;
}

int main(int argc, char *argv[]) {
        _cleanup_(sandbox_freep) Sandbox *sb = NULL;
        _cleanup_close_ int in = -1, devnull = -1, binfd = -1;
        _cleanup_free_ double *times = NULL;
        _cleanup_free_ char *systemd_run = NULL, *bwrap = NULL;
        char plugin[PATH_MAX], reason[256];
        const char *plugin_arg = BENCH_PLUGIN_PATH, *bus = getenv("LOCKD_TEST_BUS");
        SandboxSpec spec = {
                .protocol = 1,
                .limits = {.cpu_s = 5, .memory_bytes = 64 * MiB, .timeout_s = 10},
        };
        Stats a, b, c, d;
        bool have_bwrap = false;
        unsigned long n = 200;
        Worker workers[BENCH_THREADS] = {};
        unsigned total = 0;
        double t0, elapsed;
        Loop loop;
        int r;

        if (argc > 3 ||
            (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))) {
                fprintf(stderr, "Usage: %s [N [PLUGIN]]\n", argv[0]);
                return argc > 3 ? 2 : 0;
        }
        if (argc > 1) {
                char *end;

                errno = 0;
                n = strtoul(argv[1], &end, 10);
                if (errno || *end || n == 0 || n > 1000000) {
                        fprintf(stderr, "scope: bad N: %s\n", argv[1]);
                        return 2;
                }
        }
        if (argc > 2)
                plugin_arg = argv[2];
        if (!realpath(plugin_arg, plugin)) {
                fprintf(stderr, "scope: %s: %s\n", plugin_arg, strerror(errno));
                return 1;
        }
        if (!bus || !bus[0])
                bus = "system";
        bool system_bus = strcmp(bus, "system") == 0;

        times = calloc(n, sizeof(double));
        devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        in = sealed_input();
        binfd = open(plugin, O_RDONLY | O_CLOEXEC);
        if (!times || devnull < 0 || in < 0 || binfd < 0) {
                fprintf(stderr, "scope: setup failed: %s\n", strerror(in < 0 ? -in : errno));
                return 1;
        }
        r = sandbox_new(binfd, &spec, &sb);
        if (r < 0) {
                fprintf(stderr, "scope: sandbox_new(%s): %s\n", plugin, sandbox_strerror(r));
                return 1;
        }
        systemd_run = find_program("systemd-run");
        if (!systemd_run) {
                fprintf(stderr, "scope: systemd-run not found in PATH\n");
                return 1;
        }
        r = loop_start(&loop, bus);
        if (r < 0) {
                fprintf(stderr, "scope: the manager at '%s': %s\n", bus, strerror(-r));
                return 1;
        }

        printf("scope: %lu sequential answers of %s (static C), %ld CPUs, manager at %s, %s\n", n,
               plugin, sysconf(_SC_NPROCESSORS_ONLN), bus,
               geteuid() == 0 ? "as root" : "as the caller");
        fflush(stdout);

        ScopeRun lockd_run = {.sb = sb, .manager = loop.manager, .uid = BENCH_UID};
        char *sr_argv[] = {systemd_run, system_bus ? "--system" : "--user", "--scope", "-q", plugin,
                           NULL};
        /* systemd-run --user finds the manager as root through $XDG_RUNTIME_DIR/systemd/private. */
        ExecRun sr_run = {.argv = sr_argv, .errfd = devnull};
        bwrap = find_program("bwrap");
        char *bw_argv[] = {systemd_run,
                           system_bus ? "--system" : "--user",
                           "--scope",
                           "-q",
                           bwrap,
                           "--unshare-all",
                           "--die-with-parent",
                           "--ro-bind",
                           plugin,
                           "/p",
                           "/p",
                           NULL};
        ExecRun bw_run = {.argv = bw_argv, .errfd = devnull};
        char *plain_argv[] = {plugin, NULL};
        ExecRun plain_run = {.argv = plain_argv, .errfd = devnull};

        if (measure(scope_run, &lockd_run, in, n, times, &a) != 0)
                return 1;
        if (!probe(sr_argv, in, reason, sizeof(reason))) {
                fprintf(stderr, "scope: systemd-run --scope does not work here: %s\n", reason);
                return 1;
        }
        if (measure(exec_run, &sr_run, in, n, times, &b) != 0)
                return 1;
        if (!bwrap)
                snprintf(reason, sizeof(reason), "bwrap not found in PATH");
        else if (probe(bw_argv, in, reason, sizeof(reason))) {
                if (measure(exec_run, &bw_run, in, n, times, &c) != 0)
                        return 1;
                have_bwrap = true;
        }
        if (measure(exec_run, &plain_run, in, n, times, &d) != 0)
                return 1;

        print_stats("(a) runner_run + scope_start_wait:", &a);
        print_stats(system_bus ? "(b) systemd-run --system --scope:"
                               : "(b) systemd-run --user --scope:",
                    &b);
        if (have_bwrap)
                print_stats("(c) systemd-run --scope bwrap:", &c);
        else
                printf("  (c) systemd-run --scope bwrap: unavailable (%s)\n", reason);
        print_stats("(d) bare fork+exec+wait:", &d);
        printf("a/b = %.3f (target <= 0.25)", a.mean / b.mean);
        if (have_bwrap)
                printf(", a/c = %.3f", a.mean / c.mean);
        printf(", a/d = %.2f\n", a.mean / d.mean);
        fflush(stdout);

        /* Sustained: two runner threads, each with its own uid, sharing the one manager loop. */
        t0 = now_ms();
        for (unsigned i = 0; i < BENCH_THREADS; i++) {
                workers[i].run = (ScopeRun){.sb = sb,
                                            .manager = loop.manager,
                                            .uid = BENCH_UID + 1 + i,
                                            .thread = 1 + i};
                workers[i].deadline = t0 + BENCH_SUSTAIN_SECS * 1e3;
                r = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
                if (r != 0) {
                        fprintf(stderr, "scope: pthread_create: %s\n", strerror(r));
                        return 1;
                }
        }
        for (unsigned i = 0; i < BENCH_THREADS; i++) {
                (void)pthread_join(workers[i].thread, NULL);
                if (workers[i].error < 0) {
                        fprintf(stderr, "scope: sustained run failed in thread %u\n", i);
                        return 1;
                }
                total += workers[i].done;
        }
        elapsed = (now_ms() - t0) / 1e3;
        printf("sustained: %u runs with scopes in %.2f s from %d threads = %.0f runs/s "
               "(target >= 300)\n",
               total, elapsed, BENCH_THREADS, total / elapsed);
        loop_stop(&loop);
        return 0;
}
