/*
 * Test plugin reopen-exe-write: Reopens its own binary through /proc/self/exe for writing and
 * writes to it: the running binary or its seal refuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        int fd = open("/proc/self/exe", O_WRONLY | O_CLOEXEC);

        if (fd < 0)
                hostile_refused_at(errno, "open");
        if (write(fd, "x", 1) < 0)
                hostile_refused_at(errno, "write");
        hostile_allowed();
}
