/*
 * Test plugin threads-cap: Starts threads with 64 KiB stacks until pthread_create fails:
 * RLIMIT_NPROC stops it with EAGAIN near 512.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <unistd.h>

#include "hostile.h"

static void *idle(void *arg) {
        for (;;)
                pause();
        return arg;
}

int main(void) {
        pthread_attr_t attr;
        unsigned n = 0;
        int r = 0;

        if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, 64 * 1024) != 0)
                lp_fail("pthread_attr");
        while (n < 4096) {
                pthread_t t;

                r = pthread_create(&t, &attr, idle, NULL);
                if (r != 0)
                        break;
                n++;
        }
        if (r != 0) {
                lp_detail("errno=%d threads=%u", r, n);
                lp_answer(true);
        }
        lp_detail("allowed threads=%u", n);
        lp_answer(false);
}
