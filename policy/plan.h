/* An agent's plan (Submit(steps)): the pure validator of its steps, in the fixed guard order. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "manifest.h"

#define PLAN_STEPS_MAX        16  /* steps in one plan */
#define PLAN_NAME_MAX         128 /* bytes of a plugin name, a handle id, an input key, a binding */
#define PLAN_INPUTS_MAX       MANIFEST_INPUTS_MAX                /* bindings in one step */
#define PLAN_PLACEHOLDER_MAX  32                                 /* bytes of a placeholder's name */
#define PLAN_PLACEHOLDERS_MAX (PLAN_STEPS_MAX * PLAN_INPUTS_MAX) /* distinct ones in a plan */
#define PLAN_ACCOUNT_SIZE     32 /* bytes of a budget account's identity: a SHA-256 */
/* The longest plan_tuple_format() output, without its NUL: four "input=placeholder" and commas. */
#define PLAN_TUPLE_STRING_MAX                                                                      \
        (PLAN_INPUTS_MAX * (32 + 1 + PLAN_PLACEHOLDER_MAX) + PLAN_INPUTS_MAX - 1)

/*
 * Why a plan is refused. Each code is one Varlink error of io.lockd.Agent (plan_error_varlink()).
 *
 * The guards run in this fixed order, each over every step of the plan (in step order) before the
 * next one starts, and the answer is the first failure found:
 *
 *   1. shape    E_PLAN_INVALID_REQUEST   types, unknown members, counts and lengths, every step
 *   2. handles  E_PLAN_UNKNOWN_HANDLE    the handle is visible to this agent, every step
 *   3. plugins  E_PLAN_UNKNOWN_PLUGIN    the plugin is installed, every step
 *   4. bindings E_PLAN_LITERAL_INPUT, E_PLAN_BAD_PLACEHOLDER
 *                                        every binding a placeholder, every step
 *   5. inputs   E_PLAN_UNKNOWN_INPUT, E_PLAN_MISSING_INPUT
 *                                        the bound inputs are exactly the declared ones, every step
 *   6. budget   E_PLAN_BUDGET_EXHAUSTED  the plan's new answers fit each file's budget
 *
 * So a plan whose step 1 has a literal input and whose step 2 names a handle the agent may not
 * see is answered E_PLAN_UNKNOWN_HANDLE (step 2): what an agent learns about what it may not see
 * never depends on how the rest of its plan is written, and a plan that is not well formed
 * learns nothing about handles at all.
 */
typedef enum PlanErrorCode {
        PLAN_OK = 0,
        E_PLAN_INVALID_REQUEST,  /* the steps are not well formed */
        E_PLAN_UNKNOWN_HANDLE,   /* no such handle, or one not granted to this agent: the same */
        E_PLAN_UNKNOWN_PLUGIN,   /* no plugin installed under that name */
        E_PLAN_LITERAL_INPUT,    /* a binding that does not start with "${": a value, refused */
        E_PLAN_BAD_PLACEHOLDER,  /* starts with "${" but is not exactly ${name} */
        E_PLAN_UNKNOWN_INPUT,    /* an input the plugin does not declare (any on protocol 1) */
        E_PLAN_MISSING_INPUT,    /* an input the plugin declares, left unbound */
        E_PLAN_BUDGET_EXHAUSTED, /* a new answer past what the file's budget has left */
        _E_PLAN_MAX,
} PlanErrorCode;

/*
 * A refusal. It never holds a binding: a literal is a value the agent chose, perhaps a guess at
 * the file's content, and nothing is gained by sending it back, logging it or auditing it, so no
 * error carries one (the agent knows what it sent; step and input name tell it where).
 */
typedef struct PlanError {
        PlanErrorCode code;
        int step; /* 0-based index into the steps, or -1 when the error is about the plan as a whole
                   */
        /*
         * Where in the step: for E_PLAN_INVALID_REQUEST one of "steps", "plugin", "handle",
         * "inputs", or "" for the step object itself (not an object, an unknown member); for the
         * input errors the input key as the agent wrote it (E_PLAN_MISSING_INPUT: the declared
         * input's name); "" for the others.
         */
        char field[PLAN_NAME_MAX + 1];
        const char *reason; /* a static English sentence, never text from the request */
} PlanError;

/* One binding of a step: a declared input and the placeholder the human types its value for. */
typedef struct PlanBinding {
        char input[sizeof(((ManifestInput *)NULL)->name)];
        char placeholder[PLAN_PLACEHOLDER_MAX + 1];
} PlanBinding;

/* One validated step. The pointers are the callbacks' own, borrowed, never freed here. */
typedef struct PlanStep {
        char plugin_name[PLAN_NAME_MAX + 1];
        char handle_id[PLAN_NAME_MAX + 1];
        void *handle;             /* from PlanCallbacks.handle_lookup */
        void *plugin;             /* from PlanCallbacks.plugin_lookup */
        const Manifest *manifest; /* from PlanCallbacks.plugin_lookup */
        /* The canonical placeholder tuple: one binding per declared input, sorted by input name
         * (bytewise). Empty for a protocol-1 plugin and for one without inputs. */
        PlanBinding bindings[PLAN_INPUTS_MAX];
        size_t n_bindings;
        /* Budget: whether this step costs one answer (a question not answered before and not
         * already asked by an earlier step of this plan), and the account it is charged to. */
        bool charged;
        uint8_t budget_account[PLAN_ACCOUNT_SIZE];
} PlanStep;

