/*
 * Test plugin fork: Forks (clone without CLONE_THREAD): seccomp refuses with EPERM.
 */
#include <errno.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        pid_t pid = fork();

        if (pid == 0)
                _exit(0);
        hostile_check(pid);
}
