/* The group commit (ARCHITECTURE.md, Flows): audit records and budget changes written without a
 * sync, made durable by two writer threads, and what waited for them (commit_wait()) and the
 * observer (commit_observe()) told on the loop, all in one place. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
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
        AuditSyncJob batch_log; /* the log up to the batch's position, synced before it */
        CommitWaiter *waiters, *waiters_tail;
        size_t n_waiters;
        const CommitObserver *observer;
        void *observer_data;
        sd_event_source *idle;  /* commit_want() */
        sd_event_source *later; /* commit_later(): the bound on a record's wait */
        /* CLOCK_MONOTONIC time of the oldest record nothing waits for that no commit has taken
         * yet; 0 when there is none. */
        uint64_t lazy_since;
        bool checkpoint_due;
        bool holding; /* a checkpoint before a segment switch: nothing else starts */
        /* The last record someone waits for (commit_wait(), commit_run()): a job ending starts
         * the next only up to here, so records nothing waits for (commit_later()) ride the next
         * wanted commit instead of costing an fsync of their own right after an answer. */
        uint64_t want_seq;
};

/* Waiters at once before the commit is started at once rather than at idle time. */
#define WAITERS_BATCH_MAX 64

/*
 * A record nothing waits for (a ticket's "done", a cached outcome) rides the next commit, and
 * waits at most this long for one: questions less than this apart pay no fsync for it, and a
 * record's journal copy (sent once it is durable) and its fleet's view are this late at most.
 */
#define USEC_PER_SEC      1000000ULL
#define COMMIT_LATER_USEC (30 * USEC_PER_SEC)
/* The timer's accuracy (timer_arm()): a record that has waited this close to its bound is
 * committed rather than given a timer of its own for the rest. */
#define COMMIT_LATER_SLACK_USEC (USEC_PER_SEC / 10)

/*
 * Budget checkpoints (ARCHITECTURE.md, budgets): past this many changes, or as many as there are
 * budgets when there are more (a checkpoint rewrites every budget: so it writes about one
 * budget's text per change at most), at a segment switch, at start and at the way out; never on
 * an answer's path and never on a timer, so that a question asked alone costs its two commits
 * and nothing more. A start replays at most this many changes past the checkpoint.
 */
#define CHECKPOINT_CHANGES 1024

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

static void commit_start(Commit *c);

static void on_audit_written(void *ctx, int r, void *userdata) {
        Commit *c = userdata;
        bool failed = r < 0;

        r = audit_sync_complete(c->audit, &c->audit_job, r);
        audit_done(c, r, failed);
        commit_start(c);
}

/*
 * A checkpoint names the log's last record written when its batch was taken, durable or not. The
 * log is made durable up to there first, on this same thread: otherwise a crash could leave a
 * checkpoint holding a change whose record the log lost, such as a cached outcome whose run record
 * never reached the disk, served after the restart with no record of its run.
 */
static int budget_work(void *ctx) {
        Commit *c = ctx;
        int r;

        if (c->batch_log.fd >= 0) {
                r = audit_sync_job_run(&c->batch_log);
                if (r < 0)
                        return r;
        }
        return budget_batch_write(c->batch);
}

static void on_budget_written(void *ctx, int r, void *userdata) {
        Commit *c = userdata;
        uint64_t gen = budget_batch_generation(c->batch);

        c->batch = budget_batch_done(c->budget, c->batch, r);
        /* Only closed: the records it covered become durable for the waiters by the audit
         * writer's own job, which tells them in order. */
        c->batch_log.fd = safe_close(c->batch_log.fd);
        /* A failed checkpoint is tried again at the next one, not in a loop: the log holds every
         * change meanwhile, and the next rewrites every budget (budget_batch_done()). */
        if (r < 0)
                c->checkpoint_due = false;
        if (c->holding)
                return;
        budget_done(c, gen, r);
        if (r >= 0)
                commit_start(c);
}

/* Arms the one-shot timer *s to fire usec from now, unless it is armed already (made on first
 * use). 0, or a negative errno when no timer could be made. */
