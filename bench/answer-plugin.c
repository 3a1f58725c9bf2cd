/*
 * The benchmark's plugin: the cheapest valid answer. Reads fd 3 to its end, writes "1\n" and
 * exits 0. Built static and without sanitizers, so that bench/spawn times the spawn, not the
 * plugin.
 */
#include <unistd.h>

int main(void) {
        char buf[4096];
        ssize_t n;

        while ((n = read(3, buf, sizeof(buf))) > 0)
                ;
        if (n < 0)
                return 1;
        return write(STDOUT_FILENO, "1\n", 2) == 2 ? 0 : 1;
}
