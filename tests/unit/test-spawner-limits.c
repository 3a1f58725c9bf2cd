/*
 * The spawner's fd limit (ARCHITECTURE.md, two processes): spawner_nofile_need() grows with every
 * run the engine may queue, covers runs_max runs of a burst at the default limits, and at the
 * largest limits.concurrent_runs is exactly the hard limit lockd.service sets (LimitNOFILE=).
 * And its tables: one proto row per message type, one spawner row per request type; an EXITED's
 * unit.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-run.h"
#include "spawner-proto.h"
#include "spawner.h"

/* limits.concurrent_runs and scope.ahead at their largest (policy.c's ranges). */
#define WORKERS_MAX 256
#define AHEAD_MAX   16

START_TEST(test_need_covers_runs) {
        for (unsigned w = 1; w <= WORKERS_MAX; w++) {
                uint64_t runs_max = w + SPAWNER_RUNS_MAX((uint64_t)w);
                uint64_t need = spawner_nofile_need(w, w < 4 ? w : 4);

                ck_assert_uint_ge(need,
                                  runs_max * SPAWNER_NOFILE_PER_QUEUED_RUN + SPAWNER_NOFILE_BASE);
                if (w > 1)
                        ck_assert_uint_gt(need, spawner_nofile_need(w - 1, w - 1 < 4 ? w - 1 : 4));
        }
        /* The default policy (4 runs, 4 ahead): runs_max 264 queued runs, above 1024. */
        ck_assert_uint_gt(spawner_nofile_need(4, 4), 264 * SPAWNER_NOFILE_PER_QUEUED_RUN);
        ck_assert_uint_gt(spawner_nofile_need(4, 4), 1024);
}
END_TEST

START_TEST(test_unit_matches) {
        const char *path = getenv("LOCKD_SERVICE_UNIT");
        char line[256], want[64];
        bool found = false;
        FILE *f;

        ck_assert_ptr_nonnull(path);
        f = fopen(path, "re");
        ck_assert_ptr_nonnull(f);
        snprintf(want, sizeof(want), "LimitNOFILE=1024:%" PRIu64 "\n",
                 spawner_nofile_need(WORKERS_MAX, AHEAD_MAX));
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "LimitNOFILE=", 12) == 0) {
                        ck_assert_str_eq(line, want);
                        found = true;
                }
        fclose(f);
        ck_assert_msg(found, "lockd.service sets no LimitNOFILE=");
}
END_TEST

/* Every message type of the contract has exactly one consistent row, and every request one
 * handler row in the spawner; a type outside the enum has none. */
START_TEST(test_tables_complete) {
        static const uint16_t types[] = {
                SPAWNER_HELLO,          SPAWNER_RUN,         SPAWNER_KILL,
                SPAWNER_STOP,           SPAWNER_CONFINE,     SPAWNER_NOTIFY,
                SPAWNER_WARM,           SPAWNER_REPLY_HELLO, SPAWNER_REPLY_EXITED,
                SPAWNER_REPLY_CONFINED,
        };
        uint16_t bad = 0;

        ck_assert_msg(spawner_table_valid(&bad), "the proto row of type %u", bad);
        ck_assert_msg(spawner_handlers_valid(&bad), "the spawner row of type %u", bad);
        ck_assert_uint_eq(spawner_n_messages, sizeof(types) / sizeof(types[0]));
        for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
                const SpawnerMessageRow *row = spawner_message_row(types[i]);

                ck_assert_ptr_nonnull(row);
                ck_assert_uint_eq(row->type, types[i]);
        }
        ck_assert_ptr_null(spawner_message_row(0));
        ck_assert_ptr_null(spawner_message_row(8));
        ck_assert_ptr_null(spawner_message_row(0x85));
}
END_TEST

/* An EXITED names a scoped run's unit, in the spawner's form, and no unit for any other run: the
 * engine's decoder refuses anything else (the link breaks then). */
START_TEST(test_exited_unit) {
        static const struct {
                uint32_t flags;
                const char *unit;
                bool ok;
        } cases[] = {
                {SPAWNER_EXITED_SCOPED | SPAWNER_EXITED_EXITED, "lockd-run-7.scope", true},
                {SPAWNER_EXITED_EXITED, "", true},
                {SPAWNER_EXITED_SPAWN, "", true},
                {SPAWNER_EXITED_SCOPED | SPAWNER_EXITED_EXITED, "", false},
                {SPAWNER_EXITED_SCOPED, "lockd-run-.scope", false},
                {SPAWNER_EXITED_SCOPED, "lockd-run-7.service", false},
                {SPAWNER_EXITED_SCOPED, "../lockd-run-7.scope", false},
                {SPAWNER_EXITED_EXITED, "lockd-run-7.scope", false},
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                SpawnerReplyExited x = {};
                SpawnerMessage m;

                spawner_header_init(&x.h, SPAWNER_REPLY_EXITED);
                x.run_id = 7;
                x.flags = cases[i].flags;
                snprintf(x.unit, sizeof(x.unit), "%s", cases[i].unit);
                ck_assert_msg((spawner_reply_decode(&x, sizeof(x), 0, &m) == SPAWNER_OK) ==
                                      cases[i].ok,
                              "case %zu", i);
                if (cases[i].ok)
                        ck_assert_str_eq(m.exited.unit, cases[i].unit);
        }
        /* A unit that fills its field with no NUL is refused, whatever the flags. */
        {
                SpawnerReplyExited x = {};
                SpawnerMessage m;

                spawner_header_init(&x.h, SPAWNER_REPLY_EXITED);
                x.run_id = 7;
                x.flags = SPAWNER_EXITED_SCOPED;
                memset(x.unit, 'a', sizeof(x.unit));
                ck_assert_int_ne(spawner_reply_decode(&x, sizeof(x), 0, &m), SPAWNER_OK);
        }
}
END_TEST

static Suite *limits_suite(void) {
        Suite *s = suite_create("spawner-limits");

        suite_add_case(s, NULL, test_need_covers_runs);
        suite_add_case(s, NULL, test_unit_matches);
        suite_add_case(s, NULL, test_tables_complete);
        suite_add_case(s, NULL, test_exited_unit);
        return s;
}

int main(void) {
        return check_run(limits_suite());
}
