/* The group commit (ARCHITECTURE.md, Flows): the audit records and budget reservations written
 * without a sync made durable with one fsync() each, and the Submits that waited for it
 * answered, all in one place. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "budget.h"
#include "commit.h"
#include "console-reply.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "spawner-link.h"
#include "tickets.h"

/* How long a commit waits for a queued run's scope request before it happens anyway: a run that
 * waits for a free worker must not hold its Submit's answer. */
#define COMMIT_SCOPE_WAIT_USEC (2 * 1000ULL)

/* A Submit whose ticket waits for its audit record to be durable: the group commit makes every
 * record written meanwhile durable with one fsync(), then answers them all. */
typedef struct SubmitWait {
        VarlinkCall *call;
        char ticket[TICKET_ID_LEN + 1];
        struct SubmitWait *next;
} SubmitWait;

/* Submits waiting at once before the commit is done at once rather than at idle time. */
#define SUBMIT_BATCH_MAX 64

/* Answers every waiting Submit after one audit_sync(): announced (and an auto ticket started)
 * when the records are durable, removed and refused when they are not. */
static void submit_flush(Manager *m) {
        int r = audit_sync(m->audit);
        SubmitWait *w;

        if (r < 0)
                log_error_errno(r, LOCKD_MESSAGE_AUDIT_SUBMIT,
                                "tickets refused: their audit records could not be made "
                                "durable: %m");
        /* The list is taken first: announcing and running may queue nothing new, but a
         * reply's failure must not see a half-walked list. */
        w = m->submits;
        m->submits = NULL;
        while (w) {
                SubmitWait *next = w->next;
                Ticket *t = tickets_get_mutable(m->tickets, w->ticket);

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
                w = next;
        }
}

/* Queues call's answer behind the group commit, which runs when the loop has nothing more
 * urgent (so the Submits of one read, and of every connection ready now, share one fsync()),
 * or at once past SUBMIT_BATCH_MAX of them. */
int commit_queue_submit(Manager *m, VarlinkCall *call, const char *ticket) {
        SubmitWait *w, **tail = &m->submits;
        size_t n = 0;

        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->call = varlink_call_ref(call);
        memcpy(w->ticket, ticket, sizeof(w->ticket));
        while (*tail) {
                tail = &(*tail)->next;
                n++;
        }
        *tail = w;
        if (n + 1 >= SUBMIT_BATCH_MAX)
                commit_run(m);
        else
                commit_want(m);
        return 0;
}

void commit_forget_submits(Manager *m) {
        /* Submits still waiting get no answer at exit (audit_close() makes their records
         * durable); a stop answered them before (commit_run()). */
        while (m->submits) {
                SubmitWait *w = m->submits;

                m->submits = w->next;
                varlink_call_unref(w->call);
                free(w);
        }
}

void commit_run(Manager *m) {
        int r;

        if (m->budget && budget_dirty(m->budget)) {
                r = budget_flush(m->budget);
                /* The reservations stay pending: no answer of theirs leaves before a flush
                 * succeeds (ask.c tries again before each). */
                if (r < 0)
                        log_error_errno(r, NULL, "budget reservations could not be written: %m");
        }
        if (m->submits)
                submit_flush(m);
        m->commit_after_scope = false;
        if (m->commit_timer)
                (void)sd_event_source_set_enabled(m->commit_timer, SD_EVENT_OFF);
        if (m->commit)
                (void)sd_event_source_set_enabled(m->commit, SD_EVENT_OFF);
}

static int on_commit_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        commit_run(userdata);
        return 0;
}

void commit_want_after_scope(Manager *m) {
        int r;

        if (!spawner_link_scopes(m->spawner)) {
                commit_want(m);
                return;
        }
        if (m->commit_after_scope)
                return;
        if (!m->commit_timer)
                r = sd_event_add_time_relative(m->event, &m->commit_timer, CLOCK_MONOTONIC,
                                               COMMIT_SCOPE_WAIT_USEC, 0, on_commit_timer, m);
        else
                r = sd_event_source_set_time_relative(m->commit_timer, COMMIT_SCOPE_WAIT_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->commit_timer, SD_EVENT_ONESHOT);
        if (r < 0) {
                commit_want(m);
                return;
        }
        m->commit_after_scope = true;
        if (m->commit)
                (void)sd_event_source_set_enabled(m->commit, SD_EVENT_OFF);
}

static int on_commit(sd_event_source *s, void *userdata) {
        commit_run(userdata);
        return 0;
}

void commit_scope_requests_sent(void *userdata) {
        Manager *m = userdata;
        int idle = m->commit ? sd_event_source_get_enabled(m->commit, NULL) : 0;

        if (m->commit_after_scope || idle > 0)
                commit_run(m);
}

void commit_want(Manager *m) {
        /* A commit that waits for a scope request comes soon enough. */
        if (m->commit_after_scope)
                return;
        if (!m->commit) {
                if (sd_event_add_defer(m->event, &m->commit, on_commit, m) < 0) {
                        /* No idle-time commit: do it now rather than never. */
                        commit_run(m);
                        return;
                }
                (void)sd_event_source_set_priority(m->commit, SD_EVENT_PRIORITY_IDLE);
        }
        (void)sd_event_source_set_enabled(m->commit, SD_EVENT_ONESHOT);
}
