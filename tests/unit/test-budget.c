/* Unit tests of budgets and the answer cache: canonical keys, reservations up to the limit, the
 * cache, releases, runs in flight, persistence across reopening, reset, every case under
 * tests/data/budget (corrupt budgets refused at open), failed writes, and a lookup benchmark. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "audit.h"
#include "budget.h"
#include "check-run.h"
#include "tmp-dir.h"
#include "fd-util.h"
#include "codec.h"
#include "macro.h"

#define PLUGIN "pdf.contains"

static const char *data_dir(void) {
        const char *d = getenv("LOCKD_TEST_DATA");
        return d ? d : "tests/data";
}

static void digest_of(const char *s, uint8_t d[BUDGET_DIGEST_SIZE]) {
        sha256((const uint8_t *)s, strlen(s), d);
}

/* A key for PLUGIN at version, with pairs "input=placeholder,..." added in the order given. */
static BudgetKey key_of(const char *version, const char *pairs) {
        _cleanup_free_ char *copy = strdup(pairs);
        char *save = NULL;
        BudgetKey k;

        ck_assert_int_eq(budget_key_init(&k, PLUGIN, version), 0);
        for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(p, '=');

                ck_assert_ptr_nonnull(eq);
                *eq = 0;
                ck_assert_int_eq(budget_key_add(&k, p, eq + 1), 0);
        }
        return k;
}

static BudgetStore *open_store(int fd) {
        BudgetStore *s = NULL;
        BudgetError err;

        ck_assert_msg(budget_open(fd, &s, &err) == 0, "budget_open: %s", err.message);
        ck_assert_ptr_nonnull(s);
        return s;
}

static char *read_at(int dfd, const char *name) {
        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
        char *buf = NULL;
        size_t len;

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(read_full_fd(fd, BUDGET_FILE_MAX * 2, &buf, &len), 0);
        return buf;
}

static void write_at(int dfd, const char *name, const char *data, size_t len) {
        _cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(loop_write(fd, data, len), 0);
}

