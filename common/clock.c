/* common/clock.c: the clocks lockd reads, and expiries moved from wall-clock to boot time. */
#include "clock.h"

uint64_t clock_now_usec(clockid_t clock) {
        struct timespec ts;

        if (clock_gettime(clock, &ts) < 0)
                return 0;
        return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000ULL;
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
