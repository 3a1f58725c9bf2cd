/*
 * Test plugin ftruncate-fd3: Truncates fd 3: seccomp refuses with EPERM before the kernel would see
 * the fd is read-only.
 */
#include <errno.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(ftruncate(3, 0));
}
