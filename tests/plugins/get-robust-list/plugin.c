/*
 * Test plugin get-robust-list: Reads the robust futex list of pid 1: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        void *head;
        size_t len;

        hostile_check(syscall(SYS_get_robust_list, 1, &head, &len));
}
