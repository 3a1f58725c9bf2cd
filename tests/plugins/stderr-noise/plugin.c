/*
 * Test plugin stderr-noise: Writes 100000 bytes on stderr and answers 1: only the byte count is
 * kept.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "lockplugin.h"

int main(void) {
        static char buf[10000];

        memset(buf, 'e', sizeof(buf));
        for (int i = 0; i < 10; i++)
                if (write(2, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
                        lp_fail("short write on stderr");
        lp_answer(true);
}
