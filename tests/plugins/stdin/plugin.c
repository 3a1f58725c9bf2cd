/*
 * Test plugin stdin: Checks that stdin is /dev/null: a character device 1:3 whose read returns 0.
 */
#include <errno.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        struct stat st;
        char c;

        if (fstat(0, &st) < 0)
                hostile_refused_at(errno, "fstat");
        if (S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3 &&
            read(0, &c, 1) == 0) {
                lp_detail("stdin=/dev/null");
                lp_answer(true);
        }
        lp_detail("allowed mode=%o", (unsigned)st.st_mode);
        lp_answer(false);
}
