/*
 * Test plugin fsetown: Sets the owner of stdout with fcntl F_SETOWN: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(fcntl(1, F_SETOWN, getpid()));
}
