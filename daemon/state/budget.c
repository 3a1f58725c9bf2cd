/* Budgets and the answer cache: an in-memory table of per-content budgets and their answers, and
 * every change of them (ARCHITECTURE.md, Flows: "Budgets"). The files and the checkpoint are
 * budget-file.c's, a key's bytes budget-key.c's, the log's records budget-replay.c's. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "budget-internal.h"
#include "clock.h"
#include "fd-util.h"
#include "macro.h"

/* Forgets that b waits for budget_flush() (it was persisted otherwise, or goes). */
static void dirty_remove(BudgetStore *s, Budget *b) {
        if (!b->dirty)
                return;
        for (size_t i = 0; i < s->n_dirty; i++)
                if (s->dirty[i] == b) {
                        memmove(s->dirty + i, s->dirty + i + 1,
                                (s->n_dirty - i - 1) * sizeof(*s->dirty));
                        s->n_dirty--;
                        break;
                }
        b->dirty = false;
        b->dirty_slot = false;
}

/* Room in array (*size elements of elem bytes, used of them taken) for one more: doubled when
 * full, 16 at first. The array, moved or not; NULL when out of memory, with array as it was. */
void *budget_room_for_one(void *array, size_t *size, size_t used, size_t elem) {
        size_t n;
        void *p;

        if (array && used < *size)
                return array;
        n = *size ? *size * 2 : 16;
        p = reallocarray(array, n, elem);
        if (p)
                *size = n;
        return p;
}

/* Room in b for one more answer, grown by doubling up to BUDGET_LIMIT_MAX (the caller checked
 * b->n < BUDGET_LIMIT_MAX). 0 or -ENOMEM. */
int budget_answers_room(Budget *b) {
        size_t size;
        Answer *grown;

        if (b->n < b->size)
                return 0;
        size = b->size == 0 ? 2 : MIN(b->size * 2, (size_t)BUDGET_LIMIT_MAX);
        grown = reallocarray(b->answers, size, sizeof(Answer));
        if (!grown)
                return -ENOMEM;
        b->answers = grown;
        b->size = size;
        return 0;
}

/* Room in the dirty list for one more budget: before memory changes, so nothing fails after. */
int budget_dirty_room(BudgetStore *s, const Budget *b) {
        Budget **d;

        if (b && b->dirty)
                return 0;
        d = budget_room_for_one(s->dirty, &s->dirty_size, s->n_dirty, sizeof(*s->dirty));
        if (!d)
                return -ENOMEM;
        s->dirty = d;
        return 0;
}

/* Marks b for the next flush (room made by budget_dirty_room()); slot: a new slot is in it. A
 * change of memory also counts a generation (change_deferred()); a failed batch's budgets only go
 * back. */
void budget_dirty_add(BudgetStore *s, Budget *b, bool slot) {
        if (!b->dirty) {
                b->dirty = true;
                s->dirty[s->n_dirty++] = b;
        }
        b->dirty_slot = b->dirty_slot || slot;
}

/* A change of b's memory that the next flush writes: marked, and counted (budget_generation()). */
static void change_deferred(BudgetStore *s, Budget *b, bool slot) {
        budget_dirty_add(s, b, slot);
        s->gen++;
}

static const char *const outcome_names[_BUDGET_OUTCOME_MAX] = {
        [BUDGET_OUTCOME_RESERVED] = "reserved",
        [BUDGET_OUTCOME_ZERO] = "0",
        [BUDGET_OUTCOME_ONE] = "1",
        [BUDGET_OUTCOME_PLUGIN_ERROR] = "plugin_error",
        [BUDGET_OUTCOME_ANSWERED] = "answered",
};

const char *budget_outcome_name(BudgetOutcome o) {
        if ((unsigned)o >= _BUDGET_OUTCOME_MAX)
                return NULL;
        return outcome_names[o];
}

