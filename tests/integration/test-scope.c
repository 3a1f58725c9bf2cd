/*
 * Transient scopes against a real systemd manager ($LOCKD_TEST_BUS, set by with-systemd): limits as
 * the manager and the kernel see them, many in flight, waits from other threads, failures, kills,
 * garbage collection, and a real OOM kill classified as such by the runner.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "oom-watch.h"
#include "cgroup.h"
#include "check-run.h"
#include "clock.h"
#include "fd-util.h"
#include "macro.h"
#include "runner.h"
#include "sandbox.h"
#include "scope.h"
#include "standby.h"

#define SLICE       "lockd-plugins.slice"
#define TEST_UID    655700
#define N_MANY      50
#define N_THREADS   4
#define WAIT_USEC   (10 * 1000000ULL)
#define SYSTEMD     "org.freedesktop.systemd1"
#define MANAGER     "org.freedesktop.systemd1.Manager"
#define SYSTEMD_OBJ "/org/freedesktop/systemd1"

static const ScopeLimits limits = {
        .memory_max = 64 * MiB,
        .tasks_max = 17,
        .runtime_max_usec = 30 * 1000000ULL,
};

static const char *test_bus(void) {
        const char *bus = getenv("LOCKD_TEST_BUS");

        ck_assert_msg(bus && bus[0], "LOCKD_TEST_BUS is not set: run through with-systemd");
        return bus;
}

static ScopeConfig test_config(void) {
        return (ScopeConfig){.bus = test_bus(), .slice = SLICE};
}

/* A unit name no other test (or run of this one) uses. */
static void unit_name(char *buf, size_t size) {
        static unsigned n;

        snprintf(buf, size, "lockd-test-%d-%u.scope", (int)getpid(),
                 __atomic_fetch_add(&n, 1, __ATOMIC_RELAXED));
}

/* A second, synchronous connection to the same manager, for looking at what it did. */
static sd_bus *query_bus(void) {
        sd_bus *bus = NULL;

        ck_assert_int_ge(scope_bus_open(test_bus(), &bus), 0);
        return bus;
}

/* The unit's object path, or NULL when the manager has no such unit (loaded). */
static char *unit_path(sd_bus *bus, const char *unit) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *path;
        char *ret;
        int r;

        r = sd_bus_call_method(bus, SYSTEMD, SYSTEMD_OBJ, MANAGER, "GetUnit", &error, &reply, "s",
                               unit);
        if (r < 0) {
                ck_assert_msg(sd_bus_error_has_name(&error, "org.freedesktop.systemd1.NoSuchUnit"),
                              "GetUnit(%s): %s", unit, error.message);
                sd_bus_error_free(&error);
                return NULL;
        }
        ck_assert_int_ge(sd_bus_message_read(reply, "o", &path), 0);
        ret = strdup(path);
        sd_bus_message_unref(reply);
        return ret;
}

static uint64_t unit_u64(sd_bus *bus, const char *path, const char *iface, const char *name) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t v = 0;

        ck_assert_msg(
                sd_bus_get_property_trivial(bus, SYSTEMD, path, iface, name, &error, 't', &v) >= 0,
                "%s: %s", name, error.message);
        return v;
}

static char *unit_string(sd_bus *bus, const char *path, const char *iface, const char *name) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        char *v = NULL;

        ck_assert_msg(sd_bus_get_property_string(bus, SYSTEMD, path, iface, name, &error, &v) >= 0,
                      "%s: %s", name, error.message);
        return v;
}

/* Waits (bounded) until the manager forgot the unit: stopped and garbage-collected. */
static bool unit_gone_within(const char *unit, unsigned ms) {
        sd_bus *bus = query_bus();
        bool gone = false;

        for (unsigned i = 0; i < ms / 20 && !gone; i++) {
                _cleanup_free_ char *path = unit_path(bus, unit);

                gone = !path;
                if (!gone)
                        usleep(20000);
        }
        sd_bus_flush_close_unref(bus);
        return gone;
}

/* A child that waits for one byte on a pipe, then exits 0; or, with linger, sleeps long. */
typedef struct Child {
        pid_t pid;
        int go; /* write end */
} Child;

static Child child_new(bool linger) {
        int p[2];
        Child c;

        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        c.pid = fork();
        ck_assert_int_ge(c.pid, 0);
        if (c.pid == 0) {
                char b;

                close(p[1]);
                if (read(p[0], &b, 1) != 1)
                        _exit(2);
                if (linger)
                        pause();
                _exit(0);
        }
        close(p[0]);
        c.go = p[1];
        return c;
}

static void child_go(Child *c) {
        ck_assert_int_eq(write(c->go, "g", 1), 1);
        c->go = safe_close(c->go);
}

/* Reaps the child, killing it first when kill; returns its wait status. */
static int child_end(Child *c, bool kill_it) {
        int status;

        if (kill_it)
                kill(c->pid, SIGKILL);
        c->go = safe_close(c->go);
        ck_assert_int_eq(waitpid(c->pid, &status, 0), c->pid);
        return status;
}

