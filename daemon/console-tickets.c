/* The Varlink handlers for tickets: the agent's Submit, Wait and Cancel, the console's
 * ListTickets, GetTicket, WatchTickets and Deny, and the audit records of their changes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "budget.h"
#include "catalog.h"
#include "console-tickets.h"
#include "handles.h"
#include "log-ids.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "policy.h"
#include "release.h"

#define AGENT_ERROR(name)   "io.lockd.Agent." name
#define CONSOLE_ERROR(name) "io.lockd.Console." name

/* Longer than any id, so a malformed one is an UnknownTicket like any other. */
#define TICKET_PARAM_MAX 128

/* A call that follows tickets: an agent's Wait on one ticket, or a console's WatchTickets. Their
 * number needs no cap of its own: each is a call without its final answer, and the Varlink server
 * bounds those per connection, connections per uid and connections in total. */
typedef struct TicketWatch {
        Manager *manager;
        VarlinkCall *call;
        bool all;                       /* WatchTickets: every ticket */
        char ticket[TICKET_ID_LEN + 1]; /* Wait: this one */
        struct TicketWatch *prev, *next;
} TicketWatch;

/* Answers with params (taken; NULL from a failed json_pack() is -ENOMEM). */
static int reply_ok(VarlinkCall *call, json_t *params, bool continues) {
        int r = params ? varlink_call_reply(call, params, continues) : -ENOMEM;

        json_decref(params);
        return r;
}

static int reply_error(VarlinkCall *call, const char *error, json_t *params) {
        int r = params ? varlink_call_error(call, error, params) : -ENOMEM;

        json_decref(params);
        return r;
}

/* The peer's credentials; NULL once the peer is gone. */
static const struct ucred *peer(VarlinkCall *call) {
        VarlinkConn *c = varlink_call_conn(call);

        return c ? varlink_conn_peer(c) : NULL;
}

static void watch_free(TicketWatch *w) {
        Manager *m = w->manager;

        if (w->prev)
                w->prev->next = w->next;
        else
                m->ticket_watches = w->next;
        if (w->next)
                w->next->prev = w->prev;
        varlink_call_set_cancel(w->call, NULL, NULL);
        varlink_call_unref(w->call);
        free(w);
}

static void watch_cancelled(VarlinkCall *call, void *userdata) {
        watch_free(userdata);
}

/* Follows call (a reference is taken) until its final answer or its peer's end. */
static int watch_add(Manager *m, VarlinkCall *call, const char *ticket) {
        TicketWatch *w = calloc(1, sizeof(*w));

        if (!w)
                return -ENOMEM;
        w->manager = m;
        w->call = varlink_call_ref(call);
        w->all = !ticket;
        if (ticket)
                memcpy(w->ticket, ticket, sizeof(w->ticket));
        w->next = m->ticket_watches;
        if (w->next)
                w->next->prev = w;
        m->ticket_watches = w;
        varlink_call_set_cancel(call, watch_cancelled, w);
        return 0;
}

void console_tickets_done(Manager *m) {
        while (m->ticket_watches)
                watch_free(m->ticket_watches);
}

/* The outcomes set so far, in step order: what an agent may learn of its ticket. */
static json_t *outcomes_json(const Ticket *t) {
        json_t *list = json_array();

        for (size_t i = 0; list && i < t->plan->n_steps; i++) {
                const TicketOutcome *o = &t->outcomes[i];
                json_t *e;

                if (!o->set)
                        continue;
                e = json_pack("{s:I, s:o, s:o}", "step", (json_int_t)i, "result",
                              o->result < 0 ? json_null() : json_integer(o->result), "error",
                              o->error ? json_string(o->error) : json_null());
                if (!e || json_array_append_new(list, e) < 0) {
                        json_decref(list);
                        return NULL;
                }
        }
        return list;
}

/* The agent's view of its ticket: the state and the outcomes, nothing of the console's side. */
static json_t *wait_reply(const Ticket *t) {
        return json_pack("{s:s, s:o*}", "state", ticket_state_name(t->state), "outcomes",
                         outcomes_json(t));
}

/*
 * The console's view of a ticket: for each step what the human decides on (plugin, its fixed
 * question and the meaning of each answer, the handle and the label it had at the submit, the
 * placeholders bound to each input). Never a value: at this stage none exists in lockd.
 */
