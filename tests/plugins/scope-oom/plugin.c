/*
 * Test plugin scope-oom: fills its scope's memory without crossing its own RLIMIT_DATA: 115 MiB
 * of heap (90% of the manifest's 128 MiB) and then kernel memory the rlimit does not count, the
 * buffers of up to 64 pipes of 1 MiB each. A scope whose MemoryMax is the manifest's memory (or
 * less) is over its limit, and the kernel's OOM killer sends SIGKILL. Answers 0 if it survived.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MiB        ((size_t)1024 * 1024)
#define HEAP_BYTES (115 * MiB)
#define PIPES      64
#define PIPE_BYTES MiB

int main(void) {
        static char chunk[64 * 1024];
        volatile char *p = malloc(HEAP_BYTES);

        if (!p)
                return 1;
        /* Through a volatile pointer, so the compiler cannot drop the stores as dead. */
        for (size_t i = 0; i < HEAP_BYTES; i += 4096)
                p[i] = 1;

        /* Pipe buffers are charged to the memory cgroup, not to RLIMIT_DATA. */
        memset(chunk, 'x', sizeof(chunk));
        for (int i = 0; i < PIPES; i++) {
                int fds[2];

                if (pipe2(fds, O_NONBLOCK) < 0)
                        break;
                (void)fcntl(fds[1], F_SETPIPE_SZ, (int)PIPE_BYTES); /* 64 KiB if refused */
                while (write(fds[1], chunk, sizeof(chunk)) > 0)
                        ;
        }
        return write(STDOUT_FILENO, "0\n", 2) == 2 ? 0 : 1;
}
