/*
 * Test plugin fs-ioc-setflags: Sets inode flags on fd 3 with ioctl FS_IOC_SETFLAGS: seccomp refuses
 * with EPERM.
 */
#include <errno.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        int flags = 0;

        hostile_check(ioctl(3, FS_IOC_SETFLAGS, &flags));
}