/* The outcome named s (budget_outcome_name()'s inverse), or -EBADMSG. */
int budget_parse_outcome(const char *s, BudgetOutcome *ret) {
        for (BudgetOutcome o = 0; o < _BUDGET_OUTCOME_MAX; o++)
                if (strcmp(s, outcome_names[o]) == 0) {
                        *ret = o;
                        return 0;
                }
        return -EBADMSG;
}

/* Whether o is a stored outcome the cache may give back. */
bool budget_outcome_is_answer(BudgetOutcome o) {
        return o == BUDGET_OUTCOME_ZERO || o == BUDGET_OUTCOME_ONE ||
               o == BUDGET_OUTCOME_PLUGIN_ERROR;
}

/* Whether o ends a reservation: an answer, or "answered" for a question bound to values. */
bool budget_outcome_is_final(BudgetOutcome o) {
        return budget_outcome_is_answer(o) || o == BUDGET_OUTCOME_ANSWERED;
}

static uint64_t mix64(uint64_t x) {
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdULL;
        x ^= x >> 33;
        x *= 0xc4ceb9fe1a85ec53ULL;
        x ^= x >> 33;
        return x;
}

/*
 * The table's hash of a digest. Digests are SHA-256 outputs of contents that someone other than
 * the human may have written: grinding a file until its digest has chosen low bits is cheap, and
 * hundreds of them in one probe run would slow every lookup. Mixing with the store's random seed
 * keeps the bucket of a digest unpredictable.
 */
static uint64_t digest_hash(const BudgetStore *s, const uint8_t d[BUDGET_DIGEST_SIZE]) {
        uint64_t a, b;

        memcpy(&a, d, sizeof(a));
        memcpy(&b, d + sizeof(a), sizeof(b));
        return mix64(a ^ s->seed[0]) ^ mix64(b ^ s->seed[1]);
}

Budget *budget_table_find(const BudgetStore *s, const uint8_t d[BUDGET_DIGEST_SIZE],
                          size_t *ret_i) {
        size_t mask = s->table_size - 1;

        if (s->table_size == 0)
                return NULL;
        for (size_t i = digest_hash(s, d) & mask;; i = (i + 1) & mask) {
                Budget *b = s->table[i];

                if (!b)
                        return NULL;
                if (memcmp(b->digest, d, BUDGET_DIGEST_SIZE) == 0) {
                        if (ret_i)
                                *ret_i = i;
                        return b;
                }
        }
}

void budget_table_put(BudgetStore *s, Budget *b) {
        size_t mask = s->table_size - 1, i;

        for (i = digest_hash(s, b->digest) & mask; s->table[i]; i = (i + 1) & mask)
                ;
        s->table[i] = b;
        s->n++;
}

/* Makes room for one more digest, keeping the load at most one half. */
int budget_table_reserve(BudgetStore *s) {
        Budget **old = s->table;
        size_t old_size = s->table_size, size;

        if ((s->n + 1) * 2 <= s->table_size)
                return 0;
        size = s->table_size ? s->table_size * 2 : 64;
        s->table = calloc(size, sizeof(Budget *));
        if (!s->table) {
                s->table = old;
                return -ENOMEM;
        }
        s->table_size = size;
        s->n = 0;
        for (size_t i = 0; i < old_size; i++)
                if (old[i])
                        budget_table_put(s, old[i]);
        free(old);
        return 0;
}

/* A new, empty budget of digest d, with room for it in the table made first (so that putting it
 * there cannot fail); not in the table yet. 0 or a negative errno, *ret untouched on failure. */
int budget_table_new(BudgetStore *s, const uint8_t d[BUDGET_DIGEST_SIZE], Budget **ret) {
        Budget *b;
        int r;

        r = budget_table_reserve(s);
        if (r < 0)
                return r;
        b = calloc(1, sizeof(Budget));
        if (!b)
                return -ENOMEM;
        memcpy(b->digest, d, BUDGET_DIGEST_SIZE);
        *ret = b;
        return 0;
}

