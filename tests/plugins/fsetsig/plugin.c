/*
 * Test plugin fsetsig: Sets the signal of stdout with fcntl F_SETSIG: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(fcntl(1, F_SETSIG, SIGUSR1));
}
