/*
 * The run pool without scopes: real test plugins under the real sandbox on worker threads, the
 * results handed back on an sd-event loop, round-robin across keys, the queue's cap, killing and
 * freeing with runs in flight and queued, one ephemeral uid per concurrent run.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check-run.h"
#include "fd-util.h"
#include "macro.h"
#include "runpool.h"

#define INPUT          "hello lockd needle-xyz\n"
#define TEST_UID_FIRST 655500
#define TEST_UID_LAST  655507
#define MAX_RUNS       128

/* What a done callback saw of one run. */
typedef struct Seen {
        unsigned calls; /* how often done ran for it: exactly once */
        unsigned order; /* its place among the deliveries */
        bool on_loop;   /* done ran on the loop's thread */
        int error;
        RunResult result;
} Seen;

static sd_event *event;
static pthread_t loop_thread;
static Seen seen[MAX_RUNS];
static unsigned n_done;

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
}

static void setup(void) {
        ck_assert_int_eq(sd_event_new(&event), 0);
        loop_thread = pthread_self();
        memset(seen, 0, sizeof(seen));
        n_done = 0;
}

static void teardown(void) {
        event = sd_event_unref(event);
}

/* Loads tests/plugins/<name> (built into LOCKD_TEST_PLUGINS) with spec. */
static Sandbox *load(const char *name, const SandboxSpec *spec) {
        const char *dir = getenv("LOCKD_TEST_PLUGINS");
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -1;
        Sandbox *sb = NULL;
        int r;

        ck_assert_msg(dir, "LOCKD_TEST_PLUGINS is not set");
        ck_assert_int_ge(asprintf(&path, "%s/%s", dir, name), 0);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_msg(fd >= 0, "%s: %m", path);
        r = sandbox_new(fd, spec, &sb);
        ck_assert_msg(r == 0, "%s: %s", name, sandbox_strerror(r));
        return sb;
}

static const SandboxSpec spec_fast = {
        .protocol = 1, .limits = {.cpu_s = 2, .memory_bytes = 128 * MiB, .timeout_s = 3}};
/* sleep-timeout sleeps 10 s: with 1 s it times out, with 30 s it is still asleep when killed. */
static const SandboxSpec spec_timeout_1s = {
        .protocol = 1, .limits = {.cpu_s = 2, .memory_bytes = 128 * MiB, .timeout_s = 1}};
static const SandboxSpec spec_asleep = {
        .protocol = 1, .limits = {.cpu_s = 2, .memory_bytes = 128 * MiB, .timeout_s = 30}};

static void on_done(RunRequest *req, void *userdata) {
        Seen *s = userdata;

        s->calls++;
        s->order = n_done++;
        s->on_loop = pthread_equal(pthread_self(), loop_thread);
        s->error = req->error;
        s->result = req->result;
        ck_assert(!req->scoped);
        run_request_free(req);
}

/* A request for sb on key, reporting into seen[id]. */
static RunRequest *request(const Sandbox *sb, uint64_t key, unsigned id) {
        RunRequest *req = run_request_new();
        _cleanup_close_ int snap = -1;

        ck_assert_ptr_nonnull(req);
        ck_assert_uint_lt(id, MAX_RUNS);
        snap = memfd_from_buffer(INPUT, strlen(INPUT), "input");
        ck_assert_int_ge(snap, 0);
        req->input_fd = fd_reopen_readonly(snap);
        ck_assert_int_ge(req->input_fd, 0);
        req->sandbox = sb;
        req->fairness_key = key;
        snprintf(req->unit, sizeof(req->unit), "lockd-run-test-%u.scope", id);
        req->done = on_done;
        req->userdata = &seen[id];
        return req;
}

static void submit(RunPool *p, const Sandbox *sb, uint64_t key, unsigned id) {
        RunRequest *req = request(sb, key, id);
        int r = run_pool_submit(p, req);

        ck_assert_msg(r == 0, "submit %u: %s", id, strerror(-r));
}

/* Runs the loop until n runs were delivered in all, failing after timeout_s. */
static void wait_done(unsigned n, unsigned timeout_s) {
        uint64_t deadline = now_usec() + timeout_s * 1000000ULL;

        while (n_done < n) {
                ck_assert_msg(now_usec() < deadline, "%u of %u runs delivered", n_done, n);
                ck_assert_int_ge(sd_event_run(event, 100000), 0);
        }
}

