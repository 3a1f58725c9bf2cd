/*
 * Test plugin utimensat-fd3: Changes the times of fd 3 (futimens, that is utimensat): seccomp
 * refuses with EPERM.
 */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(futimens(3, NULL));
}
