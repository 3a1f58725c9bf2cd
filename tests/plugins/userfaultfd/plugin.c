/*
 * Test plugin userfaultfd: Creates a userfaultfd: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(syscall(SYS_userfaultfd, 0));
}
