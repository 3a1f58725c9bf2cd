/* Budgets and the answer cache: per file content (SHA-256), the distinct questions answered about
 * it and their outcomes, persisted under budgets/ in lockd's state directory. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit-line.h"
#include "manifest.h"

/*
 * The model. A budget belongs to a file's content (its SHA-256), never to a handle: granting the
 * same bytes again, under another handle or after a restart, finds the same budget. An answer
 * slot is one distinct key: (plugin name, plugin version, the sorted (input, placeholder) pairs of
 * the step's bindings). The values a human types for the placeholders are not part of the key and
 * never reach this module: asking the same plugin with ${email} bound to the same input again
 * takes no new slot. Such a slot's answers depend on the values, so this module stores none of
 * them (BUDGET_OUTCOME_ANSWERED): lockd keeps them in memory under a keyed hash of the values
 * (answers.h), and a new value is a fresh run. A budget holds at most `limit` distinct keys, the
 * limit being the policy's max_plugins_per_handle (1..64) or lower for a grant that asked for
 * less; the caller passes it on every call that charges.
 *
 * The flow of one step: budget_lookup() (a cached outcome answers at once and costs nothing) →
 * budget_reserve() (takes a slot before the run, so runs of different questions in flight at once
 * cannot overshoot the limit) → run → budget_commit() with the run's outcome, or budget_release()
 * when the run failed for a reason that says nothing about the file.
 *
 * What is cached: 1, 0 and plugin_error, the outcomes of a plugin that ran on the file. A
 * plugin_error is an answer like the others (the plugin crashed, timed out or broke the protocol
 * on these bytes); caching it keeps an agent from re-running a flaky plugin for free until it
 * says something else, and `lockctl budget reset` lets the human retry. What is not cached
 * (budget_release()): failures on lockd's side that say nothing about the file (spawn:* causes
 * such as spawn:scope, a run cut short by lockd's stop), and steps that never ran (denied,
 * cancelled, expired, input_invalid).
 *
 * Fail closed. Every change that charges is on disk (without a log: its file fsync()ed, then the
 * directory; with one: its record) before the call returns 0, or, for budget_reserve_deferred(),
 * before the answer of the slot leaves lockd (the caller waits for the batch or the commit that
 * holds it): a reservation is persisted as "reserved" while
 * the plugin runs, so a lockd killed mid-run comes back with the slot still taken (a later run of
 * that key costs nothing and fills it), and a lockd killed before the batch is written loses
 * only a slot whose answer nobody received. A budget file that does not parse strictly makes
 * budget_open() fail, naming the file: a budget is never reset silently, since a lost budget would
 * let an agent ask more than it may. The human's way out is `lockctl budget reset` (budget_reset())
 * or removing the file by hand.
 *
 * The write-ahead log (ARCHITECTURE.md, budgets). With a log set (budget_set_log()), a change is
 * made by appending its record to the audit log and then changing memory, and nothing else: the
 * budgets on disk become a checkpoint, one snapshot (BUDGET_CHECKPOINT: every budget and the log
 * position it covers) written by budget_flush() and the batches, off every answer's path, and no
 * file per budget is written any more (an older lockd's go with the first snapshot). The caller
 * makes the
 * record durable before it acts on the change (a reservation before the answer of its slot
 * leaves); a record lost to a crash before that loses a change nobody acted on. At start,
 * budget_open() loads the checkpoint and budget_replay() applies every budget change the log holds
 * after its position. The replay is idempotent per key (a reservation takes an absent slot, an
 * outcome sets a reserved or absent one and never changes a final one, a release gives back only
 * a reserved one, a reset drops them all), so budgets newer than their checkpoint's position
 * replay to the same state. Without a log (tests, tools) the calls that do not say
 * "deferred" write their file before they return, as below.
 *
 * Threads: a BudgetStore is used from the engine's event loop thread only; it has no locks (a
 * batch, once taken, is the one thing another thread may write). Lookups never touch the disk (an
 * in-memory hash table keyed by digest, filled at open).
 */

