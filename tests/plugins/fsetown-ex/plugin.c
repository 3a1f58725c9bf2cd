/*
 * Test plugin fsetown-ex: Sets the owner of stdout with fcntl F_SETOWN_EX: seccomp refuses with
 * EPERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        struct f_owner_ex owner = {.type = F_OWNER_PID, .pid = getpid()};

        hostile_check(fcntl(1, F_SETOWN_EX, &owner));
}
