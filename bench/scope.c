/*
 * bench/scope: what a transient scope costs per answer, against the alternatives, in one run.
 * (a) a run that finds no scope ready: runner_run() whose start hook waits in scope_start_wait()
 * for a scope of the manager at $LOCKD_TEST_BUS (or the system bus), the loop in a thread of its
 * own as in lockd; (b) `systemd-run --scope -q PLUGIN`; (c) the same around `bwrap --unshare-all`;
 * (d) bare fork+exec+wait; (e) lockd's path now, a child made ahead in its scope (untimed) and
 * released (timed). Prints per-run times, a/b (target <= 0.25) and e/d (target <= 1.2), then the
 * sustained throughput of two threads each running plugins in scopes (target >= 300 runs/s), then
 * the manager's and the D-Bus broker's CPU per scope by the way lockd reaches the manager: its
 * private socket, the broker (`bus: system`), and the broker while another client has called
 * Subscribe(), as lockd itself once did (ARCHITECTURE.md, Scopes).
 *
 * Usage: scope [N [PLUGIN]]   (N defaults to 200; run it through bench/run-scope)
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "bench-util.h"
#include "fd-util.h"
#include "macro.h"
#include "scope.h"

#ifndef BENCH_PLUGIN_PATH
#error "BENCH_PLUGIN_PATH must name the answer plugin"
#endif

#define BENCH_UID          655520 /* uids of the default ephemeral range (as root), one per thread */
#define BENCH_THREADS      2
#define BENCH_SUSTAIN_SECS 5
#define BENCH_SLICE        "lockd-plugins.slice"
#define BENCH_WAIT_USEC    (10 * 1000000ULL)
#define BENCH_LABEL_WIDTH  40 /* of the statistics rows' labels */
#define BENCH_CPU_ROUNDS   3  /* interleaved rounds of the CPU-per-scope comparison */

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

        return bench_runner_run("scope", "run in a scope", s->sb, &p);
}

/* lockd's path with scopes made ahead: the child waits in its scope before the clock starts. */
typedef struct AheadRun {
        ScopeRun base;
        RunChild *child;
} AheadRun;

static int ahead_prepare(void *userdata, int in) {
        AheadRun *a = userdata;
        int r;

        r = run_child_new(&a->child);
        if (r < 0)
                return r;
        r = scope_hook(run_child_pid(a->child), run_child_pidfd(a->child), &a->base);
        if (r < 0)
                a->child = run_child_free(a->child);
        return r;
}

static int ahead_run(void *userdata, int in) {
        AheadRun *a = userdata;
        RunParams p = {
                .input_fd = in,
                .drop_to_uid = geteuid() == 0,
                .uid = a->base.uid,
                .gid = a->base.uid,
        };

        return bench_child_run("scope", "run of a child made ahead", &a->child, a->base.sb, &p);
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
        _cleanup_close_ int in = bench_sealed_input();

        if (in < 0) {
                w->error = in;
                return NULL;
        }
        while (bench_now_ms() < w->deadline) {
                if (lseek(in, 0, SEEK_SET) < 0 || scope_run(&w->run, in) != 0) {
                        w->error = -EIO;
                        return NULL;
                }
                w->done++;
        }
        return NULL;
}

/* CPU time of every thread of pid so far in ms (the scheduler's count), or -1. */
static double proc_cpu_ms(pid_t pid) {
        char path[64];
        double total = 0;
        struct dirent *de;
        DIR *d;

        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        d = opendir(path);
        if (!d)
                return -1;
        while ((de = readdir(d))) {
                _cleanup_free_ char *buf = NULL;
                char stat[PATH_MAX];
                size_t len;

                if (de->d_name[0] == '.' || (size_t)snprintf(stat, sizeof(stat), "%s/%s/schedstat",
                                                             path, de->d_name) >= sizeof(stat))
                        continue;
                if (read_full_file(stat, 256, &buf, &len) < 0)
                        continue;
                total += strtod(buf, NULL) / 1e6;
        }
        closedir(d);
        return total;
}

