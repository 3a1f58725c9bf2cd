/*
 * Test plugin open-root-dir: Opens / as a directory to list it; Landlock refuses it with EACCES.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}
