/* When an agent may see an outcome: the release schedule of each security level, so that how long
 * a plugin ran tells the agent nothing more than the level allows (ARCHITECTURE.md, timing). */
#pragma once

#include <stdint.h>

/*
 * The delay, from a run's admission, after which its outcome is released, for a run that took
 * ran_usec from its admission to its end (0 when unknown: a cached answer stored by an older
 * lockd is then treated as having used its whole timeout):
 *   level 1: timeout_usec, whatever the run took (or ran_usec, should it be longer);
 *   level 2: the first multiple of quantum_usec (≥ 1) not earlier than the run's end;
 *   level 3: 0, at once.
 * A cached answer is released after the same delay as the run that produced it: the caller passes
 * that run's ran_usec. Pure.
 */
uint64_t schedule_delay_usec(unsigned level, uint64_t quantum_usec, uint64_t timeout_usec,
                             uint64_t ran_usec);
