/*
 * Check test: the Go test plugins (tests/go/) run under the real sandbox. go-goroutines must start
 * the Go runtime and its goroutines with the contract's memory = "128MiB" and answer 1 or 0
 * correctly; go-panic must read as plugin_error with cause exit:2, never as an answer.
 *
 * Usage: test-go-plugins GO-GOROUTINES GO-PANIC (meson passes the built binaries).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check-run.h"
#include "fd-util.h"
#include "macro.h"
#include "runner.h"
#include "sandbox.h"

#define TEST_UID 655500 /* inside the default ephemeral range */

static const char *goroutines_path;
static const char *panic_path;

/* The spec of both manifests: protocol 1, limits = { cpu_s = 5, memory = "128MiB", timeout_s = 10
 * }. */
static SandboxSpec go_spec(uint64_t memory_bytes) {
        return (SandboxSpec){
                .protocol = 1,
                .limits =
                        {
                                .cpu_s = 5,
                                .memory_bytes = memory_bytes,
                                .timeout_s = 10,
                        },
        };
}

/* Returns a fresh read-only fd on a sealed memfd holding data: what lockd gives a plugin as fd 3.
 */
static int sealed_input(const void *data, size_t len) {
        _cleanup_close_ int mfd = memfd_from_buffer(data, len, "go-test-input");
        int fd;

        ck_assert_int_ge(mfd, 0);
        fd = fd_reopen_readonly(mfd);
        ck_assert_int_ge(fd, 0);
        return fd;
}

static Sandbox *load(const char *path, uint64_t memory_bytes) {
        _cleanup_close_ int fd = -1;
        SandboxSpec spec = go_spec(memory_bytes);
        Sandbox *sb = NULL;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
        r = sandbox_new(fd, &spec, &sb);
        ck_assert_msg(r == 0, "sandbox_new(%s): %s (%s)", path, strerror(-r), sandbox_strerror(r));
        ck_assert_ptr_nonnull(sb);
        return sb;
}

/* Runs sb once on data and returns the result; the run itself must take place. */
static RunResult run_on(const Sandbox *sb, const void *data, size_t len) {
        _cleanup_close_ int in = sealed_input(data, len);
        RunParams p = {
                .input_fd = in,
                .drop_to_uid = geteuid() == 0,
                .uid = TEST_UID,
                .gid = TEST_UID,
        };
        RunResult res;
        char cause[64];
        int r;

        memset(&res, 0, sizeof(res));
        r = runner_run(sb, &p, &res);
        ck_assert_msg(r == 0, "runner_run: %s", strerror(-r));
        if (p.drop_to_uid)
                ck_assert_int_eq(res.uid, TEST_UID);
        fprintf(stderr,
                "# outcome %s cause %s stderr %llu B cpu %llu us peak %llu KiB wall %llu us\n",
                run_outcome_name(res.outcome), run_cause_format(&res, cause, sizeof(cause)),
                (unsigned long long)res.stderr_bytes, (unsigned long long)res.cpu_usec,
                (unsigned long long)(res.peak_rss_bytes / 1024), (unsigned long long)res.wall_usec);
        return res;
}

static void assert_answer(const RunResult *res, RunOutcome want) {
        char cause[64];

        ck_assert_msg(res->outcome == want, "outcome %s (cause %s, stderr %llu bytes), want %s",
                      run_outcome_name(res->outcome), run_cause_format(res, cause, sizeof(cause)),
                      (unsigned long long)res->stderr_bytes, run_outcome_name(want));
        ck_assert_int_eq(res->cause, RUN_CAUSE_NONE);
}

#define _cleanup_sandbox_ _cleanup_(sandbox_freep)

START_TEST(test_goroutines_one) {
        static const char text[] = "a file that mentions lockd once";
        _cleanup_sandbox_ Sandbox *sb = load(goroutines_path, 128 * MiB);
        RunResult res = run_on(sb, text, strlen(text));

        assert_answer(&res, RUN_ONE);
        ck_assert_uint_eq(res.stdout_bytes, 2); /* "1\n" */
}
END_TEST

