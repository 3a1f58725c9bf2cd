/*
 * Test plugin exec-other: Executes /bin/true; only its own binary may execute, so Landlock refuses
 * it with EACCES.
 */
#include <errno.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        char *argv[] = {(char *)"true", NULL};
        char *envp[] = {NULL};

        execve("/bin/true", argv, envp);
        hostile_refused(errno);
}
