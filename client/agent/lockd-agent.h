/* lockd-agent: the agent's side of lockd in C — list the files granted to it and the questions
 * it may ask, submit a plan, wait for its outcomes, cancel it. It speaks io.lockd.Agent on the
 * agent socket and can never approve anything. Link with `pkg-config --libs lockd-agent`. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOCKD_AGENT_SOCKET "/run/lockd.sock"

/*
 * Every function returns 0, or a negative errno:
 *  -EREMOTEIO  lockd answered with an error, described in *err (when err is not NULL);
 *  -ECONNREFUSED, -ENOENT, -EACCES, -ECONNRESET, -EPIPE, -ETIMEDOUT  lockd could not be reached
 *              or went away (lockd_agent_unreachable() tells these apart from the rest);
 *  -EBADMSG    lockd's answer was not what io.lockd.Agent declares;
 *  -EINVAL, -ENOMEM  bad arguments, out of memory.
 * Outputs are set only on success.
 */

typedef struct LockdAgent LockdAgent;

/* An error lockd answered with. */
typedef struct LockdAgentError {
        char *name;       /* qualified: "io.lockd.Agent.LiteralInput" */
        const char *code; /* its last part, inside name: "LiteralInput" */
        int64_t step;     /* the step it names (0-based), or -1 */
        char *input;      /* the input key it names, or NULL */
        char *reason;     /* a sentence (InvalidRequest, Unavailable), or NULL */
        char *parameters; /* the error's parameters as compact JSON text */
} LockdAgentError;

void lockd_agent_error_clear(LockdAgentError *e);
/* Whether r (a return value) means lockd could not be reached or went away. */
bool lockd_agent_unreachable(int r);

/* A sentence for an error code of io.lockd.Agent ("LiteralInput") or an outcome's error
 * ("plugin_error"), in plain words for a person or a model; NULL for a code it does not know. */
const char *lockd_agent_explain(const char *code);

/* Connects to the agent socket at path (NULL: LOCKD_AGENT_SOCKET). */
int lockd_agent_connect(const char *path, LockdAgent **ret);
LockdAgent *lockd_agent_free(LockdAgent *a);

/* A file a human granted to this agent. */
typedef struct LockdFile {
        char *handle;
        char *label;          /* NULL: none */
        int64_t budget_left;  /* distinct answers about its content left */
        int64_t expires_usec; /* CLOCK_REALTIME microseconds, or -1: never */
} LockdFile;

int lockd_agent_list_files(LockdAgent *a, LockdFile **ret, size_t *ret_n, LockdAgentError *err);
void lockd_files_free(LockdFile *f, size_t n);

typedef struct LockdInput {
        char *name;
        char *kind;
        int64_t max_bytes;
} LockdInput;

/* A plugin: its fixed question and what each answer means. */
typedef struct LockdQuestion {
        char *name, *version;
        int64_t protocol;
        char *question, *one, *zero;
        char **accepts;
        size_t n_accepts;
        LockdInput *inputs;
        size_t n_inputs;
} LockdQuestion;

int lockd_agent_list_questions(LockdAgent *a, LockdQuestion **ret, size_t *ret_n,
                               LockdAgentError *err);
void lockd_questions_free(LockdQuestion *q, size_t n);

/* One input of a step, bound to a placeholder: value is exactly "${name}". */
typedef struct LockdBinding {
        const char *input;
        const char *value;
} LockdBinding;

typedef struct LockdStep {
        const char *plugin;
        const char *handle;
        const LockdBinding *inputs;
        size_t n_inputs;
} LockdStep;

/* Submits steps as one ticket; *ret_ticket and *ret_state (pending or running) are new strings. */
int lockd_agent_submit(LockdAgent *a, const LockdStep *steps, size_t n_steps, char **ret_ticket,
                       char **ret_state, LockdAgentError *err);

typedef struct LockdOutcome {
        int64_t step;
        int result;  /* 1 or 0, or -1: no answer (then error is set) */
        char *error; /* plugin_error, denied, input_invalid, budget_exhausted, cancelled,
                        expired; NULL with an answer */
} LockdOutcome;

typedef struct LockdTicket {
        char *state; /* pending, running, done, denied, cancelled, expired */
        bool final;  /* done, denied, cancelled or expired: nothing changes any more */
        LockdOutcome *outcomes;
        size_t n_outcomes;
} LockdTicket;

void lockd_ticket_clear(LockdTicket *t);

/* The ticket's state now. */
int lockd_agent_status(LockdAgent *a, const char *ticket, LockdTicket *ret, LockdAgentError *err);

/*
 * Waits for the ticket to reach a final state, for at most timeout_usec (0: no limit). fn (may be
 * NULL) runs with each state lockd reports (changed true), and every tick_usec (0: never) without
 * a change (changed false); a non-zero return from fn stops the wait and is returned. 0 with the
 * final state in *ret, or -ETIMEDOUT with the last state known in *ret (ret may be NULL). The
 * connection is not usable for other calls afterwards unless the wait ended in a final state.
 */
typedef int (*LockdWaitFn)(const LockdTicket *t, bool changed, void *userdata);
int lockd_agent_wait(LockdAgent *a, const char *ticket, uint64_t timeout_usec, uint64_t tick_usec,
                     LockdWaitFn fn, void *userdata, LockdTicket *ret, LockdAgentError *err);

/* Takes back a pending ticket. */
int lockd_agent_cancel(LockdAgent *a, const char *ticket, LockdAgentError *err);

#ifdef __cplusplus
}
#endif
