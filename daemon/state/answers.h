/* The answers of questions bound to typed values: in memory only, keyed by a keyed hash of the
 * values, so a new value is a fresh run and never a stale answer (ARCHITECTURE.md, the cache). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "budget.h"

#define ANSWERS_ID_SIZE 32
#define ANSWERS_MAX     4096 /* answers kept; the oldest goes first */

typedef struct AnswerCache AnswerCache;

/*
 * A new, empty cache. Its key is random (getrandom(), in locked memory that no core dump holds),
 * made at the first answers_id() of each start and never written anywhere: a hash of the same
 * values after a restart is another one, so nothing on disk or in a log can be matched to a
 * value. 0, or a negative errno with *ret untouched.
 */
int answers_new(AnswerCache **ret);
AnswerCache *answers_free(AnswerCache *c);
static inline void answers_freep(AnswerCache **c) {
        if (*c)
                answers_free(*c);
}

/*
 * The id of one question: HMAC-SHA256 under the cache's key of the content digest, the budget key
 * (plugin, version, bindings) and the canonical inputs JSON that carries the values (inputs_len
 * bytes). 0, or a negative errno with id untouched.
 */
int answers_id(AnswerCache *c, const uint8_t digest[BUDGET_DIGEST_SIZE], const BudgetKey *key,
               const char *inputs, size_t inputs_len, uint8_t id[ANSWERS_ID_SIZE]);

/* The answer stored under id: 1 and *ret filled, or 0 with *ret untouched. */
int answers_lookup(const AnswerCache *c, const uint8_t id[ANSWERS_ID_SIZE], BudgetEntry *ret);

/*
 * Stores e (an answer: 0, 1 or plugin_error) under id for the content digest, replacing what id
 * held; the oldest answer makes room past ANSWERS_MAX (it is then run again, still free since the
 * budget slot stays). 0 or -EINVAL.
 */
int answers_store(AnswerCache *c, const uint8_t id[ANSWERS_ID_SIZE],
                  const uint8_t digest[BUDGET_DIGEST_SIZE], const BudgetEntry *e);

/* Forgets every answer about the content digest (the human's budget reset). The number dropped. */
size_t answers_reset(AnswerCache *c, const uint8_t digest[BUDGET_DIGEST_SIZE]);

/* Forgets everything (a budget reset of every content). */
void answers_clear(AnswerCache *c);