/* Waits (without running the loop) until the pool has taken active runs and queues none. */
static void wait_taken(RunPool *p, unsigned active) {
        uint64_t deadline = now_usec() + 5000000ULL;

        while (run_pool_n_active(p) != active || run_pool_n_queued(p) != 0) {
                ck_assert_msg(now_usec() < deadline, "%u active, %u queued", run_pool_n_active(p),
                              run_pool_n_queued(p));
                usleep(1000);
        }
}

/* Whether /proc/<pid>/cmdline is the argv the runner gives a plugin: it has exec'd. */
static bool is_plugin(const char *pid) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -1;
        char buf[16];
        ssize_t n;

        ck_assert_int_ge(asprintf(&path, "/proc/%s/cmdline", pid), 0);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        n = read(fd, buf, sizeof(buf));
        return n == (ssize_t)sizeof("plugin") && memcmp(buf, "plugin", sizeof("plugin")) == 0;
}

static void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}

/* Counts the children of our threads that are plugins already past execve. */
static unsigned count_plugins(void) {
        _cleanup_(closedirp) DIR *d = opendir("/proc/self/task");
        struct dirent *de;
        unsigned n = 0;

        ck_assert_ptr_nonnull(d);
        while ((de = readdir(d))) {
                _cleanup_free_ char *path = NULL, *text = NULL;
                _cleanup_close_ int fd = -1;
                size_t len;

                if (de->d_name[0] == '.')
                        continue;
                ck_assert_int_ge(asprintf(&path, "/proc/self/task/%s/children", de->d_name), 0);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || read_full_fd(fd, 4096, &text, &len) < 0)
                        continue;
                for (char *save = NULL, *pid = strtok_r(text, " \n", &save); pid;
                     pid = strtok_r(NULL, " \n", &save))
                        n += is_plugin(pid);
        }
        return n;
}

static void wait_plugins(unsigned n) {
        uint64_t deadline = now_usec() + 5000000ULL;

        while (count_plugins() < n) {
                ck_assert_msg(now_usec() < deadline, "the plugins did not start");
                usleep(2000);
        }
}

static void cause_is(const Seen *s, const char *want) {
        char cause[64];

        run_cause_format(&s->result, cause, sizeof(cause));
        ck_assert_msg(strcmp(cause, want) == 0, "cause %s, want %s", cause, want);
}

static RunPoolConfig config(unsigned workers, unsigned queue_max) {
        return (RunPoolConfig){
                .workers = workers,
                .queue_max = queue_max,
                .uid_first = TEST_UID_FIRST,
                .uid_last = TEST_UID_LAST,
                .scope_timeout_usec = 1000000,
        };
}

START_TEST(test_one_run) {
        _cleanup_(sandbox_freep) Sandbox *one = load("good-one", &spec_fast);
        _cleanup_(sandbox_freep) Sandbox *zero = load("good-zero", &spec_fast);
        _cleanup_(run_pool_freep) RunPool *p = NULL;
        RunPoolConfig cfg = config(1, 4);

        ck_assert_int_eq(run_pool_new(event, &cfg, NULL, &p), 0);
        submit(p, one, 1, 0);
        wait_done(1, 10);
        submit(p, zero, 1, 1);
        wait_done(2, 10);

        ck_assert_int_eq(seen[0].error, 0);
        ck_assert_int_eq(seen[0].result.outcome, RUN_ONE);
        ck_assert_int_eq(seen[0].result.cause, RUN_CAUSE_NONE);
        ck_assert_int_eq(seen[1].error, 0);
        ck_assert_int_eq(seen[1].result.outcome, RUN_ZERO);
        ck_assert_int_eq(seen[1].result.cause, RUN_CAUSE_NONE);
        for (unsigned i = 0; i < 2; i++) {
                ck_assert_uint_eq(seen[i].calls, 1);
                ck_assert(seen[i].on_loop);
                /* Without drop_to_uid the plugin runs as the caller. */
                ck_assert_uint_eq(seen[i].result.uid, getuid());
        }
        ck_assert_uint_eq(run_pool_n_active(p), 0);
        ck_assert_uint_eq(run_pool_n_queued(p), 0);
}
END_TEST

