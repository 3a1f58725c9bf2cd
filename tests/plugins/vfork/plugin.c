/*
 * Test plugin vfork: Calls vfork: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        /* The raw call, so that the child (if any) returns on the vfork stack only to _exit(). */
        long pid = syscall(SYS_vfork);

        if (pid == 0)
                _exit(0);
        hostile_check(pid);
}
