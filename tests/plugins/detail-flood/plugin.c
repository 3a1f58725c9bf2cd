/*
 * Test plugin detail-flood: Writes 10 KiB of detail through lp_detail(), which keeps to 4 KiB, and
 * answers 1.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        static char line[1024];

        memset(line, 'd', sizeof(line) - 1);
        for (int i = 0; i < 10; i++)
                lp_detail("%s", line);
        lp_answer(true);
}
