/*
 * Test plugin tgkill-other: Sends signal 0 to thread 1 of pid 1 with tgkill: refused with EPERM.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(syscall(SYS_tgkill, 1, 1, 0));
}
