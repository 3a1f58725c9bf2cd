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
