/* Unit tests of the disk writer (daemon/disk-writer.c): the job runs on its own thread with every
 * signal blocked, its done comes back on the loop, in order, one job at a time. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check-run.h"
#include "disk-writer.h"

typedef struct Job {
        pthread_t main_thread;
        bool other_thread;
        bool signals_blocked;
        int result;
        unsigned sleep_ms;
        unsigned done_calls;
        int done_r;
        void *done_ctx;
} Job;

static int work(void *ctx) {
        Job *j = ctx;
        struct timespec ts = {.tv_nsec = (long)j->sleep_ms * 1000000L};
        sigset_t set;

        j->other_thread = !pthread_equal(pthread_self(), j->main_thread);
        pthread_sigmask(SIG_SETMASK, NULL, &set);
        j->signals_blocked = sigismember(&set, SIGTERM) == 1 && sigismember(&set, SIGCHLD) == 1;
        nanosleep(&ts, NULL);
        return j->result;
}

static void done(void *ctx, int r, void *userdata) {
        Job *j = userdata;

        j->done_calls++;
        j->done_r = r;
        j->done_ctx = ctx;
}

START_TEST(test_job_round_trip) {
        sd_event *e = NULL;
        DiskWriter *w = NULL;
        Job j = {.main_thread = pthread_self(), .result = -EIO, .sleep_ms = 20};

        ck_assert_int_eq(sd_event_new(&e), 0);
        ck_assert_int_eq(disk_writer_new(NULL, done, &j, &w), -EINVAL);
        ck_assert_int_eq(disk_writer_new(e, done, &j, &w), 0);
        ck_assert(!disk_writer_busy(w));
        ck_assert_int_eq(disk_writer_start(w, work, &j), 0);
        ck_assert(disk_writer_busy(w));
        /* One job at a time: the next waits for this one's done. */
        ck_assert_int_eq(disk_writer_start(w, work, &j), -EBUSY);
        while (j.done_calls == 0)
                ck_assert_int_ge(sd_event_run(e, UINT64_MAX), 0);
        ck_assert_uint_eq(j.done_calls, 1);
        ck_assert_int_eq(j.done_r, -EIO);
        ck_assert_ptr_eq(j.done_ctx, &j);
        ck_assert(j.other_thread);
        ck_assert(j.signals_blocked);
        ck_assert(!disk_writer_busy(w));

        /* wait() returns once the work did, without calling done; finish() calls it. */
        j.result = 0;
        ck_assert_int_eq(disk_writer_start(w, work, &j), 0);
        disk_writer_wait(w);
        ck_assert_uint_eq(j.done_calls, 1);
        ck_assert(disk_writer_busy(w));
        disk_writer_finish(w);
        ck_assert_uint_eq(j.done_calls, 2);
        ck_assert_int_eq(j.done_r, 0);
        ck_assert(!disk_writer_busy(w));
        /* The eventfd's wakeup of the finished job comes later and calls nothing. */
        ck_assert_int_ge(sd_event_run(e, 0), 0);
        ck_assert_uint_eq(j.done_calls, 2);

        /* A free with a job out waits for it and calls nothing. */
        j.sleep_ms = 30;
        ck_assert_int_eq(disk_writer_start(w, work, &j), 0);
        w = disk_writer_free(w);
        ck_assert_ptr_null(w);
        ck_assert_uint_eq(j.done_calls, 2);
        sd_event_unref(e);
}
END_TEST

int main(void) {
        Suite *s = suite_create("disk-writer");

        suite_add_case(s, NULL, test_job_round_trip);
        return check_run(s);
}