#define BUDGET_DIR         "budgets"
#define BUDGET_LIMIT_MAX   64     /* the policy's max_plugins_per_handle at most */
#define BUDGET_DIGESTS_MAX 100000 /* distinct contents with a budget; -ENOSPC beyond */
#define BUDGET_PAIRS_MAX   MANIFEST_INPUTS_MAX
#define BUDGET_NAME_MAX    32 /* an input or placeholder name: [a-z0-9_]{1,32} */
#define BUDGET_PLUGIN_MAX  64 /* a plugin name, as manifest_name_valid() allows */
#define BUDGET_VERSION_MAX 32 /* MAJOR.MINOR.PATCH, as manifest_version_valid() allows */
#define BUDGET_FILE_MAX    ((size_t)128 * 1024) /* one budget file's bytes */
#define BUDGET_DIGEST_SIZE 32

typedef struct BudgetStore BudgetStore;

typedef enum BudgetOutcome {
        BUDGET_OUTCOME_RESERVED, /* a slot taken, no outcome yet (in flight, or lockd stopped) */
        BUDGET_OUTCOME_ZERO,     /* the plugin answered 0 */
        BUDGET_OUTCOME_ONE,      /* the plugin answered 1 */
        BUDGET_OUTCOME_PLUGIN_ERROR, /* the plugin ran and gave no valid answer */
        BUDGET_OUTCOME_ANSWERED,     /* a question bound to typed values was answered: the slot is
                                        charged, the answers are by value and in memory only */
        _BUDGET_OUTCOME_MAX,
} BudgetOutcome;

typedef struct BudgetPair {
        char input[BUDGET_NAME_MAX + 1];
        char placeholder[BUDGET_NAME_MAX + 1];
} BudgetPair;

/* A question's key, built with budget_key_init() and budget_key_add(), which keep it canonical:
 * valid names, pairs sorted by input name, each input once. */
typedef struct BudgetKey {
        char plugin[BUDGET_PLUGIN_MAX + 1];
        char version[BUDGET_VERSION_MAX + 1];
        size_t n_pairs;
        BudgetPair pairs[BUDGET_PAIRS_MAX];
} BudgetKey;

/* A cached outcome, when it was stored (CLOCK_REALTIME, microseconds), and how long the run that
 * produced it took from its admission to its end (0: unknown), for the release schedule. */
typedef struct BudgetEntry {
        BudgetOutcome outcome;
        uint64_t time_usec;
        uint64_t ran_usec;
} BudgetEntry;

/* One answer slot, for `lockctl budget show`. */
typedef struct BudgetAnswer {
        BudgetKey key;
        BudgetEntry entry;
        unsigned in_flight; /* runs holding a reservation on it now */
} BudgetAnswer;

/* One content's budget in budget_list(). */
typedef struct BudgetSummary {
        uint8_t digest[BUDGET_DIGEST_SIZE];
        size_t used;
} BudgetSummary;

typedef struct BudgetError {
        char message[256];
} BudgetError;

/* "0", "1", "plugin_error", "reserved", "answered"; NULL out of range. */
const char *budget_outcome_name(BudgetOutcome o);

/* Whether name is an input or placeholder name: [a-z0-9_]{1,32}. */
bool budget_name_valid(const char *name);

/*
 * Starts a key for plugin (manifest_name_valid()) at version (manifest_version_valid()), without
 * pairs. 0, or -EINVAL with *k untouched.
 */
int budget_key_init(BudgetKey *k, const char *plugin, const char *version);

/*
 * Adds the binding of input to ${placeholder}, keeping the pairs sorted by input name, so the
 * same bindings in any order give the same key. 0; -EINVAL for an invalid name; -EEXIST when
 * input is bound already; -E2BIG past BUDGET_PAIRS_MAX. *k is unchanged on failure.
 */
int budget_key_add(BudgetKey *k, const char *input, const char *placeholder);

/* Whether k is canonical: valid names, NUL-terminated fields, pairs strictly sorted by input. */
bool budget_key_valid(const BudgetKey *k);

/*
 * Opens the budgets of the state directory statefd: creates BUDGET_DIR (0700) if absent, removes
 * temporary files an interrupted write left there, and loads every budgets/<64 hex>.json into
 * memory. Refuses (negative errno, err->message naming the file, *ret untouched) when any entry
 * of the directory is not a budget file, is not a regular file, exceeds BUDGET_FILE_MAX or does
 * not parse strictly (-EINVAL, -EFBIG, -EBADMSG), or when there are more than BUDGET_DIGESTS_MAX
 * (-ENOSPC). 0 and a new store in *ret. err may be NULL.
 */