START_TEST(test_many_runs) {
        _cleanup_(sandbox_freep) Sandbox *one = load("good-one", &spec_fast);
        _cleanup_(sandbox_freep) Sandbox *zero = load("good-zero", &spec_fast);
        _cleanup_(run_pool_freep) RunPool *p = NULL;
        RunPoolConfig cfg = config(2, 64);
        const unsigned n = 40;

        ck_assert_int_eq(run_pool_new(event, &cfg, NULL, &p), 0);
        for (unsigned i = 0; i < n; i++)
                submit(p, i % 2 ? zero : one, i % 3, i);
        wait_done(n, 60);
        /* A little longer: a second delivery of any run would show now. */
        for (unsigned i = 0; i < 5; i++)
                ck_assert_int_ge(sd_event_run(event, 10000), 0);

        ck_assert_uint_eq(n_done, n);
        for (unsigned i = 0; i < n; i++) {
                ck_assert_msg(seen[i].calls == 1, "run %u: done ran %u times", i, seen[i].calls);
                ck_assert(seen[i].on_loop);
                ck_assert_int_eq(seen[i].error, 0);
                ck_assert_int_eq(seen[i].result.outcome, i % 2 ? RUN_ZERO : RUN_ONE);
        }
        ck_assert_uint_eq(run_pool_n_active(p), 0);
        ck_assert_uint_eq(run_pool_n_queued(p), 0);
}
END_TEST

/*
 * One worker, busy with key A's first run while A queues 10 more and B then queues 2: the worker
 * alternates between the keys, so B is not served after all of A.
 */
START_TEST(test_fairness) {
        _cleanup_(sandbox_freep) Sandbox *busy = load("sleep-timeout", &spec_timeout_1s);
        _cleanup_(sandbox_freep) Sandbox *one = load("good-one", &spec_fast);
        _cleanup_(run_pool_freep) RunPool *p = NULL;
        RunPoolConfig cfg = config(1, 16);
        static const unsigned want[] = {
                /* the busy one */ 0, 1, 11, 2, 12, 3, 4, 5, 6, 7, 8, 9, 10};
        unsigned order[ELEMENTSOF(want)];

        ck_assert_int_eq(run_pool_new(event, &cfg, NULL, &p), 0);
        submit(p, busy, 'A', 0);
        wait_taken(p, 1);
        for (unsigned i = 1; i <= 10; i++)
                submit(p, one, 'A', i);
        for (unsigned i = 11; i <= 12; i++)
                submit(p, one, 'B', i);
        ck_assert_uint_eq(run_pool_n_queued(p), 12);
        /* The busy run still runs: the whole queue was there before the worker took more. */
        ck_assert_uint_eq(n_done, 0);
        wait_done(13, 30);

        for (unsigned i = 0; i < ELEMENTSOF(want); i++)
                order[seen[want[i]].order] = want[i];
        for (unsigned i = 0; i < ELEMENTSOF(want); i++)
                ck_assert_msg(seen[want[i]].order == i, "served #%u was run %u, want run %u", i,
                              order[i], want[i]);
        cause_is(&seen[0], "timeout");
        for (unsigned i = 1; i <= 12; i++)
                ck_assert_int_eq(seen[i].result.outcome, RUN_ONE);
}
END_TEST

/* Three keys joining one after the other are served in the order they joined, then in turn. */
START_TEST(test_fairness_three_keys) {
        _cleanup_(sandbox_freep) Sandbox *busy = load("sleep-timeout", &spec_timeout_1s);
        _cleanup_(sandbox_freep) Sandbox *one = load("good-one", &spec_fast);
        _cleanup_(run_pool_freep) RunPool *p = NULL;
        RunPoolConfig cfg = config(1, 16);
        /* Submitted: A1 A2 A3, B1 B2, C1; served: A1 B1 C1 A2 B2 A3. */
        static const unsigned want[] = {0, 1, 4, 6, 2, 5, 3};

        ck_assert_int_eq(run_pool_new(event, &cfg, NULL, &p), 0);
        submit(p, busy, 'X', 0);
        wait_taken(p, 1);
        submit(p, one, 'A', 1);
        submit(p, one, 'A', 2);
        submit(p, one, 'A', 3);
        submit(p, one, 'B', 4);
        submit(p, one, 'B', 5);
        submit(p, one, 'C', 6);
        wait_done(7, 30);
        for (unsigned i = 0; i < ELEMENTSOF(want); i++)
                ck_assert_msg(seen[want[i]].order == i, "run %u served #%u, want #%u", want[i],
                              seen[want[i]].order, i);
}
END_TEST

