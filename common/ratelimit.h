/* A rate limit per key (a peer's uid) for lines that peers can trigger: a burst per interval, then
 * silence, and the number suppressed is told when the next interval opens. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define RATELIMIT_KEYS 64 /* keys tracked at once; the stalest slot is reused */

typedef struct RateLimitSlot {
        uint32_t key;
        bool used;
        uint64_t begin_usec; /* the interval's start */
        unsigned n;          /* events in this interval */
        unsigned suppressed; /* of them, not let through */
} RateLimitSlot;

typedef struct RateLimit {
        uint64_t interval_usec;
        unsigned burst;
        RateLimitSlot slots[RATELIMIT_KEYS];
} RateLimit;

#define RATELIMIT_INIT(interval, b) ((RateLimit){.interval_usec = (interval), .burst = (b)})

/*
 * Counts one event of key at now_usec (CLOCK_MONOTONIC): true when it may be logged. When it
 * opens a new interval after events were suppressed in the last one, *ret_suppressed (if
 * non-NULL) is their number, to say in the line let through; 0 otherwise.
 */
bool ratelimit_pass(RateLimit *rl, uint32_t key, uint64_t now_usec, unsigned *ret_suppressed);