/* Removes the entry at slot i, shifting later members of its probe run back (no tombstones). */
static void table_remove_at(BudgetStore *s, size_t i) {
        size_t mask = s->table_size - 1;

        s->table[i] = NULL;
        s->n--;
        for (size_t j = (i + 1) & mask; s->table[j]; j = (j + 1) & mask) {
                size_t home = digest_hash(s, s->table[j]->digest) & mask;

                /* Move table[j] into the hole at i unless its home lies cyclically in (i, j]. */
                if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
                        s->table[i] = s->table[j];
                        s->table[j] = NULL;
                        i = j;
                }
        }
}

void budget_answer_done(Answer *a) {
        a->key = mfree(a->key);
}

Budget *budget_free(Budget *b) {
        if (!b)
                return NULL;
        for (size_t i = 0; i < b->n; i++)
                budget_answer_done(&b->answers[i]);
        free(b->answers);
        free(b);
        return NULL;
}

Answer *budget_find(Budget *b, const char *key, size_t len, uint64_t hash) {
        for (size_t i = 0; i < b->n; i++) {
                Answer *a = &b->answers[i];

                if (a->key_hash == hash && a->key_len == len && memcmp(a->key, key, len) == 0)
                        return a;
        }
        return NULL;
}

__attribute__((format(printf, 3, 4))) int budget_fail(BudgetError *err, int r, const char *fmt,
                                                      ...) {
        va_list ap;

        if (err) {
                va_start(ap, fmt);
                vsnprintf(err->message, sizeof(err->message), fmt, ap);
                va_end(ap);
        }
        return r;
}

