/* The Varlink handlers for an agent's tickets (io.lockd.Agent): Submit, Wait and Cancel. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent-reply.h"
#include "agent-tickets.h"
#include "ask.h"
#include "audit.h"
#include "budget.h"
#include "catalog.h"
#include "commit.h"
#include "console-reply.h"
#include "console-tickets.h"
#include "handles.h"
#include "log-ids.h"
#include "log.h"
#include "macro.h"
#include "engine.h"
#include "plan.h"
#include "policy.h"
#include "restart.h"

/* Longer than any id, so a malformed one is an UnknownTicket like any other. */
#define TICKET_PARAM_MAX 128

/* A Submit whose ticket waits for its audit record to be durable (commit_wait()). */
typedef struct SubmitWait {
        Manager *manager;
        VarlinkCall *call;
        char ticket[TICKET_ID_LEN + 1];
} SubmitWait;

/* The Submit's answer once its record is durable: the ticket announced (and an auto ticket's
 * steps let go), or removed and refused when the log broke. */
static void submit_answer(Manager *m, SubmitWait *w, int r) {
        Ticket *t = tickets_get_mutable(m->tickets, w->ticket);

        if (r < 0 || !t) {
                if (t)
                        (void)tickets_remove(m->tickets, w->ticket);
                (void)reply_audit_unavailable(w->call, AGENT_ERROR("Unavailable"),
                                              r < 0 ? r : -EIO);
                return;
        }
        tickets_announce(m->tickets, t);
        /* It may be done already (every answer cached): the id stays valid for Wait. */
        (void)agent_reply_submit(w->call, t);
}

/* CommitWaitFn: answers, or at exit (-ECANCELED) drops the Submit unanswered. */
static void submit_durable(int r, void *userdata) {
        SubmitWait *w = userdata;

        if (r != -ECANCELED)
                submit_answer(w->manager, w, r);
        varlink_call_unref(w->call);
        free(w);
}

/* Queues call's answer (Submit of ticket, whose audit record was just written) behind the
 * commit; it may come before this returns. 0 or -ENOMEM. */
static int submit_queue(Manager *m, VarlinkCall *call, const char *ticket) {
        SubmitWait *w = calloc(1, sizeof(*w));
        int r;

        if (!w)
                return -ENOMEM;
        w->manager = m;
        w->call = varlink_call_ref(call);
        memcpy(w->ticket, ticket, sizeof(w->ticket));
        r = commit_wait(m->commit, audit_get_seq(m->audit), submit_durable, w);
        if (r < 0) {
                varlink_call_unref(w->call);
                free(w);
        }
        return r;
}

/* PlanCallbacks.handle_lookup: the same lookup and comparison for an absent handle and for
 * another agent's (handles_get_for_agent() does both in one order for every id). */
static int cb_handle_lookup(void *userdata, const char *handle_id, uid_t agent, void **ret) {
        Manager *m = userdata;
        const Handle *h = handles_get_for_agent(m->handles, handle_id, agent);

        *ret = (void *)h;
        return h ? 1 : 0;
}

static int cb_plugin_lookup(void *userdata, const char *name, const Manifest **ret_manifest,
                            void **ret_plugin) {
        Manager *m = userdata;
        const CatalogPlugin *p = catalog_find(m->catalog, name);

        if (!p)
                return 0;
        *ret_manifest = p->release->manifest;
        *ret_plugin = (void *)p;
        return 1;
}

/* PlanCallbacks.budget_query: the content's budget (its digest), as the grant limits it. */
static int cb_budget_query(void *userdata, const PlanStep *step, PlanBudget *ret) {
        Manager *m = userdata;
        const Handle *h = step->handle;
        BudgetKey key;
        int charged, left;

        if (budget_key_init(&key, step->manifest->name, step->manifest->version) < 0)
                return -EIO;
        for (size_t i = 0; i < step->n_bindings; i++)
                if (budget_key_add(&key, step->bindings[i].input, step->bindings[i].placeholder) <
                    0)
                        return -EIO;
        charged = budget_charged(m->budget, h->digest, &key);
        if (charged < 0)
                return charged;
        left = budget_left(m->budget, h->digest, h->budget);
        if (left < 0)
                return left;
        memcpy(ret->account, h->digest, sizeof(ret->account));
        ret->remaining = (unsigned)left;
        ret->answered = charged > 0;
        return 0;
}

