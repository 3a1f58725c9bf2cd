/* The run pool: plugin runs on worker threads, each in its own transient scope and ephemeral uid,
 * queued fairly across the agents that asked, with the results handed back on the event loop. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "run-request.h"
#include "runner.h"
#include "scope.h"

typedef struct RunPool RunPool;
typedef struct RunPoolConfig {
        unsigned workers;   /* runs at once */
        unsigned queue_max; /* runs waiting, all keys together; more: -EAGAIN */
        uid_t uid_first, uid_last;
        bool drop_to_uid;            /* as root: each run gets a fresh uid of the range */
        uint64_t scope_timeout_usec; /* how long a run waits for its scope */
        const char *slice;           /* the runs' slice, hidden like their scopes (copied) */
        /* With scopes: children kept waiting in scopes of their own per limit class, at most
         * (standby.h); 0: every run makes its scope when it starts. */
        unsigned standby_max;
} RunPoolConfig;

/*
 * Starts cfg->workers threads. scope may be NULL (scope backend none: runs without scopes).
 * 0 or a negative errno: -EINVAL also when drop_to_uid and the range holds fewer uids than
 * workers (or includes root).
 */
int run_pool_new(sd_event *e, const RunPoolConfig *cfg, ScopeManager *scope, RunPool **ret);

/*
 * Kills every run in flight (SIGKILL through its pidfd and its scope), fails every queued one
 * with -ECANCELED (done is called for them), joins the threads and frees the pool. Must run on
 * the loop's thread; results of the killed runs are delivered before it returns.
 */
RunPool *run_pool_free(RunPool *p);
static inline void run_pool_freep(RunPool **p) {
        if (*p)
                run_pool_free(*p);
}

/* Queues req (the pool owns it until done ran; then the callee frees it with run_request_free),
 * or hands it to an idle worker at once, releasing a child made ahead for it on the caller's
 * thread. 0, -EAGAIN the queue is full, -ESHUTDOWN the pool is stopping. Loop's thread only. */
int run_pool_submit(RunPool *p, RunRequest *req);

/*
 * Stops taking new runs (submit: -ESHUTDOWN), kills the ones in flight and fails the queued ones
 * with -ECANCELED. Every done callback still runs, later, on the loop: a killed run with its
 * result (signal:SIGKILL), or with req->error -ECANCELED when the stop came before its child was
 * let into the sandbox; every queued one with -ECANCELED. Loop's thread only.
 */
void run_pool_kill_all(RunPool *p);

/* Whether nothing of the pool is left to finish: no run queued, running or undelivered, no
 * child made ahead waiting for its scope's job. After run_pool_kill_all() the loop keeps running
 * until this holds, so that every scope's start is answered and its unit stopped (ARCHITECTURE.md,
 * "The way out"). Loop's thread. */
bool run_pool_idle(RunPool *p);

/* Kills the run whose id is id: a queued one never starts (-ECANCELED), one in flight gets
 * SIGKILL and its scope is stopped. An id not in the pool is no error (it may have just ended).
 * Loop's thread only. */
void run_pool_kill(RunPool *p, uint64_t id);

/* Keeps a child ready in a scope for the limit class of limits (an installed plugin's); nothing
 * without scopes or standby_max. Loop's thread only. */
void run_pool_warm(RunPool *p, const SandboxLimits *limits);

/* Runs in flight or finished and not yet handed to their done callback. */
unsigned run_pool_n_active(const RunPool *p);
unsigned run_pool_n_queued(const RunPool *p);
