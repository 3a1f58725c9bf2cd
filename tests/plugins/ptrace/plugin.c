/*
 * Test plugin ptrace: Asks to be traced (PTRACE_TRACEME): seccomp refuses with EPERM.
 */
#include <errno.h>
#include <sys/ptrace.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(ptrace(PTRACE_TRACEME, 0, NULL, NULL));
}
