/* The group commit (commit.c). */
#pragma once

#include "manager.h"
#include "varlink.h"

/*
 * Makes the audit records and budget reservations written without a sync durable (one fsync()
 * each for the log and the budget directory), then answers the Submits that waited for it.
 * commit_want() asks for it when the loop is idle; it also runs right after the run pool's scope
 * requests went out, while the manager works on them (commit_scope_requests_sent()).
 */
void commit_run(Manager *m);
void commit_want(Manager *m);
/*
 * Asks for the commit right after the next scope request went out (a run was just queued), and
 * at the latest COMMIT_SCOPE_WAIT_USEC from now: an idle-time commit would block the loop just
 * before the request leaves, instead of while the manager works on it.
 */
void commit_want_after_scope(Manager *m);
/* The scope manager's hook after its requests went out (userdata: the Manager). */
void commit_scope_requests_sent(void *userdata);
/* Queues call's answer (Submit of ticket) behind the commit, which runs when the loop has nothing
 * more urgent, or at once past a batch. 0 or -ENOMEM. */
int commit_queue_submit(Manager *m, VarlinkCall *call, const char *ticket);
/* Drops the Submits still waiting, unanswered: at exit. */
void commit_forget_submits(Manager *m);
