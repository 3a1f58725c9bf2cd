/*
 * Test plugin reopen-fd6-write: Reopens the inputs through /proc/self/fd/6 for writing and writes
 * to them: the write seal refuses with EPERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        int fd;

        if (fcntl(6, F_GETFD) < 0)
                lp_fail("no fd 6");
        fd = open("/proc/self/fd/6", O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                hostile_refused_at(errno, "open");
        if (write(fd, "x", 1) < 0)
                hostile_refused_at(errno, "write");
        hostile_allowed();
}
