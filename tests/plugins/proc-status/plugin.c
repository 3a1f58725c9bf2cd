/*
 * Test plugin proc-status: Reads /proc/self/status; Landlock refuses it with EACCES.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(open("/proc/self/status", O_RDONLY | O_CLOEXEC));
}
