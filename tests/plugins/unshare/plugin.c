/*
 * Test plugin unshare: Unshares into a new user namespace: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <sched.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(unshare(CLONE_NEWUSER));
}