START_TEST(test_queue_max) {
        _cleanup_(sandbox_freep) Sandbox *busy = load("sleep-timeout", &spec_timeout_1s);
        _cleanup_(sandbox_freep) Sandbox *one = load("good-one", &spec_fast);
        _cleanup_(run_pool_freep) RunPool *p = NULL;
        _cleanup_(run_request_freep) RunRequest *extra = NULL;
        RunPoolConfig cfg = config(1, 2);

        ck_assert_int_eq(run_pool_new(event, &cfg, NULL, &p), 0);
        submit(p, busy, 1, 0);
        wait_taken(p, 1);
        submit(p, one, 1, 1);
        submit(p, one, 2, 2);
        /* The queue holds queue_max runs, whatever their keys; the one in flight is not counted. */
        extra = request(one, 3, 3);
        ck_assert_int_eq(run_pool_submit(p, extra), -EAGAIN);
        ck_assert_uint_eq(run_pool_n_queued(p), 2);
        wait_done(3, 30);
        ck_assert_uint_eq(seen[3].calls, 0);
        /* Room again: the refused request can be submitted now, and the pool owns it. */
        ck_assert_int_eq(run_pool_submit(p, extra), 0);
        TAKE_PTR(extra);
        wait_done(4, 10);
        ck_assert_int_eq(seen[3].result.outcome, RUN_ONE);
}
END_TEST

START_TEST(test_submit_invalid) {
        _cleanup_(sandbox_freep) Sandbox *one = load("good-one", &spec_fast);
        _cleanup_(run_pool_freep) RunPool *p = NULL;
        _cleanup_(run_request_freep) RunRequest *req = NULL;
        RunPoolConfig cfg = config(1, 2), bad;

        bad = cfg;
        bad.workers = 0;
        ck_assert_int_eq(run_pool_new(event, &bad, NULL, &p), -EINVAL);
        ck_assert_ptr_null(p);
        /* Fewer uids than workers: a run would find none free. */
        bad = cfg;
        bad.workers = 9;
        bad.drop_to_uid = true;
        ck_assert_int_eq(run_pool_new(event, &bad, NULL, &p), -EINVAL);
        bad.uid_first = 0;
        bad.workers = 1;
        ck_assert_int_eq(run_pool_new(event, &bad, NULL, &p), -EINVAL);
        ck_assert_ptr_null(p);

        ck_assert_int_eq(run_pool_new(event, &cfg, NULL, &p), 0);
        req = request(one, 1, 0);
        req->done = NULL;
        ck_assert_int_eq(run_pool_submit(p, req), -EINVAL);
        req->done = on_done;
        req->sandbox = NULL;
        ck_assert_int_eq(run_pool_submit(p, req), -EINVAL);
        req->sandbox = one;
        req->input_fd = safe_close(req->input_fd);
        ck_assert_int_eq(run_pool_submit(p, req), -EINVAL);
        ck_assert_uint_eq(run_pool_n_queued(p), 0);
}
END_TEST

/*
 * Two plugins asleep in flight and one queued: run_pool_kill_all() kills the two at once (SIGKILL
 * through the pidfd reads as signal:SIGKILL: lockd's own timeout did not send it), fails the
 * queued one with -ECANCELED, and the pool takes nothing more.
 */
