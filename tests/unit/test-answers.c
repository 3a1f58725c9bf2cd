/* Tests for daemon/answers (answers bound to typed values, in memory by a keyed hash) and
 * daemon/schedule (when an outcome is released at each security level). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "answers.h"
#include "check-run.h"
#include "macro.h"
#include "schedule.h"

#define MS 1000ULL
#define S  1000000ULL

static BudgetKey key_needle(const char *placeholder) {
        BudgetKey k;

        ck_assert_int_eq(budget_key_init(&k, "text.contains", "1.0.0"), 0);
        ck_assert_int_eq(budget_key_add(&k, "needle", placeholder), 0);
        return k;
}

START_TEST(test_ids) {
        _cleanup_(answers_freep) AnswerCache *c = NULL, *other = NULL;
        uint8_t d[BUDGET_DIGEST_SIZE] = {1}, d2[BUDGET_DIGEST_SIZE] = {2};
        uint8_t a[ANSWERS_ID_SIZE], b[ANSWERS_ID_SIZE], x[ANSWERS_ID_SIZE];
        BudgetKey k = key_needle("word"), k2 = key_needle("other");
        static const char v1[] = "{\"needle\":\"alpha\"}", v2[] = "{\"needle\":\"beta\"}";

        ck_assert_int_eq(answers_new(&c), 0);
        ck_assert_int_eq(answers_new(&other), 0);
        ck_assert_int_eq(answers_id(c, d, &k, v1, strlen(v1), a), 0);
        ck_assert_int_eq(answers_id(c, d, &k, v1, strlen(v1), b), 0);
        ck_assert_mem_eq(a, b, sizeof(a)); /* the same question, the same id */
        /* Another value, content, placeholder or start: another id. */
        ck_assert_int_eq(answers_id(c, d, &k, v2, strlen(v2), x), 0);
        ck_assert(memcmp(a, x, sizeof(a)) != 0);
        ck_assert_int_eq(answers_id(c, d2, &k, v1, strlen(v1), x), 0);
        ck_assert(memcmp(a, x, sizeof(a)) != 0);
        ck_assert_int_eq(answers_id(c, d, &k2, v1, strlen(v1), x), 0);
        ck_assert(memcmp(a, x, sizeof(a)) != 0);
        ck_assert_int_eq(answers_id(other, d, &k, v1, strlen(v1), x), 0);
        ck_assert(memcmp(a, x, sizeof(a)) != 0);
        /* A prefix of a value is not the value. */
        ck_assert_int_eq(answers_id(c, d, &k, v1, strlen(v1) - 1, x), 0);
        ck_assert(memcmp(a, x, sizeof(a)) != 0);
        ck_assert_int_eq(answers_id(NULL, d, &k, v1, 1, x), -EINVAL);
        ck_assert_int_eq(answers_id(c, d, &k, NULL, 1, x), -EINVAL);
}
END_TEST

START_TEST(test_store_lookup_reset) {
        _cleanup_(answers_freep) AnswerCache *c = NULL;
        uint8_t d[BUDGET_DIGEST_SIZE] = {1}, d2[BUDGET_DIGEST_SIZE] = {2};
        uint8_t a[ANSWERS_ID_SIZE], b[ANSWERS_ID_SIZE];
        BudgetKey k = key_needle("word");
        static const char v1[] = "{\"needle\":\"alpha\"}", v2[] = "{\"needle\":\"beta\"}";
        BudgetEntry e = {}, one = {.outcome = BUDGET_OUTCOME_ONE, .ran_usec = 1234};

        ck_assert_int_eq(answers_new(&c), 0);
        ck_assert_int_eq(answers_id(c, d, &k, v1, strlen(v1), a), 0);
        ck_assert_int_eq(answers_id(c, d2, &k, v2, strlen(v2), b), 0);
        ck_assert_int_eq(answers_lookup(c, a, &e), 0);
        ck_assert_int_eq(answers_store(c, a, d, &one), 0);
        ck_assert_int_eq(answers_lookup(c, a, &e), 1);
        ck_assert_int_eq(e.outcome, BUDGET_OUTCOME_ONE);
        ck_assert_uint_eq(e.ran_usec, 1234);
        /* The value not typed before is not found: a fresh run, never a stale answer. */
        ck_assert_int_eq(answers_lookup(c, b, &e), 0);
        ck_assert_int_eq(answers_store(c, b, d2, &(BudgetEntry){.outcome = BUDGET_OUTCOME_ZERO}),
                         0);
        /* A reset forgets one content's answers only. */
        ck_assert_uint_eq(answers_reset(c, d), 1);
        ck_assert_int_eq(answers_lookup(c, a, &e), 0);
        ck_assert_int_eq(answers_lookup(c, b, &e), 1);
        ck_assert_int_eq(e.outcome, BUDGET_OUTCOME_ZERO);
        answers_clear(c);
        ck_assert_int_eq(answers_lookup(c, b, &e), 0);
}
END_TEST

