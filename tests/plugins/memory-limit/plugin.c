/*
 * Test plugin memory-limit: Allocates and touches 512 MiB under a 128 MiB memory limit: RLIMIT_DATA
 * refuses the mapping with ENOMEM.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        size_t size = (size_t)512 * 1024 * 1024;
        char *p = malloc(size);

        if (!p)
                hostile_refused(errno);
        memset(p, 1, size);
        hostile_allowed();
}
