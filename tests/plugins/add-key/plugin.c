/*
 * Test plugin add-key: Adds a key to its process keyring: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <linux/keyctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(syscall(SYS_add_key, "user", "lockd", "x", 1, KEY_SPEC_PROCESS_KEYRING));
}
