/*
 * Test plugin sleep-first-byte: sleeps 2 ms times the file's first byte (0 to 510 ms), then
 * answers 1. A plugin whose run time tells the content: the release schedule must hide it.
 */
#include <time.h>
#include <unistd.h>

#include "lockplugin.h"

int main(void) {
        unsigned char b = 0;
        struct timespec ts;

        if (read(lp_input_fd(), &b, 1) < 0)
                lp_fail("read");
        ts.tv_sec = (2 * (long)b) / 1000;
        ts.tv_nsec = ((2 * (long)b) % 1000) * 1000000L;
        while (nanosleep(&ts, &ts) < 0)
                ;
        lp_answer(true);
}
