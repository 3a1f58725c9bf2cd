/*
 * Test plugin init-module: Loads a kernel module: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(syscall(SYS_init_module, NULL, 0, ""));
}
