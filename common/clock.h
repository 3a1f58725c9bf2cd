/* common/clock.h: the clocks lockd reads, in microseconds (ARCHITECTURE.md, "Time"). */
#pragma once

#include <stdint.h>
#include <time.h>

/* clock (CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME) now, in microseconds. */
uint64_t clock_now_usec(clockid_t clock);

/*
 * The CLOCK_BOOTTIME time at which as much time has passed as there is now until the wall-clock
 * time realtime_usec: the deadline an expiry shown in wall-clock time runs on, so that a jump of
 * the wall clock neither ends it early nor keeps it late. 0 for 0 (never); a time already past
 * gives now. The wall clock is read once, here.
 */
uint64_t clock_boottime_deadline(uint64_t realtime_usec);