START_TEST(test_kill_all) {
        _cleanup_(sandbox_freep) Sandbox *asleep = load("sleep-timeout", &spec_asleep);
        _cleanup_(sandbox_freep) Sandbox *one = load("good-one", &spec_fast);
        _cleanup_(run_pool_freep) RunPool *p = NULL;
        _cleanup_(run_request_freep) RunRequest *late = NULL;
        RunPoolConfig cfg = config(2, 4);
        uint64_t start;

        ck_assert_int_eq(run_pool_new(event, &cfg, NULL, &p), 0);
        submit(p, asleep, 1, 0);
        submit(p, asleep, 2, 1);
        wait_taken(p, 2);
        submit(p, one, 3, 2);
        wait_plugins(2);

        start = now_usec();
        run_pool_kill_all(p);
        wait_done(3, 5);
        ck_assert_msg(now_usec() - start < 2000000ULL, "killing took %llu us",
                      (unsigned long long)(now_usec() - start));
        for (unsigned i = 0; i < 2; i++) {
                ck_assert_uint_eq(seen[i].calls, 1);
                ck_assert(seen[i].on_loop);
                ck_assert_int_eq(seen[i].error, 0);
                ck_assert_int_eq(seen[i].result.outcome, RUN_PLUGIN_ERROR);
                cause_is(&seen[i], "signal:SIGKILL");
                ck_assert_uint_lt(seen[i].result.wall_usec, 10000000ULL);
        }
        ck_assert_uint_eq(seen[2].calls, 1);
        ck_assert(seen[2].on_loop);
        ck_assert_int_eq(seen[2].error, -ECANCELED);
        /* Nothing is left: a stopping daemon can tell it may exit now. */
        ck_assert_uint_eq(run_pool_n_active(p), 0);
        ck_assert_uint_eq(run_pool_n_queued(p), 0);

        late = request(one, 1, 3);
        ck_assert_int_eq(run_pool_submit(p, late), -ESHUTDOWN);
        run_pool_kill_all(p); /* again: nothing to do */
        p = run_pool_free(p);
        ck_assert_uint_eq(seen[3].calls, 0);
        ck_assert_uint_eq(n_done, 3);
}
END_TEST

/*
 * Killing at any moment of a run's start: before, while or after the child enters the sandbox.
 * Each run either never started (-ECANCELED) or was killed as a plugin (signal:SIGKILL); a spawn
 * that the stop cut short is not a plugin's failure.
 */
START_TEST(test_kill_races) {
        _cleanup_(sandbox_freep) Sandbox *asleep = load("sleep-timeout", &spec_asleep);

        for (unsigned round = 0; round < 30; round++) {
                _cleanup_(run_pool_freep) RunPool *p = NULL;
                RunPoolConfig cfg = config(2, 4);
                unsigned base = n_done;

                ck_assert_int_eq(run_pool_new(event, &cfg, NULL, &p), 0);
                for (unsigned i = 0; i < 2; i++)
                        submit(p, asleep, i, base + i);
                usleep((round % 10) * 300);
                run_pool_kill_all(p);
                wait_done(base + 2, 5);
                for (unsigned i = base; i < base + 2; i++) {
                        char cause[64];

                        run_cause_format(&seen[i].result, cause, sizeof(cause));
                        ck_assert_uint_eq(seen[i].calls, 1);
                        ck_assert_msg(seen[i].error == -ECANCELED ||
                                              (seen[i].error == 0 &&
                                               strcmp(cause, "signal:SIGKILL") == 0),
                                      "round %u: error %d, cause %s", round, seen[i].error, cause);
                }
                ck_assert_uint_eq(run_pool_n_active(p), 0);
        }
}
END_TEST

/* Freeing with one run in flight and three queued: the queued ones end with -ECANCELED. */
START_TEST(test_free_cancels) {
        _cleanup_(sandbox_freep) Sandbox *asleep = load("sleep-timeout", &spec_asleep);
        _cleanup_(sandbox_freep) Sandbox *one = load("good-one", &spec_fast);
        RunPool *p = NULL;
        RunPoolConfig cfg = config(1, 8);
        uint64_t start;

        ck_assert_int_eq(run_pool_new(event, &cfg, NULL, &p), 0);
        submit(p, asleep, 1, 0);
        wait_taken(p, 1);
        for (unsigned i = 1; i <= 3; i++)
                submit(p, one, i, i);
        wait_plugins(1);

        start = now_usec();
        p = run_pool_free(p);
        ck_assert_ptr_null(p);
        ck_assert_uint_lt(now_usec() - start, 2000000ULL);
        /* Every done ran before run_pool_free() returned, on this thread. */
        ck_assert_uint_eq(n_done, 4);
        ck_assert_int_eq(seen[0].error, 0);
        cause_is(&seen[0], "signal:SIGKILL");
        for (unsigned i = 0; i <= 3; i++) {
                ck_assert_uint_eq(seen[i].calls, 1);
                ck_assert(seen[i].on_loop);
        }
        for (unsigned i = 1; i <= 3; i++)
                ck_assert_int_eq(seen[i].error, -ECANCELED);
        /* Nothing more is delivered by the loop afterwards. */
        ck_assert_int_ge(sd_event_run(event, 10000), 0);
        ck_assert_uint_eq(n_done, 4);
}
END_TEST

