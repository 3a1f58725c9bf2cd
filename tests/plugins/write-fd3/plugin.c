/*
 * Test plugin write-fd3: Writes to fd 3, which is opened read-only: EBADF.
 */
#include <errno.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(write(3, "x", 1));
}
