/*
 * Test plugin good-zero: answers 1 when its input (fd 3) is empty, 0 otherwise. It maps the input
 * with the SDK's lp_mmap_input().
 */
#include "lockplugin.h"

int main(void) {
        size_t len = 0;
        const void *p = lp_mmap_input(&len);

        if (!p)
                lp_fail("cannot map the input");
        lp_munmap_input(p, len);
        lp_answer(len == 0);
}
