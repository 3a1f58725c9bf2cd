/* Budgets and the answer cache: an in-memory table of per-content budgets, each persisted as
 * budgets/<hex digest>.json, written atomically before any change that charges takes effect. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit-chain.h"
#include "budget.h"
#include "clock.h"
#include "escape.h"
#include "fd-util.h"
#include "codec.h"
#include "macro.h"
#include "manifest.h"
#include "seal.h"
#include "store.h"

#define BUDGET_FORMAT  1
/* BUDGET_CHECKPOINT as a snapshot: its position and every budget in one file (batch_take()). */
#define SNAPSHOT_FORMAT 2
/* The most a snapshot may hold when read back: BUDGET_DIGESTS_MAX budgets of a few hundred bytes
 * each is tens of MiB; a file past this is no snapshot lockd wrote. */
#define SNAPSHOT_MAX   ((size_t)1024 * 1024 * 1024)
/* A snapshot's first buffer, doubled as it fills (buf_printf()). */
#define SNAPSHOT_START ((size_t)64 * 1024)
#define MIN_SIZE(a, b) ((a) < (b) ? (a) : (b))
#define MAX_SIZE(a, b) ((a) > (b) ? (a) : (b))
#define HEX_SIZE       (BUDGET_DIGEST_SIZE * 2)
#define FILE_SUFFIX    ".json"
#define FILE_NAME_LEN  (HEX_SIZE + sizeof(FILE_SUFFIX) - 1)

/* A key's canonical bytes: plugin NUL version NUL (input NUL placeholder NUL)*. Names never hold
 * a NUL, so two keys are equal exactly when their bytes are. */
#define KEY_BYTES_MAX                                                                              \
        (BUDGET_PLUGIN_MAX + 1 + BUDGET_VERSION_MAX + 1 +                                          \
         BUDGET_PAIRS_MAX * 2 * (BUDGET_NAME_MAX + 1))

typedef struct Answer {
        char *key; /* canonical bytes, key_len long */
        size_t key_len;
        uint64_t key_hash;
        BudgetOutcome outcome;
        unsigned holds; /* runs in flight holding a reservation; never persisted */
        uint64_t time_usec;
        uint64_t ran_usec; /* the producing run's admission to its end; 0 unknown */
} Answer;

typedef struct Budget {
        uint8_t digest[BUDGET_DIGEST_SIZE];
        Answer *answers; /* room for size, at most BUDGET_LIMIT_MAX */
        size_t n, size;
        bool dirty;      /* memory holds a change the disk does not yet (budget_flush()) */
        bool dirty_slot; /* of which a new slot: its write needs the directory synced */
} Budget;

struct BudgetStore {
        int dfd;        /* BUDGET_DIR */
        Budget **table; /* open addressing with linear probing; table_size is a power of two */
        size_t table_size;
        size_t n;
        size_t digests_max;
        uint64_t seed[2];
        Budget **dirty; /* the dirty budgets, in the order they became dirty */
        size_t n_dirty, dirty_size;
        uint64_t gen;                    /* counts the deferred changes (budget_generation()) */
        uint64_t durable_gen;            /* the last of them known to be on disk */
        void (*barrier)(void *userdata); /* before a write of the caller's own (budget_persist()) */
        char *format_buf;                /* BUDGET_FILE_MAX, for format_file() */
        void *barrier_userdata;
        const BudgetLog *log; /* budget_set_log(): the write-ahead log */
        void *log_userdata;
        bool has_checkpoint; /* BUDGET_CHECKPOINT read at open, or written since */
        uint64_t checkpoint_seq;
        char checkpoint_head[BUDGET_HEAD_HEX + 1];
        uint8_t (*gone)[BUDGET_DIGEST_SIZE]; /* budgets emptied: their files go at the next batch */
        size_t n_gone, gone_size;
        uint64_t taken_gen; /* budget_generation() when the last batch was taken */
        bool snapshot;      /* BUDGET_CHECKPOINT holds the budgets (read at open, or written) */
        bool legacy_files;  /* budget files beside a snapshot: the next snapshot removes them */
        bool unsaved;       /* a snapshot failed: the next batch writes one, changed or not */
};

/* A flush taken off the loop: the files' texts, written by budget_batch_write() (budget.h). */
typedef struct BatchFile {
        char name[FILE_NAME_LEN + 1];
        uint8_t digest[BUDGET_DIGEST_SIZE];
        char *text;
        size_t len;
        bool slot;
} BatchFile;

