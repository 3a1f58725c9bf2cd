/* common/clock.h: the clocks lockd reads, in microseconds (ARCHITECTURE.md, "Time"). */
#pragma once

#include <stdint.h>
#include <time.h>

/* clock (CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME) now, in microseconds. */
uint64_t clock_now_usec(clockid_t clock);

/* A clock reading in microseconds. */
static inline uint64_t clock_timespec_usec(const struct timespec *ts) {
        return (uint64_t)ts->tv_sec * 1000000ULL + (uint64_t)ts->tv_nsec / 1000ULL;
}

/* The three clocks by name, inline: the agent's library links the Varlink client without this
 * file's clock.c. 0 if the clock cannot be read. */
static inline uint64_t clock_read_usec_(clockid_t clock) {
        struct timespec ts;

        if (clock_gettime(clock, &ts) < 0)
                return 0;
        return clock_timespec_usec(&ts);
}
/* The wall clock: times written down (the audit log, the budget files, what the human reads). */
static inline uint64_t clock_realtime_usec(void) {
        return clock_read_usec_(CLOCK_REALTIME);
}
/* Durations and timeouts within one boot: never jumps, stands still while suspended. */
static inline uint64_t clock_monotonic_usec(void) {
        return clock_read_usec_(CLOCK_MONOTONIC);
}
/* Deadlines that count a suspend too (expiries, run numbers); never jumps. */
static inline uint64_t clock_boottime_usec(void) {
        return clock_read_usec_(CLOCK_BOOTTIME);
}

/*
 * The CLOCK_BOOTTIME time at which as much time has passed as there is now until the wall-clock
 * time realtime_usec: the deadline an expiry shown in wall-clock time runs on, so that a jump of
 * the wall clock neither ends it early nor keeps it late. 0 for 0 (never); a time already past
 * gives now. The wall clock is read once, here.
 */
uint64_t clock_boottime_deadline(uint64_t realtime_usec);
