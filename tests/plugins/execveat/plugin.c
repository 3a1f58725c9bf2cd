/*
 * Test plugin execveat: Executes fd 3 with execveat: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        char *argv[] = {(char *)"x", NULL};
        char *envp[] = {NULL};

        hostile_check(syscall(SYS_execveat, 3, "", argv, envp, AT_EMPTY_PATH));
}