int budget_open(int statefd, BudgetStore **ret, BudgetError *err);
BudgetStore *budget_close(BudgetStore *s);
static inline void budget_closep(BudgetStore **s) {
        if (*s)
                budget_close(*s);
}

/* Lowers the cap on distinct digests below BUDGET_DIGESTS_MAX (for tests, and for a policy that
 * wants less). 0, or -EINVAL for 0 or a value above BUDGET_DIGESTS_MAX. Digests loaded already
 * stay. */
int budget_set_digests_max(BudgetStore *s, size_t max);

/*
 * The cached outcome of key on the content digest: 1 and *ret filled when the key was answered
 * (BUDGET_OUTCOME_ZERO, _ONE or _PLUGIN_ERROR); 0 and *ret untouched when it was not (no slot,
 * or a reserved slot without an outcome); -EINVAL for a key that is not canonical. Never touches
 * the disk.
 */
int budget_lookup(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE], const BudgetKey *key,
                  BudgetEntry *ret);

/*
 * Whether asking key on digest again costs nothing: 1 when the key holds a slot (answered, or
 * reserved by a run in flight or by a lockd that stopped mid-run), 0 when asking it would take a
 * new slot, -EINVAL for bad arguments. For Submit's budget guard (with budget_left()), before any
 * reservation. Never touches the disk.
 */
int budget_charged(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE], const BudgetKey *key);

/*
 * Takes a slot for key on digest before a run, limit (1..BUDGET_LIMIT_MAX) being the budget of the
 * handle asking. 0 when the key had a slot already (free: answered, reserved by another run, or
 * left reserved by a lockd that stopped mid-run) or a new one was taken and persisted; -EDQUOT
 * when limit distinct keys hold slots already; -ENOSPC when digest would be one digest too many;
 * -EINVAL for bad arguments; an I/O errno when the reservation could not be persisted (nothing
 * is charged then, and the caller must not run). Every 0 must be followed by exactly one
 * budget_commit() or budget_release() of the same key.
 */
int budget_reserve(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE], const BudgetKey *key,
                   unsigned limit);

/*
 * budget_reserve() without the disk: the slot is taken in memory at once (the same checks and
 * returns but for I/O errors) and written by the next flush or batch, which makes every such
 * reservation durable with one directory fsync(); with a log, its record is written now (an error
 * from it refuses the slot) and made durable by the caller's next commit. The caller must not let
 * any answer of a deferred slot out before that write succeeded (budget_durable_generation(), or
 * the record's seq durable in the log): a crash before it loses a slot whose answer nobody
 * received, never one an agent learned. lockd makes the record durable while the plugin runs, so
 * the miss path does not wait for it.
 */
int budget_reserve_deferred(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE],
                            const BudgetKey *key, unsigned limit);
/* Persists every deferred change. 0, or an I/O errno (they stay pending). */
int budget_flush(BudgetStore *s);
/* Whether a deferred change waits for budget_flush(). */
bool budget_dirty(const BudgetStore *s);

/*
 * budget_flush() off the event loop, in three steps (ARCHITECTURE.md, the group commit).
 * budget_batch_take() formats every budget with a deferred change into a new batch (*ret NULL
 * when none waits) and counts them as on their way; at most one batch may be out at a time.
 * budget_batch_write() writes it (each file fsync()ed and renamed into place, the directory
 * fsync()ed when a new slot is in it) and touches nothing but the batch and the budget
 * directory: it may run on another thread. budget_batch_done() with the write's result frees
 * the batch: on success every change up to budget_batch_generation() is durable; on failure
 * its budgets wait for the next batch again, and the caller fails what waited for this one.
 *
 * Generations: budget_generation() counts the deferred changes made so far; a run whose
 * reservation was taken when it read g may start once budget_durable_generation() >= g.
 *
 * budget_set_barrier(): fn is called before each write this module makes itself (budget_reserve(),
 * budget_commit_ran(), budget_release(), budget_reset(), budget_flush()), so that a batch still
 * on its way is on disk first and the newer write lands last.
 */