static int timer_arm(Commit *c, sd_event_source **s, uint64_t usec,
                     sd_event_time_handler_t handler) {
        int enabled = SD_EVENT_OFF, r;

        if (*s && sd_event_source_get_enabled(*s, &enabled) >= 0 && enabled != SD_EVENT_OFF)
                return 0;
        if (!*s) {
                r = sd_event_add_time_relative(c->event, s, CLOCK_MONOTONIC, usec,
                                               COMMIT_LATER_SLACK_USEC, handler, c);
                if (r < 0)
                        return r;
        } else
                (void)sd_event_source_set_time_relative(*s, usec);
        (void)sd_event_source_set_enabled(*s, SD_EVENT_ONESHOT);
        return 0;
}

/* Whether the budget changes since the last checkpoint call for one (CHECKPOINT_CHANGES). */
static bool checkpoint_wanted(const Commit *c) {
        size_t n;

        if (!c->budget)
                return false;
        n = budget_count(c->budget);
        return budget_changes_pending(c->budget) >= MAX(n, (size_t)CHECKPOINT_CHANGES);
}

/* A batch could not even be taken (no memory): what waits for it fails now. */
static void budget_take_failed(Commit *c, int r) {
        budget_done(c, budget_generation(c->budget), r);
}

void commit_run(Commit *c) {
        if (c && c->audit && audit_get_seq(c->audit) > c->want_seq)
                c->want_seq = audit_get_seq(c->audit);
        commit_start(c);
}

/* Starts what can start: the audit job when a record someone waits for is not durable yet (and
 * with it every record written so far), a budget checkpoint when one is due. */
static void commit_start(Commit *c) {
        int r;

        if (!c || c->holding)
                return;
        if (c->idle)
                (void)sd_event_source_set_enabled(c->idle, SD_EVENT_OFF);
        if (c->audit && !disk_writer_busy(c->audit_writer) &&
            c->want_seq <= audit_get_durable_seq(c->audit))
                /* Nothing waits: lazy records stay for the next commit (or commit_later()'s
                 * bound); waiters already durable are told. */
                audit_done(c, 0, false);
        else if (c->audit && !disk_writer_busy(c->audit_writer)) {
                /* This job takes every record written so far, the lazy ones too. commit_later()'s
                 * timer stays armed and finds them taken (on_later()): disarming it here and
                 * arming it again at the next answer cost two timerfd_settime() calls per
                 * question back to back. */
                r = audit_sync_prepare(c->audit, &c->audit_job);
                if (r >= 0)
                        c->lazy_since = 0;
                if (r > 0) {
                        r = disk_writer_start(c->audit_writer, audit_work, &c->audit_job);
                        if (r < 0)
                                audit_done(c, audit_sync_complete(c->audit, &c->audit_job, r),
                                           true);
                } else
                        audit_done(c, r, false);
        }
        /*
         * The budget snapshot is a checkpoint of the log (budget.h): a reservation or an outcome
         * is durable once its record is, so no answer waits for it. A checkpoint is written off
         * the answer path, past CHECKPOINT_CHANGES changes.
         */
        if (checkpoint_wanted(c))
                c->checkpoint_due = true;
        if (c->budget && c->checkpoint_due && !disk_writer_busy(c->budget_writer)) {
                BudgetBatch *b = NULL;

                c->checkpoint_due = false;
                /* Before the batch: its position is the log's last record now (budget_work()). 0:
                 * every record is durable already, nothing to sync. */
                r = c->audit ? audit_sync_prepare(c->audit, &c->batch_log) : 0;
                if (r >= 0)
                        r = budget_batch_take(c->budget, &b);
                if (r < 0) {
                        c->batch_log.fd = safe_close(c->batch_log.fd);
                        budget_take_failed(c, r);
                } else if (!b) {
                        c->batch_log.fd = safe_close(c->batch_log.fd);
                        budget_done(c, budget_durable_generation(c->budget), 0);
                } else {
                        c->batch = b;
                        r = disk_writer_start(c->budget_writer, budget_work, c);
                        if (r < 0)
                                on_budget_written(c, r, c);
                }
        }
}

/* commit_later()'s timer: a commit for the lazy records when the oldest has waited its bound,
 * else the timer again for when it will have; nothing when a commit took them all meanwhile. */
static int on_later(sd_event_source *s, uint64_t usec, void *userdata) {
        Commit *c = userdata;
        uint64_t now = clock_monotonic_usec();

        if (c->lazy_since == 0)
                return 0;
        if (now - c->lazy_since + COMMIT_LATER_SLACK_USEC >= COMMIT_LATER_USEC ||
            timer_arm(c, &c->later, c->lazy_since + COMMIT_LATER_USEC - now, on_later) < 0)
                commit_run(c);
        return 0;
}

