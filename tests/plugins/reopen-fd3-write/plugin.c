/*
 * Test plugin reopen-fd3-write: Reopens the input through /proc/self/fd/3 for writing (a memfd,
 * which Landlock does not restrict) and writes to it: the write seal refuses with EPERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        int fd = open("/proc/self/fd/3", O_WRONLY | O_CLOEXEC);

        if (fd < 0)
                hostile_refused_at(errno, "open");
        if (write(fd, "x", 1) < 0)
                hostile_refused_at(errno, "write");
        hostile_allowed();
}
