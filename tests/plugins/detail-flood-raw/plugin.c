/*
 * Test plugin detail-flood-raw: Writes a mebibyte straight to fd 7 and answers 1: lockd keeps 4 KiB
 * and drains the rest.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        static char buf[65536];

        memset(buf, 'r', sizeof(buf));
        for (int i = 0; i < 16; i++)
                if (write(7, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
                        lp_fail("short write on fd 7");
        lp_answer(true);
}
