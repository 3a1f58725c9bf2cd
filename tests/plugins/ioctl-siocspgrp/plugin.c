/*
 * Test plugin ioctl-siocspgrp: Sets the process group of stdout with ioctl SIOCSPGRP: seccomp
 * refuses with EPERM.
 */
#include <errno.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        int pid = getpid();

        hostile_check(ioctl(1, SIOCSPGRP, &pid));
}