/* One way to the manager for the CPU comparison, and what it cost per scope. */
typedef struct Route {
        const char *label;
        const char *bus;   /* ScopeConfig.bus */
        bool subscriber;   /* another client holds a Subscribe() meanwhile */
        double manager_ms; /* CPU, summed over the rounds */
        double broker_ms;
        double wall_ms;
        unsigned runs;
} Route;

/* The broker's own pid, as it tells it, or 0. */
static pid_t broker_pid(sd_bus *b) {
        sd_bus_message *reply = NULL;
        uint32_t pid = 0;

        if (sd_bus_call_method(b, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus", "GetConnectionUnixProcessID", NULL, &reply,
                               "s", "org.freedesktop.DBus") >= 0)
                (void)sd_bus_message_read(reply, "u", &pid);
        sd_bus_message_unref(reply);
        return (pid_t)pid;
}

/* n scoped runs (runner_run() + scope_start_wait(), as (a)) over route r, their CPU and time
 * added to r. 0, or -1 after saying why. */
static int route_round(Route *r, const Sandbox *sb, int in, unsigned n, pid_t manager, pid_t broker,
                       const char *broker_bus, unsigned round) {
        sd_bus *sub = NULL;
        Loop loop;
        double m0, b0, t0;
        int ret = 0;

        if (loop_start(&loop, r->bus) < 0) {
                fprintf(stderr, "scope: %s: no manager at %s\n", r->label, r->bus);
                return -1;
        }
        if (r->subscriber) {
                /* As lockd opens it: a broker's address is a bus client's (scope_bus_open()). */
                if (scope_bus_open(broker_bus, &sub) < 0 ||
                    sd_bus_call_method(sub, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                       "org.freedesktop.systemd1.Manager", "Subscribe", NULL, NULL,
                                       NULL) < 0) {
                        fprintf(stderr, "scope: %s: Subscribe() failed\n", r->label);
                        sd_bus_flush_close_unref(sub);
                        loop_stop(&loop);
                        return -1;
                }
        }
        ScopeRun run = {.sb = sb, .manager = loop.manager, .uid = BENCH_UID, .thread = 50 + round};
        /* A few untimed runs first: the connection and the manager's own caches warm. */
        for (unsigned i = 0; i < 3 && ret == 0; i++)
                if (lseek(in, 0, SEEK_SET) < 0 || scope_run(&run, in) != 0)
                        ret = -1;
        m0 = proc_cpu_ms(manager);
        b0 = broker > 0 ? proc_cpu_ms(broker) : 0;
        t0 = bench_now_ms();
        for (unsigned i = 0; i < n && ret == 0; i++)
                if (lseek(in, 0, SEEK_SET) < 0 || scope_run(&run, in) != 0)
                        ret = -1;
        if (ret == 0) {
                r->wall_ms += bench_now_ms() - t0;
                r->manager_ms += proc_cpu_ms(manager) - m0;
                r->broker_ms += broker > 0 ? proc_cpu_ms(broker) - b0 : 0;
                r->runs += n;
        } else
                fprintf(stderr, "scope: %s: a run failed\n", r->label);
        sd_bus_flush_close_unref(sub);
        loop_stop(&loop);
        return ret;
}

/*
 * The manager's and the broker's CPU per scope by route, in interleaved rounds: the manager's pid
 * is $LOCKD_TEST_MANAGER_PID (with-systemd) or 1 on the system bus; the broker is the system bus,
 * or the user manager's $XDG_RUNTIME_DIR/bus. Says what it cannot measure and why.
 */
