/* The group commit (ARCHITECTURE.md, Flows): audit records and budget changes written without a
 * sync, made durable by two writer threads, and what waited for them (commit_wait()) and the
 * observer (commit_observe()) told on the loop, all in one place. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commit.h"
#include "disk-writer.h"
#include "fd-util.h"
#include "log.h"
#include "log-ids.h"
#include "macro.h"

/* A caller waiting for the audit record seq to be durable. */
typedef struct CommitWaiter {
        uint64_t seq;
        CommitWaitFn fn;
        void *userdata;
        struct CommitWaiter *next;
} CommitWaiter;

struct Commit {
        sd_event *event;
        Audit *audit;
        BudgetStore *budget;
        DiskWriter *audit_writer;
        DiskWriter *budget_writer;
        AuditSyncJob audit_job; /* while audit_writer is busy */
        BudgetBatch *batch;     /* while budget_writer is busy */
        CommitWaiter *waiters, *waiters_tail;
        size_t n_waiters;
        const CommitObserver *observer;
        void *observer_data;
        sd_event_source *idle; /* commit_want() */
};

/* Waiters at once before the commit is started at once rather than at idle time. */
#define WAITERS_BATCH_MAX 64

/* Tells the waiters whose records are durable (every one when the log broke, r < 0), in order. */
static void waiters_tell(Commit *c, int r) {
        uint64_t durable = audit_get_durable_seq(c->audit);

        while (c->waiters && (r < 0 || c->waiters->seq <= durable)) {
                CommitWaiter *w = c->waiters;

                c->waiters = w->next;
                if (!c->waiters)
                        c->waiters_tail = NULL;
                c->n_waiters--;
                w->fn(r, w->userdata);
                free(w);
        }
}

/* The audit log's part of a commit ended (on the loop, or inline from commit_sync()). The log's
 * breaking is said once, when a job's fsync() failed; the calls after it refuse quietly (each
 * refused Submit and withheld answer says so itself). */
static void audit_done(Commit *c, int r, bool tell) {
        if (r < 0 && tell)
                log_error_errno(r, LOCKD_MESSAGE_AUDIT_SUBMIT,
                                "the audit log could not be made durable: tickets are refused "
                                "and answers withheld: %m");
        waiters_tell(c, r);
        if (c->observer && c->observer->records_durable)
                c->observer->records_durable(r, c->observer_data);
}

/* The budget's part ended: runs whose reservations are on disk start, or fail with it. */
static void budget_done(Commit *c, uint64_t gen, int r) {
        if (r < 0)
                log_error_errno(r, NULL, "budget changes could not be written: %m");
        if (c->observer && c->observer->budget_durable)
                c->observer->budget_durable(gen, r, c->observer_data);
}

static int audit_work(void *ctx) {
        return audit_sync_job_run(ctx);
}

static void on_audit_written(void *ctx, int r, void *userdata) {
        Commit *c = userdata;
        bool failed = r < 0;

        r = audit_sync_complete(c->audit, &c->audit_job, r);
        audit_done(c, r, failed);
        commit_run(c);
}

static int budget_work(void *ctx) {
        return budget_batch_write(ctx);
}

static void on_budget_written(void *ctx, int r, void *userdata) {
        Commit *c = userdata;
        uint64_t gen = budget_batch_generation(c->batch);

        c->batch = budget_batch_done(c->budget, c->batch, r);
        budget_done(c, gen, r);
        /* A failed batch is not tried again from here: the next change or waiting run does,
         * so a disk that keeps failing is not written to in a loop. */
        if (r >= 0)
                commit_run(c);
}

/* A batch could not even be taken (no memory): what waits for it fails now. */
static void budget_take_failed(Commit *c, int r) {
        budget_done(c, budget_generation(c->budget), r);
}

void commit_run(Commit *c) {
        int r;

        if (!c)
                return;
        if (c->idle)
                (void)sd_event_source_set_enabled(c->idle, SD_EVENT_OFF);
        if (c->audit && !disk_writer_busy(c->audit_writer)) {
                r = audit_sync_prepare(c->audit, &c->audit_job);
                if (r > 0) {
                        r = disk_writer_start(c->audit_writer, audit_work, &c->audit_job);
                        if (r < 0)
                                audit_done(c, audit_sync_complete(c->audit, &c->audit_job, r),
                                           true);
                } else
                        audit_done(c, r, false);
        }
        if (c->budget && !disk_writer_busy(c->budget_writer)) {
                BudgetBatch *b = NULL;

                r = budget_batch_take(c->budget, &b);
                if (r < 0)
                        budget_take_failed(c, r);
                else if (!b)
                        budget_done(c, budget_durable_generation(c->budget), 0);
                else {
                        c->batch = b;
                        r = disk_writer_start(c->budget_writer, budget_work, b);
                        if (r < 0)
                                on_budget_written(b, r, c);
                }
        }
}