int budget_open(int statefd, BudgetStore **ret, BudgetError *err) {
        _cleanup_(budget_closep) BudgetStore *s = NULL;
        int r;

        if (err)
                *err = (BudgetError){};
        if (statefd < 0 || !ret)
                return budget_fail(err, -EINVAL, "invalid arguments");

        s = calloc(1, sizeof(BudgetStore));
        if (!s)
                return budget_fail(err, -ENOMEM, "out of memory");
        s->dfd = -1;
        s->digests_max = BUDGET_DIGESTS_MAX;
        if (getrandom(s->seed, sizeof(s->seed), 0) != (ssize_t)sizeof(s->seed))
                return budget_fail(err, negative_errno(), "getrandom: %m");

        /* 0700: which questions were asked about which contents is the console's business. */
        if (mkdirat(statefd, BUDGET_DIR, 0700) == 0) {
                if (fsync(statefd) < 0)
                        return budget_fail(err, negative_errno(), BUDGET_DIR ": %m");
        } else if (errno != EEXIST)
                return budget_fail(err, negative_errno(), BUDGET_DIR ": %m");
        s->dfd = openat(statefd, BUDGET_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (s->dfd < 0)
                return budget_fail(err, negative_errno(), BUDGET_DIR ": %m");

        r = budget_load_all(s, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

BudgetStore *budget_close(BudgetStore *s) {
        if (!s)
                return NULL;
        (void)budget_flush(s);
        for (size_t i = 0; i < s->table_size; i++)
                budget_free(s->table[i]);
        free(s->table);
        free(s->dirty);
        free(s->gone);
        free(s->format_buf);
        safe_close(s->dfd);
        free(s);
        return NULL;
}

int budget_set_digests_max(BudgetStore *s, size_t max) {
        if (!s || max == 0 || max > BUDGET_DIGESTS_MAX)
                return -EINVAL;
        s->digests_max = max;
        return 0;
}

/* The common checks of the calls that take a key: the budget of digest (NULL when there is none)
 * and the key's canonical bytes, length and hash. */
static int key_prepare(BudgetStore *s, const uint8_t *digest, const BudgetKey *key, Budget **ret_b,
                       char bytes[KEY_BYTES_MAX], size_t *ret_len, uint64_t *ret_hash) {
        if (!s || !digest || !budget_key_valid(key))
                return -EINVAL;
        *ret_len = budget_key_encode(key, bytes);
        *ret_hash = budget_key_hash(bytes, *ret_len);
        *ret_b = budget_table_find(s, digest, NULL);
        return 0;
}

int budget_lookup(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE], const BudgetKey *key,
                  BudgetEntry *ret) {
        char bytes[KEY_BYTES_MAX];
        uint64_t hash;
        size_t len;
        Budget *b;
        Answer *a;
        int r;

        if (!ret)
                return -EINVAL;
        r = key_prepare(s, digest, key, &b, bytes, &len, &hash);
        if (r < 0)
                return r;
        if (!b)
                return 0;
        a = budget_find(b, bytes, len, hash);
        if (!a || !budget_outcome_is_answer(a->outcome))
                return 0;
        *ret = (BudgetEntry){
                .outcome = a->outcome, .time_usec = a->time_usec, .ran_usec = a->ran_usec};
        return 1;
}

int budget_charged(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE], const BudgetKey *key) {
        char bytes[KEY_BYTES_MAX];
        uint64_t hash;
        size_t len;
        Budget *b;
        int r;

        r = key_prepare(s, digest, key, &b, bytes, &len, &hash);
        if (r < 0)
                return r;
        return b && budget_find(b, bytes, len, hash) ? 1 : 0;
}

/* Appends change type of key on digest to the write-ahead log, when there is one. */
static int log_change(BudgetStore *s, BudgetChangeType type, const uint8_t *digest,
                      const BudgetKey *key, BudgetOutcome outcome, uint64_t ran_usec) {
        BudgetChange c = {.type = type, .key = *key, .outcome = outcome, .ran_usec = ran_usec};

        if (!s->log)
                return 0;
        memcpy(c.digest, digest, BUDGET_DIGEST_SIZE);
        return s->log->append(&c, s->log_userdata);
}

/* budget_reserve() and budget_reserve_deferred(): persisted now, or marked for budget_flush(). */
static int reserve(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE], const BudgetKey *key,
                   unsigned limit, bool now) {
        _cleanup_free_ char *copy = NULL;
        char bytes[KEY_BYTES_MAX];
        Budget *b, *nb = NULL;
        uint64_t hash;
        size_t len;
        Answer *a;
        int r;

        if (limit < 1 || limit > BUDGET_LIMIT_MAX)
                return -EINVAL;
        r = key_prepare(s, digest, key, &b, bytes, &len, &hash);
        if (r < 0)
                return r;

        /* The same question again costs nothing, whatever the limit says now. */
        if (b) {
                a = budget_find(b, bytes, len, hash);
                if (a) {
                        if (a->holds == UINT_MAX)
                                return -EBUSY;
                        a->holds++;
                        return 0;
                }
                if (b->n >= limit)
                        return -EDQUOT;
        } else {
                if (s->n >= s->digests_max)
                        return -ENOSPC;
                /* Room in the table before the disk changes, so nothing can fail after it. */
                r = budget_table_new(s, digest, &nb);
                if (r < 0)
                        return r;
                b = nb;
        }
        if (budget_answers_room(b) < 0) {
                budget_free(nb);
                return -ENOMEM;
        }

        copy = malloc(len);
        if (!copy) {
                budget_free(nb);
                return -ENOMEM;
        }
        memcpy(copy, bytes, len);
        b->answers[b->n] = (Answer){
                .key = copy,
                .key_len = len,
                .key_hash = hash,
                .outcome = BUDGET_OUTCOME_RESERVED,
                .holds = 1,
                .time_usec = clock_realtime_usec(),
        };
        /* With a log every change is deferred: its record is what makes it durable. */
        if (s->log)
                now = false;
        if (!now && budget_dirty_room(s, b) < 0) {
                b->answers[b->n] = (Answer){};
                budget_free(nb);
                return -ENOMEM;
        }
        /* Charged on disk before the run may start: a crash mid-run leaves the slot taken. With
         * a log, the record is written now and the caller makes it durable before the slot's
         * answer leaves. */
        r = now ? budget_persist(s, digest, b->answers, b->n + 1, true)
                : log_change(s, BUDGET_CHANGE_RESERVE, digest, key, 0, 0);
        if (r < 0) {
                b->answers[b->n] = (Answer){};
                budget_free(nb);
                return r;
        }
        TAKE_PTR(copy);
        b->n++;
        if (nb)
                budget_table_put(s, nb);
        if (!now)
                change_deferred(s, b, true);
        return 0;
}

