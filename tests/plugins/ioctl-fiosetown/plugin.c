/*
 * Test plugin ioctl-fiosetown: Sets the owner of stdout with ioctl FIOSETOWN: seccomp refuses with
 * EPERM.
 */
#include <errno.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        int pid = getpid();

        hostile_check(ioctl(1, FIOSETOWN, &pid));
}
