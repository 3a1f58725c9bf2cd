/*
 * Test plugin write-fd6: Writes to fd 6, the inputs memfd, which is opened read-only: EBADF.
 */
#include <errno.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        if (fcntl(6, F_GETFD) < 0)
                lp_fail("no fd 6");
        hostile_check(write(6, "x", 1));
}
