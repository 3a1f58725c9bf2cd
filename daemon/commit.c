/* The group commit (ARCHITECTURE.md, Flows): audit records and budget changes written without a
 * sync, made durable by two writer threads, and what waited for them (Submits, runs, answers)
 * let go on the loop, all in one place. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ask.h"
#include "audit.h"
#include "budget.h"
#include "commit.h"
#include "console-reply.h"
#include "disk-writer.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "tickets.h"

/* A Submit whose ticket waits for its audit record (seq) to be durable. */
typedef struct SubmitWait {
        VarlinkCall *call;
        char ticket[TICKET_ID_LEN + 1];
        uint64_t seq;
        struct SubmitWait *next;
} SubmitWait;

struct Commit {
        Manager *manager;
        DiskWriter *audit_writer;
        DiskWriter *budget_writer;
        AuditSyncJob audit_job; /* while audit_writer is busy */
        BudgetBatch *batch;     /* while budget_writer is busy */
        SubmitWait *submits, *submits_tail;
        size_t n_submits;
        sd_event_source *idle; /* commit_want() */
};

/* Submits waiting at once before the commit is started at once rather than at idle time. */
#define SUBMIT_BATCH_MAX 64

/* Answers the waiting Submits whose records are durable (every one when the log broke, r < 0):
 * announced (and an auto ticket's steps let go) or removed and refused. */
static void submits_answer(Manager *m, int r) {
        Commit *c = m->commit;
        uint64_t durable = audit_get_durable_seq(m->audit);

        while (c->submits && (r < 0 || c->submits->seq <= durable)) {
                SubmitWait *w = c->submits;
                Ticket *t = tickets_get_mutable(m->tickets, w->ticket);

                c->submits = w->next;
                if (!c->submits)
                        c->submits_tail = NULL;
                c->n_submits--;
                if (r < 0 || !t) {
                        if (t)
                                (void)tickets_remove(m->tickets, w->ticket);
                        (void)reply_audit_unavailable(w->call, AGENT_ERROR("Unavailable"),
                                                      r < 0 ? r : -EIO);
                } else {
                        tickets_announce(m->tickets, t);
                        /* It may be done already (every answer cached): the id stays valid for
                         * Wait. */
                        (void)reply_more(w->call,
                                         json_pack("{s:s, s:s}", "ticket", t->id, "state",
                                                   ticket_state_name(t->state)),
                                         false);
                }
                varlink_call_unref(w->call);
                free(w);
        }
}

/* The audit log's part of a commit ended (on the loop, or inline from commit_sync()). The log's
 * breaking is said once, when a job's fsync() failed; the calls after it refuse quietly (each
 * refused Submit and withheld answer says so itself). */
static void audit_done(Manager *m, int r, bool tell) {
        if (r < 0 && tell)
                log_error_errno(r, LOCKD_MESSAGE_AUDIT_SUBMIT,
                                "the audit log could not be made durable: tickets are refused "
                                "and answers withheld: %m");
        submits_answer(m, r);
        ask_records_durable(m, r);
}

/* The budget's part ended: runs whose reservations are on disk start, or fail with it. */
static void budget_done(Manager *m, uint64_t gen, int r) {
        if (r < 0)
                log_error_errno(r, NULL, "budget changes could not be written: %m");
        ask_budget_durable(m, gen, r);
}

static int audit_work(void *ctx) {
        return audit_sync_job_run(ctx);
}

static void on_audit_written(void *ctx, int r, void *userdata) {
        Commit *c = userdata;
        Manager *m = c->manager;
        bool failed = r < 0;

        r = audit_sync_complete(m->audit, &c->audit_job, r);
        audit_done(m, r, failed);
        commit_run(m);
}

static int budget_work(void *ctx) {
        return budget_batch_write(ctx);
}

static void on_budget_written(void *ctx, int r, void *userdata) {
        Commit *c = userdata;
        Manager *m = c->manager;
        uint64_t gen = budget_batch_generation(c->batch);

        c->batch = budget_batch_done(m->budget, c->batch, r);
        budget_done(m, gen, r);
        /* A failed batch is not tried again from here: the next change or waiting run does,
         * so a disk that keeps failing is not written to in a loop. */
        if (r >= 0)
                commit_run(m);
}

/* A batch could not even be taken (no memory): what waits for it fails now. */
static void budget_take_failed(Manager *m, int r) {
        budget_done(m, budget_generation(m->budget), r);
}

