/*
 * Test plugin pidfd-open-other: Opens a pidfd on pid 1: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(syscall(SYS_pidfd_open, 1, 0));
}