typedef struct BudgetBatch BudgetBatch;
int budget_batch_take(BudgetStore *s, BudgetBatch **ret);
int budget_batch_write(BudgetBatch *b);
uint64_t budget_batch_generation(const BudgetBatch *b);
BudgetBatch *budget_batch_done(BudgetStore *s, BudgetBatch *b, int r);
uint64_t budget_generation(const BudgetStore *s);
uint64_t budget_durable_generation(const BudgetStore *s);
void budget_set_barrier(BudgetStore *s, void (*fn)(void *userdata), void *userdata);

/*
 * Stores a reserved key's outcome (BUDGET_OUTCOME_ZERO, _ONE or _PLUGIN_ERROR), persisted before
 * it returns, and ends this run's reservation. 0 when stored, or when the same outcome was stored
 * already by another run of the key; -EEXIST when another run stored a different outcome first
 * (it stays: the caller reports budget_lookup()'s so every asker sees one answer); -ENOENT when
 * the key holds no slot (never reserved, or reset meanwhile); -EINVAL for bad arguments; an I/O
 * errno when the outcome could not be persisted (the slot stays charged as reserved).
 */
int budget_commit(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE], const BudgetKey *key,
                  BudgetOutcome outcome);

/*
 * budget_commit() that also stores ran_usec (the run's admission to its end, > 0) with the
 * answer, so that the cached answer is released on the same schedule as the run. A key with
 * pairs (bound to typed values) commits BUDGET_OUTCOME_ANSWERED, and only such a key: its answers
 * depend on the values and are never persisted (the caller keeps them in memory, by value).
 */
int budget_commit_ran(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE],
                      const BudgetKey *key, BudgetOutcome outcome, uint64_t ran_usec);

/*
 * budget_commit_ran() without the disk: the outcome is stored in memory at once (the same
 * returns but for I/O errors; -ENOMEM with nothing changed) and written by the next flush. Until
 * then the disk holds the reservation, which charges the slot: a crash costs the cached outcome
 * (the next ask of the key runs again, free), never a charge. The caller lets the outcome be
 * served from the cache only after its run's audit record is durable.
 */
int budget_commit_deferred(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE],
                           const BudgetKey *key, BudgetOutcome outcome, uint64_t ran_usec);

/*
 * Ends a reservation whose run failed for a reason that says nothing about the file. The slot is
 * given back (and the file rewritten, or removed when it was the last) only when it has no
 * outcome and no other run holds it. 0; -ENOENT when the key holds no slot; -EINVAL for bad
 * arguments; an I/O errno when the change could not be persisted (the slot stays charged).
 */
int budget_release(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE], const BudgetKey *key);

/*
 * The write-ahead log. A change is one of these, appended by log->append() before memory changes
 * (a negative errno refuses the change, memory untouched); log->position() says the seq and the
 * hash (hex) of the log's last record, which a checkpoint covers. The reset of a content is the
 * console's own "budget_reset" record (written before budget_reset()); budget_reset() appends a
 * reservation for each slot a run in flight keeps.
 */
typedef enum BudgetChangeType {
        BUDGET_CHANGE_RESERVE, /* a slot taken before a run */
        BUDGET_CHANGE_COMMIT,  /* a reserved slot's outcome */
        BUDGET_CHANGE_RELEASE, /* a reserved slot given back: its run told nothing */
        _BUDGET_CHANGE_MAX,
} BudgetChangeType;

typedef struct BudgetChange {
        BudgetChangeType type;
        uint8_t digest[BUDGET_DIGEST_SIZE];
        BudgetKey key;
        BudgetOutcome outcome; /* COMMIT only */
        uint64_t ran_usec;     /* COMMIT only; 0: unknown */
} BudgetChange;

#define BUDGET_HEAD_HEX   64
/*
 * In BUDGET_DIR. With a log: a snapshot, {"budgets":N,"format":2,"head":"<hex>","seq":S} and then
 * N lines, each a budget as its own file would hold it, in digest order (batch_take() in
 * budget.c). From an older lockd: {"format":1,"head":"<hex>","seq":S} alone, the position of the
 * budget files beside it, which the first snapshot removes.
 */
#define BUDGET_CHECKPOINT "checkpoint"

typedef struct BudgetLog {
        int (*append)(const BudgetChange *c, void *userdata);
        void (*position)(uint64_t *ret_seq, char ret_head[BUDGET_HEAD_HEX + 1], void *userdata);
} BudgetLog;