/*
 * A record nothing waits for rides the next commit, or a commit of its own COMMIT_LATER_USEC
 * later: questions asked closer than that cost their two commits and nothing more. What a crash
 * of the machine in between can take is safe to lose (ARCHITECTURE.md, Flows): a ticket's "done"
 * (it reads "expired" after the restart), a cached outcome (the next ask runs again, free: its
 * reservation's record is durable), a release (the slot stays charged). A kill of lockd takes
 * none of them: they are in the page cache.
 */
void commit_later(Commit *c) {
        if (!c)
                return;
        if (c->lazy_since == 0)
                c->lazy_since = clock_monotonic_usec();
        if (checkpoint_wanted(c))
                commit_want(c);
        else if (timer_arm(c, &c->later, COMMIT_LATER_USEC, on_later) < 0)
                /* No timer: a commit of its own rather than a record left waiting. */
                commit_want(c);
}

/*
 * The audit log's hook before a segment switch (audit_set_rotate_hook()): every record is durable
 * by then, and the budgets checkpoint at the old file's last record, so that a start's replay
 * reads the current file only. The batch out first, its done taken now (a failed one's budgets
 * wait again); nothing else starts meanwhile (this runs inside an append).
 */
static int checkpoint_before_rotate(void *userdata) {
        Commit *c = userdata;
        int r;

        c->holding = true;
        disk_writer_finish(c->budget_writer);
        r = budget_checkpoint(c->budget);
        c->holding = false;
        commit_want(c);
        return r;
}

int commit_checkpoint(Commit *c) {
        if (!c || !c->budget)
                return -EINVAL;
        return checkpoint_before_rotate(c);
}

/* The write-ahead log of the budgets: each change a "budget" record, durable with the next
 * commit; the position a checkpoint covers is the log's last record. */
static int budget_log_append(const BudgetChange *ch, void *userdata) {
        AuditField f[BUDGET_CHANGE_FIELDS_MAX];
        BudgetChangeText text;
        int n;

        n = budget_change_fields(ch, &text, f);
        return n < 0 ? n : audit_append_fields_nosync(userdata, AUDIT_BUDGET, f, (size_t)n);
}

static void budget_log_position(uint64_t *ret_seq, char ret_head[BUDGET_HEAD_HEX + 1],
                                void *userdata) {
        *ret_seq = audit_get_seq(userdata);
        memcpy(ret_head, audit_get_head(userdata), BUDGET_HEAD_HEX + 1);
}

/* The hook once the writers are gone (commit_free(), the engine's way out): the same checkpoint,
 * with no batch out. */
static int checkpoint_plain(void *userdata) {
        return budget_checkpoint(userdata);
}

static const BudgetLog budget_log = {
        .append = budget_log_append,
        .position = budget_log_position,
};

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
        if (seq > c->want_seq)
                c->want_seq = seq;
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
        *c = (Commit){.event = e,
                      .audit = audit,
                      .budget = budget,
                      .audit_job.fd = -EBADF,
                      .batch_log.fd = -EBADF};
        r = disk_writer_new(e, on_audit_written, c, &c->audit_writer);
        if (r >= 0)
                r = disk_writer_new(e, on_budget_written, c, &c->budget_writer);
        if (r < 0) {
                commit_free(c);
                return r;
        }
        budget_set_barrier(budget, budget_barrier, c);
        if (budget && audit) {
                /* The log stays the budgets' until both close (the engine's way out records the
                 * runs it ends). */
                budget_set_log(budget, &budget_log, audit);
                audit_set_rotate_hook(audit, checkpoint_before_rotate, c);
        }
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
        if (c->batch_log.fd >= 0)
                c->batch_log.fd = safe_close(c->batch_log.fd);
        if (c->audit && c->budget)
                audit_set_rotate_hook(c->audit, checkpoint_plain, c->budget);
        if (c->budget) {
                budget_set_barrier(c->budget, NULL, NULL);
                c->batch = budget_batch_done(c->budget, c->batch, -ECANCELED);
        }
        commit_cancel(c);
        sd_event_source_disable_unref(c->idle);
        sd_event_source_disable_unref(c->later);
        free(c);
        return NULL;
}
