/*
 * Test plugin open-passwd: Opens /etc/passwd for reading; Landlock refuses it with EACCES.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(open("/etc/passwd", O_RDONLY | O_CLOEXEC));
}