/* Sets the log (borrowed; NULL: none). From then on a batch is a snapshot (BUDGET_CHECKPOINT),
 * and nothing writes a file per budget. */
void budget_set_log(BudgetStore *s, const BudgetLog *log, void *userdata);

/* The bindings' text of a record: "in=ph,in2=ph2" of every pair. */
#define BUDGET_BINDINGS_TEXT_MAX (BUDGET_PAIRS_MAX * 2 * (BUDGET_NAME_MAX + 1) + 1)
/* The text an audit record of a change points into (budget_change_fields()). */
typedef struct BudgetChangeText {
        char hex[BUDGET_DIGEST_SIZE * 2 + 1];
        char bindings[BUDGET_BINDINGS_TEXT_MAX];
} BudgetChangeText;
#define BUDGET_CHANGE_FIELDS_MAX 7

/*
 * The fields of c's audit record (event "budget"): handle_sha256 (the content), change
 * ("reserve", "commit", "release"), plugin, version, bindings (the key's pairs as
 * "input=placeholder" joined by ",", "" for none: names only, never a value), and for a commit
 * outcome (budget_outcome_name()) and ran_usec (null when unknown). Into out (room for
 * BUDGET_CHANGE_FIELDS_MAX; its strings point into *text and c): their number, or -EINVAL.
 */
int budget_change_fields(const BudgetChange *c, BudgetChangeText *text, AuditField *out);

/*
 * Applies the budget changes of the audit log's current file (buf, len bytes) that come after the
 * checkpoint budget_open() loaded: "budget" records and the console's "budget_reset" ones. Without
 * a checkpoint (a state directory from before the log was the budgets' WAL, or one whose
 * checkpoint the operator removed) nothing is replayed: the files are the budgets. A file that
 * ends before the checkpoint's seq holds nothing newer (a crash cut records the checkpoint had
 * seen). Refuses (-EBADMSG, err->message saying why, memory possibly half replayed: the caller
 * does not start) when the checkpoint's record is in the file with another hash (another log), when
 * records after it are in an older segment, or when a budget record does not parse. Applied
 * changes wait for the next flush, which the caller makes at once. 0 and the number applied in
 * *ret_n (may be NULL).
 */
int budget_replay(BudgetStore *s, const char *buf, size_t len, size_t *ret_n, BudgetError *err);

/* The log position of the checkpoint budget_open() loaded or the last batch wrote: 0 and *seq,
 * or -ENOENT when there is none. */
int budget_checkpoint_position(const BudgetStore *s, uint64_t *ret_seq);

/* A checkpoint now, whatever waits (budget_flush() with BUDGET_CHECKPOINT written even when no
 * budget changed): at start and before a segment switch. 0 or an I/O errno. */
int budget_checkpoint(BudgetStore *s);

/* The changes made since the last batch was taken (what the next checkpoint covers). */
uint64_t budget_changes_pending(const BudgetStore *s);
/* How many contents have a budget (what a snapshot holds). */
size_t budget_count(const BudgetStore *s);

/* The slots digest uses (answered and reserved), 0 for a content never asked about. */
size_t budget_used(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE]);

/* The slots left for a handle whose limit is limit: limit − used, 0 when used ≥ limit (a grant
 * may lower the limit below what earlier grants used). -EINVAL for a limit outside 1..64. */
int budget_left(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE], unsigned limit);

/*
 * The human's reset of a content's budget: drops every answer and stale reservation of digest, on
 * disk first. Reservations of runs in flight stay (those runs still count; they commit or
 * release as usual). Returns the number of slots freed (0 for an unknown digest), or a negative
 * errno with nothing changed.
 */
int budget_reset(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE]);

/* Every content with a budget, sorted by digest: a new array in *ret (NULL when empty) and its
 * size in *ret_n, or a negative errno with both untouched. Free with free(). */
int budget_list(BudgetStore *s, BudgetSummary **ret, size_t *ret_n);

/* The slots of digest, sorted by key (plugin, version, pairs): a new array in *ret (NULL when
 * none) and its size in *ret_n, or a negative errno with both untouched. Free with free(). */
int budget_show(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE], BudgetAnswer **ret,
                size_t *ret_n);
