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
 * The group commit's news (commit.h); both let go the answers whose run record and reservation
 * are now durable. ask_budget_durable(): the budget changes up to gen are on disk (r >= 0), or
 * they could not be written (r < 0), and an answer whose reservation only that batch held is
 * withheld (plugin_error, cause "budget"). ask_records_durable(): the audit log is durable up to
 * its durable seq (r >= 0), or it broke (r < 0), and every answer waiting is withheld
 * (plugin_error, cause "audit"). A withheld answer is not cached and its slot goes back.
 */
void ask_budget_durable(Manager *m, uint64_t gen, int r);
void ask_records_durable(Manager *m, int r);

/* Frees the backlog structure (after ask_flush()). NULL-safe. */
AskQueue *ask_queue_free(AskQueue *q);
