/*
 * Test plugin x32-syscall: Calls getpid through the x32 ABI (syscall number with bit 30 set): the
 * filter refuses it with EPERM.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(syscall(0x40000000 | SYS_getpid));
}
