/*
 * Test plugin clone3: Calls clone3: it answers ENOSYS, so that libc falls back to clone for
 * threads.
 */
#include <errno.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        struct clone_args args = {.exit_signal = SIGCHLD};
        long pid = syscall(SYS_clone3, &args, sizeof(args));

        if (pid == 0)
                _exit(0);
        hostile_check(pid);
}
