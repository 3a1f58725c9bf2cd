/* The runs of an approved ticket: per step cache → budget → sandboxed run in its scope →
 * classify → budget → audit → outcome, with a fair backlog when the run pool is full. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "secmem.h"
#include "tickets.h"

typedef struct Manager Manager;
typedef struct AskQueue AskQueue;

/*
 * Starts every step of t, which tickets_start() has just moved to running. values holds one
 * value per placeholder of t's plan (values[i] for plan->placeholders[i], borrowed: copied into
 * each run's fd 6 JSON before this returns), or is NULL for a plan without placeholders.
 *
 * Each step, in order: a handle revoked or expired since the submit → denied; a value that does
 * not fit an input it is bound to → input_invalid; a cached answer → that answer, free; a
 * budget with no slot left → budget_exhausted; otherwise a slot is reserved (persisted) and the
 * run queued. Outcomes known at once are set before this returns, so the ticket may be done
 * already. Never fails: a step that cannot be started ends as plugin_error with its cause kept
 * for the human (Results).
 */
void ask_start(Manager *m, Ticket *t, const SecBuf *const *values);

/* Queued steps not yet handed to the run pool, all agents. */
size_t ask_backlog(const Manager *m);

/* Fails every step still in the backlog (lockd stops): plugin_error, budget released. */
void ask_flush(Manager *m);

/*
 * Follows the group commit (commit.h, m->commit made): an answer leaves only once its run record
 * and its reservation are durable. When the audit log breaks every answer waiting is withheld
 * (plugin_error, cause "audit"); when a budget batch fails, an answer whose reservation only that
 * batch held is (cause "budget"). A withheld answer is not cached and its slot goes back.
 */
void ask_attach(Manager *m);

/* Frees the backlog structure (after ask_flush()). NULL-safe. */
AskQueue *ask_queue_free(AskQueue *q);
