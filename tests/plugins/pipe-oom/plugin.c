/*
 * Test plugin pipe-oom: stays inside its RLIMIT_DATA (120 of 128 MiB touched) and then fills pipes
 * with kernel memory, which the scope's memory cgroup charges but no rlimit counts, until the
 * scope's MemoryMax (lockd gives memory + 40 MiB) makes the kernel's OOM killer end it. Answers 0
 * if it survived.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PIPES 96

int main(void) {
        static char chunk[65536];
        size_t size = (size_t)120 * 1024 * 1024;
        volatile char *p = malloc(size);

        if (!p)
                return 1;
        /* Through a volatile pointer, so the compiler cannot drop the stores as dead. */
        for (size_t i = 0; i < size; i += 4096)
                p[i] = 1;
        memset(chunk, 'x', sizeof(chunk));
        for (int i = 0; i < PIPES; i++) {
                int fds[2];

                if (pipe2(fds, O_NONBLOCK) < 0)
                        break;
                (void)fcntl(fds[1], F_SETPIPE_SZ, 1024 * 1024);
                while (write(fds[1], chunk, sizeof(chunk)) > 0)
                        ;
        }
        return write(STDOUT_FILENO, "0\n", 2) == 2 ? 0 : 1;
}
