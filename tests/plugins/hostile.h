/*
 * hostile.h: the shared ending of the hostile test plugins under tests/plugins/.
 *
 * Each hostile plugin tries one thing the sandbox forbids. When the sandbox refused it, the plugin
 * reports the errno it saw on fd 7 ("errno=1") and answers 1; when the thing was allowed, it
 * reports "allowed" and answers 0. tests/unit/test-plugins.c asserts both the answer and the
 * detail.
 */
#pragma once

#include <errno.h>

#include "lockplugin.h"

/* The forbidden thing failed with errno e: report it and answer 1. */
_Noreturn static inline void hostile_refused(int e) {
        lp_detail("errno=%d", e);
        lp_answer(true);
}

/* Like hostile_refused(), naming the step that failed ("errno=1 at=write"). */
_Noreturn static inline void hostile_refused_at(int e, const char *step) {
        lp_detail("errno=%d at=%s", e, step);
        lp_answer(true);
}

/* The forbidden thing succeeded: report it and answer 0. */
_Noreturn static inline void hostile_allowed(void) {
        lp_detail("allowed");
        lp_answer(false);
}

/* Ends on the result of a libc call that returns a negative value and sets errno on failure. */
_Noreturn static inline void hostile_check(long r) {
        if (r < 0)
                hostile_refused(errno);
        hostile_allowed();
}
