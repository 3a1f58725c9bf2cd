/*
 * Test plugin unknown-syscall: Calls syscall number 1000, which no kernel knows: the filter refuses
 * it with EPERM rather than ENOSYS.
 */
#include <errno.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(syscall(1000));
}