struct BudgetBatch {
        int dfd; /* the store's: it outlives every batch (budget_close() comes after the writer) */
        uint64_t gen;
        bool sync_dir;
        uint8_t (*gone)[BUDGET_DIGEST_SIZE]; /* files to remove first */
        size_t n_gone;
        /* With a log: files[0] is BUDGET_CHECKPOINT, every budget and the log's position (seq,
         * head) they cover; then every budget file goes (legacy). */
        bool snapshot;
        bool legacy;
        uint64_t seq;
        char head[BUDGET_HEAD_HEX + 1];
        size_t n;
        BatchFile files[];
};

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
static void *room_for_one(void *array, size_t *size, size_t used, size_t elem) {
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
static int answers_room(Budget *b) {
        size_t size;
        Answer *grown;

        if (b->n < b->size)
                return 0;
        size = b->size == 0 ? 2 : MIN_SIZE(b->size * 2, (size_t)BUDGET_LIMIT_MAX);
        grown = reallocarray(b->answers, size, sizeof(Answer));
        if (!grown)
                return -ENOMEM;
        b->answers = grown;
        b->size = size;
        return 0;
}

/* Room in the dirty list for one more budget: before memory changes, so nothing fails after. */
static int dirty_room(BudgetStore *s, const Budget *b) {
        Budget **d;

        if (b && b->dirty)
                return 0;
        d = room_for_one(s->dirty, &s->dirty_size, s->n_dirty, sizeof(*s->dirty));
        if (!d)
                return -ENOMEM;
        s->dirty = d;
        return 0;
}

/* Marks b for the next flush (room made by dirty_room()); slot: a new slot is in it. A change of
 * memory also counts a generation (change_deferred()); a failed batch's budgets only go back. */
static void dirty_add(BudgetStore *s, Budget *b, bool slot) {
        if (!b->dirty) {
                b->dirty = true;
                s->dirty[s->n_dirty++] = b;
        }
        b->dirty_slot = b->dirty_slot || slot;
}

/* A change of b's memory that the next flush writes: marked, and counted (budget_generation()). */
static void change_deferred(BudgetStore *s, Budget *b, bool slot) {
        dirty_add(s, b, slot);
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

/* Whether o is a stored outcome the cache may give back. */
static bool outcome_is_answer(BudgetOutcome o) {
        return o == BUDGET_OUTCOME_ZERO || o == BUDGET_OUTCOME_ONE ||
               o == BUDGET_OUTCOME_PLUGIN_ERROR;
}

/* Whether o ends a reservation: an answer, or "answered" for a question bound to values. */
static bool outcome_is_final(BudgetOutcome o) {
        return outcome_is_answer(o) || o == BUDGET_OUTCOME_ANSWERED;
}

_Static_assert(BUDGET_NAME_MAX == SEAL_NAME_MAX, "one rule for placeholder names");

bool budget_name_valid(const char *name) {
        return seal_name_valid(name);
}

/* Whether field (size bytes) holds a NUL-terminated string. */
static bool terminated(const char *field, size_t size) {
        return memchr(field, 0, size) != NULL;
}

static bool plugin_valid(const char *plugin) {
        return plugin && strlen(plugin) <= BUDGET_PLUGIN_MAX && manifest_name_valid(plugin);
}

static bool version_valid(const char *version) {
        return version && strlen(version) <= BUDGET_VERSION_MAX && manifest_version_valid(version);
}

int budget_key_init(BudgetKey *k, const char *plugin, const char *version) {
        if (!k || !plugin_valid(plugin) || !version_valid(version))
                return -EINVAL;
        *k = (BudgetKey){};
        strcpy(k->plugin, plugin);
        strcpy(k->version, version);
        return 0;
}

int budget_key_add(BudgetKey *k, const char *input, const char *placeholder) {
        size_t i;

        if (!k || !budget_name_valid(input) || !budget_name_valid(placeholder))
                return -EINVAL;
        if (k->n_pairs > BUDGET_PAIRS_MAX)
                return -EINVAL;
        for (i = 0; i < k->n_pairs; i++) {
                int c = strcmp(k->pairs[i].input, input);

                if (c == 0)
                        return -EEXIST;
                if (c > 0)
                        break;
        }
        if (k->n_pairs == BUDGET_PAIRS_MAX)
                return -E2BIG;
        memmove(&k->pairs[i + 1], &k->pairs[i], (k->n_pairs - i) * sizeof(BudgetPair));
        k->pairs[i] = (BudgetPair){};
        strcpy(k->pairs[i].input, input);
        strcpy(k->pairs[i].placeholder, placeholder);
        k->n_pairs++;
        return 0;
}

bool budget_key_valid(const BudgetKey *k) {
        if (!k || !terminated(k->plugin, sizeof(k->plugin)) ||
            !terminated(k->version, sizeof(k->version)) || !manifest_name_valid(k->plugin) ||
            !manifest_version_valid(k->version) || k->n_pairs > BUDGET_PAIRS_MAX)
                return false;
        for (size_t i = 0; i < k->n_pairs; i++) {
                const BudgetPair *p = &k->pairs[i];

                if (!terminated(p->input, sizeof(p->input)) ||
                    !terminated(p->placeholder, sizeof(p->placeholder)) ||
                    !budget_name_valid(p->input) || !budget_name_valid(p->placeholder))
                        return false;
                /* Strictly ascending: sorted, and each input bound once. */
                if (i > 0 && strcmp(k->pairs[i - 1].input, p->input) >= 0)
                        return false;
        }
        return true;
}

/* Appends s and its NUL at out + *len. The caller sized out for KEY_BYTES_MAX. */
static void put_string(char *out, size_t *len, const char *s) {
        size_t n = strlen(s) + 1;

        memcpy(out + *len, s, n);
        *len += n;
}

/* The canonical bytes of a valid key. */
static size_t key_encode(const BudgetKey *k, char out[KEY_BYTES_MAX]) {
        size_t len = 0;

        put_string(out, &len, k->plugin);
        put_string(out, &len, k->version);
        for (size_t i = 0; i < k->n_pairs; i++) {
                put_string(out, &len, k->pairs[i].input);
                put_string(out, &len, k->pairs[i].placeholder);
        }
        return len;
}

/* The key back from its canonical bytes, which only key_encode() made. */
static void key_decode(const char *bytes, size_t len, BudgetKey *k) {
        const char *p = bytes, *end = bytes + len;

        *k = (BudgetKey){};
        snprintf(k->plugin, sizeof(k->plugin), "%s", p);
        p += strlen(p) + 1;
        snprintf(k->version, sizeof(k->version), "%s", p);
        p += strlen(p) + 1;
        while (p < end && k->n_pairs < BUDGET_PAIRS_MAX) {
                BudgetPair *pair = &k->pairs[k->n_pairs++];

                snprintf(pair->input, sizeof(pair->input), "%s", p);
                p += strlen(p) + 1;
                snprintf(pair->placeholder, sizeof(pair->placeholder), "%s", p);
                p += strlen(p) + 1;
        }
}

/* FNV-1a over a key's bytes: only to skip most comparisons among one budget's at most 64 keys. */
static uint64_t key_hash(const char *bytes, size_t len) {
        uint64_t h = 0xcbf29ce484222325ULL;

        for (size_t i = 0; i < len; i++) {
                h ^= (uint8_t)bytes[i];
                h *= 0x100000001b3ULL;
        }
        return h;
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

static Budget *table_find(const BudgetStore *s, const uint8_t d[BUDGET_DIGEST_SIZE],
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

static void table_put(BudgetStore *s, Budget *b) {
        size_t mask = s->table_size - 1, i;

        for (i = digest_hash(s, b->digest) & mask; s->table[i]; i = (i + 1) & mask)
                ;
        s->table[i] = b;
        s->n++;
}

/* Makes room for one more digest, keeping the load at most one half. */
static int table_reserve(BudgetStore *s) {
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
                        table_put(s, old[i]);
        free(old);
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

static void answer_done(Answer *a) {
        a->key = mfree(a->key);
}

static Budget *budget_free(Budget *b) {
        if (!b)
                return NULL;
        for (size_t i = 0; i < b->n; i++)
                answer_done(&b->answers[i]);
        free(b->answers);
        free(b);
        return NULL;
}

static Answer *budget_find(Budget *b, const char *key, size_t len, uint64_t hash) {
        for (size_t i = 0; i < b->n; i++) {
                Answer *a = &b->answers[i];

                if (a->key_hash == hash && a->key_len == len && memcmp(a->key, key, len) == 0)
                        return a;
        }
        return NULL;
}

static void file_name(const uint8_t d[BUDGET_DIGEST_SIZE], char out[FILE_NAME_LEN + 1]) {
        hex_encode(d, BUDGET_DIGEST_SIZE, out);
        memcpy(out + HEX_SIZE, FILE_SUFFIX, sizeof(FILE_SUFFIX));
}

/* A text being formatted: len bytes used of size at p, which grows (realloc()) up to max; a
 * buffer of the store's own has max == size and never grows. */
typedef struct Buf {
        char *p;
        size_t len;
        size_t size;
        size_t max;
} Buf;

/* Appends to b; -E2BIG past b->max (counting the NUL vsnprintf() ends with), -ENOMEM. */
static __attribute__((format(printf, 2, 3))) int buf_printf(Buf *b, const char *fmt, ...) {
        va_list ap;
        int n;

        for (;;) {
                char *q;
                size_t want;

                va_start(ap, fmt);
                n = vsnprintf(b->p + b->len, b->size - b->len, fmt, ap);
                va_end(ap);
                if (n < 0 || (size_t)n >= b->max - b->len)
                        return -E2BIG;
                if ((size_t)n < b->size - b->len)
                        break;
                want = MIN_SIZE(MAX_SIZE(b->size * 2, b->len + (size_t)n + 1), b->max);
                q = realloc(b->p, want);
                if (!q)
                        return -ENOMEM;
                b->p = q;
                b->size = want;
        }
        b->len += (size_t)n;
        return 0;
}

/*
 * The file's text: one compact JSON object, keys sorted,
 *   {"answers":[{"inputs":[["<input>","<placeholder>"],...],"outcome":"<name>","plugin":"<name>",
 *     "ran":<usec>,"time":<usec>,"version":"<version>"},...],"digest":"<hex>","format":1}
 * where "ran" (how long the producing run took from its admission to its end, for the release
 * schedule of a cached answer) is left out when unknown.
 * Every string is a validated name, version or hex digest ([a-z0-9._-]), so nothing needs escaping.
 */
static int budget_format(const uint8_t d[BUDGET_DIGEST_SIZE], const Answer *answers, size_t n,
                         Buf *out) {
        char hex[HEX_SIZE + 1];
        int r;

        r = buf_printf(out, "{\"answers\":[");
        for (size_t i = 0; r >= 0 && i < n; i++) {
                BudgetKey k;

                key_decode(answers[i].key, answers[i].key_len, &k);
                r = buf_printf(out, "%s{\"inputs\":[", i > 0 ? "," : "");
                for (size_t j = 0; r >= 0 && j < k.n_pairs; j++)
                        r = buf_printf(out, "%s[\"%s\",\"%s\"]", j > 0 ? "," : "", k.pairs[j].input,
                                       k.pairs[j].placeholder);
                if (r >= 0)
                        r = buf_printf(out, "],\"outcome\":\"%s\",\"plugin\":\"%s\",",
                                       budget_outcome_name(answers[i].outcome), k.plugin);
                if (r >= 0 && answers[i].ran_usec > 0)
                        r = buf_printf(out, "\"ran\":%llu,",
                                       (unsigned long long)answers[i].ran_usec);
                if (r >= 0)
                        r = buf_printf(out, "\"time\":%llu,\"version\":\"%s\"}",
                                       (unsigned long long)answers[i].time_usec, k.version);
        }
        hex_encode(d, BUDGET_DIGEST_SIZE, hex);
        if (r >= 0)
                r = buf_printf(out, "],\"digest\":\"%s\",\"format\":%d}\n", hex, BUDGET_FORMAT);
        return r;
}

/* Formats digest d's file text into the store's buffer (loop thread only; allocated once, so a
 * write per question does not map and unmap BUDGET_FILE_MAX each time). */
static int format_file(BudgetStore *s, const uint8_t d[BUDGET_DIGEST_SIZE], const Answer *answers,
                       size_t n, Buf *ret) {
        if (!s->format_buf) {
                s->format_buf = malloc(BUDGET_FILE_MAX);
                if (!s->format_buf)
                        return -ENOMEM;
        }
        *ret = (Buf){.p = s->format_buf, .size = BUDGET_FILE_MAX, .max = BUDGET_FILE_MAX};
        return budget_format(d, answers, n, ret);
}

/*
 * Makes the file of digest d hold exactly answers[0..n): written atomically (store_write_file(),
 * which fsync()s the new file before renaming it into place) and the directory fsync()ed, or
 * removed and the directory fsync()ed when n is 0. Only after a 0 from here does the caller change
 * the budget in memory, so memory never promises what the disk does not hold.
 *
 * Without sync_dir the directory is not fsync()ed: the rename is visible at once (a lockd killed
 * right after it finds the new file), and after a power loss the file is either the old one or
 * the new one, complete either way. Only budget_commit() passes false: its old file is the
 * reservation, which already charges the slot, so losing the commit loses a cached outcome, never
 * a charge. It saves one of the miss path's fsync()s.
 */
static int budget_persist(BudgetStore *s, const uint8_t d[BUDGET_DIGEST_SIZE],
                          const Answer *answers, size_t n, bool sync_dir) {
        char name[FILE_NAME_LEN + 1];
        Buf buf;
        int r;

        /* A store whose budgets are a snapshot is written through its log (batch_take()). */
        if (s->snapshot)
                return -EROFS;
        /* A batch on its way to the disk is written first: this write is the newer. */
        if (s->barrier)
                s->barrier(s->barrier_userdata);
        file_name(d, name);
        if (n == 0) {
                if (unlinkat(s->dfd, name, 0) < 0 && errno != ENOENT)
                        return negative_errno();
        } else {
                r = format_file(s, d, answers, n, &buf);
                if (r < 0)
                        return r;
                r = store_write_file(s->dfd, name, buf.p, buf.len);
                if (r < 0)
                        return r;
                if (!sync_dir)
                        return 0;
        }
        return fsync(s->dfd) < 0 ? negative_errno() : 0;
}

static __attribute__((format(printf, 3, 4))) int fail(BudgetError *err, int r, const char *fmt,
                                                      ...) {
        va_list ap;

        if (err) {
                va_start(ap, fmt);
                vsnprintf(err->message, sizeof(err->message), fmt, ap);
                va_end(ap);
        }
        return r;
}

/* Whether object o has exactly the n keys named. */
static bool object_has_exactly(json_t *o, const char *const *keys, size_t n) {
        if (!json_is_object(o) || json_object_size(o) != n)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!json_object_get(o, keys[i]))
                        return false;
        return true;
}

static int parse_outcome(const char *s, BudgetOutcome *ret) {
        for (BudgetOutcome o = 0; o < _BUDGET_OUTCOME_MAX; o++)
                if (strcmp(s, outcome_names[o]) == 0) {
                        *ret = o;
                        return 0;
                }
        return -EBADMSG;
}

/* Parses one element of "answers" into a (canonical, validated) key and its entry. */
static int parse_answer(json_t *o, BudgetKey *ret_key, Answer *ret) {
        static const char *const keys[] = {"inputs", "outcome", "plugin", "time", "version", "ran"};
        json_t *inputs, *pair, *time_v, *ran_v;
        const char *plugin, *version, *outcome;
        BudgetKey k;
        size_t i;

        /* "ran" is optional: written only when known, and absent from older files. */
        ran_v = json_object_get(o, "ran");
        if (!object_has_exactly(o, keys, ELEMENTSOF(keys) - (ran_v ? 0 : 1)))
                return -EBADMSG;
        if (ran_v && (!json_is_integer(ran_v) || json_integer_value(ran_v) <= 0))
                return -EBADMSG;
        plugin = json_string_value(json_object_get(o, "plugin"));
        version = json_string_value(json_object_get(o, "version"));
        outcome = json_string_value(json_object_get(o, "outcome"));
        inputs = json_object_get(o, "inputs");
        time_v = json_object_get(o, "time");
        if (!plugin || !version || !outcome || !json_is_array(inputs) ||
            json_array_size(inputs) > BUDGET_PAIRS_MAX || !json_is_integer(time_v) ||
            json_integer_value(time_v) < 0)
                return -EBADMSG;
        if (budget_key_init(&k, plugin, version) < 0)
                return -EBADMSG;
        json_array_foreach(inputs, i, pair) {
                const char *input, *placeholder;

                if (!json_is_array(pair) || json_array_size(pair) != 2)
                        return -EBADMSG;
                input = json_string_value(json_array_get(pair, 0));
                placeholder = json_string_value(json_array_get(pair, 1));
                if (!input || !placeholder || budget_key_add(&k, input, placeholder) < 0)
                        return -EBADMSG;
                /* Written sorted: a pair out of order is not a file lockd wrote. */
                if (strcmp(k.pairs[k.n_pairs - 1].input, input) != 0)
                        return -EBADMSG;
        }
        *ret = (Answer){.time_usec = (uint64_t)json_integer_value(time_v),
                        .ran_usec = ran_v ? (uint64_t)json_integer_value(ran_v) : 0};
        if (parse_outcome(outcome, &ret->outcome) < 0)
                return -EBADMSG;
        /*
         * A question bound to typed values has no answer on disk (ARCHITECTURE.md, the cache):
         * its answers depend on the values and live in memory only. An older lockd stored the
         * bit of whichever value came first; that bit is read as "answered", never given back,
         * and leaves the disk at the file's next write. "answered" without a binding is no file
         * lockd wrote.
         */
        if (k.n_pairs > 0 && outcome_is_answer(ret->outcome))
                ret->outcome = BUDGET_OUTCOME_ANSWERED;
        if (k.n_pairs == 0 && ret->outcome == BUDGET_OUTCOME_ANSWERED)
                return -EBADMSG;
        *ret_key = k;
        return 0;
}

/*
 * Parses a budget file strictly: the exact shape budget_format() writes (format 1, the digest of
 * the file's name, 1..BUDGET_LIMIT_MAX answers with distinct canonical keys; key order within
 * objects free, as JSON allows), no duplicate object keys. -EBADMSG for anything else.
 */
static int budget_parse(const char *text, size_t len, const uint8_t d[BUDGET_DIGEST_SIZE],
                        Budget **ret) {
        static const char *const keys[] = {"answers", "digest", "format"};
        _cleanup_(json_decrefp) json_t *root = NULL;
        json_t *answers, *format, *a;
        const char *hex;
        char want[HEX_SIZE + 1];
        Budget *b = NULL;
        json_error_t jerr;
        size_t i;
        int r;

        root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!root || !object_has_exactly(root, keys, ELEMENTSOF(keys)))
                return -EBADMSG;
        format = json_object_get(root, "format");
        hex = json_string_value(json_object_get(root, "digest"));
        answers = json_object_get(root, "answers");
        hex_encode(d, BUDGET_DIGEST_SIZE, want);
        if (!json_is_integer(format) || json_integer_value(format) != BUDGET_FORMAT || !hex ||
            strcmp(hex, want) != 0 || !json_is_array(answers) || json_array_size(answers) == 0 ||
            json_array_size(answers) > BUDGET_LIMIT_MAX)
                return -EBADMSG;

        b = calloc(1, sizeof(Budget));
        if (!b)
                return -ENOMEM;
        memcpy(b->digest, d, BUDGET_DIGEST_SIZE);
        b->size = json_array_size(answers);
        b->answers = calloc(b->size, sizeof(Answer));
        if (!b->answers) {
                budget_free(b);
                return -ENOMEM;
        }
        json_array_foreach(answers, i, a) {
                char bytes[KEY_BYTES_MAX];
                BudgetKey k;
                Answer ans;

                r = parse_answer(a, &k, &ans);
                if (r < 0)
                        goto fail;
                ans.key_len = key_encode(&k, bytes);
                ans.key_hash = key_hash(bytes, ans.key_len);
                if (budget_find(b, bytes, ans.key_len, ans.key_hash)) {
                        r = -EBADMSG; /* the same question twice */
                        goto fail;
                }
                ans.key = malloc(ans.key_len);
                if (!ans.key) {
                        r = -ENOMEM;
                        goto fail;
                }
                memcpy(ans.key, bytes, ans.key_len);
                b->answers[b->n++] = ans;
        }
        *ret = b;
        return 0;

fail:
        budget_free(b);
        return r;
}

/* Whether name is "<64 lowercase hex>.json"; fills d. */
static bool budget_file_name(const char *name, uint8_t d[BUDGET_DIGEST_SIZE]) {
        char hex[HEX_SIZE + 1];

        if (strlen(name) != FILE_NAME_LEN || strcmp(name + HEX_SIZE, FILE_SUFFIX) != 0)
                return false;
        for (size_t i = 0; i < HEX_SIZE; i++)
                if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
                        return false;
        memcpy(hex, name, HEX_SIZE);
        hex[HEX_SIZE] = 0;
        return hex_decode(hex, strlen(hex), d, BUDGET_DIGEST_SIZE) == 0;
}

/* Whether name is a temporary file store_write_file() leaves when interrupted: ".#<file>.<hex>". */
static bool temp_file_name(const char *name) {
        static const char marker[] = ".#" BUDGET_CHECKPOINT ".";
        uint8_t d[BUDGET_DIGEST_SIZE];
        char file[FILE_NAME_LEN + 1];

        if (strncmp(name, marker, sizeof(marker) - 1) == 0 &&
            strlen(name) == sizeof(marker) - 1 + 16)
                return true;

        if (strncmp(name, ".#", 2) != 0 || strlen(name) != 2 + FILE_NAME_LEN + 1 + 16 ||
            name[2 + FILE_NAME_LEN] != '.')
                return false;
        memcpy(file, name + 2, FILE_NAME_LEN);
        file[FILE_NAME_LEN] = 0;
        return budget_file_name(file, d);
}

/* Loads one budget file of s->dfd into s. */
static int load_one(BudgetStore *s, const char *name, BudgetError *err) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL;
        uint8_t d[BUDGET_DIGEST_SIZE];
        struct stat st;
        size_t len;
        Budget *b = NULL;
        int r;

        if (!budget_file_name(name, d)) {
                /* The name goes to the log: escaped, and cut short. */
                _cleanup_free_ char *shown = escape_bytes(name, MIN_SIZE(strlen(name), 80));

                return fail(err, -EINVAL,
                            BUDGET_DIR "/%s: not a budget file (refusing to start with an "
                                       "unknown file among the budgets)",
                            shown ? shown : "?");
        }
        fd = openat(s->dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return fail(err, negative_errno(), BUDGET_DIR "/%s: %m", name);
        if (fstat(fd, &st) < 0)
                return fail(err, negative_errno(), BUDGET_DIR "/%s: %m", name);
        if (!S_ISREG(st.st_mode))
                return fail(err, -EINVAL, BUDGET_DIR "/%s: not a regular file", name);
        r = read_full_fd(fd, BUDGET_FILE_MAX, &text, &len);
        if (r < 0)
                return fail(err, r, BUDGET_DIR "/%s: %s", name,
                            r == -EFBIG ? "larger than a budget can be" : strerror(-r));
        r = budget_parse(text, len, d, &b);
        if (r == -ENOMEM)
                return fail(err, r, BUDGET_DIR "/%s: out of memory", name);
        if (r < 0)
                return fail(err, r,
                            BUDGET_DIR "/%s: corrupt budget (refusing to start rather than "
                                       "reset it; lockctl budget reset or removing the file "
                                       "resets it)",
                            name);
        if (s->n >= s->digests_max) {
                budget_free(b);
                return fail(err, -ENOSPC, BUDGET_DIR ": more than %zu budgets", s->digests_max);
        }
        r = table_reserve(s);
        if (r < 0) {
                budget_free(b);
                return fail(err, r, BUDGET_DIR ": out of memory");
        }
        table_put(s, b);
        return 0;
}

/*
 * Parses a checkpoint's position strictly: {"format":1,"head":"<64 lowercase hex>","seq":S} for
 * format 1 (the position alone), and with "budgets":N too, N in 0..max, for a snapshot's header
 * (SNAPSHOT_FORMAT; *ret_n is N, else 0). S >= 0. -EBADMSG for anything else.
 */
static int position_parse(const char *text, size_t len, int format, size_t max, size_t *ret_n,
                          uint64_t *ret_seq, char ret_head[BUDGET_HEAD_HEX + 1]) {
        static const char *const keys[] = {"format", "head", "seq", "budgets"};
        bool snapshot = format == SNAPSHOT_FORMAT;
        _cleanup_(json_decrefp) json_t *root = NULL;
        json_t *format_v, *seq, *n;
        const char *head;
        json_error_t jerr;

        root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!root || !object_has_exactly(root, keys, ELEMENTSOF(keys) - (snapshot ? 0 : 1)))
                return -EBADMSG;
        format_v = json_object_get(root, "format");
        seq = json_object_get(root, "seq");
        n = json_object_get(root, "budgets");
        head = json_string_value(json_object_get(root, "head"));
        if (!json_is_integer(format_v) || json_integer_value(format_v) != format ||
            !json_is_integer(seq) || json_integer_value(seq) < 0 || !head ||
            strlen(head) != BUDGET_HEAD_HEX || !hex_lower_valid(head, BUDGET_HEAD_HEX) ||
            (snapshot && (!json_is_integer(n) || json_integer_value(n) < 0 ||
                          (uint64_t)json_integer_value(n) > max)))
                return -EBADMSG;
        *ret_n = snapshot ? (size_t)json_integer_value(n) : 0;
        *ret_seq = (uint64_t)json_integer_value(seq);
        memcpy(ret_head, head, BUDGET_HEAD_HEX + 1);
        return 0;
}

/* The digest a budget's line names ("digest":"<64 hex>", as budget_format() writes it). */
static int line_digest(const char *line, size_t len, uint8_t d[BUDGET_DIGEST_SIZE]) {
        static const char key[] = "\"digest\":\"";
        const char *p = memmem(line, len, key, sizeof(key) - 1);

        if (!p || (size_t)(line + len - (p + sizeof(key) - 1)) < HEX_SIZE + 1 ||
            p[sizeof(key) - 1 + HEX_SIZE] != '"' || !hex_lower_valid(p + sizeof(key) - 1, HEX_SIZE))
                return -EBADMSG;
        return hex_decode(p + sizeof(key) - 1, HEX_SIZE, d, BUDGET_DIGEST_SIZE) < 0 ? -EBADMSG : 0;
}

/*
 * Loads a snapshot's budgets (text: the lines after its header): exactly n lines, each a budget
 * as its own file would hold it (budget_parse()), in strictly increasing digest order (so none
 * twice). The line that does not parse in *ret_line (1 is the header's). -EBADMSG, -ENOSPC past
 * the store's cap, or -ENOMEM.
 */
static int snapshot_load(BudgetStore *s, const char *text, size_t len, size_t n, size_t *ret_line) {
        uint8_t prev[BUDGET_DIGEST_SIZE] = {};
        size_t off = 0, i;
        int r;

        for (i = 0; i < n; i++) {
                const char *line = text + off, *nl = memchr(line, '\n', len - off);
                uint8_t d[BUDGET_DIGEST_SIZE];
                size_t l;
                Budget *b = NULL;

                *ret_line = i + 2;
                if (!nl)
                        return -EBADMSG;
                l = (size_t)(nl - line) + 1;
                off += l;
                r = line_digest(line, l, d);
                if (r >= 0 && i > 0 && memcmp(prev, d, BUDGET_DIGEST_SIZE) >= 0)
                        r = -EBADMSG;
                if (r >= 0)
                        r = budget_parse(line, l, d, &b);
                if (r < 0)
                        return r;
                if (s->n >= s->digests_max) {
                        budget_free(b);
                        return -ENOSPC;
                }
                r = table_reserve(s);
                if (r < 0) {
                        budget_free(b);
                        return r;
                }
                table_put(s, b);
                memcpy(prev, d, BUDGET_DIGEST_SIZE);
        }
        *ret_line = n + 2;
        return off == len ? 0 : -EBADMSG;
}

/*
 * Loads BUDGET_CHECKPOINT, if there is one: a position alone (format 1, the budgets in files of
 * their own), or a snapshot (format 2, the budgets in it; files beside it are an older layout's,
 * removed by the next snapshot). A file that does not parse fails the start, as a budget's does.
 */
static int load_checkpoint(BudgetStore *s, BudgetError *err) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL;
        _cleanup_(json_decrefp) json_t *first = NULL;
        const char *nl;
        size_t len, n = 0, line = 1;
        struct stat st;
        json_error_t jerr;
        int r;

        fd = openat(s->dfd, BUDGET_CHECKPOINT,
                    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
                return 0;
        if (fd < 0)
                return fail(err, negative_errno(), BUDGET_DIR "/" BUDGET_CHECKPOINT ": %m");
        if (fstat(fd, &st) < 0)
                return fail(err, negative_errno(), BUDGET_DIR "/" BUDGET_CHECKPOINT ": %m");
        if (!S_ISREG(st.st_mode))
                return fail(err, -EINVAL, BUDGET_DIR "/" BUDGET_CHECKPOINT ": not a regular file");
        r = read_full_fd(fd, SNAPSHOT_MAX, &text, &len);
        if (r < 0)
                return fail(err, r, BUDGET_DIR "/" BUDGET_CHECKPOINT ": %s",
                            r == -EFBIG ? "larger than a snapshot can be" : strerror(-r));
        nl = memchr(text, '\n', len);
        first = json_loadb(text, nl ? (size_t)(nl - text) : len, 0, &jerr);
        if (json_integer_value(json_object_get(first, "format")) != SNAPSHOT_FORMAT) {
                r = position_parse(text, len, BUDGET_FORMAT, 0, &n, &s->checkpoint_seq,
                                   s->checkpoint_head);
                if (r < 0)
                        return fail(err, r,
                                    BUDGET_DIR "/" BUDGET_CHECKPOINT ": corrupt checkpoint "
                                               "(refusing to start rather than guess which "
                                               "budget changes it covers; removing it takes the "
                                               "budget files as they are)");
                s->has_checkpoint = true;
                return 0;
        }
        r = nl ? position_parse(text, (size_t)(nl - text), SNAPSHOT_FORMAT, s->digests_max, &n,
                                &s->checkpoint_seq, s->checkpoint_head)
               : -EBADMSG;
        if (r >= 0)
                r = snapshot_load(s, nl + 1, len - (size_t)(nl + 1 - text), n, &line);
        if (r == -ENOMEM)
                return fail(err, r, BUDGET_DIR "/" BUDGET_CHECKPOINT ": out of memory");
        if (r == -ENOSPC)
                return fail(err, r, BUDGET_DIR ": more than %zu budgets", s->digests_max);
        if (r < 0)
                return fail(err, r,
                            BUDGET_DIR "/" BUDGET_CHECKPOINT ": corrupt budget snapshot at line "
                                       "%zu (refusing to start rather than reset the budgets; "
                                       "removing the file resets every one of them)",
                            line);
        s->has_checkpoint = true;
        s->snapshot = true;
        return 0;
}

static int load_all(BudgetStore *s, BudgetError *err) {
        DIR *dir = fd_opendir_dup(s->dfd);
        struct dirent *de;
        int r = 0;

        if (!dir)
                return fail(err, negative_errno(), BUDGET_DIR ": %m");
        r = load_checkpoint(s, err);
        while (r == 0 && (errno = 0, de = readdir(dir))) {
                uint8_t d[BUDGET_DIGEST_SIZE];
                bool per_budget;

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
                    strcmp(de->d_name, BUDGET_CHECKPOINT) == 0)
                        continue;
                if (temp_file_name(de->d_name)) {
                        /* An interrupted write: the budget file it was replacing is intact. */
                        if (unlinkat(s->dfd, de->d_name, 0) < 0 && errno != ENOENT) {
                                r = fail(err, negative_errno(), BUDGET_DIR "/%s: %m", de->d_name);
                                break;
                        }
                        continue;
                }
                /* A file per budget is the layout of a store without a log: a snapshot removes
                 * them (after it is in place). Beside a snapshot one is older than it, and left
                 * for the next snapshot to remove. */
                per_budget = budget_file_name(de->d_name, d);
                s->legacy_files = s->legacy_files || per_budget;
                if (!s->snapshot || !per_budget)
                        r = load_one(s, de->d_name, err); /* beside a snapshot: refuses it */
        }
        if (r == 0 && errno != 0)
                r = fail(err, negative_errno(), BUDGET_DIR ": %m");
        closedir(dir);
        return r;
}

int budget_open(int statefd, BudgetStore **ret, BudgetError *err) {
        _cleanup_(budget_closep) BudgetStore *s = NULL;
        int r;

        if (err)
                *err = (BudgetError){};
        if (statefd < 0 || !ret)
                return fail(err, -EINVAL, "invalid arguments");

        s = calloc(1, sizeof(BudgetStore));
        if (!s)
                return fail(err, -ENOMEM, "out of memory");
        s->dfd = -1;
        s->digests_max = BUDGET_DIGESTS_MAX;
        if (getrandom(s->seed, sizeof(s->seed), 0) != (ssize_t)sizeof(s->seed))
                return fail(err, negative_errno(), "getrandom: %m");

        /* 0700: which questions were asked about which contents is the console's business. */
        if (mkdirat(statefd, BUDGET_DIR, 0700) == 0) {
                if (fsync(statefd) < 0)
                        return fail(err, negative_errno(), BUDGET_DIR ": %m");
        } else if (errno != EEXIST)
                return fail(err, negative_errno(), BUDGET_DIR ": %m");
        s->dfd = openat(statefd, BUDGET_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (s->dfd < 0)
                return fail(err, negative_errno(), BUDGET_DIR ": %m");

        r = load_all(s, err);
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
        *ret_len = key_encode(key, bytes);
        *ret_hash = key_hash(bytes, *ret_len);
        *ret_b = table_find(s, digest, NULL);
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
        if (!a || !outcome_is_answer(a->outcome))
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
                r = table_reserve(s);
                if (r < 0)
                        return r;
                nb = calloc(1, sizeof(Budget));
                if (!nb)
                        return -ENOMEM;
                memcpy(nb->digest, digest, BUDGET_DIGEST_SIZE);
                b = nb;
        }
        if (answers_room(b) < 0) {
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
        if (!now && dirty_room(s, b) < 0) {
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
                table_put(s, nb);
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

static BudgetBatch *batch_free(BudgetBatch *b) {
        if (!b)
                return NULL;
        for (size_t i = 0; i < b->n; i++)
                free(b->files[i].text);
        free(b->gone);
        free(b);
        return NULL;
}

/* Room for one more emptied budget in s->gone: before memory changes, so nothing fails after. */
static int gone_room(BudgetStore *s) {
        uint8_t(*g)[BUDGET_DIGEST_SIZE] =
                room_for_one(s->gone, &s->gone_size, s->n_gone, sizeof(*s->gone));

        if (!g)
                return -ENOMEM;
        s->gone = g;
        return 0;
}

/* A budget emptied under a log: its file goes at the next batch (room made by gone_room()). */
static void gone_add(BudgetStore *s, const uint8_t d[BUDGET_DIGEST_SIZE]) {
        memcpy(s->gone[s->n_gone++], d, BUDGET_DIGEST_SIZE);
        s->gen++;
}

static int budget_digest_cmp(const void *x, const void *y) {
        const Budget *a = *(const Budget *const *)x, *b = *(const Budget *const *)y;

        return memcmp(a->digest, b->digest, BUDGET_DIGEST_SIZE);
}

/*
 * The batch of a store with a log: one file, BUDGET_CHECKPOINT, that holds the log's position and
 * every budget, each on a line of its own as its own file would hold it (budget_format()), in
 * the order of their digests:
 *   {"budgets":N,"format":2,"head":"<hex>","seq":S}\n<budget>\n...
 * One rename puts the position and the budgets it covers in place together, so a checkpoint costs
 * two fsync()s (the file, the directory) however many budgets changed, where a file per budget
 * cost one each and two more for the position. Budgets emptied since are simply not in it.
 */
static int snapshot_take(BudgetStore *s, BudgetBatch **ret) {
        _cleanup_free_ Budget **sorted = NULL;
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        Buf buf = {.size = SNAPSHOT_START, .max = SNAPSHOT_MAX};
        uint64_t seq;
        char head[BUDGET_HEAD_HEX + 1];
        BudgetBatch *b;
        int r;

        sorted = calloc(MAX_SIZE(s->n, (size_t)1), sizeof(Budget *));
        if (!sorted)
                return -ENOMEM;
        for (size_t i = 0; i < s->table_size; i++)
                if (s->table[i] && s->table[i]->n > 0)
                        sorted[n++] = s->table[i];
        qsort(sorted, n, sizeof(Budget *), budget_digest_cmp);
        s->log->position(&seq, head, s->log_userdata);
        /* Every budget formatted in place, after the header: as in a file of its own, a budget
         * of BUDGET_FILE_MAX bytes or more is refused (format_file()). */
        text = buf.p = malloc(buf.size);
        if (!text)
                return -ENOMEM;
        r = buf_printf(&buf, "{\"budgets\":%zu,\"format\":%d,\"head\":\"%s\",\"seq\":%llu}\n", n,
                       SNAPSHOT_FORMAT, head, (unsigned long long)seq);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                size_t start = buf.len;

                r = budget_format(sorted[i]->digest, sorted[i]->answers, sorted[i]->n, &buf);
                if (r >= 0 && buf.len - start >= BUDGET_FILE_MAX)
                        r = -E2BIG;
        }
        text = buf.p; /* where realloc() moved it, also on failure */
        if (r < 0)
                return r;
        b = calloc(1, sizeof(*b) + sizeof(BatchFile));
        if (!b)
                return -ENOMEM;
        *b = (BudgetBatch){.dfd = s->dfd,
                           .gen = s->gen,
                           .seq = seq,
                           .snapshot = true,
                           .legacy = s->legacy_files,
                           .n = 1};
        memcpy(b->head, head, sizeof(head));
        b->files[0] = (BatchFile){.text = TAKE_PTR(text), .len = buf.len};
        strcpy(b->files[0].name, BUDGET_CHECKPOINT);
        for (size_t i = 0; i < s->n_dirty; i++)
                s->dirty[i]->dirty = s->dirty[i]->dirty_slot = false;
        s->n_dirty = 0;
        s->n_gone = 0;
        s->unsaved = false;
        s->taken_gen = s->gen;
        *ret = b;
        return 0;
}

/* budget_batch_take(), with the checkpoint written even when nothing changed (force). */
static int batch_take(BudgetStore *s, bool force, BudgetBatch **ret) {
        BudgetBatch *b;

        if (!s || !ret)
                return -EINVAL;
        if (s->n_dirty == 0 && s->n_gone == 0 &&
            !(s->log && (force || s->unsaved || s->legacy_files))) {
                /* Nothing waits and no batch is out (the caller's rule): all of it is on disk. */
                s->durable_gen = s->gen;
                *ret = NULL;
                return 0;
        }
        if (s->log)
                return snapshot_take(s, ret);
        /* Files of their own beside a snapshot would be taken for an older layout's and removed
         * at the next start: a store whose budgets are a snapshot is written through its log. */
        if (s->snapshot)
                return -EROFS;
        b = calloc(1, sizeof(*b) + s->n_dirty * sizeof(BatchFile));
        if (!b)
                return -ENOMEM;
        *b = (BudgetBatch){.dfd = s->dfd, .gen = s->gen};
        if (s->n_gone > 0) {
                b->gone = malloc(s->n_gone * sizeof(*b->gone));
                if (!b->gone) {
                        batch_free(b);
                        return -ENOMEM;
                }
                memcpy(b->gone, s->gone, s->n_gone * sizeof(*b->gone));
                b->n_gone = s->n_gone;
                b->sync_dir = true;
        }
        for (size_t i = 0; i < s->n_dirty; i++) {
                Budget *d = s->dirty[i];
                BatchFile *f = &b->files[b->n];
                Buf buf;
                int r;

                /* The batch keeps a copy at its length: the writer thread reads it, while the
                 * store's buffer serves the loop's next format. */
                r = format_file(s, d->digest, d->answers, d->n, &buf);
                if (r < 0) {
                        batch_free(b);
                        return r;
                }
                f->text = malloc(buf.len);
                if (f->text)
                        memcpy(f->text, buf.p, buf.len);
                if (!f->text) {
                        batch_free(b);
                        return -ENOMEM;
                }
                file_name(d->digest, f->name);
                memcpy(f->digest, d->digest, BUDGET_DIGEST_SIZE);
                f->len = buf.len;
                f->slot = d->dirty_slot;
                b->sync_dir = b->sync_dir || d->dirty_slot;
                b->n++;
        }
        for (size_t i = 0; i < s->n_dirty; i++)
                s->dirty[i]->dirty = s->dirty[i]->dirty_slot = false;
        s->n_dirty = 0;
        s->n_gone = 0;
        s->taken_gen = s->gen;
        *ret = b;
        return 0;
}

int budget_batch_take(BudgetStore *s, BudgetBatch **ret) {
        return batch_take(s, false, ret);
}

/* Removes every budget file of dfd (an older layout's, once a snapshot holds the budgets), then
 * syncs the directory. */
static int legacy_remove(int dfd) {
        DIR *dir = fd_opendir_dup(dfd);
        struct dirent *de;
        uint8_t d[BUDGET_DIGEST_SIZE];
        int r = 0;

        if (!dir)
                return negative_errno();
        while ((errno = 0, de = readdir(dir)))
                if (budget_file_name(de->d_name, d) && unlinkat(dfd, de->d_name, 0) < 0 &&
                    errno != ENOENT) {
                        r = negative_errno();
                        break;
                }
        if (r == 0 && errno != 0)
                r = negative_errno();
        closedir(dir);
        if (r == 0 && fsync(dfd) < 0)
                r = negative_errno();
        return r;
}

int budget_batch_write(BudgetBatch *b) {
        int r;

        if (b->snapshot) {
                /* The snapshot in place (written, fsync()ed, renamed), then the directory: only
                 * then does an older layout's file go, so a crash leaves one or the other. */
                r = store_write_file(b->dfd, b->files[0].name, b->files[0].text, b->files[0].len);
                if (r < 0)
                        return r;
                if (fsync(b->dfd) < 0)
                        return negative_errno();
                return b->legacy ? legacy_remove(b->dfd) : 0;
        }

        /* Emptied budgets first: a budget emptied and taken again since is among the files. */
        for (size_t i = 0; i < b->n_gone; i++) {
                char name[FILE_NAME_LEN + 1];

                file_name(b->gone[i], name);
                if (unlinkat(b->dfd, name, 0) < 0 && errno != ENOENT)
                        return negative_errno();
        }
        /* Each file written and fsync()ed (store_write_file()), then one fsync() of the directory
         * for them all when one holds a new slot: a commit's rename alone may be lost to a power
         * cut, leaving the reservation, which charges the slot already (budget_persist()). */
        for (size_t i = 0; i < b->n; i++) {
                r = store_write_file(b->dfd, b->files[i].name, b->files[i].text, b->files[i].len);
                if (r < 0)
                        return r;
        }
        return b->sync_dir && fsync(b->dfd) < 0 ? negative_errno() : 0;
}

uint64_t budget_batch_generation(const BudgetBatch *b) {
        return b ? b->gen : 0;
}

BudgetBatch *budget_batch_done(BudgetStore *s, BudgetBatch *b, int r) {
        if (!s || !b)
                return batch_free(b);
        if (r >= 0) {
                if (b->gen > s->durable_gen)
                        s->durable_gen = b->gen;
                if (b->snapshot) {
                        s->has_checkpoint = s->snapshot = true;
                        s->checkpoint_seq = b->seq;
                        memcpy(s->checkpoint_head, b->head, sizeof(s->checkpoint_head));
                        if (b->legacy)
                                s->legacy_files = false;
                }
                return batch_free(b);
        }
        /* A snapshot holds every budget: the next one, whatever changes, writes them again. */
        if (b->snapshot) {
                s->unsaved = true;
                return batch_free(b);
        }
        /* Not on disk: the budgets go into the next batch again (memory is the newer state);
         * what waited for this one is the caller's to fail. */
        for (size_t i = 0; i < b->n; i++) {
                Budget *d = table_find(s, b->files[i].digest, NULL);

                if (d && dirty_room(s, d) >= 0)
                        dirty_add(s, d, b->files[i].slot);
        }
        for (size_t i = 0; i < b->n_gone; i++)
                if (!table_find(s, b->gone[i], NULL) && gone_room(s) >= 0)
                        memcpy(s->gone[s->n_gone++], b->gone[i], BUDGET_DIGEST_SIZE);
        /* They wait for the next checkpoint, which a new change or the caller's timer starts: a
         * disk that keeps failing is not written to on every change (the log holds them). */
        return batch_free(b);
}

static int flush(BudgetStore *s, bool force) {
        BudgetBatch *b = NULL;
        int r;

        if (!s)
                return -EINVAL;
        if (s->barrier)
                s->barrier(s->barrier_userdata);
        r = batch_take(s, force, &b);
        if (r < 0 || !b)
                return r;
        r = budget_batch_write(b);
        budget_batch_done(s, b, r);
        return r;
}

int budget_flush(BudgetStore *s) {
        return flush(s, false);
}

int budget_checkpoint(BudgetStore *s) {
        return flush(s, true);
}

int budget_checkpoint_position(const BudgetStore *s, uint64_t *ret_seq) {
        if (!s || !ret_seq)
                return -EINVAL;
        if (!s->has_checkpoint)
                return -ENOENT;
        *ret_seq = s->checkpoint_seq;
        return 0;
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

        if (!outcome_is_final(outcome) || !key ||
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
        if (!now && a->outcome == BUDGET_OUTCOME_RESERVED && dirty_room(s, b) < 0)
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
static int change_room(BudgetStore *s, const Budget *b, size_t n) {
        return n == 0 ? gone_room(s) : dirty_room(s, b);
}

/* Takes an emptied b out of the table and frees it. */
static void budget_drop(BudgetStore *s, Budget *b) {
        size_t i;

        (void)table_find(s, b->digest, &i);
        table_remove_at(s, i);
        budget_free(b);
}

/* A change of b kept for the next batch (room made by change_room()): its file rewritten, or
 * removed when b is empty, and then b goes. slot: as change_deferred(). */
static void changed_deferred(BudgetStore *s, Budget *b, bool slot) {
        if (b->n > 0) {
                change_deferred(s, b, slot);
                return;
        }
        dirty_remove(s, b);
        gone_add(s, b->digest);
        budget_drop(s, b);
}

/*
 * After a release or a reset changed b in memory: without a log it is on disk already (and an
 * empty b goes); with one, its file is rewritten or removed at the next batch.
 */
static void emptied_or_changed(BudgetStore *s, Budget *b) {
        if (s->log)
                changed_deferred(s, b, false);
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
                r = change_room(s, b, n);
                if (r >= 0)
                        r = log_change(s, BUDGET_CHANGE_RELEASE, digest, key, 0, 0);
        } else
                r = budget_persist(s, digest, next, n, true);
        if (r < 0)
                return r;

        answer_done(a);
        memcpy(b->answers, next, n * sizeof(Answer));
        b->n = n;
        emptied_or_changed(s, b);
        return 0;
}

size_t budget_used(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE]) {
        Budget *b;

        if (!s || !digest)
                return 0;
        b = table_find(s, digest, NULL);
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
        b = table_find(s, digest, NULL);
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
                r = change_room(s, b, n);
                for (i = 0; r >= 0 && i < n; i++) {
                        BudgetKey k;

                        key_decode(next[i].key, next[i].key_len, &k);
                        r = log_change(s, BUDGET_CHANGE_RESERVE, digest, &k, 0, 0);
                }
        } else
                r = budget_persist(s, digest, next, n, true);
        if (r < 0)
                return r;

        for (i = 0; i < b->n; i++)
                if (b->answers[i].holds == 0)
                        answer_done(&b->answers[i]);
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
        b = table_find(s, digest, NULL);
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
                key_decode(sorted[i]->key, sorted[i]->key_len, &list[i].key);
                list[i].entry = (BudgetEntry){.outcome = sorted[i]->outcome,
                                              .time_usec = sorted[i]->time_usec};
                list[i].in_flight = sorted[i]->holds;
        }
        *ret = list;
        *ret_n = b->n;
        return 0;
}

static const char *const change_names[_BUDGET_CHANGE_MAX] = {
        [BUDGET_CHANGE_RESERVE] = "reserve",
        [BUDGET_CHANGE_COMMIT] = "commit",
        [BUDGET_CHANGE_RELEASE] = "release",
};

/* "in=ph,in2=ph2" of k's pairs into out (room for BUDGET_PAIRS_MAX * 2 * (BUDGET_NAME_MAX + 1)). */
static void bindings_format(const BudgetKey *k, char *out) {
        size_t len = 0;

        out[0] = 0;
        for (size_t i = 0; i < k->n_pairs; i++)
                len += (size_t)sprintf(out + len, "%s%s=%s", i > 0 ? "," : "", k->pairs[i].input,
                                       k->pairs[i].placeholder);
}

#define BINDINGS_MAX BUDGET_BINDINGS_TEXT_MAX

int budget_change_fields(const BudgetChange *c, BudgetChangeText *text, AuditField *out) {
        size_t n = 0;

        if (!c || !text || !out || (unsigned)c->type >= _BUDGET_CHANGE_MAX ||
            !budget_key_valid(&c->key) ||
            (c->type == BUDGET_CHANGE_COMMIT && !outcome_is_final(c->outcome)))
                return -EINVAL;
        hex_encode(c->digest, BUDGET_DIGEST_SIZE, text->hex);
        bindings_format(&c->key, text->bindings);
        /* Names, versions and a digest only ([a-z0-9._=,-]): never a value a human typed. */
        out[n++] = audit_field_string("handle_sha256", text->hex);
        out[n++] = audit_field_string("change", change_names[c->type]);
        out[n++] = audit_field_string("plugin", c->key.plugin);
        out[n++] = audit_field_string("version", c->key.version);
        out[n++] = audit_field_string("bindings", text->bindings);
        if (c->type == BUDGET_CHANGE_COMMIT) {
                out[n++] = audit_field_string("outcome", budget_outcome_name(c->outcome));
                out[n++] = c->ran_usec > 0 && c->ran_usec <= INT64_MAX
                                   ? audit_field_integer("ran_usec", (int64_t)c->ran_usec)
                                   : audit_field_null("ran_usec");
        }
        return (int)n;
}

/* A key back from a record's plugin, version and bindings. -EBADMSG when it is not one lockd
 * writes (budget_change_fields()). */
static int key_parse(const char *plugin, const char *version, const char *bindings, BudgetKey *k) {
        char buf[BINDINGS_MAX];
        char *save = NULL, *tok;

        if (!plugin || !version || !bindings || strlen(bindings) >= sizeof(buf) ||
            budget_key_init(k, plugin, version) < 0)
                return -EBADMSG;
        strcpy(buf, bindings);
        for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(tok, '=');

                if (!eq)
                        return -EBADMSG;
                *eq = 0;
                if (budget_key_add(k, tok, eq + 1) < 0)
                        return -EBADMSG;
        }
        return 0;
}