static int cpu_by_route(const Sandbox *sb, int in, unsigned n, const char *bus) {
        bool system_bus = strcmp(bus, "system") == 0;
        const char *runtime = getenv("XDG_RUNTIME_DIR"),
                   *pid_env = getenv("LOCKD_TEST_MANAGER_PID");
        _cleanup_free_ char *broker_bus = NULL;
        pid_t manager = system_bus ? 1 : (pid_env ? (pid_t)atoi(pid_env) : 0), broker = 0;
        sd_bus *b = NULL;
        unsigned per_round = MAX(n / BENCH_CPU_ROUNDS, 1u);

        if (system_bus)
                broker_bus = strdup("system");
        else if (runtime && asprintf(&broker_bus, "unix:path=%s/bus", runtime) < 0)
                broker_bus = NULL;
        if (manager <= 0 || proc_cpu_ms(manager) < 0) {
                printf("CPU per scope by route: unavailable (the manager's pid is unknown: run "
                       "through bench/run-scope)\n");
                return 0;
        }
        if (broker_bus && scope_bus_open(broker_bus, &b) >= 0) {
                broker = broker_pid(b);
                sd_bus_flush_close_unref(b);
        }
        if (broker <= 0) {
                printf("CPU per scope by route: unavailable (no D-Bus broker for the manager at "
                       "%s)\n",
                       broker_bus ? broker_bus : "$XDG_RUNTIME_DIR/bus");
                return 0;
        }
        Route routes[] = {
                {.label = "its private socket",
                 .bus = system_bus ? "unix:path=/run/systemd/private" : bus},
                {.label = "the broker (bus: system)", .bus = broker_bus},
                {.label = "the broker, another client subscribed",
                 .bus = broker_bus,
                 .subscriber = true},
        };
        for (unsigned round = 0; round < BENCH_CPU_ROUNDS; round++)
                for (size_t i = 0; i < ELEMENTSOF(routes); i++)
                        if (route_round(&routes[i], sb, in, per_round, manager, broker, broker_bus,
                                        round) < 0)
                                return -1;
        printf("CPU per scope by the way to the manager (ms per run; %u runs each, %d interleaved "
               "rounds; manager pid %d, broker pid %d):\n",
               per_round * BENCH_CPU_ROUNDS, BENCH_CPU_ROUNDS, (int)manager, (int)broker);
        for (size_t i = 0; i < ELEMENTSOF(routes); i++) {
                Route *r = &routes[i];
                double mgr = r->manager_ms / r->runs, brk = r->broker_ms / r->runs;

                printf("  %-40s manager %6.3f  broker %6.3f  both %6.3f  time %6.3f\n", r->label,
                       mgr, i == 0 ? 0.0 : brk, mgr + (i == 0 ? 0.0 : brk), r->wall_ms / r->runs);
        }
        printf("  a subscriber's cost to the manager and the broker together: %.3f ms per scope "
               "(lockd no longer subscribes)\n",
               (routes[2].manager_ms + routes[2].broker_ms) / routes[2].runs -
                       (routes[1].manager_ms + routes[1].broker_ms) / routes[1].runs);
        return 0;
}

