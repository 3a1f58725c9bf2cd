/*
 * Test plugin kill-parent: Sends signal 0 to its parent: refused with EPERM.
 */
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(kill(getppid(), 0));
}