int budget_reserve(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE], const BudgetKey *key,
                   unsigned limit) {
        return reserve(s, digest, key, limit, true);
}

int budget_reserve_deferred(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE],
                            const BudgetKey *key, unsigned limit) {
        return reserve(s, digest, key, limit, false);
}

uint64_t budget_changes_pending(const BudgetStore *s) {
        return s && s->gen > s->taken_gen ? s->gen - s->taken_gen : 0;
}

size_t budget_count(const BudgetStore *s) {
        return s ? s->n : 0;
}

void budget_set_log(BudgetStore *s, const BudgetLog *log, void *userdata) {
        if (!s)
                return;
        s->log = log;
        s->log_userdata = userdata;
}

uint64_t budget_generation(const BudgetStore *s) {
        return s ? s->gen : 0;
}

uint64_t budget_durable_generation(const BudgetStore *s) {
        return s ? s->durable_gen : 0;
}

void budget_set_barrier(BudgetStore *s, void (*fn)(void *userdata), void *userdata) {
        if (!s)
                return;
        s->barrier = fn;
        s->barrier_userdata = userdata;
}

bool budget_dirty(const BudgetStore *s) {
        return s && (s->n_dirty > 0 || s->n_gone > 0);
}

int budget_commit(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE], const BudgetKey *key,
                  BudgetOutcome outcome) {
        return budget_commit_ran(s, digest, key, outcome, 0);
}

/* budget_commit_ran() and budget_commit_deferred(): persisted now, or marked for the next flush. */
static int commit(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE], const BudgetKey *key,
                  BudgetOutcome outcome, uint64_t ran_usec, bool now) {
        char bytes[KEY_BYTES_MAX];
        uint64_t hash, old_time, old_ran;
        size_t len;
        Budget *b;
        Answer *a;
        int r;

        if (!budget_outcome_is_final(outcome) || !key ||
            (outcome == BUDGET_OUTCOME_ANSWERED) != (key->n_pairs > 0))
                return -EINVAL;
        r = key_prepare(s, digest, key, &b, bytes, &len, &hash);
        if (r < 0)
                return r;
        a = b ? budget_find(b, bytes, len, hash) : NULL;
        if (!a)
                return -ENOENT;
        if (s->log)
                now = false;
        if (!now && a->outcome == BUDGET_OUTCOME_RESERVED && budget_dirty_room(s, b) < 0)
                return -ENOMEM;
        if (a->holds > 0)
                a->holds--;
        if (a->outcome != BUDGET_OUTCOME_RESERVED)
                return a->outcome == outcome ? 0 : -EEXIST;
        /* Not logged: the slot stays reserved, which charges it; the cache loses this outcome. */
        r = now ? 0 : log_change(s, BUDGET_CHANGE_COMMIT, digest, key, outcome, ran_usec);
        if (r < 0)
                return r;

        old_time = a->time_usec;
        old_ran = a->ran_usec;
        a->outcome = outcome;
        a->time_usec = clock_realtime_usec();
        a->ran_usec = ran_usec;
        if (!now) {
                /* The disk holds the reservation until the flush: the slot is charged either
                 * way, and a crash before it costs the cached outcome only. */
                change_deferred(s, b, false);
                return 0;
        }
        /* A budget whose reservation never reached the disk needs its directory synced too. */
        r = budget_persist(s, digest, b->answers, b->n, b->dirty_slot);
        if (r < 0) {
                /* The disk still holds the reservation: the slot stays charged, nothing cached. */
                a->outcome = BUDGET_OUTCOME_RESERVED;
                a->time_usec = old_time;
                a->ran_usec = old_ran;
                return r;
        }
        dirty_remove(s, b);
        return 0;
}

