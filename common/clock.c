/* common/clock.c: the clocks lockd reads, and expiries moved from wall-clock to boot time. */
#include "clock.h"

uint64_t clock_now_usec(clockid_t clock) {
        return clock_read_usec_(clock);
}

uint64_t clock_boottime_deadline(uint64_t realtime_usec) {
        uint64_t real, boot;

        if (realtime_usec == 0)
                return 0;
        real = clock_now_usec(CLOCK_REALTIME);
        boot = clock_now_usec(CLOCK_BOOTTIME);
        if (realtime_usec <= real)
                return boot;
        if (realtime_usec - real > UINT64_MAX - boot)
                return UINT64_MAX;
        return boot + (realtime_usec - real);
}
