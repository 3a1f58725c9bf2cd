/*
 * Test plugin reopen-fd3-mmap: Reopens the input through /proc/self/fd/3 read-write and maps it
 * shared and writable: the write seal refuses with EPERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        int fd = open("/proc/self/fd/3", O_RDWR | O_CLOEXEC);
        void *p;

        if (fd < 0)
                hostile_refused_at(errno, "open");
        p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
                hostile_refused_at(errno, "mmap");
        hostile_allowed();
}
