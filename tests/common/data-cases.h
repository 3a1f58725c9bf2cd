/* The data-driven tests' one walker over tests/data/<area>/{valid,invalid}/<case>/. */
#pragma once

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

/* Where tests/data is: $LOCKD_TEST_DATA (meson sets it), else relative to the source root. */
static inline const char *data_dir(void) {
        const char *d = getenv("LOCKD_TEST_DATA");
        return d ? d : "tests/data";
}

/*
 * Runs run_case(kind, name) for every case directory of tests/data/<area>/<kind>/ (dot names
 * skipped); a negative return is a failed case. Returns the number of cases, the failed ones in
 * *ret_failed. A missing directory fails the test.
 */
static inline unsigned data_cases_run(const char *area, const char *kind,
                                      int (*run_case)(const char *kind, const char *name),
                                      unsigned *ret_failed) {
        char path[4096];
        unsigned count = 0, failed = 0;
        DIR *dir;
        struct dirent *de;

        snprintf(path, sizeof(path), "%s/%s/%s", data_dir(), area, kind);
        dir = opendir(path);
        ck_assert_msg(dir, "cannot open %s (set LOCKD_TEST_DATA)", path);
        while ((de = readdir(dir))) {
                if (de->d_name[0] == '.')
                        continue;
                count++;
                if (run_case(kind, de->d_name) < 0)
                        failed++;
        }
        closedir(dir);
        *ret_failed = failed;
        return count;
}
