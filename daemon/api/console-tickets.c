/* The Varlink handlers for tickets of io.lockd.Console: ListTickets, GetTicket, WatchTickets,
 * Deny, Approve, Results, EndSession; the audit records of ticket changes; the replies and watches
 * the agent's methods (agent-tickets.c) share. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "agent-reply.h"
#include "console-reply.h"
#include "ask.h"
#include "audit.h"
#include "budget.h"
#include "catalog.h"
#include "commit.h"
#include "console-tickets.h"
#include "peer.h"
#include "handles.h"
#include "inputs.h"
#include "log-ids.h"
#include "log.h"
#include "macro.h"
#include "engine.h"
#include "policy.h"
#include "release.h"
#include "seal.h"
#include "sessions.h"

/* Longer than any id, so a malformed one is an UnknownTicket like any other. */
#define TICKET_PARAM_MAX 128

/* A call that follows tickets: an agent's Wait on one ticket, or a console's WatchTickets. Their
 * number needs no cap of its own: each is a call without its final answer, and the Varlink server
 * bounds those per connection, connections per uid and connections in total. */
typedef struct TicketWatch {
        Manager *manager;
        VarlinkCall *call;
        bool all;                       /* WatchTickets: every ticket */
        SessionId session;              /* WatchTickets: the console's, for session_holds */
        char ticket[TICKET_ID_LEN + 1]; /* Wait: this one */
        struct TicketWatch *prev, *next;
} TicketWatch;

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
int console_ticket_watch_add(Manager *m, VarlinkCall *call, const char *ticket) {
        TicketWatch *w = calloc(1, sizeof(*w));
        const struct ucred *cred = peer_cred(call);

        if (!w)
                return -ENOMEM;
        if (!ticket && cred)
                peer_session(call, &w->session);
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

/*
 * The outcomes set so far, in step order: what an agent may learn of its ticket (clear true). A
 * console below security level 3 gets clear false: which steps are final and the errors that say
 * nothing of the file (denied, cancelled, input_invalid...), never a bit, and plugin_error no more
 * than a bit, since it is an outcome of the content too (ARCHITECTURE.md, the threat model).
 */
static json_t *outcomes_json(const Ticket *t, bool clear) {
        json_t *list = json_array();

        for (size_t i = 0; list && i < t->plan->n_steps; i++) {
                const TicketOutcome *o = &t->outcomes[i];
                json_t *e;

                if (!o->set)
                        continue;
                if (clear)
                        e = json_pack("{s:I, s:o, s:o}", "step", (json_int_t)i, "result",
                                      o->result < 0 ? json_null() : json_integer(o->result),
                                      "error", o->error ? json_string(o->error) : json_null());
                else
                        e = json_pack("{s:I, s:n, s:o}", "step", (json_int_t)i, "result", "error",
                                      o->error && strcmp(o->error, "plugin_error") != 0
                                              ? json_string(o->error)
                                              : json_null());
                if (!e || json_array_append_new(list, e) < 0) {
                        json_decref(list);
                        return NULL;
                }
        }
        return list;
}

/* The ticket's seal public key in base64, or NULL when nothing may be sealed to it now. */
static json_t *seal_key_json(const Ticket *t) {
        uint8_t pub[SEAL_KEY_SIZE];
        char b64[4 * ((SEAL_KEY_SIZE + 2) / 3) + 1]; /* base64_encoded_len(SEAL_KEY_SIZE) + 1 */

        if (!t->seal || t->state != TICKET_PENDING)
                return json_null();
        seal_key_public(t->seal, pub);
        base64_encode(pub, sizeof(pub), b64);
        return json_string(b64);
}

/*
 * The console's view of a ticket: for each step what the human decides on (plugin, its fixed
 * question and the meaning of each answer, the handle and the label it had at the submit, the
 * placeholders bound to each input), and which placeholders the console's session (sid, NULL for
 * none) holds already: their names, never a value.
 */
static json_t *ticket_json(Manager *m, const Ticket *t, const SessionId *sid) {
        _cleanup_(json_decrefp) json_t *steps = json_array(), *phs = json_array(),
                                       *held = json_array(), *o = NULL;
        const Plan *p = t->plan;

        if (!steps || !phs || !held)
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
        for (size_t i = 0; i < p->n_placeholders; i++) {
                if (json_array_append_new(phs, json_string(p->placeholders[i])) < 0)
                        return NULL;
                if (sid && m->sessions &&
                    sessions_get(m->sessions, sid, p->placeholders[i], false) &&
                    json_array_append_new(held, json_string(p->placeholders[i])) < 0)
                        return NULL;
        }
        o = json_pack("{s:s, s:I, s:s, s:I, s:I, s:O, s:O, s:O, s:o*, s:b, s:o*}", "ticket", t->id,
                      "agent_uid", (json_int_t)t->agent, "state", ticket_state_name(t->state),
                      "created_usec", (json_int_t)t->created_usec, "expires_usec",
                      (json_int_t)t->expires_usec, "steps", steps, "placeholders", phs,
                      "session_holds", held, "seal_key", seal_key_json(t), "auto", t->auto_approved,
                      "outcomes", outcomes_json(t, m->policy->security_level >= 3));
        return TAKE_PTR(o);
}

/* The fields of every ticket record: never a binding, a value or a question's text. */
size_t console_ticket_audit_fields(const Ticket *t, AuditField *out) {
        out[0] = audit_field_string("ticket", t->id);
        out[1] = audit_field_counter("agent_uid", (uint64_t)t->agent);
        out[2] = audit_field_counter("steps", t->plan->n_steps);
        return CONSOLE_TICKET_FIELDS;
}

/* Records a deny, cancel or expiry. The change stands when the record cannot be written: ending
 * a ticket takes nothing away from the human and is always safe; the failure is logged. */
int console_ticket_audit_end(Manager *m, AuditEvent ev, const char *message_id, const Ticket *t,
                             const struct ucred *by) {
        AuditField f[CONSOLE_TICKET_FIELDS + 1];
        size_t n = console_ticket_audit_fields(t, f);
        int r;

        if (by)
                f[n++] = audit_field_counter("peer_uid", by->uid);
        r = audit_append_fields(m->audit, ev, f, n);
        /* An expiry happens whatever the disk says (a ticket cannot outlive its timeout); the
         * answered changes (cancel, deny) are refused by their callers instead. */
        if (r < 0 && ev == AUDIT_EXPIRE)
                log_error_errno(r, message_id,
                                "ticket %s expired; its audit record could not be written: %m",
                                t->id);
        else if (r < 0)
                log_error_errno(r, message_id,
                                "ticket %s: the %s was refused: its audit record could not be "
                                "written: %m",
                                t->id, ev == AUDIT_CANCEL ? "cancel" : "deny");
        return r;
}

void console_ticket_changed(const Ticket *t, void *userdata) {
        Manager *m = userdata;
        bool final = ticket_state_final(t->state);
        TicketWatch *next;

        if (t->state == TICKET_EXPIRED)
                console_ticket_audit_end(m, AUDIT_EXPIRE, LOCKD_MESSAGE_AUDIT_EXPIRE, t, NULL);
        /* Done: said in the log (without a sync of its own: it rides the next commit, at most
         * commit_later()'s bound later), so that a restart does not end it again as expired. */
        if (t->state == TICKET_DONE && m->audit) {
                AuditField f[CONSOLE_TICKET_FIELDS];
                size_t n = console_ticket_audit_fields(t, f);

                if (audit_append_fields_nosync(m->audit, AUDIT_DONE, f, n) >= 0)
                        commit_later(m->commit);
        }

        /* Replies are queued, never torn down here: a cancel callback cannot run under us. */
        for (TicketWatch *w = m->ticket_watches; w; w = next) {
                next = w->next;
                if (w->all) {
                        if (reply_more(
                                    w->call,
                                    json_pack("{s:o*}", "ticket", ticket_json(m, t, &w->session)),
                                    true) < 0)
                                watch_free(w);
                } else if (strcmp(w->ticket, t->id) == 0) {
                        if (agent_reply_wait(w->call, t, !final) < 0 || final)
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

/* The approval's audit record: who, how many values were typed and how many replayed from the
 * session. Never a value or a placeholder's binding. */
static int approve_record(Manager *m, const Ticket *t, const struct ucred *by, size_t typed,
                          size_t replayed) {
        AuditField f[CONSOLE_TICKET_FIELDS + 4];
        size_t n = console_ticket_audit_fields(t, f);
        int r;

        f[n++] = audit_field_counter("values_typed", typed);
        f[n++] = audit_field_counter("values_replayed", replayed);
        f[n++] = audit_field_counter("peer_uid", by->uid);
        f[n++] = audit_field_integer("peer_pid", by->pid);
        r = audit_append_fields(m->audit, AUDIT_APPROVE, f, n);
        if (r < 0)
                log_error_errno(r, LOCKD_MESSAGE_AUDIT_APPROVE,
                                "ticket %s not approved: its audit record could not be written: %m",
                                t->id);
        return r;
}

int console_ticket_reply_unknown(VarlinkCall *call, const char *iface_error, const char *id) {
        return reply_error(call, iface_error, json_pack("{s:s}", "ticket", id));
}

/*
 * One page of tickets: pending ones first, then every other, each newest first, so what waits for
 * the human is on the first page however full the set is (an agent's flood of auto tickets
 * cannot push it off). A page holds at most limit tickets (LIST_PAGE_DEFAULT, at most
 * LIST_PAGE_MAX) and stops before LIST_PAGE_BYTES of tickets, one ticket at least: far under the
 * connection's output cap, so the answer is never too large to send. next is the cursor for the
 * following page, null after the last.
 */
static int method_list_tickets(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        _cleanup_(list_page_done) ListPage page = {};
        _cleanup_(json_decrefp) json_t *reply = NULL;
        const char *state = json_string_value(json_object_get(params, "state"));
        const char *cursor = json_string_value(json_object_get(params, "cursor"));
        json_t *agent = json_object_get(params, "agent_uid");
        TicketFilter f = {.state = -1};
        TicketCursor c = {};
        const struct ucred *cred = peer_cred(call);
        const Ticket *t;
        SessionId sid;
        int r;

        if (!cred)
                return 0;
        if (list_page_init(&page, params) < 0)
                return -ENOMEM;
        if (state) {
                for (f.state = 0; f.state < _TICKET_STATE_MAX; f.state++)
                        if (strcmp(ticket_state_name(f.state), state) == 0)
                                break;
                if (f.state == _TICKET_STATE_MAX)
                        return reply_invalid_request(call, "state: not a ticket state");
        }
        if (json_is_integer(agent)) {
                f.by_agent = true;
                f.agent = (uid_t)json_integer_value(agent);
        }
        if (cursor && ticket_cursor_parse(cursor, &c) < 0)
                return reply_invalid_request(call, "cursor: not one that ListTickets gave");
        peer_session(call, &sid);
        /* Each ticket's key is the cursor just past it; the page ends as every listing's does
         * (console-reply.h), its next the key of the last ticket on it. */
        while ((t = tickets_next(m->tickets, &f, &c))) {
                char key[TICKET_CURSOR_STRING_MAX];

                ticket_cursor_format(&c, key);
                r = list_page_add(&page, ticket_json(m, t, &sid), key);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
        }
        reply = list_page_reply(&page, "tickets");
        if (!reply ||
            json_object_set_new(reply, "pending",
                                json_integer((json_int_t)tickets_n_pending_all(m->tickets))) < 0 ||
            json_object_set_new(reply, "total", json_integer((json_int_t)tickets_n(m->tickets))) <
                    0)
                return -ENOMEM;
        return reply_ok(call, TAKE_PTR(reply));
}

static int method_get_ticket(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        const char *id = json_string_value(json_object_get(params, "ticket"));
        const Ticket *t = tickets_get(m->tickets, id);
        const struct ucred *cred = peer_cred(call);
        SessionId sid;

        if (!cred)
                return 0;
        if (!t)
                return console_ticket_reply_unknown(call, CONSOLE_ERROR("UnknownTicket"), id);
        peer_session(call, &sid);
        return reply_more(call, json_pack("{s:o*}", "ticket", ticket_json(m, t, &sid)), false);
}

static int method_watch_tickets(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        int r;

        if (!varlink_call_wants_more(call))
                return varlink_call_error(call, VARLINK_ERROR_EXPECTED_MORE, NULL);
        r = console_ticket_watch_add(m, call, NULL);
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
                return console_ticket_reply_unknown(call, CONSOLE_ERROR("UnknownTicket"), id);
        if (t->state != TICKET_PENDING)
                return reply_error(call, CONSOLE_ERROR("TicketNotPending"),
                                   json_pack("{s:s, s:s}", "ticket", id, "state",
                                             ticket_state_name(t->state)));
        /* The record first: a deny whose record cannot be written leaves the ticket pending. */
        r = console_ticket_audit_end(m, AUDIT_DENY, LOCKD_MESSAGE_AUDIT_DENY, t, peer_cred(call));
        if (r < 0)
                return reply_audit_unavailable(call, CONSOLE_ERROR("Unavailable"), r);
        r = tickets_finish(m->tickets, id, TICKET_DENIED);
        if (r == -EBUSY)
                return reply_error(call, CONSOLE_ERROR("TicketNotPending"),
                                   json_pack("{s:s, s:s}", "ticket", id, "state",
                                             ticket_state_name(t->state)));
        if (r < 0)
                return r;
        return varlink_call_reply(call, NULL, false);
}

/* The placeholder's index in the plan, or -1. */
static ssize_t placeholder_index(const Plan *p, const char *name) {
        for (size_t k = 0; k < p->n_placeholders; k++)
                if (strcmp(p->placeholders[k], name) == 0)
                        return (ssize_t)k;
        return -1;
}

/* Whether value fits every input placeholder k is bound to in t: only such a value joins the
 * session, so a misfit is never replayed. */
static bool value_fits(const Ticket *t, size_t k, const SecBuf *value) {
        const Plan *p = t->plan;

        for (size_t i = 0; i < p->n_steps; i++) {
                const PlanStep *st = &p->steps[i];

                for (size_t b = 0; b < st->n_bindings; b++) {
                        const ManifestInput *in;

                        if (strcmp(st->bindings[b].placeholder, p->placeholders[k]) != 0)
                                continue;
                        in = manifest_find_input(st->manifest, st->bindings[b].input);
                        if (!in || input_value_check(in, (const char *)value->data, value->len) < 0)
                                return false;
                }
        }
        return true;
}

/* A NUL-terminated copy of len bytes in secure memory; a value with a NUL byte inside is refused
 * (-EINVAL): it could not be passed on whole. */
static int value_copy(const void *data, size_t len, SecBuf **ret) {
        SecBuf *b;
        int r;

        if (memchr(data, 0, len))
                return -EINVAL;
        r = secbuf_new(len + 1, &b);
        if (r < 0)
                return r;
        memcpy(b->data, data, len);
        b->data[len] = 0;
        b->len = len;
        *ret = b;
        return 0;
}

static void values_free(SecBuf **v, size_t n) {
        for (size_t k = 0; k < n; k++)
                v[k] = secbuf_free(v[k]);
}

/*
 * Approve: the values come sealed to the ticket's key, or from the console's session. Each is
 * opened into locked memory, checked, handed to the runs' fd 6 JSON and wiped; the ones that fit
 * join the session. No value is ever put in a reply, a log line or an audit record; an error
 * names a placeholder at most.
 */
/* The values an Approve gives: an object of sealed strings, each named after a placeholder of t.
 * 0, or answered (the method returns r < 0 ? r : 0). */
static int approve_check_values(VarlinkCall *call, const Ticket *t, json_t *given) {
        const char *key;
        json_t *v;
        int r;

        if (given && !json_is_object(given)) {
                r = reply_error(call, CONSOLE_ERROR("InvalidRequest"),
                                json_pack("{s:s}", "reason", "values must be an object"));
                return r < 0 ? r : 1;
        }
        json_object_foreach(given, key, v) {
                if (!json_is_string(v) || json_string_length(v) > SEAL_TEXT_MAX)
                        r = reply_error(
                                call, CONSOLE_ERROR("InvalidRequest"),
                                json_pack("{s:s}", "reason", "each value must be a sealed string"));
                else if (placeholder_index(t->plan, key) < 0)
                        r = reply_error(call, CONSOLE_ERROR("InvalidRequest"),
                                        json_pack("{s:s}", "reason",
                                                  "values names a placeholder the ticket does "
                                                  "not have"));
                else
                        continue;
                return r < 0 ? r : 1;
        }
        return 0;
}

/* The values the human typed for this approval (typed[k]) that fit their inputs are kept in the
 * console's input session sid for the next tickets; a session that starts is recorded. */
static void approve_keep_typed(Manager *m, const Ticket *t, const SessionId *sid,
                               SecBuf *const *vals, const bool *typed) {
        for (size_t k = 0; k < t->plan->n_placeholders; k++) {
                SecBuf *copy = NULL;

                if (!typed[k] || !vals[k] || !value_fits(t, k, vals[k]))
                        continue;
                if (value_copy(vals[k]->data, vals[k]->len, &copy) < 0)
                        continue; /* the session only misses a value: the human types it again */
                if (sessions_put(m->sessions, sid, t->plan->placeholders[k], copy) > 0) {
                        _cleanup_(json_decrefp) json_t *f = json_pack(
                                "{s:I, s:s}", "uid", (json_int_t)sid->uid, "session", sid->name);
                        if (!f || audit_append(m->audit, AUDIT_SESSION_START, f) < 0)
                                log_error_errno(-EIO, LOCKD_MESSAGE_AUDIT_SESSION_START,
                                                "input session of uid %u started; its audit record "
                                                "could not be written",
                                                (unsigned)sid->uid);
                }
        }
}

static int method_approve(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        const char *id = json_string_value(json_object_get(params, "ticket"));
        json_t *given = json_object_get(params, "values"), *v;
        const struct ucred *cred = peer_cred(call);
        SecBuf *vals[PLAN_PLACEHOLDERS_MAX] = {};
        bool typed[PLAN_PLACEHOLDERS_MAX] = {};
        size_t n_typed = 0, n_replayed = 0, n = 0;
        SessionId sid;
        Ticket *t;
        int r;

        if (!cred)
                return 0;
        t = tickets_get_mutable(m->tickets, id);
        if (!t)
                return console_ticket_reply_unknown(call, CONSOLE_ERROR("UnknownTicket"), id);
        if (t->state != TICKET_PENDING)
                return reply_error(call, CONSOLE_ERROR("TicketNotPending"),
                                   json_pack("{s:s, s:s}", "ticket", t->id, "state",
                                             ticket_state_name(t->state)));
        if (!m->sessions)
                return reply_error(call, CONSOLE_ERROR("Unavailable"),
                                   json_pack("{s:s}", "reason", "lockd is stopping"));
        r = approve_check_values(call, t, given);
        if (r != 0)
                return r < 0 ? r : 0;
        peer_session(call, &sid);

        n = t->plan->n_placeholders;
        for (size_t k = 0; k < n; k++) {
                const char *name = t->plan->placeholders[k];
                const SecBuf *held;
                SecBuf *opened = NULL;

                v = json_object_get(given, name);
                if (v) {
                        r = unseal_value(t->seal, t->id, name, json_string_value(v), &opened);
                        if (r == -ENOMEM)
                                goto fail;
                        if (r >= 0) {
                                r = value_copy(opened->data, opened->len, &vals[k]);
                                opened = secbuf_free(opened);
                                if (r == -ENOMEM)
                                        goto fail;
                                /* A value with a NUL inside stays NULL: its steps fail as
                                 * input_invalid. */
                        } else {
                                values_free(vals, n);
                                return reply_error(call, CONSOLE_ERROR("ValueNotSealed"),
                                                   json_pack("{s:s}", "placeholder", name));
                        }
                        typed[k] = true;
                        n_typed++;
                        continue;
                }
                held = sessions_get(m->sessions, &sid, name, true);
                if (!held) {
                        values_free(vals, n);
                        return reply_error(call, CONSOLE_ERROR("MissingValue"),
                                           json_pack("{s:s}", "placeholder", name));
                }
                r = value_copy(held->data, held->len, &vals[k]);
                if (r < 0)
                        goto fail;
                n_replayed++;
        }

        /* No record, no approval: the key and the ticket stay as they were. */
        r = approve_record(m, t, cred, n_typed, n_replayed);
        if (r < 0) {
                values_free(vals, n);
                return reply_audit_unavailable(call, CONSOLE_ERROR("Unavailable"), r);
        }
        approve_keep_typed(m, t, &sid, vals, typed);
        (void)tickets_start(m->tickets, t);
        ask_start(m, t, (const SecBuf *const *)vals);
        values_free(vals, n);
        return reply_more(call, json_pack("{s:s}", "state", ticket_state_name(t->state)), false);
fail:
        values_free(vals, n);
        return -ENOMEM;
}

/* Results: what the human may see of each step, at security level 3 only. */
static int method_results(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        const char *id = json_string_value(json_object_get(params, "ticket"));
        _cleanup_(json_decrefp) json_t *steps = json_array();
        const Ticket *t;

        if (!steps)
                return -ENOMEM;
        if (m->policy->security_level < 3)
                return reply_error(call, CONSOLE_ERROR("ResultsRefused"),
                                   json_pack("{s:I}", "security_level",
                                             (json_int_t)m->policy->security_level));
        t = tickets_get(m->tickets, id);
        if (!t)
                return console_ticket_reply_unknown(call, CONSOLE_ERROR("UnknownTicket"), id);
        for (size_t i = 0; i < t->plan->n_steps; i++) {
                const TicketOutcome *o = &t->outcomes[i];
                const TicketRun *tr = &t->runs[i];
                json_t *e = json_pack(
                        "{s:I, s:o, s:o, s:o, s:b}", "step", (json_int_t)i, "result",
                        o->set && o->result >= 0 ? json_integer(o->result) : json_null(), "error",
                        o->set && o->error ? json_string(o->error) : json_null(), "cause",
                        o->set ? json_string(tr->cause[0] ? tr->cause : o->error) : json_null(),
                        "cached", tr->cached);

                if (!e || json_array_append_new(steps, e) < 0)
                        return -ENOMEM;
                if (tr->ran &&
                    (json_object_set_new(e, "unit",
                                         tr->unit[0] ? json_string(tr->unit) : json_null()) < 0 ||
                     json_object_set_new(e, "wall_usec", json_integer(tr->wall_usec)) < 0 ||
                     json_object_set_new(e, "setup_usec", json_integer(tr->setup_usec)) < 0 ||
                     json_object_set_new(e, "scope_wait_usec", json_integer(tr->scope_wait_usec)) <
                             0 ||
                     json_object_set_new(e, "cpu_usec", json_integer(tr->cpu_usec)) < 0 ||
                     json_object_set_new(e, "stderr_bytes", json_integer(tr->stderr_bytes)) < 0))
                        return -ENOMEM;
                /* Absent when unknown (the run's cgroup was gone before it was read). */
                if (tr->ran && tr->peak_memory_bytes > 0 &&
                    json_object_set_new(e, "peak_memory_bytes",
                                        json_integer(tr->peak_memory_bytes)) < 0)
                        return -ENOMEM;
                if (tr->detail && json_object_set_new(e, "detail", json_string(tr->detail)) < 0)
                        return -ENOMEM;
        }
        return reply_more(call,
                          json_pack("{s:s, s:s, s:O}", "ticket", t->id, "state",
                                    ticket_state_name(t->state), "steps", steps),
                          false);
}

static int method_end_session(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        const struct ucred *cred = peer_cred(call);
        SessionId sid;
        size_t n = 0;

        if (!cred)
                return 0;
        peer_session(call, &sid);
        if (m->sessions)
                n = sessions_end(m->sessions, &sid, SESSION_END_REQUESTED);
        return reply_more(call, json_pack("{s:I}", "values", (json_int_t)n), false);
}

void console_session_ended(const SessionId *id, SessionEnd why, size_t n_values, void *userdata) {
        Manager *m = userdata;
        _cleanup_(json_decrefp) json_t *f =
                json_pack("{s:I, s:s, s:s, s:I}", "uid", (json_int_t)id->uid, "session", id->name,
                          "reason", session_end_name(why), "value_count", (json_int_t)n_values);

        if (!f || audit_append(m->audit, AUDIT_SESSION_END, f) < 0)
                log_error_errno(-EIO, LOCKD_MESSAGE_AUDIT_SESSION_END,
                                "input session of uid %u wiped (%s); its audit record could not "
                                "be written",
                                (unsigned)id->uid, session_end_name(why));
}

static const VarlinkParam params_none[] = {{NULL}};
static const VarlinkParam params_list_tickets[] = {
        {"state", VARLINK_STRING, false, 1, 16},
        {"agent_uid", VARLINK_INT, false, 0, UINT32_MAX - 1},
        {"cursor", VARLINK_STRING, false, 1, TICKET_CURSOR_STRING_MAX - 1},
        {"limit", VARLINK_INT, false, 1, LIST_PAGE_MAX},
        {NULL},
};
static const VarlinkParam params_ticket[] = {
        {"ticket", VARLINK_STRING, true, 1, TICKET_PARAM_MAX},
        {NULL},
};
/* values: at most one per placeholder a plan can have; each checked again in the handler. */
static const VarlinkParam params_approve[] = {
        {"ticket", VARLINK_STRING, true, 1, TICKET_PARAM_MAX},
        {"values", VARLINK_OBJECT, false, 0, 0},
        {NULL},
};

const VarlinkMethod console_ticket_methods[] = {
        {"ListTickets", method_list_tickets, params_list_tickets, 0},
        {"GetTicket", method_get_ticket, params_ticket, 0},
        {"WatchTickets", method_watch_tickets, params_none, VARLINK_METHOD_MORE},
        {"Deny", method_deny, params_ticket, 0},
        {"Approve", method_approve, params_approve, 0},
        {"Results", method_results, params_ticket, 0},
        {"EndSession", method_end_session, params_none, 0},
        {NULL},
};
