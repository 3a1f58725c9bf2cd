/* The group commit (commit.c): audit records and budget changes made durable off the loop, and
 * what waits for them told on the loop. It knows none of its callers: they wait on it. */
#pragma once

#include <stdint.h>
#include <systemd/sd-event.h>

#include "audit.h"
#include "budget.h"

typedef struct Commit Commit;

/*
 * A waiter's news: the audit log is durable up to the record it waited for (r >= 0), or the log
 * broke (r < 0), or the commit ends with nothing more to make durable (r == -ECANCELED, at exit:
 * commit_cancel(), commit_free()). Called once, on the loop.
 */
typedef void (*CommitWaitFn)(int r, void *userdata);

/*
 * What an observer is told after every job, waiters first: records_durable when the audit log's
 * job ended (r >= 0: durable up to audit_get_durable_seq(); r < 0: the log broke), and
 * budget_durable when a budget checkpoint ended (r >= 0: the files hold the changes up to gen;
 * r < 0: they could not be written, and the log still holds every change). No answer waits for
 * a checkpoint: a budget change is durable with its audit record.
 */
typedef struct CommitObserver {
        void (*records_durable)(int r, void *userdata);
        void (*budget_durable)(uint64_t gen, int r, void *userdata);
} CommitObserver;

/*
 * Two writer threads (disk-writer.h): one makes the audit log durable, one writes the budget
 * files, so that the event loop never waits for a disk on the question path. Records and budget
 * changes made while a job is out go together into the next one. Made once the audit log and the
 * budget store are open (either may be NULL: nothing to write there); 0 or a negative errno.
 */
int commit_new(sd_event *e, Audit *audit, BudgetStore *budget, Commit **ret);
/* Waits for the jobs out (their waiters are not told), drops the waiters (commit_cancel()), ends
 * the threads; NULL-safe, NULL. */
Commit *commit_free(Commit *c);

/* The one observer (the question flow, ask.c); NULL: none. */
void commit_observe(Commit *c, const CommitObserver *o, void *userdata);

/*
 * Calls fn once the audit record seq (audit_get_seq() after its append) is durable, in the order
 * of the calls, and asks for a commit: at idle time, or at once when many wait. fn may run before
 * this returns. 0 or -ENOMEM (fn is not called).
 */
int commit_wait(Commit *c, uint64_t seq, CommitWaitFn fn, void *userdata);
/* Tells every waiter -ECANCELED at once: at exit, when their answers can no longer be given. */
void commit_cancel(Commit *c);

/*
 * Starts the audit and budget jobs that can start now: a writer that is free takes everything
 * written so far. When a job ends, on the loop, its waiters and its observer are told, and the
 * next job starts if more waits. NULL-safe.
 */
void commit_run(Commit *c);
/* commit_run() once the loop has nothing more urgent: the waiters of one read, and of every
 * connection ready now, share one fsync(). NULL-safe. */
void commit_want(Commit *c);
/* A record nothing waits for (a ticket's "done", a cached outcome's budget record) rides the
 * next commit, and waits at most a bounded time (commit.c, 30 s) for one: no fsync of its own
 * when questions keep coming. NULL-safe. */
void commit_later(Commit *c);
/* A budget checkpoint now (budget_checkpoint(), after the batch out): at start, once the replay
 * is done. 0 or a negative errno. */
int commit_checkpoint(Commit *c);
/* Everything written made durable, and what waited for it told, before this returns: a stop,
 * which does not go back to the loop for it, and which blocks the loop. NULL-safe. */
void commit_sync(Commit *c);
