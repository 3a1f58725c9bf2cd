/*
 * Test plugin chmod-fd3: Changes the mode of fd 3 (fchmod): seccomp refuses with EPERM.
 */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(fchmod(3, 0666));
}
