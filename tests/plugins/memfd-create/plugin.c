/*
 * Test plugin memfd-create: Creates a memfd: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(memfd_create("lockd", MFD_CLOEXEC));
}
