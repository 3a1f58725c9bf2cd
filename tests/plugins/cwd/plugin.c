/*
 * Test plugin cwd: Checks that its working directory is /.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        char buf[PATH_MAX];

        if (getcwd(buf, sizeof(buf)) && strcmp(buf, "/") == 0) {
                lp_detail("cwd=/");
                lp_answer(true);
        }
        lp_detail("allowed cwd=%s", buf);
        lp_answer(false);
}