/* The cgroup directory of pid in the hierarchy named ctl ("memory", "pids"), v1 or v2. */
static char *cgroup_dir(pid_t pid, const char *ctl) {
        char path[64], line[1024];
        char *ret = NULL, *v2 = NULL;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
        f = fopen(path, "re");
        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof(line), f)) {
                char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
                size_t n = strlen(line);

                ck_assert_ptr_nonnull(b);
                if (n > 0 && line[n - 1] == '\n')
                        line[n - 1] = 0;
                *b = 0;
                if (strcmp(a + 1, ctl) == 0)
                        ck_assert_int_ge(asprintf(&ret, "/sys/fs/cgroup/%s%s", ctl, b + 1), 0);
                else if (strcmp(line, "0:") == 0 && a[1] == 0)
                        v2 = strdup(b + 1);
        }
        fclose(f);
        if (!ret && v2 && access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0)
                ck_assert_int_ge(asprintf(&ret, "/sys/fs/cgroup%s", v2), 0);
        free(v2);
        ck_assert_msg(ret, "no %s cgroup for %d", ctl, (int)pid);
        return ret;
}

static uint64_t cgroup_u64(const char *dir, const char *file) {
        _cleanup_free_ char *path = NULL, *buf = NULL;
        size_t len;

        ck_assert_int_ge(asprintf(&path, "%s/%s", dir, file), 0);
        ck_assert_msg(read_full_file(path, 4096, &buf, &len) == 0, "%s: cannot read", path);
        return strtoull(buf, NULL, 10);
}

static bool ends_with(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);

        return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* The manager and an event loop driven by the test's own thread. */
typedef struct Local {
        sd_event *event;
        ScopeManager *manager;
} Local;

static Local local_new_quota(uint64_t cpu_quota_usec) {
        ScopeConfig cfg = test_config();
        Local l = {};
        int r;

        cfg.cpu_quota_usec = cpu_quota_usec;
        ck_assert_int_eq(sd_event_new(&l.event), 0);
        r = scope_manager_new(l.event, &cfg, &l.manager);
        ck_assert_msg(r == 0, "scope_manager_new(%s): %s", cfg.bus, strerror(-r));
        return l;
}

static Local local_new(void) {
        return local_new_quota(0);
}

static void local_free(Local *l) {
        scope_manager_free(l->manager);
        sd_event_unref(l->event);
}

typedef struct Done {
        int n;
        int error;
        bool called;
} Done;

static void on_done(int error, void *userdata) {
        Done *d = userdata;

        ck_assert(!d->called);
        d->called = true;
        d->error = error;
}

/* Runs the loop until every done of ds was called; fails after 10 s. */
static void run_until_done(Local *l, Done *ds, size_t n) {
        for (unsigned i = 0; i < 1000; i++) {
                size_t called = 0;

                for (size_t k = 0; k < n; k++)
                        called += ds[k].called;
                if (called == n)
                        return;
                ck_assert_int_ge(sd_event_run(l->event, 10000), 0);
        }
        ck_abort_msg("the start jobs did not finish within 10 s");
}

START_TEST(test_limits) {
        Local l = local_new_quota(250000); /* CPUQuota=25% */
        Child c = child_new(true);
        sd_bus *bus = query_bus();
        _cleanup_free_ char *path = NULL, *slice = NULL, *state = NULL, *mem = NULL, *pids = NULL,
                            *cpu = NULL;
        char unit[64];
        Done d = {};

        unit_name(unit, sizeof(unit));
        ck_assert_int_eq(scope_start_async(l.manager, unit, c.pid, &limits, on_done, &d), 0);
        run_until_done(&l, &d, 1);
        ck_assert_msg(d.error == 0, "start %s: %s", unit, strerror(-d.error));

        /* What the manager says. */
        path = unit_path(bus, unit);
        ck_assert_ptr_nonnull(path);
        state = unit_string(bus, path, "org.freedesktop.systemd1.Unit", "ActiveState");
        ck_assert_str_eq(state, "active");
        slice = unit_string(bus, path, "org.freedesktop.systemd1.Scope", "Slice");
        ck_assert_str_eq(slice, SLICE);
        ck_assert_uint_eq(unit_u64(bus, path, "org.freedesktop.systemd1.Scope", "MemoryMax"),
                          64 * MiB);
        ck_assert_uint_eq(unit_u64(bus, path, "org.freedesktop.systemd1.Scope", "TasksMax"), 17);
        ck_assert_uint_eq(unit_u64(bus, path, "org.freedesktop.systemd1.Scope", "RuntimeMaxUSec"),
                          30 * 1000000ULL);
        ck_assert_uint_eq(
                unit_u64(bus, path, "org.freedesktop.systemd1.Scope", "CPUQuotaPerSecUSec"),
                250000);

        /* What the kernel applies to the child. */
        mem = cgroup_dir(c.pid, "memory");
        pids = cgroup_dir(c.pid, "pids");
        ck_assert_msg(ends_with(mem, unit), "memory cgroup %s", mem);
        ck_assert_msg(ends_with(pids, unit), "pids cgroup %s", pids);
        if (strncmp(mem, "/sys/fs/cgroup/memory/", 22) == 0)
                ck_assert_uint_eq(cgroup_u64(mem, "memory.limit_in_bytes"), 64 * MiB);
        else
                ck_assert_uint_eq(cgroup_u64(mem, "memory.max"), 64 * MiB);
        ck_assert_uint_eq(cgroup_u64(pids, "pids.max"), 17);
        cpu = cgroup_dir(c.pid, "cpu");
        ck_assert_msg(ends_with(cpu, unit), "cpu cgroup %s", cpu);
        if (strncmp(cpu, "/sys/fs/cgroup/cpu/", 19) == 0)
                ck_assert_uint_eq(cgroup_u64(cpu, "cpu.cfs_quota_us") * 1000000 /
                                          cgroup_u64(cpu, "cpu.cfs_period_us"),
                                  250000);
        else
                ck_assert_uint_eq(cgroup_u64(cpu, "cpu.max"), 25000); /* "25000 100000" */

        child_go(&c);
        ck_assert_int_eq(child_end(&c, true), SIGKILL);
        sd_bus_flush_close_unref(bus);
        local_free(&l);
}
END_TEST