int main(int argc, char *argv[]) {
        _cleanup_(bench_setup_done) BenchSetup bs = {.in = -1, .devnull = -1};
        _cleanup_free_ char *systemd_run = NULL, *bwrap = NULL;
        char plugin[PATH_MAX], reason[256];
        const char *bus = getenv("LOCKD_TEST_BUS");
        BenchStats a, b, c, d, e;
        bool have_bwrap = false;
        unsigned long n = 200;
        Worker workers[BENCH_THREADS] = {};
        unsigned total = 0;
        double t0, elapsed;
        Loop loop;
        int r;

        if (!bench_parse_args(argc, argv, "scope", 1000000, BENCH_PLUGIN_PATH, &n, plugin, &r))
                return r;
        if (!bus || !bus[0])
                bus = "system";
        bool system_bus = strcmp(bus, "system") == 0;

        if (bench_setup("scope", plugin, n, &bs) < 0)
                return 1;
        systemd_run = bench_find_program("systemd-run");
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

        ScopeRun lockd_run = {.sb = bs.sb, .manager = loop.manager, .uid = BENCH_UID};
        char *sr_argv[] = {systemd_run, system_bus ? "--system" : "--user", "--scope", "-q", plugin,
                           NULL};
        /*
         * Every exec run gets the caller's environment: systemd-run --user finds the manager as
         * root through $XDG_RUNTIME_DIR/systemd/private.
         */
        BenchExec sr_run = {.tag = "scope", .argv = sr_argv, .envp = environ, .errfd = bs.devnull};
        bwrap = bench_find_program("bwrap");
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
        BenchExec bw_run = {.tag = "scope", .argv = bw_argv, .envp = environ, .errfd = bs.devnull};
        char *plain_argv[] = {plugin, NULL};
        BenchExec plain_run = {
                .tag = "scope", .argv = plain_argv, .envp = environ, .errfd = bs.devnull};

        if (bench_measure(scope_run, &lockd_run, bs.in, n, bs.times, &a) != 0)
                return 1;
        if (!bench_probe(sr_argv, environ, bs.in, reason, sizeof(reason))) {
                fprintf(stderr, "scope: systemd-run --scope does not work here: %s\n", reason);
                return 1;
        }
        if (bench_measure(bench_exec_run, &sr_run, bs.in, n, bs.times, &b) != 0)
                return 1;
        if (!bwrap)
                snprintf(reason, sizeof(reason), "bwrap not found in PATH");
        else if (bench_probe(bw_argv, environ, bs.in, reason, sizeof(reason))) {
                if (bench_measure(bench_exec_run, &bw_run, bs.in, n, bs.times, &c) != 0)
                        return 1;
                have_bwrap = true;
        }
        if (bench_measure(bench_exec_run, &plain_run, bs.in, n, bs.times, &d) != 0)
                return 1;
        AheadRun ahead = {
                .base = {.sb = bs.sb, .manager = loop.manager, .uid = BENCH_UID, .thread = 99}};
        if (bench_measure_prepared(ahead_prepare, ahead_run, &ahead, bs.in, n, bs.times, &e) != 0)
                return 1;

        bench_print_stats(BENCH_LABEL_WIDTH, "(a) runner_run + scope_start_wait:", &a);
        bench_print_stats(BENCH_LABEL_WIDTH,
                          system_bus ? "(b) systemd-run --system --scope:"
                                     : "(b) systemd-run --user --scope:",
                          &b);
        if (have_bwrap)
                bench_print_stats(BENCH_LABEL_WIDTH, "(c) systemd-run --scope bwrap:", &c);
        else
                printf("  (c) systemd-run --scope bwrap: unavailable (%s)\n", reason);
        bench_print_stats(BENCH_LABEL_WIDTH, "(d) bare fork+exec+wait:", &d);
        bench_print_stats(BENCH_LABEL_WIDTH, "(e) a child made ahead in its scope:", &e);
        printf("a/b = %.3f (target <= 0.25)", a.mean / b.mean);
        if (have_bwrap)
                printf(", a/c = %.3f", a.mean / c.mean);
        printf(", a/d = %.2f\n", a.mean / d.mean);
        printf("e/d = %.2f (medians; a scoped run whose scope was made ahead, as lockd runs one "
               "now) target <= 1.20 %s\n",
               e.median / d.median, e.median / d.median <= 1.20 ? "PASS" : "MISS");
        fflush(stdout);

        /* Sustained: two runner threads, each with its own uid, sharing the one manager loop. */
        t0 = bench_now_ms();
        for (unsigned i = 0; i < BENCH_THREADS; i++) {
                workers[i].run = (ScopeRun){.sb = bs.sb,
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
        elapsed = (bench_now_ms() - t0) / 1e3;
        printf("sustained: %u runs with scopes in %.2f s from %d threads = %.0f runs/s "
               "(target >= 300)\n",
               total, elapsed, BENCH_THREADS, total / elapsed);
        loop_stop(&loop);
        fflush(stdout);
        return cpu_by_route(bs.sb, bs.in, n, bus) < 0 ? 1 : 0;
}