/* The budget of d for a replay, made when absent (no limit: the change was checked when made). */
static int replay_budget(BudgetStore *s, const uint8_t d[BUDGET_DIGEST_SIZE], Budget **ret) {
        Budget *b = table_find(s, d, NULL);
        int r;

        if (!b) {
                r = table_reserve(s);
                if (r < 0)
                        return r;
                b = calloc(1, sizeof(Budget));
                if (!b)
                        return -ENOMEM;
                memcpy(b->digest, d, BUDGET_DIGEST_SIZE);
                table_put(s, b);
        }
        *ret = b;
        return 0;
}

/* Takes a slot of key in b with outcome o (for a replayed reservation or commit). */
static int replay_add(BudgetStore *s, Budget *b, const char *bytes, size_t len, uint64_t hash,
                      BudgetOutcome o, uint64_t time_usec, uint64_t ran_usec) {
        char *copy;

        if (b->n >= BUDGET_LIMIT_MAX)
                return -EBADMSG; /* more slots than any budget holds: not a log lockd wrote */
        if (answers_room(b) < 0)
                return -ENOMEM;
        copy = malloc(len);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, bytes, len);
        b->answers[b->n++] = (Answer){.key = copy,
                                      .key_len = len,
                                      .key_hash = hash,
                                      .outcome = o,
                                      .time_usec = time_usec,
                                      .ran_usec = ran_usec};
        return 0;
}