int budget_commit_ran(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE],
                      const BudgetKey *key, BudgetOutcome outcome, uint64_t ran_usec) {
        return commit(s, digest, key, outcome, ran_usec, true);
}

int budget_commit_deferred(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE],
                           const BudgetKey *key, BudgetOutcome outcome, uint64_t ran_usec) {
        return commit(s, digest, key, outcome, ran_usec, false);
}

/* Room for what a change of b to n slots needs at the next batch: in the gone list when it
 * empties b, else in the dirty list. 0 or -ENOMEM, before memory changes. */
int budget_change_room(BudgetStore *s, const Budget *b, size_t n) {
        return n == 0 ? budget_gone_room(s) : budget_dirty_room(s, b);
}

/* Takes an emptied b out of the table and frees it. */
static void budget_drop(BudgetStore *s, Budget *b) {
        size_t i;

        (void)budget_table_find(s, b->digest, &i);
        table_remove_at(s, i);
        budget_free(b);
}

/* A change of b kept for the next batch (room made by budget_change_room()): its file rewritten, or
 * removed when b is empty, and then b goes. slot: as change_deferred(). */
void budget_changed_deferred(BudgetStore *s, Budget *b, bool slot) {
        if (b->n > 0) {
                change_deferred(s, b, slot);
                return;
        }
        dirty_remove(s, b);
        budget_gone_add(s, b->digest);
        budget_drop(s, b);
}

/*
 * After a release or a reset changed b in memory: without a log it is on disk already (and an
 * empty b goes); with one, its file is rewritten or removed at the next batch.
 */
static void emptied_or_changed(BudgetStore *s, Budget *b) {
        if (s->log)
                budget_changed_deferred(s, b, false);
        else {
                dirty_remove(s, b);
                if (b->n == 0)
                        budget_drop(s, b);
        }
}

int budget_release(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE], const BudgetKey *key) {
        Answer next[BUDGET_LIMIT_MAX];
        char bytes[KEY_BYTES_MAX];
        size_t len, n = 0, idx;
        uint64_t hash;
        Budget *b;
        Answer *a;
        int r;

        r = key_prepare(s, digest, key, &b, bytes, &len, &hash);
        if (r < 0)
                return r;
        a = b ? budget_find(b, bytes, len, hash) : NULL;
        if (!a)
                return -ENOENT;
        if (a->holds > 0)
                a->holds--;
        /* Answered (by another run of the key), or still held by one: the slot stays. */
        if (a->outcome != BUDGET_OUTCOME_RESERVED || a->holds > 0)
                return 0;

        idx = (size_t)(a - b->answers);
        for (size_t i = 0; i < b->n; i++)
                if (i != idx)
                        next[n++] = b->answers[i];
        /* On failure the slot stays charged, a reservation no run holds: fail closed. */
        if (s->log) {
                r = budget_change_room(s, b, n);
                if (r >= 0)
                        r = log_change(s, BUDGET_CHANGE_RELEASE, digest, key, 0, 0);
        } else
                r = budget_persist(s, digest, next, n, true);
        if (r < 0)
                return r;

        budget_answer_done(a);
        memcpy(b->answers, next, n * sizeof(Answer));
        b->n = n;
        emptied_or_changed(s, b);
        return 0;
}

size_t budget_used(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE]) {
        Budget *b;

        if (!s || !digest)
                return 0;
        b = budget_table_find(s, digest, NULL);
        return b ? b->n : 0;
}

int budget_left(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE], unsigned limit) {
        size_t used;

        if (!s || !digest || limit < 1 || limit > BUDGET_LIMIT_MAX)
                return -EINVAL;
        used = budget_used(s, digest);
        return used >= limit ? 0 : (int)(limit - used);
}

