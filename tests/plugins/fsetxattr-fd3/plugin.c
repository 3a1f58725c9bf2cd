/*
 * Test plugin fsetxattr-fd3: Sets an extended attribute on fd 3: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(fsetxattr(3, "user.lockd", "1", 1, 0));
}
