/*
 * Test plugin scope-oom: allocates and touches 100 MiB, within its 128 MiB RLIMIT_DATA, so only a
 * smaller memory limit of its scope can stop it: the kernel's OOM killer then sends SIGKILL.
 * Answers 0 if it survived.
 */
#include <stdlib.h>
#include <unistd.h>

int main(void) {
        size_t size = (size_t)100 * 1024 * 1024;
        volatile char *p = malloc(size);

        if (!p)
                return 1;
        /* Through a volatile pointer, so the compiler cannot drop the stores as dead. */
        for (size_t i = 0; i < size; i += 4096)
                p[i] = 1;
        return write(STDOUT_FILENO, "0\n", 2) == 2 ? 0 : 1;
}