START_TEST(test_goroutines_zero) {
        static const char text[] = "a file that names no daemon at all: lock d, LOCKD, lockx";
        _cleanup_sandbox_ Sandbox *sb = load(goroutines_path, 128 * MiB);
        RunResult res = run_on(sb, text, strlen(text));

        assert_answer(&res, RUN_ZERO);
        ck_assert_uint_eq(res.stdout_bytes, 2); /* "0\n" */
}
END_TEST

START_TEST(test_goroutines_empty) {
        _cleanup_sandbox_ Sandbox *sb = load(goroutines_path, 128 * MiB);
        RunResult res = run_on(sb, "", 0);

        assert_answer(&res, RUN_ZERO);
}
END_TEST

/* 4 MiB split among 8 goroutines: the needle straddles the boundary of the first two parts. */
START_TEST(test_goroutines_large_boundary) {
        const size_t len = 4 * MiB, part = len / 8;
        _cleanup_sandbox_ Sandbox *sb = load(goroutines_path, 128 * MiB);
        _cleanup_free_ char *buf = malloc(len);
        RunResult res;

        ck_assert_ptr_nonnull(buf);
        memset(buf, 'x', len);
        res = run_on(sb, buf, len);
        assert_answer(&res, RUN_ZERO);

        memcpy(buf + part - 2, "lockd", 5);
        res = run_on(sb, buf, len);
        assert_answer(&res, RUN_ONE);
}
END_TEST

/* One Sandbox, many runs: the ruleset and the BPF are built once and reused. */
START_TEST(test_goroutines_repeated) {
        static const char yes[] = "lockd", no[] = "lock";
        _cleanup_sandbox_ Sandbox *sb = load(goroutines_path, 128 * MiB);

        for (int i = 0; i < 20; i++) {
                RunResult res = i % 2 ? run_on(sb, no, strlen(no)) : run_on(sb, yes, strlen(yes));
                assert_answer(&res, i % 2 ? RUN_ZERO : RUN_ONE);
        }
}
END_TEST

/* Below the ~64 MiB the Go runtime needs to start: whatever the cause, never an answer. */
START_TEST(test_goroutines_too_little_memory) {
        static const char text[] = "lockd";
        _cleanup_sandbox_ Sandbox *sb = load(goroutines_path, 8 * MiB);
        RunResult res = run_on(sb, text, strlen(text));

        ck_assert_int_eq(res.outcome, RUN_PLUGIN_ERROR);
        ck_assert_int_ne(res.cause, RUN_CAUSE_NONE);
}
END_TEST

START_TEST(test_panic) {
        static const char text[] = "lockd";
        _cleanup_sandbox_ Sandbox *sb = load(panic_path, 128 * MiB);
        RunResult res = run_on(sb, text, strlen(text));
        char cause[64];

        ck_assert_int_eq(res.outcome, RUN_PLUGIN_ERROR);
        ck_assert_int_eq(res.cause, RUN_CAUSE_EXIT);
        ck_assert_int_eq(res.exit_status, 2);
        ck_assert_str_eq(run_cause_format(&res, cause, sizeof(cause)), "exit:2");
        ck_assert_str_eq(run_outcome_name(res.outcome), "plugin_error");
        ck_assert_uint_eq(res.stdout_bytes, 0);
        ck_assert_uint_gt(res.stderr_bytes, 0); /* the panic's trace, drained and counted */
}
END_TEST

static Suite *go_plugins_suite(void) {
        Suite *s = suite_create("go-plugins");
        const CaseOptions each = {.timeout = 60};

        suite_add_case(s, &each, test_goroutines_one);
        suite_add_case(s, &each, test_goroutines_zero);
        suite_add_case(s, &each, test_goroutines_empty);
        suite_add_case(s, &each, test_goroutines_large_boundary);
        suite_add_case(s, &each, test_goroutines_repeated);
        suite_add_case(s, &each, test_goroutines_too_little_memory);
        suite_add_case(s, &each, test_panic);
        return s;
}

int main(int argc, char *argv[]) {
        if (argc != 3) {
                fprintf(stderr, "Usage: %s GO-GOROUTINES GO-PANIC\n", argv[0]);
                return EXIT_FAILURE;
        }
        goroutines_path = argv[1];
        panic_path = argv[2];

        return check_run(go_plugins_suite());
}
