/*
 * Test plugin fs-ioc-fssetxattr: Sets inode attributes on fd 3 with ioctl FS_IOC_FSSETXATTR:
 * seccomp refuses with EPERM.
 */
#include <errno.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        struct fsxattr fa = {};

        hostile_check(ioctl(3, FS_IOC_FSSETXATTR, &fa));
}
