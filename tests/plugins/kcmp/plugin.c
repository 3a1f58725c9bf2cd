/*
 * Test plugin kcmp: Compares its own fds with kcmp: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <linux/kcmp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(syscall(SYS_kcmp, getpid(), getpid(), KCMP_FILE, 1, 2));
}
