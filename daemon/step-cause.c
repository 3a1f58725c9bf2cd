/* The causes' words (step-cause.h): what Results shows, unchanged since they were strings. */
#include <stddef.h>

#include "step-cause.h"

static const char *const names[_STEP_CAUSE_MAX] = {
        [STEP_CAUSE_ANSWER] = "answer",
        [STEP_CAUSE_CACHED] = "cached",
        [STEP_CAUSE_HANDLE_GONE] = "handle_gone",
        [STEP_CAUSE_INPUT_INVALID] = "input_invalid",
        [STEP_CAUSE_BUDGET_EXHAUSTED] = "budget_exhausted",
        [STEP_NOT_RUN_MEMORY] = "not_run:memory",
        [STEP_NOT_RUN_TIMER] = "not_run:timer",
        [STEP_NOT_RUN_STOPPING] = "not_run:stopping",
        [STEP_NOT_RUN_POOL] = "not_run:pool",
        [STEP_NOT_RUN_KEY] = "not_run:key",
        [STEP_NOT_RUN_BUDGET] = "not_run:budget",
        [STEP_NOT_RUN_HANDLE] = "not_run:handle",
        [STEP_WITHHELD_AUDIT] = "audit",
        [STEP_WITHHELD_BUDGET] = "budget",
};

const char *step_cause_name(StepCause c) {
        return c >= 0 && c < _STEP_CAUSE_MAX ? names[c] : NULL;
}