int budget_reset(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE]) {
        Answer next[BUDGET_LIMIT_MAX];
        size_t n = 0, freed, i;
        Budget *b;
        int r;

        if (!s || !digest)
                return -EINVAL;
        b = budget_table_find(s, digest, NULL);
        if (!b)
                return 0;

        /* Runs in flight keep their slots, without an outcome: they commit or release later. */
        for (i = 0; i < b->n; i++)
                if (b->answers[i].holds > 0) {
                        next[n] = b->answers[i];
                        next[n++].outcome = BUDGET_OUTCOME_RESERVED;
                }
        freed = b->n - n;
        if (freed == 0) {
                bool changed = false;

                for (i = 0; i < b->n; i++)
                        changed = changed || b->answers[i].outcome != BUDGET_OUTCOME_RESERVED;
                if (!changed)
                        return 0;
        }
        if (s->log) {
                /* The console's "budget_reset" record drops every slot on replay; a slot a run in
                 * flight keeps is taken again right after it, so that a replay keeps it too (its
                 * answer, if it leaves, stands on it). */
                r = budget_change_room(s, b, n);
                for (i = 0; r >= 0 && i < n; i++) {
                        BudgetKey k;

                        budget_key_decode(next[i].key, next[i].key_len, &k);
                        r = log_change(s, BUDGET_CHANGE_RESERVE, digest, &k, 0, 0);
                }
        } else
                r = budget_persist(s, digest, next, n, true);
        if (r < 0)
                return r;

        for (i = 0; i < b->n; i++)
                if (b->answers[i].holds == 0)
                        budget_answer_done(&b->answers[i]);
        memcpy(b->answers, next, n * sizeof(Answer));
        b->n = n;
        emptied_or_changed(s, b);
        return (int)freed;
}

static int summary_cmp(const void *x, const void *y) {
        return memcmp(((const BudgetSummary *)x)->digest, ((const BudgetSummary *)y)->digest,
                      BUDGET_DIGEST_SIZE);
}

int budget_list(BudgetStore *s, BudgetSummary **ret, size_t *ret_n) {
        BudgetSummary *list;
        size_t n = 0;

        if (!s || !ret || !ret_n)
                return -EINVAL;
        if (s->n == 0) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        list = calloc(s->n, sizeof(BudgetSummary));
        if (!list)
                return -ENOMEM;
        for (size_t i = 0; i < s->table_size; i++)
                if (s->table[i]) {
                        memcpy(list[n].digest, s->table[i]->digest, BUDGET_DIGEST_SIZE);
                        list[n++].used = s->table[i]->n;
                }
        qsort(list, n, sizeof(BudgetSummary), summary_cmp);
        *ret = list;
        *ret_n = n;
        return 0;
}

static int answer_cmp(const void *x, const void *y) {
        const Answer *a = *(const Answer *const *)x, *b = *(const Answer *const *)y;
        int c = memcmp(a->key, b->key, a->key_len < b->key_len ? a->key_len : b->key_len);

        if (c != 0)
                return c;
        return a->key_len < b->key_len ? -1 : a->key_len > b->key_len ? 1 : 0;
}

int budget_show(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE], BudgetAnswer **ret,
                size_t *ret_n) {
        const Answer *sorted[BUDGET_LIMIT_MAX];
        BudgetAnswer *list;
        Budget *b;

        if (!s || !digest || !ret || !ret_n)
                return -EINVAL;
        b = budget_table_find(s, digest, NULL);
        if (!b || b->n == 0) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        list = calloc(b->n, sizeof(BudgetAnswer));
        if (!list)
                return -ENOMEM;
        for (size_t i = 0; i < b->n; i++)
                sorted[i] = &b->answers[i];
        qsort(sorted, b->n, sizeof(sorted[0]), answer_cmp);
        for (size_t i = 0; i < b->n; i++) {
                budget_key_decode(sorted[i]->key, sorted[i]->key_len, &list[i].key);
                list[i].entry = (BudgetEntry){.outcome = sorted[i]->outcome,
                                              .time_usec = sorted[i]->time_usec};
                list[i].in_flight = sorted[i]->holds;
        }
        *ret = list;
        *ret_n = b->n;
        return 0;
}