typedef struct Plan {
        size_t n_steps;
        /* The distinct placeholders of the whole plan, sorted (bytewise): what the human types. */
        char placeholders[PLAN_PLACEHOLDERS_MAX][PLAN_PLACEHOLDER_MAX + 1];
        size_t n_placeholders;
        /* Last, so that a plan kept for long is cut to its n_steps (plan_shrink()): never copy a
         * Plan whole or look past steps[n_steps - 1]. */
        PlanStep steps[PLAN_STEPS_MAX];
} Plan;

/* What the budget says about one step's question (PlanCallbacks.budget_query). */
typedef struct PlanBudget {
        /* The budget the answer would be charged to: the file content's SHA-256. Steps whose
         * accounts are equal (bytewise) share one budget, whichever handle they name. */
        uint8_t account[PLAN_ACCOUNT_SIZE];
        /* New answers the account still allows to this step's handle (its grant's limit less
         * what the content used): two grants of one content may allow different numbers. */
        unsigned remaining;
        bool answered; /* this question was answered before: it costs nothing */
} PlanBudget;

/*
 * How the validator sees the world. Each callback returns a negative errno on an internal failure
 * (the validation stops and returns it), otherwise as said.
 */
typedef struct PlanCallbacks {
        /*
         * Returns 1 and the handle in *ret_handle when handle_id names a live handle granted to
         * agent, 0 when it does not: a handle that does not exist, has expired, or is granted
         * to someone else is the same 0. The validator calls it exactly once for every step, in
         * step order, whatever earlier calls answered, and treats every 0 alike; the callback
         * must do the same work for each kind of 0 (look the id up, then compare the grantee),
         * so that neither the answer nor its timing tells an absent handle from another's.
         */
        int (*handle_lookup)(void *userdata, const char *handle_id, uid_t agent, void **ret_handle);
        /*
         * Returns 1, the plugin's manifest (valid for as long as the plan is used) and an opaque
         * pointer when a plugin of that name is installed, 0 when none is. Called once per step.
         */
        int (*plugin_lookup)(void *userdata, const char *plugin_name, const Manifest **ret_manifest,
                             void **ret_plugin);
        /*
         * Fills *ret for step's question: step->handle, step->plugin, step->manifest (name and
         * version) and step->bindings (the canonical tuple) are set. Returns 0. Called once per
         * step, in step order, until a step is over budget.
         */
        int (*budget_query)(void *userdata, const PlanStep *step, PlanBudget *ret);
        void *userdata;
} PlanCallbacks;

/*
 * Validates steps (the Submit parameter: untrusted, any JSON value) for agent in the guard order
 * above. Returns 0 and a new Plan in *ret_plan; -EINVAL with *ret_error (if not NULL) filled
 * when the plan is refused; -ENOMEM; or a callback's negative errno (a callback's -EINVAL is
 * returned as -EIO, so that -EINVAL always means a refusal). *ret_plan is untouched on failure,
 * *ret_error on success. Pure: no I/O, no logging; the world is seen through cb only. steps is
 * not kept: the plan holds copies of the strings it needs.
 *
 * A step is {"plugin": string, "handle": string, "inputs": ?{string: string}} and nothing else.
 * plugin and handle are 1..PLAN_NAME_MAX bytes of printable ASCII without space; inputs has at
 * most PLAN_INPUTS_MAX members, each key 1..PLAN_NAME_MAX bytes of printable ASCII, each binding
 * a string of at most PLAN_NAME_MAX bytes without NUL; a null inputs is no inputs. A key is the
 * input's name ("needle") or, as the contract writes it, the step's plugin name, a dot and the
 * input's name ("pdf.contains.needle"); one step naming an input both ways is malformed.
 *
 * A binding is a placeholder when it is exactly "${" name "}" with name [a-z0-9_]{1,32}: no
 * byte before or after, no whitespace, no nesting. One that does not start with "${" is a
 * literal (E_PLAN_LITERAL_INPUT), the empty string included; one that starts with "${" and is
 * not exactly a placeholder is E_PLAN_BAD_PLACEHOLDER. Within a step, bindings are checked in
 * bytewise order of their keys, then unknown keys in the same order, then missing inputs in the
 * manifest's order.
 *
 * Budget: each step whose question was not answered before and is not the same as an earlier
 * step's (same account, plugin name and version, tuple) costs one answer from its account; the
 * first step whose cost takes an account past its remaining answers is E_PLAN_BUDGET_EXHAUSTED.
 */
int plan_validate(json_t *steps, uid_t agent, const PlanCallbacks *cb, Plan **ret_plan,
                  PlanError *ret_error);

Plan *plan_free(Plan *plan);
/* The plan cut to its n_steps steps (a kept ticket's plan: 16 steps take 9.4 KiB, most plans
 * one or two): the new pointer, or plan itself when it cannot move. */
Plan *plan_shrink(Plan *plan);
static inline void plan_freep(Plan **p) {
        if (*p)
                plan_free(*p);
}

/*
 * Writes step's canonical tuple as "input=placeholder" pairs joined by ',' in tuple order ("" for
 * none) into buf (size bytes, at least PLAN_TUPLE_STRING_MAX + 1): a stable key for the budget
 * and the cache. Unambiguous, since neither name can hold '=' or ','. 0 or -ENOBUFS.
 */
int plan_tuple_format(const PlanStep *step, char *buf, size_t size);

/* "E_PLAN_UNKNOWN_HANDLE", …; NULL for PLAN_OK and values out of range. */
const char *plan_error_name(PlanErrorCode code);
/* The io.lockd.Agent error the code is answered with ("UnknownHandle"); NULL as above. */
const char *plan_error_varlink(PlanErrorCode code);