/* Freeing an idle pool, and one whose finished runs the loop has not delivered yet. */
START_TEST(test_free_delivers) {
        _cleanup_(sandbox_freep) Sandbox *one = load("good-one", &spec_fast);
        RunPool *p = NULL;
        RunPoolConfig cfg = config(2, 8);

        ck_assert_int_eq(run_pool_new(event, &cfg, NULL, &p), 0);
        p = run_pool_free(p);
        ck_assert_int_eq(run_pool_new(event, &cfg, NULL, &p), 0);
        submit(p, one, 1, 0);
        submit(p, one, 1, 1);
        /* The loop does not run: the two finish (in a few ms) but are not delivered. */
        wait_taken(p, 2);
        usleep(500000);
        ck_assert_uint_eq(n_done, 0);
        /* Finished but not delivered: still counted, so a stopping daemon waits for them. */
        ck_assert_uint_eq(run_pool_n_active(p), 2);
        p = run_pool_free(p);
        ck_assert_uint_eq(n_done, 2);
        for (unsigned i = 0; i < 2; i++) {
                ck_assert_int_eq(seen[i].error, 0);
                ck_assert_int_eq(seen[i].result.outcome, RUN_ONE);
        }
}
END_TEST

/* As root: each concurrent run gets its own uid of the range. */
START_TEST(test_drop_to_uid) {
        _cleanup_(sandbox_freep) Sandbox *busy = load("sleep-timeout", &spec_timeout_1s);
        _cleanup_(sandbox_freep) Sandbox *one = load("good-one", &spec_fast);
        _cleanup_(run_pool_freep) RunPool *p = NULL;
        RunPoolConfig cfg = config(3, 16);
        const unsigned n = 9;

        ck_assert_msg(geteuid() == 0, "needs root: runs drop to the uids of the range");
        cfg.drop_to_uid = true;
        ck_assert_int_eq(run_pool_new(event, &cfg, NULL, &p), 0);
        /* Three runs that overlap for a second... */
        for (unsigned i = 0; i < 3; i++)
                submit(p, busy, i, i);
        wait_taken(p, 3);
        wait_plugins(3);
        /* ...then quick ones. */
        for (unsigned i = 3; i < n; i++)
                submit(p, one, i, i);
        wait_done(n, 30);

        for (unsigned i = 0; i < n; i++) {
                ck_assert_int_eq(seen[i].error, 0);
                ck_assert_msg(seen[i].result.uid >= TEST_UID_FIRST &&
                                      seen[i].result.uid <= TEST_UID_LAST,
                              "run %u as uid %u", i, (unsigned)seen[i].result.uid);
        }
        ck_assert_uint_ne(seen[0].result.uid, seen[1].result.uid);
        ck_assert_uint_ne(seen[0].result.uid, seen[2].result.uid);
        ck_assert_uint_ne(seen[1].result.uid, seen[2].result.uid);
        for (unsigned i = 0; i < 3; i++)
                cause_is(&seen[i], "timeout");
        for (unsigned i = 3; i < n; i++)
                ck_assert_int_eq(seen[i].result.outcome, RUN_ONE);
}
END_TEST

static Suite *runpool_suite(void) {
        Suite *s = suite_create("runpool");
        const CaseOptions each = {.timeout = 60, .setup = setup, .teardown = teardown};

        suite_add_case(s, &each, test_one_run);
        suite_add_case(s, &each, test_many_runs);
        suite_add_case(s, &each, test_fairness);
        suite_add_case(s, &each, test_fairness_three_keys);
        suite_add_case(s, &each, test_queue_max);
        suite_add_case(s, &each, test_submit_invalid);
        suite_add_case(s, &each, test_kill_all);
        suite_add_case(s, &each, test_kill_races);
        suite_add_case(s, &each, test_free_cancels);
        suite_add_case(s, &each, test_free_delivers);
        suite_add_case(s, &each, test_drop_to_uid);
        return s;
}

int main(void) {
        return check_run(runpool_suite());
}
