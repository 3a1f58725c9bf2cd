/*
 * Test plugin clone-newns: Forks into new namespaces (clone with CLONE_NEWUSER|CLONE_NEWNS):
 * seccomp refuses with EPERM.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        long pid = syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWNS | SIGCHLD, NULL, NULL, NULL, 0);

        if (pid == 0)
                _exit(0);
        hostile_check(pid);
}
