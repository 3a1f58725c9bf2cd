/* Unit tests of the answer's classification: only "1" or "0" (+ one "\n") with exit 0 answers. */
#include <check.h>
#include <signal.h>
#include <string.h>

#include "runner.h"
#include "check-run.h"

static RunResult classify(const char *out, uint64_t total, RunExit e) {
        RunResult r;
        size_t len = strlen(out);

        memset(&r, 0xaa, sizeof(r));
        run_classify((const uint8_t *)out, len < 3 ? len : 3, total, &e, &r);
        return r;
}

static const char *cause(const RunResult *r) {
        static char buf[64];
        return run_cause_format(r, buf, sizeof(buf));
}

#define OK_EXIT ((RunExit){.exited = true, .exit_status = 0})

START_TEST(test_answers) {
        RunResult r;

        r = classify("1", 1, OK_EXIT);
        ck_assert_int_eq(r.outcome, RUN_ONE);
        ck_assert_int_eq(r.cause, RUN_CAUSE_NONE);
        r = classify("0", 1, OK_EXIT);
        ck_assert_int_eq(r.outcome, RUN_ZERO);
        r = classify("1\n", 2, OK_EXIT);
        ck_assert_int_eq(r.outcome, RUN_ONE);
        r = classify("0\n", 2, OK_EXIT);
        ck_assert_int_eq(r.outcome, RUN_ZERO);
        ck_assert_str_eq(run_outcome_name(RUN_PLUGIN_ERROR), "plugin_error");
}
END_TEST

START_TEST(test_bad_output) {
        static const char *const bad[] = {"11",   "1\n\n", "01", "2",   "\n", "1\r\n",
                                          "true", "1 ",    " 1", "yes", "10", "0\n1"};

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                RunResult r = classify(bad[i], strlen(bad[i]), OK_EXIT);
                ck_assert_msg(r.outcome == RUN_PLUGIN_ERROR, "'%s' read as an answer", bad[i]);
                ck_assert_str_eq(cause(&r), "bad_output");
        }
        /* More bytes than were kept: "1\n" followed by a flood is not an answer. */
        RunResult r = classify("1\n", 100000, OK_EXIT);
        ck_assert_int_eq(r.outcome, RUN_PLUGIN_ERROR);
        ck_assert_str_eq(cause(&r), "bad_output");
        ck_assert_uint_eq(r.stdout_bytes, 100000);
}
END_TEST

START_TEST(test_no_output) {
        RunResult r = classify("", 0, OK_EXIT);
        ck_assert_int_eq(r.outcome, RUN_PLUGIN_ERROR);
        ck_assert_str_eq(cause(&r), "no_output");
}
END_TEST

START_TEST(test_exit_and_signals) {
        RunResult r;

        r = classify("1", 1, ((RunExit){.exited = true, .exit_status = 1}));
        ck_assert_int_eq(r.outcome, RUN_PLUGIN_ERROR);
        ck_assert_str_eq(cause(&r), "exit:1");
        r = classify("0\n", 2, ((RunExit){.exited = true, .exit_status = 2}));
        ck_assert_int_eq(r.outcome, RUN_PLUGIN_ERROR);
        ck_assert_str_eq(cause(&r), "exit:2");
        r = classify("1", 1, ((RunExit){.signal = SIGSYS}));
        ck_assert_int_eq(r.outcome, RUN_PLUGIN_ERROR);
        ck_assert_str_eq(cause(&r), "signal:SIGSYS");
        r = classify("0", 1, ((RunExit){.signal = SIGXCPU}));
        ck_assert_str_eq(cause(&r), "signal:SIGXCPU");
        r = classify("", 0, ((RunExit){.signal = SIGXFSZ}));
        ck_assert_str_eq(cause(&r), "signal:SIGXFSZ");
        r = classify("", 0, ((RunExit){.signal = SIGSEGV}));
        ck_assert_str_eq(cause(&r), "signal:SIGSEGV");
        r = classify("1", 1, ((RunExit){.signal = SIGKILL}));
        ck_assert_int_eq(r.outcome, RUN_PLUGIN_ERROR);
        ck_assert_str_eq(cause(&r), "signal:SIGKILL");
}
END_TEST

START_TEST(test_limits_win_over_signal) {
        RunResult r;

        /* A plugin that answered and was then killed at the deadline has not answered. */
        r = classify("1", 1, ((RunExit){.signal = SIGKILL, .timed_out = true}));
        ck_assert_int_eq(r.outcome, RUN_PLUGIN_ERROR);
        ck_assert_str_eq(cause(&r), "timeout");
        r = classify("1", 1, ((RunExit){.exited = true, .exit_status = 0, .timed_out = true}));
        ck_assert_int_eq(r.outcome, RUN_PLUGIN_ERROR);
        ck_assert_str_eq(cause(&r), "timeout");
        r = classify("", 0, ((RunExit){.signal = SIGKILL, .oom = true}));
        ck_assert_str_eq(cause(&r), "oom");
}
END_TEST

START_TEST(test_spawn_cause) {
        RunResult r = {.outcome = RUN_PLUGIN_ERROR,
                       .cause = RUN_CAUSE_SPAWN,
                       .spawn_stage = SPAWN_STAGE_SECCOMP,
                       .spawn_errno = 22};
        ck_assert_str_eq(cause(&r), "spawn:seccomp:22");
        for (int s = 0; s < _SPAWN_STAGE_MAX; s++)
                ck_assert_str_ne(spawn_stage_name((SpawnStage)s), "unknown");
        ck_assert_str_eq(spawn_stage_name(_SPAWN_STAGE_MAX), "unknown");
}
END_TEST

int main(void) {
        Suite *s = suite_create("classify");

        suite_add_case(s, NULL, test_answers);
        suite_add_case(s, NULL, test_bad_output);
        suite_add_case(s, NULL, test_no_output);
        suite_add_case(s, NULL, test_exit_and_signals);
        suite_add_case(s, NULL, test_limits_win_over_signal);
        suite_add_case(s, NULL, test_spawn_cause);
        return check_run(s);
}