static bool exists_at(int dfd, const char *name) {
        struct stat st;

        return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static void budget_file(const uint8_t d[BUDGET_DIGEST_SIZE], char out[80]) {
        hex_encode(d, BUDGET_DIGEST_SIZE, out);
        strcat(out, ".json");
}

START_TEST(test_keys) {
        BudgetKey a, b, k, before;
        char long_name[40];

        /* The same bindings in another order are the same key, byte for byte. */
        a = key_of("1.0.0", "needle=email,domain=host,zone=tz");
        b = key_of("1.0.0", "zone=tz,needle=email,domain=host");
        ck_assert(budget_key_valid(&a));
        ck_assert_mem_eq(&a, &b, sizeof(a));
        ck_assert_str_eq(a.pairs[0].input, "domain");
        ck_assert_str_eq(a.pairs[2].input, "zone");

        /* Names: plugin and version as manifests have them, inputs and placeholders
         * [a-z0-9_]{1,32}. */
        ck_assert_int_eq(budget_key_init(&k, "nodot", "1.0.0"), -EINVAL);
        ck_assert_int_eq(budget_key_init(&k, "PDF.contains", "1.0.0"), -EINVAL);
        ck_assert_int_eq(budget_key_init(&k, PLUGIN, "1.0"), -EINVAL);
        ck_assert_int_eq(budget_key_init(&k, PLUGIN, "01.0.0"), -EINVAL);
        ck_assert_int_eq(budget_key_init(&k, PLUGIN, NULL), -EINVAL);
        ck_assert_int_eq(budget_key_init(&k, PLUGIN, "1.2.3"), 0);
        before = k;
        ck_assert_int_eq(budget_key_add(&k, "Needle", "email"), -EINVAL);
        ck_assert_int_eq(budget_key_add(&k, "needle", "e-mail"), -EINVAL);
        ck_assert_int_eq(budget_key_add(&k, "", "email"), -EINVAL);
        memset(long_name, 'a', 33);
        long_name[33] = 0;
        ck_assert_int_eq(budget_key_add(&k, "needle", long_name), -EINVAL);
        long_name[32] = 0;
        ck_assert_mem_eq(&k, &before, sizeof(k));
        ck_assert_int_eq(budget_key_add(&k, "needle", long_name), 0);
        ck_assert_int_eq(budget_key_add(&k, "needle", "other"), -EEXIST);
        ck_assert_int_eq(budget_key_add(&k, "b", "x"), 0);
        ck_assert_int_eq(budget_key_add(&k, "c", "x"), 0); /* one placeholder, two inputs */
        ck_assert_int_eq(budget_key_add(&k, "d", "x"), 0);
        before = k;
        ck_assert_int_eq(budget_key_add(&k, "e", "x"), -E2BIG);
        ck_assert_mem_eq(&k, &before, sizeof(k));
        ck_assert(budget_key_valid(&k));

        /* A key filled by hand must be canonical. */
        k = a;
        BudgetPair t = k.pairs[0];
        k.pairs[0] = k.pairs[1];
        k.pairs[1] = t;
        ck_assert(!budget_key_valid(&k));
        k = a;
        strcpy(k.pairs[1].input, k.pairs[0].input);
        ck_assert(!budget_key_valid(&k));
        k = a;
        memset(k.plugin, 'a', sizeof(k.plugin)); /* no terminating NUL */
        ck_assert(!budget_key_valid(&k));
        k = a;
        k.n_pairs = BUDGET_PAIRS_MAX + 1;
        ck_assert(!budget_key_valid(&k));
        ck_assert(!budget_key_valid(NULL));

        ck_assert_str_eq(budget_outcome_name(BUDGET_OUTCOME_ONE), "1");
        ck_assert_str_eq(budget_outcome_name(BUDGET_OUTCOME_PLUGIN_ERROR), "plugin_error");
        ck_assert_ptr_null(budget_outcome_name(_BUDGET_OUTCOME_MAX));
}
END_TEST

START_TEST(test_reserve_limit) {
        _cleanup_(budget_closep) BudgetStore *s = NULL;
        uint8_t d[BUDGET_DIGEST_SIZE], other[BUDGET_DIGEST_SIZE];
        BudgetKey k[4];
        TmpDir t;

        tmpdir_new(&t);
        s = open_store(t.fd);
        digest_of("file one", d);
        digest_of("file two", other);
        for (unsigned i = 0; i < 4; i++) {
                char v[16];

                snprintf(v, sizeof(v), "1.0.%u", i);
                k[i] = key_of(v, "");
        }

        ck_assert_int_eq(budget_left(s, d, 3), 3);
        for (unsigned i = 0; i < 3; i++) {
                ck_assert_int_eq(budget_reserve(s, d, &k[i], 3), 0);
                ck_assert_int_eq(budget_commit(s, d, &k[i], BUDGET_OUTCOME_ONE), 0);
                ck_assert_int_eq(budget_left(s, d, 3), (int)(2 - i));
        }
        ck_assert_int_eq(budget_reserve(s, d, &k[3], 3), -EDQUOT);
        ck_assert_uint_eq(budget_used(s, d), 3);

        /* The same question again costs nothing, even at the limit and under a lower one. */
        ck_assert_int_eq(budget_reserve(s, d, &k[1], 3), 0);
        ck_assert_int_eq(budget_commit(s, d, &k[1], BUDGET_OUTCOME_ONE), 0);
        ck_assert_int_eq(budget_reserve(s, d, &k[0], 1), 0);
        ck_assert_int_eq(budget_release(s, d, &k[0]), 0);
        ck_assert_uint_eq(budget_used(s, d), 3);

        /* A grant that lowers the limit sees nothing left; a higher one sees the rest. */
        ck_assert_int_eq(budget_left(s, d, 2), 0);
        ck_assert_int_eq(budget_left(s, d, 64), 61);
        ck_assert_int_eq(budget_reserve(s, d, &k[3], 4), 0);
        ck_assert_int_eq(budget_commit(s, d, &k[3], BUDGET_OUTCOME_ZERO), 0);

        /* Another content has its own budget. */
        ck_assert_int_eq(budget_left(s, other, 1), 1);
        ck_assert_int_eq(budget_reserve(s, other, &k[0], 1), 0);
        ck_assert_int_eq(budget_reserve(s, other, &k[1], 1), -EDQUOT);
        ck_assert_int_eq(budget_release(s, other, &k[0]), 0);

        /* Limits outside 1..64 and other bad arguments. */
        ck_assert_int_eq(budget_reserve(s, other, &k[0], 0), -EINVAL);
        ck_assert_int_eq(budget_reserve(s, other, &k[0], 65), -EINVAL);
        ck_assert_int_eq(budget_left(s, other, 0), -EINVAL);
        ck_assert_int_eq(budget_left(s, other, 65), -EINVAL);
        ck_assert_int_eq(budget_reserve(NULL, other, &k[0], 1), -EINVAL);
        ck_assert_int_eq(budget_reserve(s, NULL, &k[0], 1), -EINVAL);
        ck_assert_int_eq(budget_reserve(s, other, NULL, 1), -EINVAL);
        ck_assert_uint_eq(budget_used(s, other), 0);

        s = budget_close(s);
        tmpdir_done(&t);
}
END_TEST

START_TEST(test_full_limit) {
        _cleanup_(budget_closep) BudgetStore *s = NULL;
        uint8_t d[BUDGET_DIGEST_SIZE];
        BudgetKey k;
        TmpDir t;

        tmpdir_new(&t);
        s = open_store(t.fd);
        digest_of("full", d);
        for (unsigned i = 0; i < BUDGET_LIMIT_MAX; i++) {
                char v[16];

                snprintf(v, sizeof(v), "1.%u.0", i);
                k = key_of(v, "a=x,b=y,c=z,d=w");
                ck_assert_int_eq(budget_reserve(s, d, &k, BUDGET_LIMIT_MAX), 0);
                ck_assert_int_eq(budget_commit(s, d, &k, BUDGET_OUTCOME_ANSWERED), 0);
        }
        k = key_of("2.0.0", "");
        ck_assert_int_eq(budget_reserve(s, d, &k, BUDGET_LIMIT_MAX), -EDQUOT);
        ck_assert_int_eq(budget_left(s, d, BUDGET_LIMIT_MAX), 0);

        /* The largest budget reads back. */
        s = budget_close(s);
        s = open_store(t.fd);
        ck_assert_uint_eq(budget_used(s, d), BUDGET_LIMIT_MAX);
        s = budget_close(s);
        tmpdir_done(&t);
}
END_TEST

START_TEST(test_commit_lookup) {
        _cleanup_(budget_closep) BudgetStore *s = NULL;
        uint8_t d[BUDGET_DIGEST_SIZE];
        BudgetKey a, b, c;
        BudgetEntry e;
        TmpDir t;

        tmpdir_new(&t);
        s = open_store(t.fd);
        digest_of("lookup", d);
        a = key_of("1.0.0", "");
        b = key_of("1.0.0", "");
        c = key_of("1.0.1", "");

        ck_assert_int_eq(budget_lookup(s, d, &a, &e), 0);
        ck_assert_int_eq(budget_reserve(s, d, &a, 8), 0);
        /* Reserved is not answered. */
        memset(&e, 0xaa, sizeof(e));
        ck_assert_int_eq(budget_lookup(s, d, &a, &e), 0);
        ck_assert_int_eq(((uint8_t *)&e)[0], 0xaa);
        ck_assert_int_eq(budget_commit_ran(s, d, &a, BUDGET_OUTCOME_ONE, 1234), 0);
        /* The same key finds the answer and the run's duration; another version does not. */
        ck_assert_int_eq(budget_lookup(s, d, &b, &e), 1);
        ck_assert_int_eq(e.outcome, BUDGET_OUTCOME_ONE);
        ck_assert_uint_gt(e.time_usec, 0);
        ck_assert_uint_eq(e.ran_usec, 1234);
        ck_assert_int_eq(budget_lookup(s, d, &c, &e), 0);

        /* Only answers are committed; a second run's different outcome does not replace it. */
        ck_assert_int_eq(budget_reserve(s, d, &c, 8), 0);
        ck_assert_int_eq(budget_commit(s, d, &c, BUDGET_OUTCOME_RESERVED), -EINVAL);
        ck_assert_int_eq(budget_commit(s, d, &c, _BUDGET_OUTCOME_MAX), -EINVAL);
        ck_assert_int_eq(budget_commit(s, d, &c, BUDGET_OUTCOME_ANSWERED), -EINVAL);
        ck_assert_int_eq(budget_commit(s, d, &c, BUDGET_OUTCOME_PLUGIN_ERROR), 0);
        ck_assert_int_eq(budget_lookup(s, d, &c, &e), 1);
        ck_assert_int_eq(e.outcome, BUDGET_OUTCOME_PLUGIN_ERROR);
        ck_assert_uint_eq(e.ran_usec, 0);
        ck_assert_int_eq(budget_reserve(s, d, &a, 8), 0);
        ck_assert_int_eq(budget_commit(s, d, &a, BUDGET_OUTCOME_ZERO), -EEXIST);
        ck_assert_int_eq(budget_lookup(s, d, &a, &e), 1);
        ck_assert_int_eq(e.outcome, BUDGET_OUTCOME_ONE);
        ck_assert_uint_eq(budget_used(s, d), 2);

        /*
         * A key bound to typed values: the bindings in another order are the same slot, it
         * commits "answered" only (never a bit: its answers depend on the values and stay in
         * lockd's memory), and a lookup gives nothing back.
         */
        a = key_of("2.0.0", "needle=email,domain=host");
        b = key_of("2.0.0", "domain=host,needle=email");
        ck_assert_int_eq(budget_reserve(s, d, &a, 8), 0);
        ck_assert_int_eq(budget_commit(s, d, &a, BUDGET_OUTCOME_ONE), -EINVAL);
        ck_assert_int_eq(budget_commit(s, d, &a, BUDGET_OUTCOME_ANSWERED), 0);
        ck_assert_int_eq(budget_charged(s, d, &b), 1);
        ck_assert_int_eq(budget_lookup(s, d, &b, &e), 0);
        ck_assert_int_eq(budget_reserve(s, d, &b, 8), 0); /* a new value: free */
        ck_assert_int_eq(budget_commit(s, d, &b, BUDGET_OUTCOME_ANSWERED), 0);
        ck_assert_uint_eq(budget_used(s, d), 3);

        /* Committing a key that holds no slot. */
        c = key_of("9.9.9", "");
        ck_assert_int_eq(budget_commit(s, d, &c, BUDGET_OUTCOME_ONE), -ENOENT);
        ck_assert_int_eq(budget_lookup(s, d, &a, NULL), -EINVAL);

        s = budget_close(s);
        tmpdir_done(&t);
}
END_TEST

START_TEST(test_release) {
        _cleanup_(budget_closep) BudgetStore *s = NULL;
        uint8_t d[BUDGET_DIGEST_SIZE];
        char name[80];
        BudgetKey a, b;
        BudgetEntry e;
        TmpDir t;

        tmpdir_new(&t);
        s = open_store(t.fd);
        digest_of("release", d);
        budget_file(d, name);
        a = key_of("1.0.0", "");
        b = key_of("1.0.1", "");

        /* A transient failure gives the slot back, and the file goes with the last slot. */
        ck_assert_int_eq(budget_reserve(s, d, &a, 1), 0);
        {
                _cleanup_close_ int bfd = openat(t.fd, BUDGET_DIR, O_RDONLY | O_DIRECTORY);

                ck_assert(exists_at(bfd, name));
                ck_assert_int_eq(budget_reserve(s, d, &b, 1), -EDQUOT);
                ck_assert_int_eq(budget_release(s, d, &a), 0);
                ck_assert_uint_eq(budget_used(s, d), 0);
                ck_assert(!exists_at(bfd, name));
        }
        ck_assert_int_eq(budget_reserve(s, d, &b, 1), 0);
        ck_assert_int_eq(budget_commit(s, d, &b, BUDGET_OUTCOME_ZERO), 0);

        /* Releasing an answered key (a later run failed) keeps the answer. */
        ck_assert_int_eq(budget_reserve(s, d, &b, 1), 0);
        ck_assert_int_eq(budget_release(s, d, &b), 0);
        ck_assert_int_eq(budget_lookup(s, d, &b, &e), 1);
        ck_assert_int_eq(e.outcome, BUDGET_OUTCOME_ZERO);
        ck_assert_uint_eq(budget_used(s, d), 1);

        ck_assert_int_eq(budget_release(s, d, &a), -ENOENT);
        ck_assert_int_eq(budget_release(s, NULL, &a), -EINVAL);

        s = budget_close(s);
        tmpdir_done(&t);
}
END_TEST

/* The loop interleaves runs: reservations of different questions in flight at once cannot
 * overshoot, and two runs of one question share its slot. */
START_TEST(test_in_flight) {
        _cleanup_(budget_closep) BudgetStore *s = NULL;
        _cleanup_free_ BudgetAnswer *answers = NULL;
        uint8_t d[BUDGET_DIGEST_SIZE];
        BudgetKey k1, k2, k3;
        BudgetEntry e;
        size_t n;
        TmpDir t;

        tmpdir_new(&t);
        s = open_store(t.fd);
        digest_of("in flight", d);
        k1 = key_of("1.0.0", "");
        k2 = key_of("1.0.0", "needle=email");
        k3 = key_of("1.0.0", "needle=name");

        ck_assert_int_eq(budget_charged(s, d, &k1), 0);
        ck_assert_int_eq(budget_reserve(s, d, &k1, 2), 0);
        ck_assert_int_eq(budget_charged(s, d, &k1), 1); /* in flight: asking again is free */
        ck_assert_int_eq(budget_reserve(s, d, &k2, 2), 0);
        ck_assert_int_eq(budget_reserve(s, d, &k3, 2), -EDQUOT);
        ck_assert_int_eq(budget_charged(s, d, &k3), 0);
        ck_assert_int_eq(budget_charged(s, NULL, &k3), -EINVAL);
        ck_assert_int_eq(budget_left(s, d, 2), 0);
        ck_assert_int_eq(budget_release(s, d, &k1), 0); /* k1's run failed transiently */
        ck_assert_int_eq(budget_reserve(s, d, &k3, 2), 0);

        /* A second run of k2 while the first is in flight: free, and one release keeps it. */
        ck_assert_int_eq(budget_reserve(s, d, &k2, 2), 0);
        ck_assert_int_eq(budget_show(s, d, &answers, &n), 0);
        ck_assert_uint_eq(n, 2);
        ck_assert_str_eq(answers[0].key.pairs[0].placeholder, "email");
        ck_assert_uint_eq(answers[0].in_flight, 2);
        ck_assert_int_eq(answers[0].entry.outcome, BUDGET_OUTCOME_RESERVED);
        answers = mfree(answers);
        ck_assert_int_eq(budget_release(s, d, &k2), 0);
        ck_assert_uint_eq(budget_used(s, d), 2);
        ck_assert_int_eq(budget_commit(s, d, &k2, BUDGET_OUTCOME_ANSWERED), 0);
        ck_assert_int_eq(budget_lookup(s, d, &k2, &e), 0);
        ck_assert_int_eq(budget_charged(s, d, &k2), 1);
        ck_assert_int_eq(budget_commit(s, d, &k3, BUDGET_OUTCOME_ANSWERED), 0);

        /* Both runs of one question committing the same outcome: both fine. */
        ck_assert_int_eq(budget_reserve(s, d, &k3, 2), 0);
        ck_assert_int_eq(budget_reserve(s, d, &k3, 2), 0);
        ck_assert_int_eq(budget_commit(s, d, &k3, BUDGET_OUTCOME_ANSWERED), 0);
        ck_assert_int_eq(budget_commit(s, d, &k3, BUDGET_OUTCOME_ANSWERED), 0);
        ck_assert_int_eq(budget_show(s, d, &answers, &n), 0);
        ck_assert_uint_eq(n, 2);
        ck_assert_uint_eq(answers[0].in_flight, 0);
        ck_assert_uint_eq(answers[1].in_flight, 0);

        s = budget_close(s);
        tmpdir_done(&t);
}
END_TEST

/* Deferred reservations: taken in memory at once (limits and all), on disk only after
 * budget_flush(); a commit or release of a dirty budget persists it with its directory; a
 * reopen sees exactly what was flushed. */
START_TEST(test_deferred) {
        _cleanup_(budget_closep) BudgetStore *s = NULL;
        uint8_t d[BUDGET_DIGEST_SIZE], d2[BUDGET_DIGEST_SIZE];
        _cleanup_close_ int bfd = -1;
        BudgetKey a = key_of("1.0.0", ""), b = key_of("1.0.1", ""), c = key_of("1.0.2", "");
        BudgetEntry e;
        char name[80], name2[80];
        TmpDir t;

        tmpdir_new(&t);
        s = open_store(t.fd);
        bfd = openat(t.fd, BUDGET_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(bfd, 0);
        digest_of("deferred", d);
        digest_of("deferred 2", d2);
        budget_file(d, name);
        budget_file(d2, name2);
        ck_assert(!budget_dirty(s));
        ck_assert_int_eq(budget_flush(s), 0); /* nothing to do */
        ck_assert_int_eq(budget_reserve_deferred(s, d, &a, 2), 0);
        ck_assert_int_eq(budget_reserve_deferred(s, d, &b, 2), 0);
        /* The limit counts deferred slots: a third question does not fit. */
        ck_assert_int_eq(budget_reserve_deferred(s, d, &c, 2), -EDQUOT);
        ck_assert_int_eq(budget_reserve_deferred(s, d2, &a, 2), 0);
        ck_assert_int_eq(budget_charged(s, d, &a), 1);
        ck_assert(budget_dirty(s));
        ck_assert(!exists_at(bfd, name));
        ck_assert(!exists_at(bfd, name2));
        ck_assert_int_eq(budget_flush(s), 0);
        ck_assert(!budget_dirty(s));
        ck_assert(exists_at(bfd, name));
        ck_assert(exists_at(bfd, name2));
        /* Commit and release of a budget made dirty again persist it themselves. */
        ck_assert_int_eq(budget_commit(s, d, &a, BUDGET_OUTCOME_ONE), 0);
        ck_assert_int_eq(budget_release(s, d, &b), 0);
        ck_assert_int_eq(budget_reserve_deferred(s, d2, &b, 2), 0);
        ck_assert(budget_dirty(s));
        ck_assert_int_eq(budget_commit(s, d2, &b, BUDGET_OUTCOME_ZERO), 0);
        ck_assert(!budget_dirty(s));
        ck_assert_int_eq(budget_release(s, d2, &a), 0);
        s = budget_close(s);
        s = open_store(t.fd);
        ck_assert_int_eq(budget_lookup(s, d, &a, &e), 1);
        ck_assert_int_eq(e.outcome, BUDGET_OUTCOME_ONE);
        ck_assert_int_eq(budget_charged(s, d, &b), 0);
        ck_assert_int_eq(budget_lookup(s, d2, &b, &e), 1);
        ck_assert_int_eq(e.outcome, BUDGET_OUTCOME_ZERO);
        ck_assert_uint_eq(budget_used(s, d2), 1);
        /* A deferred reservation left at close is written by the close. */
        ck_assert_int_eq(budget_reserve_deferred(s, d2, &c, 4), 0);
        s = budget_close(s);
        s = open_store(t.fd);
        ck_assert_int_eq(budget_charged(s, d2, &c), 1);
        s = budget_close(s);
        tmpdir_done(&t);
}
END_TEST

static unsigned barrier_calls;

static void count_barrier(void *userdata) {
        barrier_calls++;
}

/* The group commit's batches: a batch takes every deferred change as text and counts it as on
 * its way; changes made meanwhile wait for the next; generations say what is durable; a failed
 * batch's budgets go into the next one; a commit deferred changes only memory until its batch;
 * the barrier comes before every write the store makes itself. */
START_TEST(test_batches) {
        _cleanup_(budget_closep) BudgetStore *s = NULL;
        uint8_t d[BUDGET_DIGEST_SIZE], d2[BUDGET_DIGEST_SIZE];
        _cleanup_close_ int bfd = -1;
        BudgetKey a = key_of("1.0.0", ""), b = key_of("1.0.1", ""), v = key_of("1.0.0", "x=y");
        BudgetBatch *batch = NULL;
        BudgetEntry e;
        char name[80], name2[80];
        uint64_t g1, g2;
        TmpDir t;

        tmpdir_new(&t);
        s = open_store(t.fd);
        bfd = openat(t.fd, BUDGET_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(bfd, 0);
        digest_of("batch", d);
        digest_of("batch 2", d2);
        budget_file(d, name);
        budget_file(d2, name2);

        /* Nothing waits: no batch, and everything counts as durable. */
        ck_assert_int_eq(budget_batch_take(s, &batch), 0);
        ck_assert_ptr_null(batch);
        ck_assert_uint_eq(budget_durable_generation(s), budget_generation(s));

        ck_assert_int_eq(budget_reserve_deferred(s, d, &a, 4), 0);
        g1 = budget_generation(s);
        ck_assert_uint_gt(g1, budget_durable_generation(s));
        /* A second run of the same question holds the slot: no change, no new generation. */
        ck_assert_int_eq(budget_reserve_deferred(s, d, &a, 4), 0);
        ck_assert_uint_eq(budget_generation(s), g1);
        ck_assert_int_eq(budget_batch_take(s, &batch), 0);
        ck_assert_ptr_nonnull(batch);
        ck_assert_uint_eq(budget_batch_generation(batch), g1);
        ck_assert(!budget_dirty(s));
        /* Taken is not written. A change made now waits for the next batch. */
        ck_assert(!exists_at(bfd, name));
        ck_assert_int_eq(budget_reserve_deferred(s, d2, &a, 4), 0);
        g2 = budget_generation(s);
        ck_assert_uint_gt(g2, g1);
        ck_assert(budget_dirty(s));
        ck_assert_int_eq(budget_batch_write(batch), 0);
        ck_assert(exists_at(bfd, name));
        ck_assert(!exists_at(bfd, name2));
        batch = budget_batch_done(s, batch, 0);
        ck_assert_uint_eq(budget_durable_generation(s), g1);

        /* A failed batch: its budgets wait again, nothing counts as durable. */
        ck_assert_int_eq(budget_batch_take(s, &batch), 0);
        ck_assert_ptr_nonnull(batch);
        ck_assert(!budget_dirty(s));
        batch = budget_batch_done(s, batch, -EIO);
        ck_assert(budget_dirty(s));
        ck_assert_uint_eq(budget_durable_generation(s), g1);
        ck_assert_uint_eq(budget_generation(s), g2);
        ck_assert_int_eq(budget_batch_take(s, &batch), 0);
        ck_assert_int_eq(budget_batch_write(batch), 0);
        batch = budget_batch_done(s, batch, 0);
        ck_assert_uint_eq(budget_durable_generation(s), g2);
        ck_assert(exists_at(bfd, name2));

        /* A deferred commit: the cache answers at once, the disk holds the reservation until
         * the next batch. */
        ck_assert_int_eq(budget_commit_deferred(s, d, &a, BUDGET_OUTCOME_ONE, 7), 0);
        ck_assert_int_eq(budget_lookup(s, d, &a, &e), 1);
        ck_assert_int_eq(e.outcome, BUDGET_OUTCOME_ONE);
        ck_assert(budget_dirty(s));
        ck_assert_int_eq(budget_commit_deferred(s, d, &a, BUDGET_OUTCOME_ONE, 7), 0);
        ck_assert_int_eq(budget_commit_deferred(s, d, &a, BUDGET_OUTCOME_ZERO, 7), -EEXIST);
        ck_assert_int_eq(budget_commit_deferred(s, d, &b, BUDGET_OUTCOME_ZERO, 7), -ENOENT);
        ck_assert_int_eq(budget_commit_deferred(s, d, &a, BUDGET_OUTCOME_ANSWERED, 7), -EINVAL);
        ck_assert_int_eq(budget_reserve_deferred(s, d, &v, 4), 0);
        ck_assert_int_eq(budget_commit_deferred(s, d, &v, BUDGET_OUTCOME_ONE, 7), -EINVAL);
        ck_assert_int_eq(budget_commit_deferred(s, d, &v, BUDGET_OUTCOME_ANSWERED, 7), 0);
        s = budget_close(s); /* a close writes what waits */
        s = open_store(t.fd);
        ck_assert_int_eq(budget_lookup(s, d, &a, &e), 1);
        ck_assert_int_eq(e.outcome, BUDGET_OUTCOME_ONE);
        ck_assert_uint_eq(e.ran_usec, 7);
        ck_assert_int_eq(budget_charged(s, d, &v), 1);

        /* The barrier: before the store's own writes, never for memory-only changes. */
        barrier_calls = 0;
        budget_set_barrier(s, count_barrier, NULL);
        ck_assert_int_eq(budget_reserve_deferred(s, d, &b, 4), 0);
        ck_assert_uint_eq(barrier_calls, 0);
        ck_assert_int_eq(budget_release(s, d, &b), 0);
        ck_assert_uint_eq(barrier_calls, 1);
        ck_assert_int_eq(budget_reserve(s, d2, &b, 4), 0);
        ck_assert_uint_eq(barrier_calls, 2);
        ck_assert_int_eq(budget_flush(s), 0);
        ck_assert_uint_eq(barrier_calls, 3);
        ck_assert_int_eq(budget_reset(s, d2), 1);
        ck_assert_uint_eq(barrier_calls, 4);
        budget_set_barrier(s, NULL, NULL);
        s = budget_close(s);
        tmpdir_done(&t);
}
END_TEST

START_TEST(test_persistence) {
        _cleanup_(budget_closep) BudgetStore *s = NULL;
        _cleanup_free_ BudgetSummary *list = NULL;
        _cleanup_free_ BudgetAnswer *answers = NULL;
        _cleanup_free_ char *text = NULL, *expected = NULL;
        _cleanup_close_ int bfd = -1;
        uint8_t d[BUDGET_DIGEST_SIZE], d2[BUDGET_DIGEST_SIZE];
        char name[80], hex[65];
        BudgetKey a, b, c;
        BudgetEntry e;
        struct stat st;
        size_t n;
        TmpDir t;

        tmpdir_new(&t);
        s = open_store(t.fd);
        ck_assert_int_eq(fstatat(t.fd, BUDGET_DIR, &st, 0), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0700);
        digest_of("persist", d);
        digest_of("persist 2", d2);
        a = key_of("1.0.0", "needle=email");
        b = key_of("1.0.0", "");
        c = key_of("1.2.0", "b=y,a=x");
        ck_assert_int_eq(budget_reserve(s, d, &a, 4), 0);
        ck_assert_int_eq(budget_commit(s, d, &a, BUDGET_OUTCOME_ANSWERED), 0);
        ck_assert_int_eq(budget_reserve(s, d, &b, 4), 0);
        ck_assert_int_eq(budget_commit(s, d, &b, BUDGET_OUTCOME_PLUGIN_ERROR), 0);
        /* A run in flight when lockd stops: its reservation stays charged. */
        ck_assert_int_eq(budget_reserve(s, d, &c, 4), 0);
        ck_assert_int_eq(budget_reserve(s, d2, &b, 4), 0);
        ck_assert_int_eq(budget_commit(s, d2, &b, BUDGET_OUTCOME_ZERO), 0);

        /* The file is the documented canonical JSON. */
        bfd = openat(t.fd, BUDGET_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(bfd, 0);
        budget_file(d2, name);
        text = read_at(bfd, name);
        hex_encode(d2, BUDGET_DIGEST_SIZE, hex);
        ck_assert_int_ge(
                asprintf(&expected,
                         "{\"answers\":[{\"inputs\":[],\"outcome\":\"0\",\"plugin\":\"" PLUGIN
                         "\",\"time\":"),
                0);
        ck_assert_msg(strncmp(text, expected, strlen(expected)) == 0, "%s", text);
        expected = mfree(expected);
        ck_assert_int_ge(asprintf(&expected,
                                  ",\"version\":\"1.0.0\"}],\"digest\":\"%s\",\"format\":1}\n",
                                  hex),
                         0);
        ck_assert_msg(strlen(text) > strlen(expected) &&
                              strcmp(text + strlen(text) - strlen(expected), expected) == 0,
                      "%s", text);

        s = budget_close(s);
        s = open_store(t.fd);
        ck_assert_uint_eq(budget_used(s, d), 3);
        ck_assert_uint_eq(budget_used(s, d2), 1);
        ck_assert_int_eq(budget_lookup(s, d, &a, &e), 0); /* answered, by value only */
        ck_assert_int_eq(budget_charged(s, d, &a), 1);
        ck_assert_int_eq(budget_lookup(s, d, &b, &e), 1);
        ck_assert_int_eq(e.outcome, BUDGET_OUTCOME_PLUGIN_ERROR);
        ck_assert_int_eq(budget_lookup(s, d, &c, &e), 0);
        ck_assert_int_eq(budget_lookup(s, d2, &b, &e), 1);
        ck_assert_int_eq(e.outcome, BUDGET_OUTCOME_ZERO);
        {
                BudgetKey more = key_of("3.0.0", "");

                ck_assert_int_eq(budget_reserve(s, d, &more, 3), -EDQUOT);
        }

        ck_assert_int_eq(budget_list(s, &list, &n), 0);
        ck_assert_uint_eq(n, 2);
        ck_assert_int_lt(memcmp(list[0].digest, list[1].digest, BUDGET_DIGEST_SIZE), 0);
        ck_assert_uint_eq(list[0].used + list[1].used, 4);

        ck_assert_int_eq(budget_show(s, d, &answers, &n), 0);
        ck_assert_uint_eq(n, 3);
        ck_assert_str_eq(answers[0].key.version, "1.0.0"); /* "" sorts before "needle" */
        ck_assert_uint_eq(answers[0].key.n_pairs, 0);
        ck_assert_uint_eq(answers[1].key.n_pairs, 1);
        ck_assert_str_eq(answers[1].key.pairs[0].input, "needle");
        ck_assert_str_eq(answers[2].key.version, "1.2.0");
        ck_assert_str_eq(answers[2].key.pairs[0].input, "a");
        ck_assert_int_eq(answers[2].entry.outcome, BUDGET_OUTCOME_RESERVED);
        ck_assert_uint_eq(answers[2].in_flight, 0);

        /* The stale reservation: a new run takes it for free and fills it. */
        ck_assert_int_eq(budget_charged(s, d, &c), 1);
        ck_assert_int_eq(budget_reserve(s, d, &c, 3), 0);
        ck_assert_int_eq(budget_commit(s, d, &c, BUDGET_OUTCOME_ANSWERED), 0);
        s = budget_close(s);
        s = open_store(t.fd);
        ck_assert_int_eq(budget_charged(s, d, &c), 1);
        answers = mfree(answers);
        ck_assert_int_eq(budget_show(s, d, &answers, &n), 0);
        ck_assert_int_eq(answers[2].entry.outcome, BUDGET_OUTCOME_ANSWERED);
        answers = mfree(answers);

        s = budget_close(s);
        tmpdir_done(&t);
}
END_TEST

START_TEST(test_reset) {
        _cleanup_(budget_closep) BudgetStore *s = NULL;
        uint8_t d[BUDGET_DIGEST_SIZE], other[BUDGET_DIGEST_SIZE];
        BudgetKey a, b, c;
        BudgetEntry e;
        TmpDir t;

        tmpdir_new(&t);
        s = open_store(t.fd);
        digest_of("reset", d);
        digest_of("other", other);
        a = key_of("1.0.0", "");
        b = key_of("1.0.1", "");
        c = key_of("1.0.2", "");
        ck_assert_int_eq(budget_reset(s, d), 0);
        ck_assert_int_eq(budget_reserve(s, d, &a, 3), 0);
        ck_assert_int_eq(budget_commit(s, d, &a, BUDGET_OUTCOME_ONE), 0);
        ck_assert_int_eq(budget_reserve(s, d, &b, 3), 0); /* in flight across the reset */
        ck_assert_int_eq(budget_reserve(s, other, &a, 3), 0);
        ck_assert_int_eq(budget_commit(s, other, &a, BUDGET_OUTCOME_ONE), 0);

        ck_assert_int_eq(budget_reset(s, d), 1);
        ck_assert_uint_eq(budget_used(s, d), 1);
        ck_assert_int_eq(budget_lookup(s, d, &a, &e), 0);
        ck_assert_int_eq(budget_lookup(s, other, &a, &e), 1); /* another content untouched */
        ck_assert_int_eq(budget_commit(s, d, &b, BUDGET_OUTCOME_ZERO), 0);
        ck_assert_int_eq(budget_reserve(s, d, &a, 3), 0);
        ck_assert_int_eq(budget_reserve(s, d, &c, 3), 0);
        ck_assert_int_eq(budget_commit(s, d, &a, BUDGET_OUTCOME_ZERO), 0);
        ck_assert_int_eq(budget_commit(s, d, &c, BUDGET_OUTCOME_ZERO), 0);

        /* A reset answer with a run of it in flight: the slot stays, the outcome goes. */
        ck_assert_int_eq(budget_reserve(s, d, &c, 3), 0);
        ck_assert_int_eq(budget_reset(s, d), 2);
        ck_assert_uint_eq(budget_used(s, d), 1);
        ck_assert_int_eq(budget_lookup(s, d, &c, &e), 0);
        ck_assert_int_eq(budget_commit(s, d, &c, BUDGET_OUTCOME_ONE), 0);
        ck_assert_int_eq(budget_lookup(s, d, &c, &e), 1);
        ck_assert_int_eq(e.outcome, BUDGET_OUTCOME_ONE);

        /* Reset on disk too. */
        ck_assert_int_eq(budget_reset(s, d), 1);
        ck_assert_uint_eq(budget_used(s, d), 0);
        s = budget_close(s);
        s = open_store(t.fd);
        ck_assert_uint_eq(budget_used(s, d), 0);
        ck_assert_uint_eq(budget_used(s, other), 1);
        ck_assert_int_eq(budget_reset(s, NULL), -EINVAL);

        s = budget_close(s);
        tmpdir_done(&t);
}
END_TEST

/* Copies the files of dir/budgets (if any) into statefd's budgets/. */
/*
 * The name a fixture file stands for. Names a packaging tool deletes as editor leftovers (dh_clean
 * and dpkg-source drop "*~" and ".#*") are stored spelled out: "@TILDE@" at the end is "~",
 * "@DOTHASH@" at the start ".#". The test writes the real name into its temporary directory.
 */
static const char *fixture_name(const char *stored, char *buf, size_t size) {
        const char *tilde = strstr(stored, "@TILDE@");

        if (strncmp(stored, "@DOTHASH@", 9) == 0)
                snprintf(buf, size, ".#%s", stored + 9);
        else if (tilde && tilde[7] == '\0')
                snprintf(buf, size, "%.*s~", (int)(tilde - stored), stored);
        else
                snprintf(buf, size, "%s", stored);
        return buf;
}

static void copy_case(const char *dir, int statefd) {
        char path[PATH_MAX], name[NAME_MAX + 1];
        _cleanup_close_ int bfd = -1;
        DIR *d;
        struct dirent *de;

        snprintf(path, sizeof(path), "%s/budgets", dir);
        d = opendir(path);
        if (!d) {
                ck_assert_int_eq(errno, ENOENT);
                return;
        }
        ck_assert_int_eq(mkdirat(statefd, BUDGET_DIR, 0700), 0);
        bfd = openat(statefd, BUDGET_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(bfd, 0);
        while ((de = readdir(d))) {
                _cleanup_free_ char *buf = NULL, *file = NULL;
                size_t len;

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                ck_assert_int_ge(asprintf(&file, "%s/budgets/%s", dir, de->d_name), 0);
                ck_assert_int_eq(read_full_file(file, BUDGET_FILE_MAX * 2, &buf, &len), 0);
                write_at(bfd, fixture_name(de->d_name, name, sizeof(name)), buf, len);
        }
        closedir(d);
}

static char *case_expected(const char *dir) {
        char path[PATH_MAX];
        char *buf = NULL;
        size_t len;

        snprintf(path, sizeof(path), "%s/expected", dir);
        ck_assert_int_eq(read_full_file(path, 4096, &buf, &len), 0);
        return buf;
}

/* Calls f for every case directory under tests/data/budget/<kind>; returns how many. */
static size_t for_each_case(const char *kind, void (*f)(const char *dir, const char *name)) {
        char path[PATH_MAX];
        struct dirent **names;
        int n;

        snprintf(path, sizeof(path), "%s/budget/%s", data_dir(), kind);
        n = scandir(path, &names, NULL, alphasort);
        ck_assert_msg(n >= 0, "%s: %m", path);
        for (int i = 0; i < n; i++) {
                if (names[i]->d_name[0] != '.') {
                        _cleanup_free_ char *dir = NULL;

                        ck_assert_int_ge(asprintf(&dir, "%s/%s", path, names[i]->d_name), 0);
                        f(dir, names[i]->d_name);
                }
                free(names[i]);
        }
        free(names);
        return (size_t)n - 2;
}

/* expected: "<hex digest> <slots used>" per content, and no other budget (the text is cut up). The
 * number of budgets. */
static size_t expect_budgets(BudgetStore *s, char *expected, const char *name) {
        _cleanup_free_ BudgetSummary *list = NULL;
        size_t n, lines = 0;

        for (char *line = expected, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
                uint8_t digest[BUDGET_DIGEST_SIZE];
                char hex[65];
                size_t used;

                *nl = 0;
                ck_assert_int_eq(sscanf(line, "%64s %zu", hex, &used), 2);
                ck_assert_int_eq(hex_decode(hex, strlen(hex), digest, sizeof(digest)), 0);
                ck_assert_msg(budget_used(s, digest) == used, "%s: %s is %zu", name, line,
                              budget_used(s, digest));
                lines++;
        }
        ck_assert_int_eq(budget_list(s, &list, &n), 0);
        ck_assert_msg(n == lines, "%s: %zu budgets", name, n);
        return lines;
}

static void valid_case(const char *dir, const char *name) {
        _cleanup_(budget_closep) BudgetStore *s = NULL;
        _cleanup_free_ char *expected = case_expected(dir);
        _cleanup_close_ int bfd = -1;
        BudgetError err;
        struct dirent *de;
        DIR *d;
        TmpDir t;

        tmpdir_new(&t);
        copy_case(dir, t.fd);
        ck_assert_msg(budget_open(t.fd, &s, &err) == 0, "%s: %s", name, err.message);
        expect_budgets(s, expected, name);

        /* What is left in budgets/: budget files and a snapshot only (an interrupted write's
         * file is gone). */
        bfd = openat(t.fd, BUDGET_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(bfd, 0);
        d = fdopendir(TAKE_FD(bfd));
        ck_assert_ptr_nonnull(d);
        while ((de = readdir(d)))
                ck_assert_msg(strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
                                      strcmp(de->d_name, BUDGET_CHECKPOINT) == 0 ||
                                      strlen(de->d_name) == 64 + 5,
                              "%s: %s left", name, de->d_name);
        closedir(d);

        s = budget_close(s);
        tmpdir_done(&t);
}

static void invalid_case(const char *dir, const char *name) {
        BudgetStore *s = (BudgetStore *)0x1;
        _cleanup_free_ char *expected = case_expected(dir);
        char errname[32], file[128];
        BudgetError err;
        int r, want;
        TmpDir t;

        /* expected: "<errno name> <file the message names>". */
        ck_assert_int_eq(sscanf(expected, "%31s %127s", errname, file), 2);
        want = strcmp(errname, "EBADMSG") == 0  ? -EBADMSG
               : strcmp(errname, "EINVAL") == 0 ? -EINVAL
               : strcmp(errname, "EFBIG") == 0  ? -EFBIG
                                                : 0;
        ck_assert_msg(want != 0, "%s: unknown errno %s", name, errname);

        tmpdir_new(&t);
        copy_case(dir, t.fd);
        r = budget_open(t.fd, &s, &err);
        ck_assert_msg(r == want, "%s: %d (%s)", name, r, err.message);
        ck_assert_ptr_eq(s, (BudgetStore *)0x1);
        ck_assert_msg(strstr(err.message, file), "%s: message \"%s\" does not name %s", name,
                      err.message, file);
        tmpdir_done(&t);
}

START_TEST(test_data_valid) {
        ck_assert_uint_ge(for_each_case("valid", valid_case), 7);
}
END_TEST

START_TEST(test_data_invalid) {
        ck_assert_uint_ge(for_each_case("invalid", invalid_case), 30);
}
END_TEST

/*
 * A replay case: budgets/ (the checkpoint's files and BUDGET_CHECKPOINT, or none), audit.jsonl
 * (the log's current file) and expected: "<hex> <slots used>" per content after the replay, or
 * "EBADMSG <a word the message holds>" for a refused one.
 */
static void replay_case(const char *dir, const char *name) {
        _cleanup_(budget_closep) BudgetStore *s = NULL;
        _cleanup_free_ char *expected = case_expected(dir), *log = NULL, *path = NULL;
        _cleanup_free_ BudgetSummary *list = NULL;
        size_t len, n = 0, lines = 0, applied;
        BudgetError err;
        TmpDir t;
        int r;

        tmpdir_new(&t);
        copy_case(dir, t.fd);
        ck_assert_int_ge(asprintf(&path, "%s/audit.jsonl", dir), 0);
        ck_assert_int_eq(read_full_file(path, 1 << 20, &log, &len), 0);
        ck_assert_msg(budget_open(t.fd, &s, &err) == 0, "%s: %s", name, err.message);
        r = budget_replay(s, log, len, &applied, &err);
        if (strncmp(expected, "EBADMSG ", 8) == 0) {
                char word[64];

                ck_assert_int_eq(sscanf(expected + 8, "%63s", word), 1);
                ck_assert_msg(r == -EBADMSG, "%s: %d", name, r);
                ck_assert_msg(strstr(err.message, word), "%s: \"%s\" does not say %s", name,
                              err.message, word);
        } else {
                ck_assert_msg(r == 0, "%s: %d (%s)", name, r, err.message);
                lines = expect_budgets(s, expected, name);
                /* Idempotent: the same records again change nothing more. */
                ck_assert_int_eq(budget_replay(s, log, len, NULL, &err), 0);
                ck_assert_int_eq(budget_list(s, &list, &n), 0);
                ck_assert_msg(n == lines, "%s: %zu budgets after a second replay", name, n);
        }
        s = budget_close(s);
        tmpdir_done(&t);
}

START_TEST(test_data_replay) {
        ck_assert_uint_ge(for_each_case("replay", replay_case), 16);
}
END_TEST

/* The write-ahead log as the engine keeps it (commit.c): each change a "budget" record. */
static int wal_append(const BudgetChange *c, void *userdata) {
        AuditField f[BUDGET_CHANGE_FIELDS_MAX];
        BudgetChangeText text;
        int n = budget_change_fields(c, &text, f);

        return n < 0 ? n : audit_append_fields_nosync(userdata, AUDIT_BUDGET, f, (size_t)n);
}

static void wal_position(uint64_t *seq, char head[BUDGET_HEAD_HEX + 1], void *userdata) {
        *seq = audit_get_seq(userdata);
        memcpy(head, audit_get_head(userdata), BUDGET_HEAD_HEX + 1);
}

static const BudgetLog wal = {.append = wal_append, .position = wal_position};

/* A start as the engine's: the log, the budgets replayed from its current file, a checkpoint. */
static void wal_start(int statefd, Audit **ret_a, BudgetStore **ret_s) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_close_ int dfd = -1, fd = -1;
        BudgetError err;
        size_t len = 0;

        ck_assert_int_eq(audit_open(statefd, ret_a), 0);
        dfd = openat(statefd, AUDIT_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        fd = openat(dfd, AUDIT_FILE, O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(read_full_fd(fd, 1 << 24, &buf, &len), 0);
        ck_assert_msg(budget_open(statefd, ret_s, &err) == 0, "%s", err.message);
        ck_assert_msg(budget_replay(*ret_s, buf, len, NULL, &err) == 0, "%s", err.message);
        budget_set_log(*ret_s, &wal, *ret_a);
        ck_assert_int_eq(budget_checkpoint(*ret_s), 0);
}

/* Runs f in a child that starts as the engine does and is killed (SIGKILL) right after f, with
 * nothing closed or flushed: the state directory is what a crash at that point leaves. */
static void crash_after(int statefd, void (*f)(Audit *a, BudgetStore *s, int statefd)) {
        int status;
        pid_t pid = fork();

        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                Audit *a = NULL;
                BudgetStore *s = NULL;

                wal_start(statefd, &a, &s);
                f(a, s, statefd);
                raise(SIGKILL);
                _exit(1);
        }
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the child failed: %d",
                      status);
}

static uint8_t wal_d[BUDGET_DIGEST_SIZE], wal_d2[BUDGET_DIGEST_SIZE];

/* The reservation durable, the plugin running: no answer yet. */
static void crash_reserved(Audit *a, BudgetStore *s, int statefd) {
        BudgetKey k = key_of("1.0.0", "");

        if (budget_reserve_deferred(s, wal_d, &k, 2) < 0 || audit_sync(a) < 0)
                _exit(2);
}

/* The answer left (its run record durable after the reservation's), its outcome's record not
 * durable yet, no checkpoint since. */
static void crash_answered(Audit *a, BudgetStore *s, int statefd) {
        BudgetKey k = key_of("1.0.1", "");

        if (budget_reserve_deferred(s, wal_d, &k, 2) < 0 || audit_sync(a) < 0 ||
            budget_commit_deferred(s, wal_d, &k, BUDGET_OUTCOME_ONE, 9) < 0)
                _exit(2);
}

/* In the middle of a checkpoint: its files written, its position not (the old one put back). */
static void crash_mid_checkpoint(Audit *a, BudgetStore *s, int statefd) {
        _cleanup_free_ char *old = NULL;
        _cleanup_close_ int bfd = openat(statefd, BUDGET_DIR, O_RDONLY | O_DIRECTORY);
        BudgetKey k2 = key_of("1.0.2", ""), k3 = key_of("1.0.3", "");

        old = read_at(bfd, BUDGET_CHECKPOINT);
        if (budget_reserve_deferred(s, wal_d2, &k2, 3) < 0 ||
            budget_commit_deferred(s, wal_d2, &k2, BUDGET_OUTCOME_ZERO, 3) < 0 ||
            budget_reserve_deferred(s, wal_d2, &k3, 3) < 0 || budget_release(s, wal_d2, &k3) < 0 ||
            audit_sync(a) < 0 || budget_checkpoint(s) < 0)
                _exit(2);
        write_at(bfd, BUDGET_CHECKPOINT, old, strlen(old));
}

/* A reset recorded as the console does, with a run in flight on the content. */
static void crash_after_reset(Audit *a, BudgetStore *s, int statefd) {
        _cleanup_(json_decrefp) json_t *f = NULL;
        BudgetKey k4 = key_of("1.0.4", "");
        char hex[65];

        hex_encode(wal_d2, BUDGET_DIGEST_SIZE, hex);
        f = json_pack("{s:s}", "handle_sha256", hex);
        if (budget_reserve_deferred(s, wal_d2, &k4, 3) < 0 ||
            audit_append(a, AUDIT_BUDGET_RESET, f) < 0 || budget_reset(s, wal_d2) != 1 ||
            audit_sync(a) < 0)
                _exit(2);
}

/* SIGKILL at each step of the question's path: the slots that answers used stay charged, and the
 * budgets after a restart are the ones memory held. */
START_TEST(test_wal_crash) {
        BudgetKey k0 = key_of("1.0.0", ""), k1 = key_of("1.0.1", ""), k2 = key_of("1.0.2", ""),
                  k4 = key_of("1.0.4", "");
        Audit *a = NULL;
        BudgetStore *s = NULL;
        BudgetEntry e;
        TmpDir t;

        tmpdir_new(&t);
        digest_of("wal", wal_d);
        digest_of("wal 2", wal_d2);

        crash_after(t.fd, crash_reserved);
        wal_start(t.fd, &a, &s);
        ck_assert_int_eq(budget_charged(s, wal_d, &k0), 1);
        ck_assert_uint_eq(budget_used(s, wal_d), 1);
        s = budget_close(s);
        a = audit_close(a);

        crash_after(t.fd, crash_answered);
        wal_start(t.fd, &a, &s);
        ck_assert_int_eq(budget_charged(s, wal_d, &k1), 1);
        ck_assert_uint_eq(budget_used(s, wal_d), 2);
        /* A crash keeps the page cache: the outcome's record was written, so it is cached. */
        ck_assert_int_eq(budget_lookup(s, wal_d, &k1, &e), 1);
        ck_assert_int_eq(e.outcome, BUDGET_OUTCOME_ONE);
        ck_assert_uint_eq(e.ran_usec, 9);
        s = budget_close(s);
        a = audit_close(a);

        crash_after(t.fd, crash_mid_checkpoint);
        wal_start(t.fd, &a, &s);
        ck_assert_uint_eq(budget_used(s, wal_d2), 1);
        ck_assert_int_eq(budget_lookup(s, wal_d2, &k2, &e), 1);
        ck_assert_int_eq(e.outcome, BUDGET_OUTCOME_ZERO);
        ck_assert_uint_eq(budget_used(s, wal_d), 2);
        s = budget_close(s);
        a = audit_close(a);

        crash_after(t.fd, crash_after_reset);
        wal_start(t.fd, &a, &s);
        ck_assert_uint_eq(budget_used(s, wal_d2), 1);
        ck_assert_int_eq(budget_charged(s, wal_d2, &k4), 1);
        ck_assert_int_eq(budget_lookup(s, wal_d2, &k2, &e), 0);
        s = budget_close(s);
        a = audit_close(a);
        tmpdir_done(&t);
}
END_TEST

static int failing_errno;

static int failing_append(const BudgetChange *c, void *userdata) {
        return failing_errno ? failing_errno : wal_append(c, userdata);
}

static const BudgetLog failing_wal = {.append = failing_append, .position = wal_position};

/* A record that cannot be written (ENOSPC, or a short write the file is cut back from: a file
 * size limit makes the kernel write part of the line) changes nothing: no slot charged for a
 * reservation, the slot still charged after a failed outcome or release, a reset refused; the
 * log takes the next record and its chain verifies. */
START_TEST(test_wal_write_failures) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_close_ int dfd = -1, fd = -1;
        BudgetKey a0 = key_of("1.0.0", ""), a1 = key_of("1.0.1", "");
        Audit *a = NULL;
        BudgetStore *s = NULL;
        AuditVerifyResult res;
        struct rlimit old, lim;
        BudgetEntry e;
        size_t len;
        TmpDir t;

        tmpdir_new(&t);
        digest_of("wal failures", wal_d);
        digest_of("wal failures 2", wal_d2);
        wal_start(t.fd, &a, &s);
        budget_set_log(s, &failing_wal, a);

        failing_errno = -ENOSPC;
        ck_assert_int_eq(budget_reserve_deferred(s, wal_d, &a0, 2), -ENOSPC);
        ck_assert_uint_eq(budget_used(s, wal_d), 0);
        failing_errno = 0;
        ck_assert_int_eq(budget_reserve_deferred(s, wal_d, &a0, 2), 0);
        failing_errno = -ENOSPC;
        ck_assert_int_eq(budget_commit_deferred(s, wal_d, &a0, BUDGET_OUTCOME_ONE, 5), -ENOSPC);
        ck_assert_int_eq(budget_lookup(s, wal_d, &a0, &e), 0);
        ck_assert_int_eq(budget_charged(s, wal_d, &a0), 1);
        failing_errno = 0;
        ck_assert_int_eq(budget_reserve_deferred(s, wal_d, &a1, 2), 0);
        failing_errno = -ENOSPC;
        ck_assert_int_eq(budget_release(s, wal_d, &a1), -ENOSPC);
        ck_assert_uint_eq(budget_used(s, wal_d), 2);
        ck_assert_int_eq(budget_reserve_deferred(s, wal_d, &a1, 2), 0); /* in flight again */
        ck_assert_int_eq(budget_reset(s, wal_d), -ENOSPC);
        ck_assert_uint_eq(budget_used(s, wal_d), 2);
        failing_errno = 0;

        /* A short write of the real log: the line is cut away, the change refused. */
        signal(SIGXFSZ, SIG_IGN);
        ck_assert_int_eq(audit_sync(a), 0);
        ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
        dfd = openat(t.fd, AUDIT_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        fd = openat(dfd, AUDIT_FILE, O_RDONLY | O_CLOEXEC);
        {
                struct stat st;

                ck_assert_int_eq(fstat(fd, &st), 0);
                lim = (struct rlimit){.rlim_cur = (rlim_t)st.st_size + 40,
                                      .rlim_max = old.rlim_max};
        }
        ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
        ck_assert_int_lt(budget_reserve_deferred(s, wal_d2, &a0, 2), 0);
        ck_assert_uint_eq(budget_used(s, wal_d2), 0);
        ck_assert_int_lt(budget_commit_deferred(s, wal_d, &a1, BUDGET_OUTCOME_ONE, 5), 0);
        ck_assert_int_eq(budget_lookup(s, wal_d, &a1, &e), 0);
        ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
        signal(SIGXFSZ, SIG_DFL);
        ck_assert_int_eq(budget_reserve_deferred(s, wal_d2, &a0, 2), 0);
        ck_assert_int_eq(audit_sync(a), 0);
        ck_assert_int_eq(read_full_fd(fd, 1 << 24, &buf, &len), 0);
        ck_assert_int_eq(audit_verify_buffer(buf, len, &res), 0);
        ck_assert_int_eq(res.error, AUDIT_VERIFY_OK);
        s = budget_close(s);
        a = audit_close(a);
        tmpdir_done(&t);
}
END_TEST

/* Refusals the data directory cannot hold: other file types, sizes, the digest cap. */
START_TEST(test_refusals) {
        BudgetStore *s = NULL;
        _cleanup_free_ char *big = NULL;
        _cleanup_close_ int bfd = -1;
        uint8_t d[BUDGET_DIGEST_SIZE];
        char name[80];
        BudgetError err;
        BudgetKey k;
        TmpDir t;

        tmpdir_new(&t);
        digest_of("refusals", d);
        budget_file(d, name);
        s = open_store(t.fd);
        k = key_of("1.0.0", "");
        ck_assert_int_eq(budget_reserve(s, d, &k, 1), 0);
        ck_assert_int_eq(budget_commit(s, d, &k, BUDGET_OUTCOME_ONE), 0);
        s = budget_close(s);
        bfd = openat(t.fd, BUDGET_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(bfd, 0);

        /* A symlink in place of a budget file. */
        ck_assert_int_eq(renameat(bfd, name, bfd, "real"), 0);
        ck_assert_int_eq(symlinkat("real", bfd, name), 0);
        ck_assert_int_eq(budget_open(t.fd, &s, &err), -ELOOP);
        ck_assert_ptr_null(s);
        ck_assert_ptr_nonnull(strstr(err.message, name));
        ck_assert_int_eq(unlinkat(bfd, name, 0), 0);
        ck_assert_int_eq(unlinkat(bfd, "real", 0), 0);

        /* A directory in place of a budget file. */
        ck_assert_int_eq(mkdirat(bfd, name, 0700), 0);
        ck_assert_int_eq(budget_open(t.fd, &s, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err.message, name));
        ck_assert_int_eq(unlinkat(bfd, name, AT_REMOVEDIR), 0);

        /* Larger than a budget can be. */
        big = malloc(BUDGET_FILE_MAX + 1);
        ck_assert_ptr_nonnull(big);
        memset(big, ' ', BUDGET_FILE_MAX + 1);
        write_at(bfd, name, big, BUDGET_FILE_MAX + 1);
        ck_assert_int_eq(budget_open(t.fd, &s, &err), -EFBIG);
        ck_assert_ptr_nonnull(strstr(err.message, name));
        ck_assert_int_eq(unlinkat(bfd, name, 0), 0);

        /* An unknown name is shown escaped in the message. */
        write_at(bfd, "evil\n\x1b[2J", "x", 1);
        ck_assert_int_eq(budget_open(t.fd, &s, &err), -EINVAL);
        ck_assert_msg(strstr(err.message, "evil\\n\\x1b[2J") && !strchr(err.message, '\x1b'), "%s",
                      err.message);
        ck_assert_int_eq(unlinkat(bfd, "evil\n\x1b[2J", 0), 0);

        /* budgets/ itself must be a directory. */
        bfd = safe_close(bfd);
        ck_assert_int_eq(unlinkat(t.fd, BUDGET_DIR, AT_REMOVEDIR), 0);
        ck_assert_int_eq(symlinkat(".", t.fd, BUDGET_DIR), 0);
        ck_assert_int_lt(budget_open(t.fd, &s, &err), 0);
        ck_assert_ptr_null(s);
        ck_assert_int_eq(unlinkat(t.fd, BUDGET_DIR, 0), 0);

        ck_assert_int_eq(budget_open(-1, &s, &err), -EINVAL);
        ck_assert_int_eq(budget_open(t.fd, NULL, &err), -EINVAL);
        tmpdir_done(&t);
}
END_TEST

START_TEST(test_digests_cap) {
        _cleanup_(budget_closep) BudgetStore *s = NULL;
        BudgetKey k;
        TmpDir t;

        tmpdir_new(&t);
        s = open_store(t.fd);
        ck_assert_int_eq(budget_set_digests_max(s, 0), -EINVAL);
        ck_assert_int_eq(budget_set_digests_max(s, BUDGET_DIGESTS_MAX + 1), -EINVAL);
        ck_assert_int_eq(budget_set_digests_max(s, 3), 0);
        k = key_of("1.0.0", "");
        for (unsigned i = 0; i < 4; i++) {
                uint8_t d[BUDGET_DIGEST_SIZE];
                char c[16];

                snprintf(c, sizeof(c), "content %u", i);
                digest_of(c, d);
                ck_assert_int_eq(budget_reserve(s, d, &k, 1), i < 3 ? 0 : -ENOSPC);
                if (i == 3) {
                        /* A known content still reserves; a freed one makes room. */
                        uint8_t d0[BUDGET_DIGEST_SIZE];

                        digest_of("content 0", d0);
                        ck_assert_int_eq(budget_reserve(s, d0, &k, 1), 0);
                        ck_assert_int_eq(budget_release(s, d0, &k), 0);
                        ck_assert_int_eq(budget_release(s, d0, &k), 0);
                        ck_assert_uint_eq(budget_used(s, d0), 0);
                        ck_assert_int_eq(budget_reserve(s, d, &k, 1), 0);
                }
        }
        /* Many contents through the table (growth, removal with probe runs). */
        ck_assert_int_eq(budget_set_digests_max(s, 600), 0);
        for (unsigned i = 0; i < 500; i++) {
                uint8_t d[BUDGET_DIGEST_SIZE];
                char c[16];

                snprintf(c, sizeof(c), "many %u", i);
                digest_of(c, d);
                ck_assert_int_eq(budget_reserve(s, d, &k, 1), 0);
        }
        for (unsigned i = 0; i < 500; i += 2) {
                uint8_t d[BUDGET_DIGEST_SIZE];
                char c[16];

                snprintf(c, sizeof(c), "many %u", i);
                digest_of(c, d);
                ck_assert_int_eq(budget_release(s, d, &k), 0);
        }
        for (unsigned i = 0; i < 500; i++) {
                uint8_t d[BUDGET_DIGEST_SIZE];
                char c[16];

                snprintf(c, sizeof(c), "many %u", i);
                digest_of(c, d);
                ck_assert_uint_eq(budget_used(s, d), i % 2);
        }
        s = budget_close(s);
        s = open_store(t.fd);
        ck_assert_uint_eq(budget_used(s, (const uint8_t[32]){}), 0);
        s = budget_close(s);
        tmpdir_done(&t);
}
END_TEST

/* A write that fails changes nothing in memory: nothing charged on a failed reservation, the slot
 * still charged after a failed commit or release. budgets/ is removed under the open store. */
START_TEST(test_write_failures) {
        _cleanup_(budget_closep) BudgetStore *s = NULL;
        uint8_t d[BUDGET_DIGEST_SIZE];
        char name[80];
        BudgetKey a, b;
        BudgetEntry e;
        TmpDir t;

        tmpdir_new(&t);
        digest_of("failures", d);
        budget_file(d, name);
        a = key_of("1.0.0", "");
        b = key_of("1.0.1", "");

        /* A reservation that cannot be written charges nothing. */
        s = open_store(t.fd);
        ck_assert_int_eq(unlinkat(t.fd, BUDGET_DIR, AT_REMOVEDIR), 0);
        ck_assert_int_lt(budget_reserve(s, d, &a, 2), 0);
        ck_assert_uint_eq(budget_used(s, d), 0);
        ck_assert_int_eq(budget_left(s, d, 2), 2);
        s = budget_close(s);

        s = open_store(t.fd);
        ck_assert_int_eq(budget_reserve(s, d, &a, 2), 0);
        ck_assert_int_eq(budget_reserve(s, d, &b, 2), 0);
        ck_assert_int_eq(budget_commit(s, d, &b, BUDGET_OUTCOME_ONE), 0);
        {
                _cleanup_close_ int bfd = openat(t.fd, BUDGET_DIR, O_RDONLY | O_DIRECTORY);

                ck_assert_int_eq(unlinkat(bfd, name, 0), 0);
        }
        ck_assert_int_eq(unlinkat(t.fd, BUDGET_DIR, AT_REMOVEDIR), 0);

        /* A commit that cannot be written caches nothing; the slot stays charged. */
        ck_assert_int_lt(budget_commit(s, d, &a, BUDGET_OUTCOME_ONE), 0);
        ck_assert_int_eq(budget_lookup(s, d, &a, &e), 0);
        ck_assert_uint_eq(budget_used(s, d), 2);

        /* A release that cannot be written gives nothing back (a second run took the slot). */
        ck_assert_int_eq(budget_reserve(s, d, &a, 2), 0);
        ck_assert_uint_eq(budget_used(s, d), 2);
        ck_assert_int_lt(budget_release(s, d, &a), 0);
        ck_assert_uint_eq(budget_used(s, d), 2);

        /* Nor a reset. */
        ck_assert_int_eq(budget_reserve(s, d, &b, 2), 0);
        ck_assert_int_lt(budget_reset(s, d), 0);
        ck_assert_uint_eq(budget_used(s, d), 2);
        ck_assert_int_eq(budget_lookup(s, d, &b, &e), 1);

        s = budget_close(s);
        tmpdir_done(&t);
}
END_TEST

static double seconds(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Not asserted: prints lookups per second over a store of 10 000 contents × 8 answers, and what a
 * persisted reservation and commit cost on this file system. */
START_TEST(test_bench) {
        _cleanup_(budget_closep) BudgetStore *s = NULL;
        enum { CONTENTS = 10000, ANSWERS = 8, LOOKUPS = 2000000, WRITES = 100 };
        static uint8_t digests[CONTENTS][BUDGET_DIGEST_SIZE];
        BudgetKey keys[ANSWERS];
        BudgetBatch *batch = NULL;
        Audit *a = NULL;
        struct stat st;
        double t2;
        double t0, t1;
        size_t hits = 0;
        TmpDir t;

        tmpdir_new(&t);
        for (unsigned i = 0; i < ANSWERS; i++) {
                char v[16];

                snprintf(v, sizeof(v), "1.0.%u", i);
                keys[i] = key_of(v, "");
        }
        for (unsigned i = 0; i < CONTENTS; i++) {
                char c[16];

                snprintf(c, sizeof(c), "bench %u", i);
                digest_of(c, digests[i]);
        }

        /* Written once, then loaded by budget_open() as lockd would at start. */
        s = open_store(t.fd);
        t0 = seconds();
        for (unsigned i = 0; i < WRITES; i++) {
                ck_assert_int_eq(budget_reserve(s, digests[i], &keys[0], 8), 0);
                ck_assert_int_eq(budget_commit(s, digests[i], &keys[0], BUDGET_OUTCOME_ONE), 0);
        }
        t1 = seconds();
        fprintf(stderr, "# budget_reserve+budget_commit (persisted): %.0f/s, %.2f ms each\n",
                WRITES / (t1 - t0), (t1 - t0) * 1000 / WRITES);
        s = budget_close(s);
        {
                _cleanup_close_ int bfd = openat(t.fd, BUDGET_DIR, O_RDONLY | O_DIRECTORY);
                char hex[65];

                for (unsigned i = 0; i < CONTENTS; i++) {
                        char name[80], *text = NULL;

                        hex_encode(digests[i], BUDGET_DIGEST_SIZE, hex);
                        snprintf(name, sizeof(name), "%s.json", hex);
                        ck_assert_int_ge(asprintf(&text, "{\"answers\":["), 0);
                        for (unsigned j = 0; j < ANSWERS; j++) {
                                char *more = NULL;

                                ck_assert_int_ge(asprintf(&more,
                                                          "%s%s{\"inputs\":[],\"outcome\":\"1\","
                                                          "\"plugin\":\"" PLUGIN
                                                          "\",\"time\":1,\"version\":\"1.0.%u\"}",
                                                          text, j ? "," : "", j),
                                                 0);
                                free(text);
                                text = more;
                        }
                        {
                                char *more = NULL;

                                ck_assert_int_ge(asprintf(&more,
                                                          "%s],\"digest\":\"%s\",\"format\":1}\n",
                                                          text, hex),
                                                 0);
                                free(text);
                                text = more;
                        }
                        write_at(bfd, name, text, strlen(text));
                        free(text);
                }
        }
        t0 = seconds();
        s = open_store(t.fd);
        t1 = seconds();
        fprintf(stderr, "# budget_open: %d contents x %d answers in %.3f s\n", CONTENTS, ANSWERS,
                t1 - t0);

        t0 = seconds();
        for (unsigned i = 0; i < LOOKUPS; i++) {
                BudgetEntry e;

                hits += budget_lookup(s, digests[(i * 7919u) % CONTENTS], &keys[i % ANSWERS], &e) ==
                        1;
        }
        t1 = seconds();
        ck_assert_uint_eq(hits, LOOKUPS);
        fprintf(stderr, "# budget_lookup: %.0f lookups/s\n", LOOKUPS / (t1 - t0));

        /* The same budgets as a snapshot (the first checkpoint with a log), and loaded back. */
        ck_assert_int_eq(audit_open(t.fd, &a), 0);
        budget_set_log(s, &wal, a);
        t0 = seconds();
        ck_assert_int_eq(budget_batch_take(s, &batch), 0);
        ck_assert_ptr_nonnull(batch);
        t1 = seconds();
        ck_assert_int_eq(budget_batch_write(batch), 0);
        t2 = seconds();
        batch = budget_batch_done(s, batch, 0);
        ck_assert_int_eq(fstatat(t.fd, BUDGET_DIR "/" BUDGET_CHECKPOINT, &st, 0), 0);
        fprintf(stderr,
                "# snapshot: %d contents x %d answers, %lld bytes: taken (on the loop) in %.3f s, "
                "written (the writer thread) in %.3f s\n",
                CONTENTS, ANSWERS, (long long)st.st_size, t1 - t0, t2 - t1);
        s = budget_close(s);
        t0 = seconds();
        s = open_store(t.fd);
        t1 = seconds();
        ck_assert_uint_eq(budget_count(s), CONTENTS);
        fprintf(stderr, "# budget_open of the snapshot: %.3f s\n", t1 - t0);
        s = budget_close(s);
        a = audit_close(a);
        tmpdir_done(&t);
}
END_TEST

/*
 * A store of files per budget (an older lockd's, with its position) opened with the log: the
 * start's checkpoint writes the snapshot (every budget, in digest order, with the log's position)
 * and only then removes the files; a start reads the same budgets back from it, a file left
 * beside it (a crash between the two) is not read and goes at the next snapshot, and a store
 * without a log over a snapshot refuses to write a file of its own.
 */
START_TEST(test_snapshot) {
        _cleanup_free_ char *text = NULL, *want = NULL, *first = NULL, *second = NULL;
        _cleanup_close_ int bfd = -1;
        uint8_t d[BUDGET_DIGEST_SIZE], d2[BUDGET_DIGEST_SIZE];
        char name[80], name2[80], head[BUDGET_HEAD_HEX + 1];
        BudgetKey k = key_of("1.0.0", ""), k2 = key_of("1.0.1", "");
        Audit *a = NULL;
        BudgetStore *s = NULL;
        BudgetEntry e;
        TmpDir t;

        tmpdir_new(&t);
        digest_of("snapshot", d);
        digest_of("snapshot 2", d2);
        s = open_store(t.fd);
        ck_assert_int_eq(budget_reserve(s, d, &k, 4), 0);
        ck_assert_int_eq(budget_commit(s, d, &k, BUDGET_OUTCOME_ONE), 0);
        ck_assert_int_eq(budget_reserve(s, d2, &k2, 4), 0);
        s = budget_close(s);
        bfd = openat(t.fd, BUDGET_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(bfd, 0);
        budget_file(d, name);
        budget_file(d2, name2);
        first = read_at(bfd, memcmp(d, d2, sizeof(d)) < 0 ? name : name2);
        second = read_at(bfd, memcmp(d, d2, sizeof(d)) < 0 ? name2 : name);

        wal_start(t.fd, &a, &s);
        ck_assert(!exists_at(bfd, name) && !exists_at(bfd, name2));
        text = read_at(bfd, BUDGET_CHECKPOINT);
        memcpy(head, audit_get_head(a), sizeof(head));
        ck_assert_int_ge(asprintf(&want,
                                  "{\"budgets\":2,\"format\":2,\"head\":\"%s\",\"seq\":%llu}\n%s%s",
                                  head, (unsigned long long)audit_get_seq(a), first, second),
                         0);
        ck_assert_str_eq(text, want);
        s = budget_close(s);
        a = audit_close(a);

        /* Read back; a file of the older layout beside it is not read, and goes. */
        write_at(bfd, memcmp(d, d2, sizeof(d)) < 0 ? name : name2, "not read", 8);
        wal_start(t.fd, &a, &s);
        ck_assert_uint_eq(budget_count(s), 2);
        ck_assert_int_eq(budget_lookup(s, d, &k, &e), 1);
        ck_assert_int_eq(e.outcome, BUDGET_OUTCOME_ONE);
        ck_assert_int_eq(budget_charged(s, d2, &k2), 1);
        ck_assert(!exists_at(bfd, name) && !exists_at(bfd, name2));
        s = budget_close(s);
        a = audit_close(a);

        /* Without the log, over a snapshot: nothing is written beside it. */
        s = open_store(t.fd);
        ck_assert_int_eq(budget_reserve(s, d2, &k, 4), -EROFS);
        ck_assert_uint_eq(budget_used(s, d2), 1);
        s = budget_close(s);
        ck_assert(!exists_at(bfd, name2));
        tmpdir_done(&t);
}
END_TEST

static Suite *budget_suite(void) {
        Suite *s = suite_create("budget");
        const CaseOptions each = {.timeout = 120};

        suite_add_case(s, &each, test_keys);
        suite_add_case(s, &each, test_reserve_limit);
        suite_add_case(s, &each, test_full_limit);
        suite_add_case(s, &each, test_commit_lookup);
        suite_add_case(s, &each, test_release);
        suite_add_case(s, &each, test_in_flight);
        suite_add_case(s, &each, test_persistence);
        suite_add_case(s, &each, test_deferred);
        suite_add_case(s, &each, test_reset);
        suite_add_case(s, &each, test_data_valid);
        suite_add_case(s, &each, test_data_invalid);
        suite_add_case(s, &each, test_data_replay);
        suite_add_case(s, &each, test_wal_crash);
        suite_add_case(s, &each, test_wal_write_failures);
        suite_add_case(s, &each, test_snapshot);
        suite_add_case(s, &each, test_refusals);
        suite_add_case(s, &each, test_digests_cap);
        suite_add_case(s, &each, test_write_failures);
        suite_add_case(s, &each, test_batches);
        suite_add_case(s, &each, test_bench);
        return s;
}

int main(void) {
        return check_run(budget_suite());
}
