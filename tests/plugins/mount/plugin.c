/*
 * Test plugin mount: Makes / a private mount (a no-op where it already is one, so that running it
 * outside the sandbox changes nothing): seccomp refuses mount with EPERM.
 */
#include <errno.h>
#include <sys/mount.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(mount(NULL, "/", NULL, MS_PRIVATE, NULL));
}
