/*
 * Test plugin environment: Checks that its environment is exactly LOCKFILE_PLUGIN_PROTOCOL=2 and
 * reports it.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        extern char **environ;
        size_t n = 0;

        while (environ[n])
                n++;
        if (n == 1 && strcmp(environ[0], "LOCKFILE_PLUGIN_PROTOCOL=2") == 0) {
                lp_detail("env=%s", environ[0]);
                lp_answer(true);
        }
        lp_detail("allowed env_count=%zu first=%s", n, n > 0 ? environ[0] : "");
        lp_answer(false);
}
