/* The budget store's insides, shared by its files (budget.c, budget-key.c, budget-file.c,
 * budget-replay.c) and by nothing else: the types behind budget.h's opaque ones and the
 * functions one of those files defines for the others. Each function's contract is at its
 * definition. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "budget.h"

#define BUDGET_FORMAT 1
/* BUDGET_CHECKPOINT as a snapshot: its position and every budget in one file (batch_take() in
 * budget-file.c). */
#define SNAPSHOT_FORMAT 2
/* The most a snapshot may hold when read back: BUDGET_DIGESTS_MAX budgets of a few hundred bytes
 * each is tens of MiB; a file past this is no snapshot lockd wrote. */
#define SNAPSHOT_MAX ((size_t)1024 * 1024 * 1024)
/* A snapshot's first buffer, doubled as it fills (text_buf_printf()). */
#define SNAPSHOT_START ((size_t)64 * 1024)
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

/* budget.c: the table of budgets, their answers, the changes of memory. */
void *budget_room_for_one(void *array, size_t *size, size_t used, size_t elem);
int budget_answers_room(Budget *b);
int budget_dirty_room(BudgetStore *s, const Budget *b);
void budget_dirty_add(BudgetStore *s, Budget *b, bool slot);
bool budget_outcome_is_answer(BudgetOutcome o);
bool budget_outcome_is_final(BudgetOutcome o);
int budget_parse_outcome(const char *s, BudgetOutcome *ret);
Budget *budget_table_find(const BudgetStore *s, const uint8_t d[BUDGET_DIGEST_SIZE], size_t *ret_i);
void budget_table_put(BudgetStore *s, Budget *b);
int budget_table_reserve(BudgetStore *s);
int budget_table_new(BudgetStore *s, const uint8_t d[BUDGET_DIGEST_SIZE], Budget **ret);
void budget_answer_done(Answer *a);
int budget_change_room(BudgetStore *s, const Budget *b, size_t n);
void budget_changed_deferred(BudgetStore *s, Budget *b, bool slot);
Budget *budget_free(Budget *b);
Answer *budget_find(Budget *b, const char *key, size_t len, uint64_t hash);
__attribute__((format(printf, 3, 4))) int budget_fail(BudgetError *err, int r, const char *fmt,
                                                      ...);

/* budget-key.c: a key's canonical bytes. */
size_t budget_key_encode(const BudgetKey *k, char out[KEY_BYTES_MAX]);
void budget_key_decode(const char *bytes, size_t len, BudgetKey *k);
uint64_t budget_key_hash(const char *bytes, size_t len);

/* budget-file.c: the budget files and the checkpoint. */
int budget_load_all(BudgetStore *s, BudgetError *err);
int budget_gone_room(BudgetStore *s);
void budget_gone_add(BudgetStore *s, const uint8_t d[BUDGET_DIGEST_SIZE]);
int budget_persist(BudgetStore *s, const uint8_t d[BUDGET_DIGEST_SIZE], const Answer *answers,
                   size_t n, bool sync_dir);
