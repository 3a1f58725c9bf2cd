/*
 * Test plugin process-vm-readv: Reads its own memory with process_vm_readv: seccomp refuses with
 * EPERM.
 */
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        char src[8] = "lockd", dst[8];
        struct iovec local = {.iov_base = dst, .iov_len = sizeof(dst)};
        struct iovec remote = {.iov_base = src, .iov_len = sizeof(src)};

        hostile_check(process_vm_readv(getpid(), &local, 1, &remote, 1, 0));
}
