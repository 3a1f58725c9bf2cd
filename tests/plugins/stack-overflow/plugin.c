/*
 * Test plugin stack-overflow: Recurses past its 8 MiB stack: signal:SIGSEGV.
 */
#include <errno.h>
#include <unistd.h>

#include "lockplugin.h"

static volatile unsigned long depth_max = ~0UL;

static unsigned long deep(unsigned long n) {
        volatile char pad[4096];

        if (n >= depth_max)
                return 0;
        pad[0] = (char)n;
        return deep(n + 1) + pad[0];
}

int main(void) {
        lp_answer(deep(1) != 0);
}
