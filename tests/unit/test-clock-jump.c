/* Tests that a jump of the wall clock neither ends grants and tickets early nor keeps them
 * late: their expiry runs on CLOCK_BOOTTIME (common/clock.h). This executable defines
 * clock_gettime() itself, so that lockd's code linked into it reads a wall clock moved by
 * skew_usec while every other clock runs true. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check-run.h"
#include "clock.h"
#include "fd-util.h"
#include "handles.h"
#include "macro.h"
#include "tickets.h"

#define SEC  1000000ULL
#define HOUR (3600 * SEC)

static int64_t skew_usec;

/* The one clock_gettime() of this executable: the kernel's, with CLOCK_REALTIME moved. */
int clock_gettime(clockid_t clock, struct timespec *ts) {
        int64_t ns;

        if (syscall(SYS_clock_gettime, clock, ts) < 0)
                return -1;
        if (clock != CLOCK_REALTIME || skew_usec == 0)
                return 0;
        ns = (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec + skew_usec * 1000LL;
        ts->tv_sec = ns / 1000000000LL;
        ts->tv_nsec = ns % 1000000000LL;
        return 0;
}

static int regular_file(void) {
        char path[] = "/tmp/test-clock-jump-XXXXXX";
        int fd = mkstemp(path);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(unlink(path), 0);
        ck_assert_int_eq(loop_write(fd, "x", 1), 0);
        return fd;
}

START_TEST(test_shim) {
        uint64_t before = clock_now_usec(CLOCK_REALTIME);

        skew_usec = (int64_t)HOUR;
        ck_assert_uint_ge(clock_now_usec(CLOCK_REALTIME), before + HOUR);
        skew_usec = 0;
}
END_TEST

START_TEST(test_handle_survives_jumps) {
        _cleanup_(handles_freep) Handles *hs = NULL;
        _cleanup_close_ int fd = regular_file();
        HandleSpec s = {.fd = fd, .max_bytes = 1024, .agent = 61001, .budget = 8};
        char id[HANDLE_ID_LEN + 1];
        const Handle *h;
        uint64_t boot;

        ck_assert_int_eq(handles_new(NULL, NULL, NULL, &hs), 0);
        s.expires_usec = handles_now_usec() + 60 * SEC;
        boot = clock_now_usec(CLOCK_BOOTTIME);
        ck_assert_int_eq(handles_grant(hs, &s, &h), 0);
        snprintf(id, sizeof(id), "%s", h->id);
        /* An hour forward: the grant is not over, 60 s of real time have not passed. */
        skew_usec = (int64_t)HOUR;
        ck_assert_ptr_eq(handles_get(hs, id), h);
        ck_assert_uint_eq(handles_n(hs), 1);
        /* An hour back: it is not kept an hour longer either. */
        skew_usec = -(int64_t)HOUR;
        ck_assert_ptr_eq(handles_get(hs, id), h);
        ck_assert_uint_eq(handles_expire(hs, boot + 59 * SEC), 0);
        ck_assert_uint_eq(handles_expire(hs, boot + 61 * SEC), 1);
        ck_assert_ptr_null(handles_get(hs, id));
        skew_usec = 0;
}
END_TEST

START_TEST(test_ticket_survives_jumps) {
        _cleanup_(tickets_freep) Tickets *ts = NULL;
        const Ticket *t = NULL;
        Plan *plan = calloc(1, sizeof(*plan));
        uint64_t boot = clock_now_usec(CLOCK_BOOTTIME);

        ck_assert_ptr_nonnull(plan);
        plan->n_steps = 1;
        ck_assert_int_eq(tickets_new(NULL, 8, NULL, NULL, NULL, &ts), 0);
        ck_assert_int_eq(tickets_submit(ts, 61001, plan, NULL, 60 * SEC, 4, &t), 0);
        skew_usec = (int64_t)HOUR;
        ck_assert_uint_eq(tickets_n(ts), 1); /* expires what is due: nothing */
        ck_assert_int_eq(t->state, TICKET_PENDING);
        ck_assert_uint_eq(tickets_n_pending(ts, 61001), 1);
        skew_usec = -(int64_t)HOUR;
        ck_assert_uint_eq(tickets_expire(ts, boot + 59 * SEC), 0);
        ck_assert_uint_eq(tickets_expire(ts, boot + 61 * SEC + SEC), 1);
        ck_assert_int_eq(t->state, TICKET_EXPIRED);
        skew_usec = 0;
}
END_TEST

START_TEST(test_deadline_from_wall_clock) {
        uint64_t real = clock_now_usec(CLOCK_REALTIME), boot = clock_now_usec(CLOCK_BOOTTIME);
        uint64_t d;

        /* A stored expiry (a restart) is turned into boot time once: what is left of it. */
        ck_assert_uint_eq(clock_boottime_deadline(0), 0);
        d = clock_boottime_deadline(real + 60 * SEC);
        ck_assert_uint_ge(d, boot + 59 * SEC);
        ck_assert_uint_le(d, boot + 61 * SEC);
        d = clock_boottime_deadline(real - HOUR); /* already past: due now */
        ck_assert_uint_ge(d, boot);
        ck_assert_uint_le(d, boot + 5 * SEC);
        ck_assert_uint_ge(clock_boottime_deadline(UINT64_MAX), boot); /* no wrap */
}
END_TEST

static Suite *clock_jump_suite(void) {
        Suite *s = suite_create("clock-jump");

        suite_add_case(s, NULL, test_shim);
        suite_add_case(s, NULL, test_handle_survives_jumps);
        suite_add_case(s, NULL, test_ticket_survives_jumps);
        suite_add_case(s, NULL, test_deadline_from_wall_clock);
        return s;
}

int main(void) {
        return check_run(clock_jump_suite());
}
