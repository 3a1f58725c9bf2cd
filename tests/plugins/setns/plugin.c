/*
 * Test plugin setns: Joins a network namespace through fd 1 with setns: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <sched.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(setns(1, CLONE_NEWNET));
}
