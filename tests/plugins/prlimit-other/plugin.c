/*
 * Test plugin prlimit-other: Reads the limits of pid 1 with prlimit64: refused with EPERM.
 */
#include <errno.h>
#include <sys/resource.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        struct rlimit rl;

        hostile_check(prlimit(1, RLIMIT_NOFILE, NULL, &rl));
}