/* A refused plan as its io.lockd.Agent error: where it failed (step, input), never a binding. */
static int reply_plan_error(VarlinkCall *call, const PlanError *e) {
        char name[64];

        snprintf(name, sizeof(name), AGENT_ERROR("%s"), plan_error_varlink(e->code));
        switch (e->code) {
        case E_PLAN_INVALID_REQUEST:
                return reply_error(call, name, json_pack("{s:s}", "reason", e->reason));
        case E_PLAN_LITERAL_INPUT:
        case E_PLAN_BAD_PLACEHOLDER:
        case E_PLAN_UNKNOWN_INPUT:
        case E_PLAN_MISSING_INPUT:
                return reply_error(call, name,
                                   json_pack("{s:i, s:s}", "step", e->step, "input", e->field));
        default:
                return reply_error(call, name, json_pack("{s:i}", "step", e->step));
        }
}

static int method_submit(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        const struct ucred *cred = peer_cred(call);
        const PlanCallbacks cb = {
                .handle_lookup = cb_handle_lookup,
                .plugin_lookup = cb_plugin_lookup,
                .budget_query = cb_budget_query,
                .userdata = m,
        };
        const char *labels[PLAN_STEPS_MAX] = {};
        _cleanup_(plan_freep) Plan *plan = NULL;
        AuditField fields[CONSOLE_TICKET_FIELDS + 2];
        size_t n_fields;
        const Ticket *t = NULL;
        Ticket *mt;
        PlanError e = {};
        const PolicyLimits *lim = &m->policy->limits;
        bool auto_run = true;
        int r;

        if (!cred)
                return 0;
        r = plan_validate(json_object_get(params, "steps"), cred->uid, &cb, &plan, &e);
        if (r == -EINVAL)
                return reply_plan_error(call, &e);
        if (r < 0)
                return r;

        /* The ticket keeps its plugins (a removal must not pull a manifest from under the
         * console's view) and a copy of each label, not the handles: those are looked up again
         * by id when the ticket runs, so a revocation in between is honoured. A ticket runs
         * without the console only when every step is a protocol-1 question (no input, so
         * nothing for the human to type) on a handle the human granted with auto. */
        for (size_t i = 0; i < plan->n_steps; i++) {
                PlanStep *s = &plan->steps[i];

                auto_run = auto_run && ((const Handle *)s->handle)->auto_run &&
                           s->manifest->protocol == 1;
                labels[i] = ((const Handle *)s->handle)->label;
                s->handle = NULL;
                s->plugin = catalog_plugin_ref(s->plugin);
        }
        r = tickets_submit(m->tickets, cred->uid, plan, labels,
                           lim->ticket_timeout_sec * 1000000ULL, lim->pending_tickets_per_agent,
                           &t);
        if (r < 0) {
                console_ticket_release_plan(plan, m);
                if (r == -EDQUOT || r == -ENOSPC)
                        return reply_error(
                                call, AGENT_ERROR("TooManyTickets"),
                                json_pack("{s:I}", "limit",
                                          (json_int_t)(r == -EDQUOT ? lim->pending_tickets_per_agent
                                                                    : TICKETS_MAX)));
                return r;
        }
        TAKE_PTR(plan);

        /* No record, no ticket: nothing reaches the console that the audit log does not show.
         * An auto ticket's one record says so ("auto": true): it is lockd's approval too, so
         * the record that lets the ticket run is on disk before it runs. */
        n_fields = console_ticket_audit_fields(t, fields);
        fields[n_fields++] = audit_field_integer("peer_pid", cred->pid);
        fields[n_fields++] = audit_field_bool("auto", auto_run);
        mt = tickets_get_mutable(m->tickets, t->id);
        mt->agent_pid = cred->pid;
        mt->auto_approved = auto_run;
        r = audit_append_fields_nosync(m->audit, AUDIT_SUBMIT, fields, n_fields);
        if (r < 0) {
                log_error_errno(r, LOCKD_MESSAGE_AUDIT_SUBMIT,
                                "ticket refused: its audit record could not be written: %m");
                (void)tickets_remove(m->tickets, t->id);
                return reply_audit_unavailable(call, AGENT_ERROR("Unavailable"), r);
        }
        /* An auto ticket's runs start now, so the manager creates their scopes while the record
         * is made durable; no outcome leaves before it is: the ticket is announced (and its Wait
         * possible) only after the commit, and every run's answer waits for its own record, written
         * after this one, to be durable too (ask.h). */
        if (auto_run) {
                (void)tickets_start(m->tickets, mt);
                ask_start(m, mt, NULL);
        }
        /* The answer and the announcement wait for the commit (submit_durable(), which may run
         * from here: nothing of the ticket may be touched after this call). */
        r = submit_queue(m, call, t->id);
        if (r < 0) {
                /* The record is written but nobody waits for it: it stays, like that of a
                 * ticket whose agent left; the ticket goes. */
                (void)tickets_remove(m->tickets, t->id);
                return r;
        }
        return 0;
}

