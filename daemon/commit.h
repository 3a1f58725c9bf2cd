/* The group commit (commit.c). */
#pragma once

#include "manager.h"
#include "varlink.h"

typedef struct Commit Commit;

/*
 * The group commit's two writer threads (disk-writer.h): one makes the audit log durable, one
 * writes the budget files, so that the event loop never waits for a disk on the question path.
 * Records and budget changes made while a job is out go together into the next one. Made once the
 * audit log and the budget store are open; 0 or a negative errno.
 */
int commit_new(Manager *m, Commit **ret);
/* Waits for the jobs out (their waiters are not told), ends the threads; NULL-safe, NULL. */
Commit *commit_free(Commit *c);

/*
 * Starts the audit and budget jobs that can start now: a writer that is free takes everything
 * written so far. When a job ends, on the loop, what waited for it goes on: Submits are answered
 * (commit_queue_submit()), runs whose reservations are on disk start and answers whose run
 * records are leave (ask.h), and the next job starts if more waits.
 */
void commit_run(Manager *m);
/* commit_run() once the loop has nothing more urgent: the Submits of one read, and of every
 * connection ready now, share one fsync(). */
void commit_want(Manager *m);
/* Everything written made durable, and what waited for it done, before this returns: a stop,
 * which does not go back to the loop for it, and which blocks the loop. */
void commit_sync(Manager *m);
/* Queues call's answer (Submit of ticket, whose audit record was just written) behind the
 * commit. 0 or -ENOMEM. */
int commit_queue_submit(Manager *m, VarlinkCall *call, const char *ticket);
/* Drops the Submits still waiting, unanswered: at exit. */
void commit_forget_submits(Manager *m);
