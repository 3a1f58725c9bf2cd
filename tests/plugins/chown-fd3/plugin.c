/*
 * Test plugin chown-fd3: Changes the owner of fd 3 (fchown): seccomp refuses with EPERM.
 */
#include <errno.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(fchown(3, getuid(), getgid()));
}
