/* The one way every Check test program runs its suite: TAP from the environment, exit status. */
#pragma once

#include <check.h>

/* Runs s (output as CK_ENV and CK_TAP_LOG_FILE_NAME say), frees it; 0 when nothing failed. */
static inline int check_run(Suite *s) {
        SRunner *sr = srunner_create(s);
        int failed;

        srunner_run_all(sr, CK_ENV);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? 0 : 1;
}

/* What every test of a group gets: its timeout in seconds (0: Check's default), the checked
 * fixture (around each test, in its child), the unchecked one (in the runner, around each test's
 * case) and tags (CK_INCLUDE_TAGS selects the group). */
typedef struct CaseOptions {
        double timeout;
        SFun setup, teardown;
        SFun unchecked_setup, unchecked_teardown;
        const char *tags;
} CaseOptions;

/* Adds t to s as a TCase of its own named after it (CK_RUN_CASE=test_name runs it alone, see
 * tests/README.md), with o's timeout, fixtures and tags (o may be NULL); a loop test runs _i from
 * start to end - 1. */
static inline void suite_add_loop_case(Suite *s, const CaseOptions *o, const TTest *t, int start,
                                       int end) {
        TCase *tc = tcase_create(t->name);

        if (o && o->timeout > 0)
                tcase_set_timeout(tc, o->timeout);
        if (o && (o->setup || o->teardown))
                tcase_add_checked_fixture(tc, o->setup, o->teardown);
        if (o && (o->unchecked_setup || o->unchecked_teardown))
                tcase_add_unchecked_fixture(tc, o->unchecked_setup, o->unchecked_teardown);
        if (o && o->tags)
                tcase_set_tags(tc, o->tags);
        tcase_add_loop_test(tc, t, start, end);
        suite_add_tcase(s, tc);
}

static inline void suite_add_case(Suite *s, const CaseOptions *o, const TTest *t) {
        suite_add_loop_case(s, o, t, 0, 1);
}