static int method_wait(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        const char *id = json_string_value(json_object_get(params, "ticket"));
        const struct ucred *cred = peer_cred(call);
        const Ticket *t;
        bool more;
        int r;

        if (!cred)
                return 0;
        t = tickets_get_for_agent(m->tickets, id, cred->uid);
        if (!t) {
                /* Open when the last lockd stopped: ended as expired by this one's start. */
                const RestartTicket *rt = restart_tickets_find(&m->restart_tickets, id, cred->uid);

                if (rt)
                        return agent_reply_wait_restart(call, rt);
                return console_ticket_reply_unknown(call, AGENT_ERROR("UnknownTicket"), id);
        }
        more = varlink_call_wants_more(call) && !ticket_state_final(t->state);
        if (more) {
                r = console_ticket_watch_add(m, call, t->id);
                if (r < 0)
                        return r;
        }
        return agent_reply_wait(call, t, more);
}

static int method_cancel(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        const char *id = json_string_value(json_object_get(params, "ticket"));
        const struct ucred *cred = peer_cred(call);
        const Ticket *t;
        int r;

        if (!cred)
                return 0;
        t = tickets_get_for_agent(m->tickets, id, cred->uid);
        if (!t)
                return console_ticket_reply_unknown(call, AGENT_ERROR("UnknownTicket"), id);
        if (t->state != TICKET_PENDING)
                return reply_error(call, AGENT_ERROR("TicketNotPending"),
                                   json_pack("{s:s, s:s}", "ticket", id, "state",
                                             ticket_state_name(t->state)));
        /* The record first: no change is answered without it (the ticket stays as it was). */
        r = console_ticket_audit_end(m, AUDIT_CANCEL, LOCKD_MESSAGE_AUDIT_CANCEL, t, cred);
        if (r < 0)
                return reply_audit_unavailable(call, AGENT_ERROR("Unavailable"), r);
        r = tickets_finish(m->tickets, id, TICKET_CANCELLED);
        if (r == -EBUSY)
                return reply_error(call, AGENT_ERROR("TicketNotPending"),
                                   json_pack("{s:s, s:s}", "ticket", id, "state",
                                             ticket_state_name(t->state)));
        if (r < 0)
                return r;
        return varlink_call_reply(call, NULL, false);
}

/* The steps are the validator's to judge, shape included, so that a bad plan gets its own
 * error; the message size cap bounds them before. */
static const VarlinkParam params_submit[] = {
        {"steps", VARLINK_ARRAY, true, 0, 0},
        {NULL},
};

static const VarlinkParam params_ticket[] = {
        {"ticket", VARLINK_STRING, true, 1, TICKET_PARAM_MAX},
        {NULL},
};

const VarlinkMethod agent_ticket_methods[] = {
        {"Submit", method_submit, params_submit, 0},
        {"Wait", method_wait, params_ticket, VARLINK_METHOD_MORE},
        {"Cancel", method_cancel, params_ticket, 0},
        {NULL},
};