/* Marks b for the checkpoint after a replayed change, or drops it (its file goes) when empty. */
static int replay_changed(BudgetStore *s, Budget *b) {
        int r = change_room(s, b, b->n);

        if (r < 0)
                return r;
        changed_deferred(s, b, true);
        return 0;
}

/*
 * One replayed record: a "budget" change or a "budget_reset" (rec, its time). Per key: a
 * reservation takes an absent slot; an outcome sets a reserved (or absent) slot and leaves a final
 * one; a release drops a reserved slot; a reset drops every slot. Each is idempotent, and so is a
 * run of them (ARCHITECTURE.md, budgets). 1 when memory changed, 0 when not, -EBADMSG.
 */
static int replay_one(BudgetStore *s, json_t *rec, bool reset) {
        const char *hex = json_string_value(json_object_get(rec, "handle_sha256"));
        json_t *time_v = json_object_get(rec, "time");
        uint8_t d[BUDGET_DIGEST_SIZE];
        char bytes[KEY_BYTES_MAX];
        const char *change;
        BudgetOutcome o = BUDGET_OUTCOME_RESERVED;
        uint64_t hash, ran = 0;
        BudgetKey k;
        Budget *b;
        Answer *a;
        size_t len;
        int r, type = -1;

        if (!hex || strlen(hex) != HEX_SIZE || !hex_lower_valid(hex, HEX_SIZE) ||
            hex_decode(hex, HEX_SIZE, d, sizeof(d)) < 0 || !json_is_integer(time_v))
                return -EBADMSG;
        if (reset) {
                b = table_find(s, d, NULL);
                if (!b)
                        return 0;
                for (size_t i = 0; i < b->n; i++)
                        answer_done(&b->answers[i]);
                b->n = 0;
                r = replay_changed(s, b);
                return r < 0 ? r : 1;
        }
        change = json_string_value(json_object_get(rec, "change"));
        for (int t = 0; change && t < _BUDGET_CHANGE_MAX; t++)
                if (strcmp(change, change_names[t]) == 0)
                        type = t;
        if (type < 0 || key_parse(json_string_value(json_object_get(rec, "plugin")),
                                  json_string_value(json_object_get(rec, "version")),
                                  json_string_value(json_object_get(rec, "bindings")), &k) < 0)
                return -EBADMSG;
        if (type == BUDGET_CHANGE_COMMIT) {
                const char *on = json_string_value(json_object_get(rec, "outcome"));
                json_t *ran_v = json_object_get(rec, "ran_usec");

                if (!on || parse_outcome(on, &o) < 0 || !outcome_is_final(o) ||
                    (o == BUDGET_OUTCOME_ANSWERED) != (k.n_pairs > 0) ||
                    !(json_is_null(ran_v) ||
                      (json_is_integer(ran_v) && json_integer_value(ran_v) > 0)))
                        return -EBADMSG;
                ran = json_is_integer(ran_v) ? (uint64_t)json_integer_value(ran_v) : 0;
        }
        len = key_encode(&k, bytes);
        hash = key_hash(bytes, len);
        b = table_find(s, d, NULL);
        a = b ? budget_find(b, bytes, len, hash) : NULL;
        switch (type) {
        case BUDGET_CHANGE_RESERVE:
        case BUDGET_CHANGE_COMMIT:
                if (a && (a->outcome != BUDGET_OUTCOME_RESERVED || type == BUDGET_CHANGE_RESERVE))
                        return 0;
                if (a) {
                        a->outcome = o;
                        a->time_usec = (uint64_t)json_integer_value(time_v);
                        a->ran_usec = ran;
                } else {
                        r = replay_budget(s, d, &b);
                        if (r >= 0)
                                r = replay_add(s, b, bytes, len, hash, o,
                                               (uint64_t)json_integer_value(time_v), ran);
                        if (r < 0) {
                                if (b->n == 0)
                                        (void)replay_changed(s, b);
                                return r;
                        }
                }
                break;
        default: /* BUDGET_CHANGE_RELEASE */
                if (!a || a->outcome != BUDGET_OUTCOME_RESERVED)
                        return 0;
                answer_done(a);
                memmove(a, a + 1, (size_t)(b->answers + b->n - (a + 1)) * sizeof(Answer));
                b->n--;
                break;
        }
        r = replay_changed(s, b);
        return r < 0 ? r : 1;
}

