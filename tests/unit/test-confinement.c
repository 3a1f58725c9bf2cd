/* Tests for daemon/confinement (which units keep an agent from watching runs) and common/ratelimit
 * (the burst per key and interval for peer-triggered log lines). */
#include <check.h>
#include <stddef.h>

#include "check-run.h"
#include "confinement.h"
#include "ratelimit.h"

static const char *missing_of(const char *unit, const char *protect_proc, const char **inaccessible,
                              const char **tmpfs) {
        ConfinementUnit u = {.unit = unit,
                             .protect_proc = protect_proc,
                             .inaccessible = inaccessible,
                             .tmpfs = tmpfs};
        ConfinementReason missing = CONFINEMENT_OK;

        return confinement_evaluate(&u, &missing) ? NULL : confinement_reason_sentence(missing);
}

START_TEST(test_evaluate) {
        const char *cg[] = {"/sys/fs/cgroup", NULL}, *sys[] = {"/sys", NULL},
                   *dash[] = {"-/sys/fs/cgroup/", NULL}, *root[] = {"/", NULL},
                   *below[] = {"/sys/fs/cgroup/memory", NULL}, *other[] = {"/sys/fs/cgroupx", NULL},
                   *none[] = {NULL};

        /* What lockctl agent run sets. */
        ck_assert_ptr_null(missing_of("lockd-agent-1.service", "invisible", none, cg));
        ck_assert_ptr_null(missing_of("a.service", "noaccess", cg, NULL));
        ck_assert_ptr_null(missing_of("a.service", "invisible", dash, NULL));
        ck_assert_ptr_null(missing_of("a.service", "invisible", NULL, sys));
        ck_assert_ptr_null(missing_of("a.service", "invisible", NULL, root));
        /* Not a service, ProtectProc missing or weak, the cgroup file system visible. */
        ck_assert_str_eq(missing_of("init.scope", "invisible", NULL, cg),
                         "the peer's unit is not a service (start it with lockctl agent run)");
        ck_assert_str_eq(missing_of("", "invisible", NULL, cg),
                         "the peer runs in no unit of the manager");
        ck_assert_str_eq(missing_of("a.service", "default", NULL, cg), "ProtectProc=invisible");
        ck_assert_str_eq(missing_of("a.service", "ptraceable", NULL, cg), "ProtectProc=invisible");
        ck_assert_str_eq(missing_of("a.service", NULL, NULL, cg), "ProtectProc=invisible");
        ck_assert_ptr_nonnull(missing_of("a.service", "invisible", NULL, NULL));
        ck_assert_ptr_nonnull(missing_of("a.service", "invisible", below, below));
        ck_assert_ptr_nonnull(missing_of("a.service", "invisible", other, other));
        ck_assert_ptr_nonnull(missing_of("a.servicex", "invisible", cg, cg));
        ck_assert(!confinement_evaluate(NULL, NULL));
}
END_TEST

START_TEST(test_ratelimit) {
        RateLimit rl = RATELIMIT_INIT(1000, 3);
        unsigned suppressed = 99;

        for (int i = 0; i < 3; i++)
                ck_assert(ratelimit_pass(&rl, 7, 100, &suppressed));
        ck_assert_uint_eq(suppressed, 0);
        ck_assert(!ratelimit_pass(&rl, 7, 200, &suppressed));
        ck_assert(!ratelimit_pass(&rl, 7, 300, NULL));
        /* Another key has its own burst. */
        ck_assert(ratelimit_pass(&rl, 8, 300, &suppressed));
        /* The next interval tells how many were suppressed in the last. */
        ck_assert(ratelimit_pass(&rl, 7, 1100, &suppressed));
        ck_assert_uint_eq(suppressed, 2);
        ck_assert(ratelimit_pass(&rl, 7, 1200, &suppressed));
        ck_assert_uint_eq(suppressed, 0);
        /* More keys than slots: the stalest is reused, nothing overflows. */
        for (uint32_t k = 100; k < 100 + 3 * RATELIMIT_KEYS; k++)
                ck_assert(ratelimit_pass(&rl, k, 2000 + k, NULL));
}
END_TEST

static Suite *confinement_suite(void) {
        Suite *s = suite_create("confinement");

        suite_add_case(s, NULL, test_evaluate);
        suite_add_case(s, NULL, test_ratelimit);
        return s;
}

int main(void) {
        return check_run(confinement_suite());
}