void commit_run(Manager *m) {
        Commit *c = m->commit;
        int r;

        if (!c) {
                /* Before the writers exist (start-up): the same, on the loop. */
                commit_sync(m);
                return;
        }
        if (c->idle)
                (void)sd_event_source_set_enabled(c->idle, SD_EVENT_OFF);
        if (m->audit && !disk_writer_busy(c->audit_writer)) {
                r = audit_sync_prepare(m->audit, &c->audit_job);
                if (r > 0) {
                        r = disk_writer_start(c->audit_writer, audit_work, &c->audit_job);
                        if (r < 0)
                                audit_done(m, audit_sync_complete(m->audit, &c->audit_job, r),
                                           true);
                } else
                        audit_done(m, r, false);
        }
        if (m->budget && !disk_writer_busy(c->budget_writer)) {
                BudgetBatch *b = NULL;

                r = budget_batch_take(m->budget, &b);
                if (r < 0)
                        budget_take_failed(m, r);
                else if (!b)
                        budget_done(m, budget_durable_generation(m->budget), 0);
                else {
                        c->batch = b;
                        r = disk_writer_start(c->budget_writer, budget_work, b);
                        if (r < 0)
                                on_budget_written(b, r, c);
                }
        }
}

void commit_sync(Manager *m) {
        Commit *c = m->commit;
        int r;

        if (c) {
                disk_writer_finish(c->audit_writer);
                disk_writer_finish(c->budget_writer);
        }
        /* Done handlers may write more (a ticket done, a commit): twice covers them. */
        for (int i = 0; i < 2; i++) {
                if (m->audit)
                        audit_done(m, audit_sync(m->audit), false);
                if (m->budget) {
                        r = budget_flush(m->budget);
                        budget_done(m,
                                    r < 0 ? budget_generation(m->budget)
                                          : budget_durable_generation(m->budget),
                                    r);
                }
        }
}

static int on_idle(sd_event_source *s, void *userdata) {
        commit_run(userdata);
        return 0;
}

void commit_want(Manager *m) {
        Commit *c = m->commit;

        if (!c) {
                commit_run(m);
                return;
        }
        if (!c->idle) {
                if (sd_event_add_defer(m->event, &c->idle, on_idle, m) < 0) {
                        /* No idle-time commit: start it now rather than never. */
                        commit_run(m);
                        return;
                }
                (void)sd_event_source_set_priority(c->idle, SD_EVENT_PRIORITY_IDLE);
        }
        (void)sd_event_source_set_enabled(c->idle, SD_EVENT_ONESHOT);
}

int commit_queue_submit(Manager *m, VarlinkCall *call, const char *ticket) {
        Commit *c = m->commit;
        SubmitWait *w;

        if (!c)
                return -ENOMEM;
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->call = varlink_call_ref(call);
        memcpy(w->ticket, ticket, sizeof(w->ticket));
        w->seq = audit_get_seq(m->audit);
        if (c->submits_tail)
                c->submits_tail->next = w;
        else
                c->submits = w;
        c->submits_tail = w;
        if (++c->n_submits >= SUBMIT_BATCH_MAX)
                commit_run(m);
        else
                commit_want(m);
        return 0;
}

void commit_forget_submits(Manager *m) {
        Commit *c = m->commit;

        /* Submits still waiting get no answer at exit (audit_close() makes their records
         * durable); a stop answered them before (commit_sync()). */
        while (c && c->submits) {
                SubmitWait *w = c->submits;

                c->submits = w->next;
                varlink_call_unref(w->call);
                free(w);
        }
        if (c) {
                c->submits_tail = NULL;
                c->n_submits = 0;
        }
}

/* The budget store's barrier: a write of its own waits for the batch on its way. */
static void budget_barrier(void *userdata) {
        Commit *c = userdata;

        disk_writer_wait(c->budget_writer);
}

int commit_new(Manager *m, Commit **ret) {
        Commit *c;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->manager = m;
        c->audit_job.fd = -EBADF;
        r = disk_writer_new(m->event, on_audit_written, c, &c->audit_writer);
        if (r >= 0)
                r = disk_writer_new(m->event, on_budget_written, c, &c->budget_writer);
        if (r < 0) {
                commit_free(c);
                return r;
        }
        budget_set_barrier(m->budget, budget_barrier, c);
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
        if (c->manager->budget) {
                budget_set_barrier(c->manager->budget, NULL, NULL);
                c->batch = budget_batch_done(c->manager->budget, c->batch, -ECANCELED);
        }
        commit_forget_submits(c->manager);
        sd_event_source_disable_unref(c->idle);
        free(c);
        return NULL;
}