/* The value of "key":<digits> in a canonical record line (no string holds a bare quote), or -1. */
static int64_t line_number(const char *line, size_t len, const char *key) {
        char pat[16];
        const char *p;
        int64_t v = 0;
        size_t n = (size_t)snprintf(pat, sizeof(pat), "\"%s\":", key);

        p = memmem(line, len, pat, n);
        if (!p)
                return -1;
        p += n;
        if (p >= line + len || *p < '0' || *p > '9')
                return -1;
        for (; p < line + len && *p >= '0' && *p <= '9'; p++) {
                if (v > (INT64_MAX - 9) / 10)
                        return -1;
                v = v * 10 + (*p - '0');
        }
        return v;
}

int budget_replay(BudgetStore *s, const char *buf, size_t len, size_t *ret_n, BudgetError *err) {
        static const char budget_ev[] = "\"event\":\"budget\"",
                          reset_ev[] = "\"event\":\"budget_reset\"",
                          recovered_ev[] = "\"event\":\"recovered\"";
        uint64_t p_seq;
        size_t applied = 0, off = 0;
        bool first = true;
        int r;

        if (err)
                *err = (BudgetError){};
        if (!s || (!buf && len > 0))
                return fail(err, -EINVAL, "invalid arguments");
        if (ret_n)
                *ret_n = 0;
        /* No checkpoint: the files are the budgets (a store from before the log was their WAL,
         * whose log holds no budget changes, or one whose checkpoint the operator removed). */
        if (!s->has_checkpoint)
                return 0;
        p_seq = s->checkpoint_seq;
        while (off < len) {
                const char *line = buf + off, *nl = memchr(line, '\n', len - off);
                size_t n = nl ? (size_t)(nl - line) : len - off;
                int64_t seq = line_number(line, n, "seq");
                bool is_budget, is_reset;

                off += n + (nl ? 1 : 0);
                if (!nl)
                        break; /* a torn tail: audit_open() cuts it */
                if (seq <= 0)
                        return fail(err, -EBADMSG, "audit log: a record without its seq");
                if (first) {
                        first = false;
                        /* Records after the checkpoint in an older segment: the segment switch
                         * checkpoints first, so this is not a log this checkpoint followed. */
                        if ((uint64_t)seq > p_seq + 1)
                                return fail(err, -EBADMSG,
                                            "audit log: its current file starts at record %" PRId64
                                            ", after the budget checkpoint's %" PRIu64
                                            " (budget changes in between are not in it)",
                                            seq, p_seq);
                        if ((uint64_t)seq == p_seq + 1 && p_seq > 0) {
                                /* A rotation's first record links to the checkpoint's. */
                                char want[HEX_SIZE + 16];

                                snprintf(want, sizeof(want), "\"prev\":\"%s\"", s->checkpoint_head);
                                if (!memmem(line, n, want, strlen(want)))
                                        return fail(err, -EBADMSG,
                                                    "audit log: record %" PRId64 " does not follow "
                                                    "the budget checkpoint's record %" PRIu64,
                                                    seq, p_seq);
                        }
                }
                if ((uint64_t)seq <= p_seq) {
                        if ((uint64_t)seq == p_seq) {
                                char h[AUDIT_HASH_HEX + 1];

                                /* A crash may tear the checkpoint's record, which was not
                                 * durable yet: the start's "recovered" record takes its seq. */
                                audit_hash_hex(line, n, h);
                                if (strcmp(h, s->checkpoint_head) != 0 &&
                                    !memmem(line, n, recovered_ev, sizeof(recovered_ev) - 1))
                                        return fail(err, -EBADMSG,
                                                    "audit log: record %" PRIu64 " is not the one "
                                                    "the budget checkpoint follows (another log?)",
                                                    p_seq);
                        }
                        /* At or before the checkpoint: in it already. A file that ends before
                         * its seq holds nothing newer (a crash cut records it had seen). */
                        continue;
                }
                is_budget = memmem(line, n, budget_ev, sizeof(budget_ev) - 1) != NULL;
                is_reset = memmem(line, n, reset_ev, sizeof(reset_ev) - 1) != NULL;
                if (!is_budget && !is_reset)
                        continue;
                {
                        _cleanup_(json_decrefp) json_t *rec = json_loadb(line, n, 0, NULL);

                        r = rec ? replay_one(s, rec, is_reset) : -EBADMSG;
                }
                if (r == -ENOMEM)
                        return fail(err, r, "audit log replay: out of memory");
                if (r < 0)
                        return fail(err, r,
                                    "audit log: record %" PRId64 " is not a budget change lockd "
                                    "writes (refusing to start rather than guess a budget)",
                                    seq);
                applied += (size_t)r;
        }
        if (ret_n)
                *ret_n = applied;
        return 0;
}
