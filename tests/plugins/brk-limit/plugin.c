/*
 * Test plugin brk-limit: Grows its heap by 512 MiB with sbrk under a 128 MiB memory limit:
 * RLIMIT_DATA refuses with ENOMEM.
 */
#include <errno.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        void *p = sbrk((intptr_t)512 * 1024 * 1024);

        hostile_check(p == (void *)-1 ? -1 : 0);
}