static json_t *ticket_json(const Ticket *t) {
        _cleanup_(json_decrefp) json_t *steps = json_array(), *phs = json_array(), *o = NULL;
        const Plan *p = t->plan;

        if (!steps || !phs)
                return NULL;
        for (size_t i = 0; i < p->n_steps; i++) {
                const PlanStep *s = &p->steps[i];
                const Manifest *mf = s->manifest;
                json_t *inputs = json_object(), *e;

                if (!inputs)
                        return NULL;
                for (size_t k = 0; k < s->n_bindings; k++)
                        if (json_object_set_new(inputs, s->bindings[k].input,
                                                json_string(s->bindings[k].placeholder)) < 0) {
                                json_decref(inputs);
                                return NULL;
                        }
                e = json_pack("{s:I, s:s, s:s, s:I, s:s, s:s, s:s, s:s, s:s?, s:o, s:b}", "step",
                              (json_int_t)i, "plugin", s->plugin_name, "version", mf->version,
                              "protocol", (json_int_t)mf->protocol, "question", mf->question, "one",
                              mf->one, "zero", mf->zero, "handle", s->handle_id, "label",
                              t->labels[i], "inputs", inputs, "charged", s->charged);
                if (!e || json_array_append_new(steps, e) < 0)
                        return NULL;
        }
        for (size_t i = 0; i < p->n_placeholders; i++)
                if (json_array_append_new(phs, json_string(p->placeholders[i])) < 0)
                        return NULL;
        o = json_pack("{s:s, s:I, s:s, s:I, s:I, s:O, s:O, s:o*}", "ticket", t->id, "agent_uid",
                      (json_int_t)t->agent, "state", ticket_state_name(t->state), "created_usec",
                      (json_int_t)t->created_usec, "expires_usec", (json_int_t)t->expires_usec,
                      "steps", steps, "placeholders", phs, "outcomes", outcomes_json(t));
        return TAKE_PTR(o);
}

/* The fields of every ticket record: never a binding, a value or a question's text. */
static json_t *audit_fields(const Ticket *t) {
        return json_pack("{s:s, s:I, s:I}", "ticket", t->id, "agent_uid", (json_int_t)t->agent,
                         "steps", (json_int_t)t->plan->n_steps);
}

/* Records a deny, cancel or expiry. The change stands when the record cannot be written: ending
 * a ticket takes nothing away from the human and is always safe; the failure is logged. */
static void audit_end(Manager *m, AuditEvent ev, const char *message_id, const Ticket *t,
                      const struct ucred *by) {
        _cleanup_(json_decrefp) json_t *f = audit_fields(t);
        int r = f ? 0 : -ENOMEM;

        if (r == 0 && by)
                r = json_object_set_new(f, "peer_uid", json_integer(by->uid)) < 0 ? -ENOMEM : 0;
        if (r == 0)
                r = audit_append(m->audit, ev, f);
        if (r < 0)
                log_error_errno(r, message_id,
                                "ticket %s %s; its audit record could not be "
                                "written: %m",
                                t->id, ticket_state_name(t->state));
}

void console_ticket_changed(const Ticket *t, void *userdata) {
        Manager *m = userdata;
        bool final = ticket_state_final(t->state);
        TicketWatch *next;

        if (t->state == TICKET_EXPIRED)
                audit_end(m, AUDIT_EXPIRE, LOCKD_MESSAGE_AUDIT_EXPIRE, t, NULL);

        /* Replies are queued, never torn down here: a cancel callback cannot run under us. */
        for (TicketWatch *w = m->ticket_watches; w; w = next) {
                next = w->next;
                if (w->all) {
                        if (reply_ok(w->call, json_pack("{s:o*}", "ticket", ticket_json(t)), true) <
                            0)
                                watch_free(w);
                } else if (strcmp(w->ticket, t->id) == 0) {
                        if (reply_ok(w->call, wait_reply(t), !final) < 0 || final)
                                watch_free(w);
                }
        }
}

