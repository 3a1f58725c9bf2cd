/*
 * Test plugin io-uring-setup: Sets up an io_uring (whose submissions bypass seccomp): seccomp
 * refuses with EPERM.
 */
#include <errno.h>
#include <linux/io_uring.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        struct io_uring_params params = {};

        hostile_check(syscall(SYS_io_uring_setup, 8, &params));
}
