/*
 * Test plugin keyctl: Looks up its session keyring with keyctl: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <linux/keyctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1));
}
