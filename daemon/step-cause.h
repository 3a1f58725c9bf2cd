/* Why a step's outcome is what it is, when its run's classification does not say it (that one is
 * run_cause_format()'s, classify.h): the cause the human reads in Results. Each has one name, the
 * word on the wire (step-cause.c). */
#pragma once

typedef enum StepCause {
        STEP_CAUSE_NONE = 0,      /* no cause of this list: the name is NULL */
        STEP_CAUSE_ANSWER,        /* the run answered */
        STEP_CAUSE_CACHED,        /* the same question's answer, served without a run */
        STEP_CAUSE_HANDLE_GONE,   /* denied: the handle was revoked or expired since the submit */
        STEP_CAUSE_INPUT_INVALID, /* a value does not fit an input it is bound to */
        STEP_CAUSE_BUDGET_EXHAUSTED, /* no slot left in the budget */
        /* plugin_error without a run: what lockd could not do */
        STEP_NOT_RUN_MEMORY,   /* out of memory */
        STEP_NOT_RUN_TIMER,    /* no timer for the release time */
        STEP_NOT_RUN_STOPPING, /* lockd stops */
        STEP_NOT_RUN_POOL,     /* the run pool refused the run */
        STEP_NOT_RUN_KEY,      /* the budget key or the answers' key could not be made */
        STEP_NOT_RUN_BUDGET,   /* the reservation failed for another cause than a full budget */
        STEP_NOT_RUN_HANDLE,   /* the handle's file could not be opened for the run */
        /* plugin_error after a run: the answer is withheld, what could not be made durable */
        STEP_WITHHELD_AUDIT,  /* the run record */
        STEP_WITHHELD_BUDGET, /* the budget batch holding the reservation */
        _STEP_CAUSE_MAX,
} StepCause;

/* The cause's word ("not_run:memory", "audit"...); NULL for STEP_CAUSE_NONE or out of range. */
const char *step_cause_name(StepCause c);
