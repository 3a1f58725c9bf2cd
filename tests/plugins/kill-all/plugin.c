/*
 * Test plugin kill-all: Sends signal 0 to every process it may signal (kill(-1, 0)): seccomp
 * refuses with EPERM.
 */
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(kill(-1, 0));
}