START_TEST(test_many_async) {
        Local l = local_new();
        Child c[N_MANY];
        Done d[N_MANY] = {};
        char unit[N_MANY][64];

        for (int i = 0; i < N_MANY; i++) {
                c[i] = child_new(false);
                unit_name(unit[i], sizeof(unit[i]));
                ck_assert_int_eq(
                        scope_start_async(l.manager, unit[i], c[i].pid, &limits, on_done, &d[i]),
                        0);
        }
        run_until_done(&l, d, N_MANY);
        for (int i = 0; i < N_MANY; i++) {
                ck_assert_msg(d[i].error == 0, "start %s: %s", unit[i], strerror(-d[i].error));
                child_go(&c[i]);
        }
        for (int i = 0; i < N_MANY; i++) {
                int status = child_end(&c[i], false);
                ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        /* Every scope empties and is collected: the manager forgets each unit. */
        for (int i = 0; i < N_MANY; i++)
                ck_assert_msg(unit_gone_within(unit[i], 10000), "%s was not collected", unit[i]);
        local_free(&l);
}
END_TEST

/* An event loop in a thread of its own, as lockd's main loop is to its runner threads. */
typedef struct LoopThread {
        pthread_t thread;
        sd_event *event;
        ScopeManager *manager;
        int quit_fd, ready_fd;
        int error;
} LoopThread;

static int on_quit(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static void *loop_main(void *userdata) {
        LoopThread *t = userdata;
        ScopeConfig cfg = test_config();
        uint64_t one = 1;

        t->error = sd_event_new(&t->event);
        if (t->error >= 0)
                t->error = scope_manager_new(t->event, &cfg, &t->manager);
        if (t->error >= 0)
                t->error = sd_event_add_io(t->event, NULL, t->quit_fd, EPOLLIN, on_quit, t);
        (void)!write(t->ready_fd, &one, sizeof(one));
        if (t->error >= 0)
                t->error = sd_event_loop(t->event);
        scope_manager_free(t->manager);
        sd_event_unref(t->event);
        return NULL;
}

static void loop_start(LoopThread *t) {
        uint64_t v;

        *t = (LoopThread){};
        t->quit_fd = eventfd(0, EFD_CLOEXEC);
        t->ready_fd = eventfd(0, EFD_CLOEXEC);
        ck_assert_int_eq(pthread_create(&t->thread, NULL, loop_main, t), 0);
        ck_assert_int_eq(read(t->ready_fd, &v, sizeof(v)), sizeof(v));
        ck_assert_msg(t->error >= 0, "the loop thread: %s", strerror(-t->error));
}

static void loop_stop(LoopThread *t) {
        uint64_t one = 1;

        ck_assert_int_eq(write(t->quit_fd, &one, sizeof(one)), sizeof(one));
        ck_assert_int_eq(pthread_join(t->thread, NULL), 0);
        ck_assert_int_ge(t->error, 0);
        close(t->quit_fd);
        close(t->ready_fd);
}

static void *waiter_main(void *userdata) {
        ScopeManager *m = userdata;
        Child c = child_new(false);
        _cleanup_free_ char *mem = NULL;
        char unit[64];
        int r, status;

        unit_name(unit, sizeof(unit));
        r = scope_start_wait(m, unit, c.pid, &limits, WAIT_USEC);
        if (r == 0) {
                mem = cgroup_dir(c.pid, "pids");
                if (!ends_with(mem, unit))
                        r = -ESRCH;
        }
        child_go(&c);
        status = child_end(&c, false);
        if (r == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
                r = -ECHILD;
        return (void *)(intptr_t)r;
}

START_TEST(test_wait_threads) {
        LoopThread t;
        pthread_t th[N_THREADS];

        loop_start(&t);
        for (int i = 0; i < N_THREADS; i++)
                ck_assert_int_eq(pthread_create(&th[i], NULL, waiter_main, t.manager), 0);
        for (int i = 0; i < N_THREADS; i++) {
                void *ret;

                ck_assert_int_eq(pthread_join(th[i], &ret), 0);
                ck_assert_msg((intptr_t)ret == 0, "thread %d: %s", i,
                              strerror(-(int)(intptr_t)ret));
        }
        loop_stop(&t);
}
END_TEST

START_TEST(test_failures) {
        Local l = local_new();
        Child c = child_new(true), dead = child_new(false);
        _cleanup_free_ char *own = NULL, *held = NULL;
        Done d[3] = {};
        char unit[64], unit2[64];

        /* Names the manager would have to interpret are refused before anything is sent. */
        ck_assert(!scope_unit_name_valid(""));
        ck_assert(!scope_unit_name_valid(".scope"));
        ck_assert(!scope_unit_name_valid("a/b.scope"));
        ck_assert(!scope_unit_name_valid("a@b.scope"));
        ck_assert(!scope_unit_name_valid("x.service"));
        ck_assert(!scope_unit_name_valid("-x.scope"));
        ck_assert(scope_unit_name_valid("lockd-run-1-2.scope"));
        ck_assert_int_eq(
                scope_start_async(l.manager, "bad/name.scope", c.pid, &limits, on_done, &d[0]),
                -EINVAL);
        ck_assert_int_eq(scope_start_async(l.manager, "x.service", c.pid, &limits, on_done, &d[0]),
                         -EINVAL);
        ck_assert_int_eq(scope_kill(l.manager, "../x.scope"), -EINVAL);
        ck_assert(!d[0].called);

        /* A pid that no longer exists: the manager refuses the unit. */
        child_go(&dead);
        child_end(&dead, false);
        unit_name(unit, sizeof(unit));
        ck_assert_int_eq(scope_start_async(l.manager, unit, dead.pid, &limits, on_done, &d[0]), 0);
        /* A name already in use by a running scope. */
        unit_name(unit2, sizeof(unit2));
        ck_assert_int_eq(scope_start_async(l.manager, unit2, c.pid, &limits, on_done, &d[1]), 0);
        run_until_done(&l, d, 2);
        ck_assert_msg(d[0].error < 0, "a dead pid got a scope");
        ck_assert_msg(d[1].error == 0, "start %s: %s", unit2, strerror(-d[1].error));
        ck_assert_int_eq(scope_start_async(l.manager, unit2, getpid(), &limits, on_done, &d[2]), 0);
        run_until_done(&l, &d[2], 1);
        ck_assert_msg(d[2].error == -EEXIST, "a second %s: %s", unit2, strerror(-d[2].error));
        own = cgroup_dir(getpid(), "pids");
        ck_assert_msg(!ends_with(own, unit2), "we moved into %s", unit2);
        /* The refused unit is not left behind; the running one is the first caller's still. */
        ck_assert_msg(unit_gone_within(unit, 10000), "%s, refused, stays loaded", unit);
        held = cgroup_dir(c.pid, "pids");
        ck_assert_msg(ends_with(held, unit2), "%d left %s: %s", (int)c.pid, unit2, held);

        child_end(&c, true);
        local_free(&l);
}
END_TEST

START_TEST(test_wait_failures) {
        LoopThread t;
        Child dead = child_new(false);
        char unit[64];

        loop_start(&t);
        child_go(&dead);
        child_end(&dead, false);
        unit_name(unit, sizeof(unit));
        ck_assert_int_lt(scope_start_wait(t.manager, unit, dead.pid, &limits, WAIT_USEC), 0);
        ck_assert_int_eq(scope_start_wait(t.manager, "no", dead.pid, &limits, WAIT_USEC), -EINVAL);
        loop_stop(&t);
}
END_TEST

START_TEST(test_kill) {
        LoopThread t;
        Child c = child_new(true);
        _cleanup_close_ int pidfd = -1;
        struct pollfd p;
        char unit[64];
        int status;

        loop_start(&t);
        unit_name(unit, sizeof(unit));
        ck_assert_int_eq(scope_start_wait(t.manager, unit, c.pid, &limits, WAIT_USEC), 0);
        child_go(&c); /* now it sleeps in pause() */
        pidfd = (int)syscall(SYS_pidfd_open, c.pid, 0);
        ck_assert_int_ge(pidfd, 0);
        usleep(50000);
        p = (struct pollfd){.fd = pidfd, .events = POLLIN};
        ck_assert_int_eq(poll(&p, 1, 0), 0);

        ck_assert_int_eq(scope_kill(t.manager, unit), 0);
        ck_assert_msg(poll(&p, 1, 5000) == 1, "the child outlived scope_kill() by 5 s");
        status = child_end(&c, false);
        ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        ck_assert_msg(unit_gone_within(unit, 5000), "%s still exists", unit);
        loop_stop(&t);
}
END_TEST

/* A KillUnit and StopUnit in flight keep the manager from idle until both are answered: what a
 * lockd on its way out waits for before it closes the bus. */
START_TEST(test_idle_after_kill) {
        Local l = local_new();
        Child c = child_new(true);
        char unit[64];
        Done d = {};

        ck_assert(scope_manager_idle(l.manager));
        unit_name(unit, sizeof(unit));
        ck_assert_int_eq(scope_start_async(l.manager, unit, c.pid, &limits, on_done, &d), 0);
        ck_assert(!scope_manager_idle(l.manager)); /* the start's job is not done */
        run_until_done(&l, &d, 1);
        ck_assert_msg(d.error == 0, "start %s: %s", unit, strerror(-d.error));
        ck_assert(scope_manager_idle(l.manager));

        ck_assert_int_eq(scope_kill(l.manager, unit), 0);
        ck_assert(!scope_manager_idle(l.manager)); /* sent, not answered */
        for (unsigned i = 0; i < 500 && !scope_manager_idle(l.manager); i++)
                ck_assert_int_ge(sd_event_run(l.event, 10000), 0);
        ck_assert_msg(scope_manager_idle(l.manager), "KillUnit/StopUnit unanswered after 5 s");
        ck_assert_int_eq(child_end(&c, false), SIGKILL);
        ck_assert_msg(unit_gone_within(unit, 5000), "%s still exists", unit);
        local_free(&l);
}
END_TEST

START_TEST(test_collected) {
        Local l = local_new();
        Child c = child_new(false);
        _cleanup_free_ char *pids = NULL;
        char unit[64];
        Done d = {};

        unit_name(unit, sizeof(unit));
        ck_assert_int_eq(scope_start_async(l.manager, unit, c.pid, &limits, on_done, &d), 0);
        run_until_done(&l, &d, 1);
        ck_assert_int_eq(d.error, 0);
        pids = cgroup_dir(c.pid, "pids");
        child_go(&c);
        ck_assert_int_eq(child_end(&c, false), 0);
        /* CollectMode=inactive-or-failed: the manager forgets the unit, and removes its cgroup. */
        ck_assert_msg(unit_gone_within(unit, 5000), "%s still exists", unit);
        ck_assert_msg(access(pids, F_OK) < 0 && errno == ENOENT, "%s still exists", pids);
        local_free(&l);
}
END_TEST

/* What the runner's hooks share in the OOM test. */
typedef struct Hook {
        ScopeManager *manager;
        char unit[64];
        ScopeLimits limits;
        OomWatch *watch;
        int error;
} Hook;

static int start_hook(pid_t pid, int pidfd, void *userdata) {
        Hook *h = userdata;

        h->error = scope_start_wait(h->manager, h->unit, pid, &h->limits, WAIT_USEC);
        if (h->error < 0)
                return h->error;
        h->error = oom_watch_new(pid, &h->watch);
        return h->error;
}

static bool oom_check(void *userdata) {
        Hook *h = userdata;

        return oom_watch_fired(h->watch);
}

static int peak_check(void *userdata, uint64_t *ret) {
        Hook *h = userdata;

        return oom_watch_peak(h->watch, ret);
}

/* Runs tests/plugins/<plugin> in a scope whose MemoryMax is memory_max. */
static void run_in_scope(ScopeManager *m, const char *plugin, uint64_t memory_max, bool check,
                         Hook *h, RunResult *res) {
        const char *dir = getenv("LOCKD_TEST_PLUGINS");
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int bin = -1, snap = -1, in = -1;
        _cleanup_(sandbox_freep) Sandbox *sb = NULL;
        SandboxSpec spec = {.protocol = 1,
                            .limits = {.cpu_s = 2, .memory_bytes = 128 * MiB, .timeout_s = 5}};
        RunParams p = {};

        ck_assert_ptr_nonnull(dir);
        ck_assert_int_ge(asprintf(&path, "%s/%s", dir, plugin), 0);
        bin = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_msg(bin >= 0, "%s: %m", path);
        ck_assert_int_eq(sandbox_new(bin, &spec, &sb), 0);
        snap = memfd_from_buffer("x", 1, "input");
        ck_assert_int_ge(snap, 0);
        in = fd_reopen_readonly(snap);
        ck_assert_int_ge(in, 0);

        *h = (Hook){.manager = m,
                    .limits = {.memory_max = memory_max,
                               .tasks_max = 16,
                               .runtime_max_usec = 30 * 1000000ULL}};
        unit_name(h->unit, sizeof(h->unit));
        p.input_fd = in;
        p.drop_to_uid = geteuid() == 0;
        p.uid = p.gid = TEST_UID;
        p.start_hook = start_hook;
        p.start_hook_userdata = h;
        if (check) {
                p.oom_check = oom_check;
                p.oom_check_userdata = h;
                p.peak_check = peak_check;
        }
        ck_assert_int_eq(runner_run(sb, &p, res), 0);
        ck_assert_msg(h->error == 0, "the start hook: %s", strerror(-h->error));
}

START_TEST(test_oom) {
        LoopThread t;
        RunResult res;
        Hook h;
        char cause[64];

        loop_start(&t);
        /*
         * MemoryMax= the manifest's memory, as lockd sets it: 115 MiB of heap fit RLIMIT_DATA
         * (128 MiB), the pipe buffers after them do not fit the scope.
         */
        run_in_scope(t.manager, "scope-oom", 128 * MiB, true, &h, &res);
        ck_assert_msg(res.outcome == RUN_PLUGIN_ERROR && res.cause == RUN_CAUSE_OOM,
                      "outcome %s cause %s", run_outcome_name(res.outcome),
                      run_cause_format(&res, cause, sizeof(cause)));
        ck_assert_str_eq(run_cause_format(&res, cause, sizeof(cause)), "oom");
        oom_watch_free(h.watch);

        /* A smaller scope kills it in its heap already. */
        run_in_scope(t.manager, "scope-oom", 64 * MiB, true, &h, &res);
        ck_assert_str_eq(run_cause_format(&res, cause, sizeof(cause)), "oom");
        oom_watch_free(h.watch);

        /* The same plugin with room enough survives, and nothing reads as an OOM. */
        run_in_scope(t.manager, "scope-oom", 256 * MiB, true, &h, &res);
        ck_assert_msg(res.outcome == RUN_ZERO, "outcome %s cause %s", run_outcome_name(res.outcome),
                      run_cause_format(&res, cause, sizeof(cause)));
        ck_assert(!oom_watch_fired(h.watch));
        oom_watch_free(h.watch);
        loop_stop(&t);
}
END_TEST

/*
 * The kernel behaviours oom_watch_fired() relies on once the manager removed the cgroup (see
 * daemon/runtime/oom-watch.c): asked only after the unit is gone, the watch still tells an OOM kill
 * from a clean end.
 */
START_TEST(test_oom_after_removal) {
        LoopThread t;
        RunResult res;
        Hook h;

        loop_start(&t);
        run_in_scope(t.manager, "scope-oom", 64 * MiB, false, &h, &res);
        ck_assert_int_eq(res.cause, RUN_CAUSE_SIGNAL);
        ck_assert_int_eq(res.signal, SIGKILL);
        ck_assert_msg(unit_gone_within(h.unit, 5000), "%s still exists", h.unit);
        ck_assert(oom_watch_fired(h.watch));
        ck_assert(oom_watch_fired(h.watch)); /* the same answer when asked again */
        oom_watch_free(h.watch);

        run_in_scope(t.manager, "scope-oom", 256 * MiB, false, &h, &res);
        ck_assert_int_eq(res.outcome, RUN_ZERO);
        ck_assert_msg(unit_gone_within(h.unit, 5000), "%s still exists", h.unit);
        ck_assert(!oom_watch_fired(h.watch));
        oom_watch_free(h.watch);
        loop_stop(&t);
}
END_TEST

/*
 * Peak memory is the plugin's own: its scope's peak, not the runner's maxrss, which an execve from
 * memory shared with the spawner (CLONE_VM) keeps at least at the spawner's size. A plugin that
 * touches 115 MiB of heap shows it; a trivial one shows well under a MiB, less than this test
 * process's own resident size, which the maxrss would have carried.
 */
#define PEAK_TRIES 5

START_TEST(test_peak_is_the_plugins) {
        LoopThread t;
        RunResult res;
        Hook h;
        uint64_t own = 0;
        FILE *f;
        char line[256];

        f = fopen("/proc/self/status", "re");
        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %" SCNu64 " kB", &own) == 1)
                        break;
        fclose(f);
        ck_assert_uint_gt(own, 0);

        /*
         * A peak of 0 is "unknown": the manager removed the run's cgroup before it was read (an
         * empty scope goes at once; on a busy machine that can come first). Unknown is never
         * the runner's maxrss, so it is allowed; a known peak must be the plugin's, and each
         * plugin gets up to five runs to show one.
         */
        loop_start(&t);
        for (int i = 0, known = 0; !known; i++) {
                ck_assert_msg(i < PEAK_TRIES, "no known peak in %d runs of scope-oom", i);
                run_in_scope(t.manager, "scope-oom", 256 * MiB, true, &h, &res);
                ck_assert_int_eq(res.outcome, RUN_ZERO);
                known = res.peak_rss_bytes > 0;
                ck_assert_msg(!known || (res.peak_rss_bytes >= 115 * MiB &&
                                         res.peak_rss_bytes < 256 * MiB),
                              "peak %" PRIu64, res.peak_rss_bytes);
                oom_watch_free(h.watch);
        }
        for (int i = 0, known = 0; !known; i++) {
                ck_assert_msg(i < PEAK_TRIES, "no known peak in %d runs of good-one", i);
                run_in_scope(t.manager, "good-one", 64 * MiB, true, &h, &res);
                ck_assert_int_eq(res.outcome, RUN_ONE);
                known = res.peak_rss_bytes > 0;
                ck_assert_msg(!known || (res.peak_rss_bytes < 1 * MiB &&
                                         res.peak_rss_bytes < own * 1024),
                              "peak %" PRIu64 ", this process %" PRIu64 " KiB",
                              res.peak_rss_bytes, own);
                oom_watch_free(h.watch);
        }
        loop_stop(&t);
}
END_TEST

/* A worker's standby_take(), on a thread of its own while the test's thread runs the loop. */
typedef struct Taker {
        Standby *standby;
        StandbyClass class;
        uint64_t wait_usec;
        StandbyChild got;
        uint64_t waited;
        uint64_t end_usec; /* just after its standby_take() */
        int r;
        bool done;
} Taker;

static void *taker_main(void *userdata) {
        Taker *t = userdata;

        t->r = standby_take(t->standby, &t->class, t->wait_usec, &t->got, &t->waited);
        t->end_usec = clock_monotonic_usec();
        __atomic_store_n(&t->done, true, __ATOMIC_RELEASE);
        return NULL;
}

/* The standby's scope names: how many it asked the manager for, and the first. */
typedef struct Named {
        unsigned n;
        char first[64];
} Named;

static void standby_unit_name(char *buf, size_t size, void *userdata) {
        Named *named = userdata;

        unit_name(buf, size);
        if (named->n++ == 0)
                snprintf(named->first, sizeof(named->first), "%s", buf);
}

/*
 * A run that finds its class empty while a child of it has its scope made takes that child once
 * the manager made it, and says how long it waited; the manager makes one scope, not a second one
 * on demand. Told not to wait, it gets -EAGAIN at once (and makes its own scope).
 */
START_TEST(test_standby_waits_for_pending) {
        Local l = local_new();
        _cleanup_(cgroup_mounts_freep) CgroupMounts *cg = NULL;
        StandbyClass class = {.memory_max = 64 * MiB, .timeout_usec = 5 * 1000000ULL};
        Taker t = {.class = class, .wait_usec = WAIT_USEC, .r = 1};
        StandbyChild got = {};
        Standby *s = NULL;
        Named named = {};
        uint64_t waited = 0, loop_usec;
        pthread_t th;

        ck_assert_int_eq(cgroup_mounts_load(&cg), 0);
        ck_assert_int_eq(
                standby_new(l.event, l.manager, cg, SLICE, 1, standby_unit_name, &named, &s), 0);
        /* One child, its scope asked for; the loop has not run, so it cannot be ready yet. */
        standby_warm(s, &class);
        ck_assert_uint_eq(named.n, 1);
        ck_assert_int_eq(standby_take(s, &class, 0, &got, &waited), -EAGAIN);
        ck_assert(!standby_idle(s));

        /* The taker finds none ready (the loop is not running yet) and waits for it. */
        t.standby = s;
        ck_assert_int_eq(pthread_create(&th, NULL, taker_main, &t), 0);
        usleep(50000);
        ck_assert(!__atomic_load_n(&t.done, __ATOMIC_ACQUIRE));
        loop_usec = clock_monotonic_usec();
        for (unsigned i = 0; i < 1000 && !__atomic_load_n(&t.done, __ATOMIC_ACQUIRE); i++)
                ck_assert_int_ge(sd_event_run(l.event, 10000), 0);
        ck_assert_int_eq(pthread_join(th, NULL), 0);
        ck_assert_msg(t.r == 0, "standby_take: %s", strerror(-t.r));
        ck_assert(run_child_waiting(t.got.child));
        /* It waited (counted) until the loop ran and made the child ready, not past its bound.
         * Not "at least the 50 ms above": a busy machine may start the taker after them. */
        ck_assert_uint_gt(t.waited, 0);
        ck_assert_uint_ge(t.end_usec, loop_usec);
        ck_assert_uint_lt(t.waited, WAIT_USEC);
        /* The very child whose scope was asked for first: no scope of its own was made for the
         * take (a later one is the refill of what it took). */
        ck_assert_str_eq(t.got.unit, named.first);

        /* Unused, it dies with its handle, and its scope goes. */
        t.got.child = run_child_free(t.got.child);
        t.got.oom = oom_watch_free(t.got.oom);
        ck_assert_msg(unit_gone_within(t.got.unit, 5000), "%s still exists", t.got.unit);
        /* The refill's child, if one is being made, is made before the standby goes: it is
         * killed with its scope then, rather than leave a unit behind. */
        for (unsigned i = 0; i < 1000 && !standby_idle(s); i++)
                ck_assert_int_ge(sd_event_run(l.event, 10000), 0);
        standby_free(s);
        local_free(&l);
}
END_TEST

/*
 * The manager's broker: the system bus, or the user manager's own bus, which with-systemd's
 * manager starts from dbus-user-session's dbus.socket (scripts/deps installs it).
 */
static char *broker_address(bool *ret_private_manager) {
        const char *spec = test_bus(), *runtime = getenv("XDG_RUNTIME_DIR");
        char *address = NULL;

        *ret_private_manager = strcmp(spec, "system") != 0;
        if (!*ret_private_manager)
                return strdup("system");
        ck_assert_msg(runtime && runtime[0] == '/', "XDG_RUNTIME_DIR is not set: run through "
                                                    "with-systemd");
        ck_assert_int_ge(asprintf(&address, "unix:path=%s/bus", runtime), 0);
        ck_assert_msg(access(address + strlen("unix:path="), F_OK) == 0,
                      "no bus at %s: install dbus-user-session (scripts/deps --test)",
                      address + strlen("unix:path="));
        return address;
}

static int count_signal(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        unsigned *n = userdata;

        (*n)++;
        return 0;
}

/*
 * Through a broker, as lockd's default `bus: system` goes: the start's JobRemoved reaches us with
 * no Subscribe(), and the manager, which nobody else subscribed to, sends no unit signals at all
 * (UnitNew, UnitRemoved, PropertiesChanged), which a subscriber would have it build for every
 * state change of every unit (ARCHITECTURE.md, Scopes).
 */
START_TEST(test_through_broker) {
        bool private_manager;
        _cleanup_free_ char *broker = broker_address(&private_manager), *held = NULL;
        ScopeConfig cfg = {.bus = broker, .slice = SLICE};
        Child c = child_new(false);
        sd_bus *watch = NULL;
        unsigned unit_signals = 0, job_signals = 0;
        Local l = {};
        char unit[64];
        Done d = {};
        int r;

        /* A client of the broker, as lockd's own connection is (scope_bus_open()). */
        ck_assert_int_ge(scope_bus_open(broker, &watch), 0);
        ck_assert_int_ge(sd_bus_add_match(watch, NULL,
                                          "type='signal',sender='" SYSTEMD "',path='" SYSTEMD_OBJ
                                          "',interface='" MANAGER "',member='JobRemoved'",
                                          count_signal, &job_signals),
                         0);
        for (const char *const *member =
                     (const char *const[]){"UnitNew", "UnitRemoved", "PropertiesChanged", NULL};
             *member; member++) {
                _cleanup_free_ char *match = NULL;

                ck_assert_int_ge(
                        asprintf(&match, "type='signal',sender='" SYSTEMD "',member='%s'", *member),
                        0);
                ck_assert_int_ge(sd_bus_add_match(watch, NULL, match, count_signal, &unit_signals),
                                 0);
        }

        ck_assert_int_eq(sd_event_new(&l.event), 0);
        r = scope_manager_new(l.event, &cfg, &l.manager);
        ck_assert_msg(r == 0, "scope_manager_new(%s): %s", broker, strerror(-r));
        unit_name(unit, sizeof(unit));
        ck_assert_int_eq(scope_start_async(l.manager, unit, c.pid, &limits, on_done, &d), 0);
        run_until_done(&l, &d, 1);
        ck_assert_msg(d.error == 0, "start %s through %s: %s", unit, broker, strerror(-d.error));
        held = cgroup_dir(c.pid, "pids");
        ck_assert_msg(ends_with(held, unit), "%d is not in %s: %s", (int)c.pid, unit, held);
        child_go(&c);
        ck_assert_int_eq(child_end(&c, false), 0);
        ck_assert_msg(unit_gone_within(unit, 10000), "%s was not collected", unit);

        /* Whatever the manager broadcast meanwhile has reached the watch in 0.5 s of quiet. */
        for (unsigned quiet = 0; quiet < 5;) {
                r = sd_bus_process(watch, NULL);
                ck_assert_int_ge(r, 0);
                if (r == 0) {
                        ck_assert_int_ge(sd_bus_wait(watch, 100000), 0);
                        quiet++;
                }
        }
        ck_assert_msg(job_signals >= 1, "the watch saw no JobRemoved: it cannot tell");
        if (private_manager)
                /* On a host's own manager another client may have subscribed; not on ours. */
                ck_assert_msg(unit_signals == 0,
                              "the manager sent %u unit signals: somebody subscribed",
                              unit_signals);
        sd_bus_flush_close_unref(watch);
        local_free(&l);
}
END_TEST

static Suite *scope_suite(void) {
        Suite *s = suite_create("scope");
        const CaseOptions each = {.timeout = 60};

        suite_add_case(s, &each, test_limits);
        suite_add_case(s, &each, test_many_async);
        suite_add_case(s, &each, test_wait_threads);
        suite_add_case(s, &each, test_failures);
        suite_add_case(s, &each, test_wait_failures);
        suite_add_case(s, &each, test_kill);
        suite_add_case(s, &each, test_idle_after_kill);
        suite_add_case(s, &each, test_collected);
        suite_add_case(s, &each, test_oom);
        suite_add_case(s, &each, test_oom_after_removal);
        suite_add_case(s, &each, test_peak_is_the_plugins);
        suite_add_case(s, &each, test_standby_waits_for_pending);
        suite_add_case(s, &each, test_through_broker);
        return s;
}

int main(void) {
        return check_run(scope_suite());
}