/* Past ANSWERS_MAX the oldest answers go first, and every newer one is still found. */
START_TEST(test_eviction) {
        _cleanup_(answers_freep) AnswerCache *c = NULL;
        uint8_t d[BUDGET_DIGEST_SIZE] = {7};
        BudgetKey k = key_needle("word");
        BudgetEntry e;
        size_t found = 0;

        ck_assert_int_eq(answers_new(&c), 0);
        for (unsigned i = 0; i < ANSWERS_MAX + 100; i++) {
                char v[64];
                uint8_t id[ANSWERS_ID_SIZE];

                snprintf(v, sizeof(v), "{\"needle\":\"%u\"}", i);
                ck_assert_int_eq(answers_id(c, d, &k, v, strlen(v), id), 0);
                ck_assert_int_eq(
                        answers_store(c, id, d, &(BudgetEntry){.outcome = BUDGET_OUTCOME_ONE}), 0);
        }
        for (unsigned i = 0; i < ANSWERS_MAX + 100; i++) {
                char v[64];
                uint8_t id[ANSWERS_ID_SIZE];
                int r;

                snprintf(v, sizeof(v), "{\"needle\":\"%u\"}", i);
                ck_assert_int_eq(answers_id(c, d, &k, v, strlen(v), id), 0);
                r = answers_lookup(c, id, &e);
                ck_assert_int_eq(r, i >= 100);
                found += r;
        }
        ck_assert_uint_eq(found, ANSWERS_MAX);
        ck_assert_uint_eq(answers_reset(c, d), ANSWERS_MAX);
}
END_TEST

START_TEST(test_schedule) {
        /* Level 3: at once, cached or not. */
        ck_assert_uint_eq(schedule_delay_usec(3, 250 * MS, 5 * S, 17 * MS), 0);
        /* Level 1: the timeout, whatever the run took; longer only if the run was. */
        ck_assert_uint_eq(schedule_delay_usec(1, 250 * MS, 5 * S, 1), 5 * S);
        ck_assert_uint_eq(schedule_delay_usec(1, 250 * MS, 5 * S, 4 * S), 5 * S);
        ck_assert_uint_eq(schedule_delay_usec(1, 250 * MS, 5 * S, 6 * S), 6 * S);
        ck_assert_uint_eq(schedule_delay_usec(1, 250 * MS, 5 * S, 0), 5 * S);
        /* Level 2: the first whole quantum not before the run's end. */
        ck_assert_uint_eq(schedule_delay_usec(2, 250 * MS, 5 * S, 1), 250 * MS);
        ck_assert_uint_eq(schedule_delay_usec(2, 250 * MS, 5 * S, 100 * MS), 250 * MS);
        ck_assert_uint_eq(schedule_delay_usec(2, 250 * MS, 5 * S, 250 * MS), 250 * MS);
        ck_assert_uint_eq(schedule_delay_usec(2, 250 * MS, 5 * S, 250 * MS + 1), 500 * MS);
        ck_assert_uint_eq(schedule_delay_usec(2, 250 * MS, 5 * S, 360 * MS), 500 * MS);
        /* An answer cached without its run's duration: as if it used its whole timeout. */
        ck_assert_uint_eq(schedule_delay_usec(2, 250 * MS, 3 * S, 0), 3 * S);
        ck_assert_uint_eq(schedule_delay_usec(2, 400 * MS, 3 * S, 0), 3200 * MS);
}
END_TEST

static Suite *answers_suite(void) {
        Suite *s = suite_create("answers");

        suite_add_case(s, NULL, test_ids);
        suite_add_case(s, NULL, test_store_lookup_reset);
        suite_add_case(s, NULL, test_eviction);
        suite_add_case(s, NULL, test_schedule);
        return s;
}

int main(void) {
        return check_run(answers_suite());
}
