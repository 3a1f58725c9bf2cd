/*
 * Test plugin map-growsdown: Maps memory with MAP_GROWSDOWN: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_GROWSDOWN, -1, 0);

        hostile_check(p == MAP_FAILED ? -1 : 0);
}
