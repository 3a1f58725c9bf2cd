/*
 * Test plugin mmap-shared-anon: Maps shared anonymous memory: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

        hostile_check(p == MAP_FAILED ? -1 : 0);
}