void console_ticket_release_plan(Plan *plan, void *userdata) {
        for (size_t i = 0; i < plan->n_steps; i++) {
                if (plan->steps[i].plugin)
                        catalog_plugin_unref(plan->steps[i].plugin);
                plan->steps[i].plugin = NULL;
                plan->steps[i].manifest = NULL;
        }
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
        const struct ucred *cred = peer(call);
        const PlanCallbacks cb = {
                .handle_lookup = cb_handle_lookup,
                .plugin_lookup = cb_plugin_lookup,
                .budget_query = cb_budget_query,
                .userdata = m,
        };
        const char *labels[PLAN_STEPS_MAX] = {};
        _cleanup_(plan_freep) Plan *plan = NULL;
        _cleanup_(json_decrefp) json_t *fields = NULL;
        const Ticket *t = NULL;
        PlanError e = {};
        const PolicyLimits *lim = &m->policy->limits;
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
         * by id when the ticket runs, so a revocation in between is honoured. */
        for (size_t i = 0; i < plan->n_steps; i++) {
                PlanStep *s = &plan->steps[i];

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

        /* No record, no ticket: nothing reaches the console that the audit log does not show. */
        fields = audit_fields(t);
        if (fields && json_object_set_new(fields, "peer_pid", json_integer(cred->pid)) < 0) {
                json_decref(fields);
                fields = NULL;
        }
        r = fields ? audit_append(m->audit, AUDIT_SUBMIT, fields) : -ENOMEM;
        if (r < 0) {
                log_error_errno(r, LOCKD_MESSAGE_AUDIT_SUBMIT,
                                "ticket refused: its audit record could not be written: %m");
                (void)tickets_remove(m->tickets, t->id);
                return reply_error(call, AGENT_ERROR("Unavailable"),
                                   json_pack("{s:s}", "reason", "the audit log cannot be written"));
        }
        tickets_announce(m->tickets, t);
        return reply_ok(call, json_pack("{s:s, s:s}", "ticket", t->id, "state", "pending"), false);
}

static int reply_unknown_ticket(VarlinkCall *call, const char *iface_error, const char *id) {
        return reply_error(call, iface_error, json_pack("{s:s}", "ticket", id));
}

static int method_wait(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        const char *id = json_string_value(json_object_get(params, "ticket"));
        const struct ucred *cred = peer(call);
        const Ticket *t;
        bool more;
        int r;

        if (!cred)
                return 0;
        t = tickets_get_for_agent(m->tickets, id, cred->uid);
        if (!t)
                return reply_unknown_ticket(call, AGENT_ERROR("UnknownTicket"), id);
        more = varlink_call_wants_more(call) && !ticket_state_final(t->state);
        if (more) {
                r = watch_add(m, call, t->id);
                if (r < 0)
                        return r;
        }
        return reply_ok(call, wait_reply(t), more);
}

static int method_cancel(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        const char *id = json_string_value(json_object_get(params, "ticket"));
        const struct ucred *cred = peer(call);
        const Ticket *t;
        int r;

        if (!cred)
                return 0;
        t = tickets_get_for_agent(m->tickets, id, cred->uid);
        if (!t)
                return reply_unknown_ticket(call, AGENT_ERROR("UnknownTicket"), id);
        r = tickets_finish(m->tickets, id, TICKET_CANCELLED);
        if (r == -EBUSY)
                return reply_error(call, AGENT_ERROR("TicketNotPending"),
                                   json_pack("{s:s, s:s}", "ticket", id, "state",
                                             ticket_state_name(t->state)));
        if (r < 0)
                return r;
        audit_end(m, AUDIT_CANCEL, LOCKD_MESSAGE_AUDIT_CANCEL, t, cred);
        return varlink_call_reply(call, NULL, false);
}

static int method_list_tickets(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        _cleanup_(json_decrefp) json_t *list = json_array();
        size_t n = tickets_n(m->tickets);

        if (!list)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (json_array_append_new(list, ticket_json(tickets_at(m->tickets, i))) < 0)
                        return -ENOMEM;
        return reply_ok(call, json_pack("{s:O}", "tickets", list), false);
}

static int method_get_ticket(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        const char *id = json_string_value(json_object_get(params, "ticket"));
        const Ticket *t = tickets_get(m->tickets, id);

        if (!t)
                return reply_unknown_ticket(call, CONSOLE_ERROR("UnknownTicket"), id);
        return reply_ok(call, json_pack("{s:o*}", "ticket", ticket_json(t)), false);
}

static int method_watch_tickets(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        int r;

        if (!varlink_call_wants_more(call))
                return varlink_call_error(call, VARLINK_ERROR_EXPECTED_MORE, NULL);
        r = watch_add(m, call, NULL);
        if (r < 0)
                return r;
        /* The first answer carries no ticket: it says the watch is live from here on. */
        return varlink_call_reply(call, NULL, true);
}

static int method_deny(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        const char *id = json_string_value(json_object_get(params, "ticket"));
        const Ticket *t = tickets_get(m->tickets, id);
        int r;

        if (!t)
                return reply_unknown_ticket(call, CONSOLE_ERROR("UnknownTicket"), id);
        r = tickets_finish(m->tickets, id, TICKET_DENIED);
        if (r == -EBUSY)
                return reply_error(call, CONSOLE_ERROR("TicketNotPending"),
                                   json_pack("{s:s, s:s}", "ticket", id, "state",
                                             ticket_state_name(t->state)));
        if (r < 0)
                return r;
        audit_end(m, AUDIT_DENY, LOCKD_MESSAGE_AUDIT_DENY, t, peer(call));
        return varlink_call_reply(call, NULL, false);
}

static const VarlinkParam params_none[] = {{NULL}};
static const VarlinkParam params_ticket[] = {
        {"ticket", VARLINK_STRING, true, 1, TICKET_PARAM_MAX},
        {NULL},
};
/* The steps are the validator's to judge, shape included, so that a bad plan gets its own
 * error; the message size cap bounds them before. */
static const VarlinkParam params_submit[] = {
        {"steps", VARLINK_ARRAY, true, 0, 0},
        {NULL},
};

const VarlinkMethod console_ticket_methods[] = {
        {"ListTickets", method_list_tickets, params_none, 0},
        {"GetTicket", method_get_ticket, params_ticket, 0},
        {"WatchTickets", method_watch_tickets, params_none, VARLINK_METHOD_MORE},
        {"Deny", method_deny, params_ticket, 0},
        {NULL},
};

const VarlinkMethod agent_ticket_methods[] = {
        {"Submit", method_submit, params_submit, 0},
        {"Wait", method_wait, params_ticket, VARLINK_METHOD_MORE},
        {"Cancel", method_cancel, params_ticket, 0},
        {NULL},
};