void commit_sync(Commit *c) {
        int r;

        if (!c)
                return;
        disk_writer_finish(c->audit_writer);
        disk_writer_finish(c->budget_writer);
        /* Done handlers may write more (a ticket done, a commit): twice covers them. */
        for (int i = 0; i < 2; i++) {
                if (c->audit)
                        audit_done(c, audit_sync(c->audit), false);
                if (c->budget) {
                        r = budget_flush(c->budget);
                        budget_done(c,
                                    r < 0 ? budget_generation(c->budget)
                                          : budget_durable_generation(c->budget),
                                    r);
                }
        }
}

static int on_idle(sd_event_source *s, void *userdata) {
        commit_run(userdata);
        return 0;
}

void commit_want(Commit *c) {
        if (!c)
                return;
        if (!c->idle) {
                if (sd_event_add_defer(c->event, &c->idle, on_idle, c) < 0) {
                        /* No idle-time commit: start it now rather than never. */
                        commit_run(c);
                        return;
                }
                (void)sd_event_source_set_priority(c->idle, SD_EVENT_PRIORITY_IDLE);
        }
        (void)sd_event_source_set_enabled(c->idle, SD_EVENT_ONESHOT);
}

void commit_observe(Commit *c, const CommitObserver *o, void *userdata) {
        c->observer = o;
        c->observer_data = userdata;
}

int commit_wait(Commit *c, uint64_t seq, CommitWaitFn fn, void *userdata) {
        CommitWaiter *w;

        if (!c)
                return -ENOMEM;
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        *w = (CommitWaiter){.seq = seq, .fn = fn, .userdata = userdata};
        if (c->waiters_tail)
                c->waiters_tail->next = w;
        else
                c->waiters = w;
        c->waiters_tail = w;
        if (++c->n_waiters >= WAITERS_BATCH_MAX)
                commit_run(c);
        else
                commit_want(c);
        return 0;
}

void commit_cancel(Commit *c) {
        /* Waiters still there get no answer at exit (audit_close() makes their records
         * durable); a stop told them before (commit_sync()). */
        while (c && c->waiters) {
                CommitWaiter *w = c->waiters;

                c->waiters = w->next;
                w->fn(-ECANCELED, w->userdata);
                free(w);
        }
        if (c) {
                c->waiters_tail = NULL;
                c->n_waiters = 0;
        }
}

/* The budget store's barrier: a write of its own waits for the batch on its way. */
static void budget_barrier(void *userdata) {
        Commit *c = userdata;

        disk_writer_wait(c->budget_writer);
}

int commit_new(sd_event *e, Audit *audit, BudgetStore *budget, Commit **ret) {
        Commit *c;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (Commit){.event = e, .audit = audit, .budget = budget, .audit_job.fd = -EBADF};
        r = disk_writer_new(e, on_audit_written, c, &c->audit_writer);
        if (r >= 0)
                r = disk_writer_new(e, on_budget_written, c, &c->budget_writer);
        if (r < 0) {
                commit_free(c);
                return r;
        }
        budget_set_barrier(budget, budget_barrier, c);
        *ret = c;
        return 0;
}

Commit *commit_free(Commit *c) {
        if (!c)
                return NULL;
        /* The threads first: nothing they write may outlive what it belongs to. */
        c->audit_writer = disk_writer_free(c->audit_writer);
        c->budget_writer = disk_writer_free(c->budget_writer);
        if (c->audit_job.fd >= 0)
                c->audit_job.fd = safe_close(c->audit_job.fd);
        if (c->budget) {
                budget_set_barrier(c->budget, NULL, NULL);
                c->batch = budget_batch_done(c->budget, c->batch, -ECANCELED);
        }
        commit_cancel(c);
        sd_event_source_disable_unref(c->idle);
        free(c);
        return NULL;
}
