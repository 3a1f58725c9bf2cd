/*
 * Test plugin kill-group: Sends signal 0 to its process group (kill(0, 0)): seccomp refuses with
 * EPERM.
 */
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(kill(0, 0));
}
