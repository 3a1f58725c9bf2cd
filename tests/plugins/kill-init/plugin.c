/*
 * Test plugin kill-init: Sends signal 0 to pid 1: refused with EPERM.
 */
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(kill(1, 0));
}
