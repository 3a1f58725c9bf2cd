/* lockd-agent: io.lockd.Agent for C programs, on the blocking Varlink client. Every answer is
 * checked against the interface's declared shape before it reaches the caller. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lockd-agent.h"
#include "macro.h"
#include "varlink.h"

#define AGENT_INTERFACE "io.lockd.Agent"

struct LockdAgent {
        VarlinkClient *client;
};

void lockd_agent_error_clear(LockdAgentError *e) {
        if (!e)
                return;
        free(e->name);
        free(e->input);
        free(e->reason);
        free(e->parameters);
        *e = (LockdAgentError){.step = -1};
}

bool lockd_agent_unreachable(int r) {
        switch (r) {
        case -ECONNREFUSED:
        case -ENOENT:
        case -EACCES:
        case -EPERM:
        case -ECONNRESET:
        case -EPIPE:
        case -ENOTCONN:
        case -ETIMEDOUT:
        case -ENOTSOCK:
        case -ENAMETOOLONG:
                return true;
        default:
                return false;
        }
}

const char *lockd_agent_explain(const char *code) {
        static const struct {
                const char *code, *text;
        } table[] = {
                {"PermissionDenied", "lockd does not serve this user as an agent"},
                {"InvalidRequest", "the request is malformed"},
                {"UnknownHandle",
                 "no file with this handle is granted to you (it may have expired or been "
                 "revoked)"},
                {"UnknownPlugin", "no plugin of this name is installed"},
                {"LiteralInput",
                 "an input's value must be a placeholder \"${name}\" whose value only the human "
                 "types when approving; a literal value is refused"},
                {"BadPlaceholder",
                 "a placeholder is exactly \"${name}\", name of 1 to 32 characters a-z, 0-9 and _"},
                {"UnknownInput", "the plugin declares no input of this name"},
                {"MissingInput", "every input the plugin declares must be bound to a placeholder"},
                {"BudgetExhausted",
                 "the file's budget of distinct answers is used up; only the human can reset it"},
                {"TooManyTickets",
                 "too many of your tickets are pending; wait for them or cancel some"},
                {"UnknownTicket", "no ticket of yours has this id"},
                {"TicketNotPending", "only a pending ticket can be cancelled"},
                {"Unavailable", "lockd cannot serve this now"},
                {"TooManyConnections", "lockd is at its connection limit; try again later"},
                {"InterfaceNotFound",
                 "this socket does not serve you as an agent (is it lockd's agent socket, and is "
                 "this user listed under agents in lockd.yaml?)"},
                {"plugin_error",
                 "the plugin could not answer (it failed, or the file was not of a kind it "
                 "accepts); its cause is shown to the human only"},
                {"denied", "the human denied the ticket, or the file was revoked before it ran"},
                {"input_invalid", "a value the human typed does not fit the input's kind"},
                {"budget_exhausted", "the file's budget of distinct answers was used up"},
                {"cancelled", "the ticket was cancelled"},
                {"expired", "nobody approved the ticket in time, or lockd restarted meanwhile"},
        };
        const char *dot = code ? strrchr(code, '.') : NULL;

        if (dot)
                code = dot + 1;
        for (size_t i = 0; code && i < ELEMENTSOF(table); i++)
                if (strcmp(table[i].code, code) == 0)
                        return table[i].text;
        return NULL;
}

int lockd_agent_connect(const char *path, LockdAgent **ret) {
        LockdAgent *a;
        int r;

        if (!ret)
                return -EINVAL;
        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        r = varlink_client_connect(path ? path : LOCKD_AGENT_SOCKET, &a->client);
        if (r < 0) {
                free(a);
                return r;
        }
        *ret = a;
        return 0;
}

LockdAgent *lockd_agent_free(LockdAgent *a) {
        if (!a)
                return NULL;
        varlink_client_free(a->client);
        free(a);
        return NULL;
}

static char *strdup_or_null(const char *s) {
        return s ? strdup(s) : NULL;
}

/* Fills err from an error answer; -EREMOTEIO, or -ENOMEM. */
static int error_fill(LockdAgentError *err, const char *name, json_t *params) {
        LockdAgentError e = {.step = -1};
        json_t *step = json_object_get(params, "step");
        const char *dot;

        if (!err)
                return -EREMOTEIO;
        e.name = strdup(name);
        e.parameters = json_dumps(params ? params : json_object(), JSON_COMPACT | JSON_SORT_KEYS);
        e.input = strdup_or_null(json_string_value(json_object_get(params, "input")));
        e.reason = strdup_or_null(json_string_value(json_object_get(params, "reason")));
        if (!e.name || !e.parameters || (json_object_get(params, "input") && !e.input) ||
            (json_object_get(params, "reason") && !e.reason)) {
                lockd_agent_error_clear(&e);
                return -ENOMEM;
        }
        if (json_is_integer(step))
                e.step = json_integer_value(step);
        dot = strrchr(e.name, '.');
        e.code = dot ? dot + 1 : e.name;
        lockd_agent_error_clear(err);
        *err = e;
        return -EREMOTEIO;
}

/* One call of io.lockd.Agent.<method>; *ret the answer's parameters. */
static int agent_call(LockdAgent *a, const char *method, json_t *params, json_t **ret,
                      LockdAgentError *err) {
        _cleanup_(json_decrefp) json_t *p = NULL;
        _cleanup_free_ char *error = NULL, *qualified = NULL;
        int r;

        if (!a)
                return -EINVAL;
        if (asprintf(&qualified, "%s.%s", AGENT_INTERFACE, method) < 0)
                return -ENOMEM;
        r = varlink_client_call(a->client, qualified, params, NULL, 0, &p, &error);
        if (r < 0)
                return r;
        if (error)
                return error_fill(err, error, p);
        *ret = TAKE_PTR(p);
        return 0;
}

static const char *member_string(json_t *o, const char *key, bool nullable, int *r) {
        json_t *v = json_object_get(o, key);

        if (json_is_string(v))
                return json_string_value(v);
        if (nullable && (!v || json_is_null(v)))
                return NULL;
        *r = -EBADMSG;
        return NULL;
}

static int64_t member_int(json_t *o, const char *key, bool nullable, int64_t none, int *r) {
        json_t *v = json_object_get(o, key);

        if (json_is_integer(v))
                return json_integer_value(v);
        if (!nullable || (v && !json_is_null(v)))
                *r = -EBADMSG;
        return none;
}

/* A copy of a string member that must be there; -EBADMSG or -ENOMEM in *r otherwise. */
static char *member_dup(json_t *o, const char *key, bool nullable, int *r) {
        const char *s = member_string(o, key, nullable, r);
        char *d;

        if (!s)
                return NULL;
        d = strdup(s);
        if (!d)
                *r = -ENOMEM;
        return d;
}

void lockd_files_free(LockdFile *f, size_t n) {
        for (size_t i = 0; f && i < n; i++) {
                free(f[i].handle);
                free(f[i].label);
        }
        free(f);
}

int lockd_agent_list_files(LockdAgent *a, LockdFile **ret, size_t *ret_n, LockdAgentError *err) {
        _cleanup_(json_decrefp) json_t *p = NULL;
        LockdFile *files;
        json_t *list, *h;
        size_t i;
        int r = 0;

        if (!ret || !ret_n)
                return -EINVAL;
        r = agent_call(a, "ListHandles", NULL, &p, err);
        if (r < 0)
                return r;
        list = json_object_get(p, "handles");
        if (!json_is_array(list))
                return -EBADMSG;
        files = calloc(json_array_size(list) + 1, sizeof(*files));
        if (!files)
                return -ENOMEM;
        json_array_foreach(list, i, h) {
                files[i].handle = member_dup(h, "handle", false, &r);
                files[i].label = member_dup(h, "label", true, &r);
                files[i].budget_left = member_int(h, "budget_left", false, 0, &r);
                files[i].expires_usec = member_int(h, "expires_usec", true, -1, &r);
        }
        if (r < 0) {
                lockd_files_free(files, json_array_size(list));
                return r;
        }
        *ret = files;
        *ret_n = json_array_size(list);
        return 0;
}

void lockd_questions_free(LockdQuestion *q, size_t n) {
        for (size_t i = 0; q && i < n; i++) {
                free(q[i].name);
                free(q[i].version);
                free(q[i].question);
                free(q[i].one);
                free(q[i].zero);
                for (size_t j = 0; j < q[i].n_accepts; j++)
                        free(q[i].accepts[j]);
                free(q[i].accepts);
                for (size_t j = 0; j < q[i].n_inputs; j++) {
                        free(q[i].inputs[j].name);
                        free(q[i].inputs[j].kind);
                }
                free(q[i].inputs);
        }
        free(q);
}

static int question_fill(LockdQuestion *q, json_t *o) {
        json_t *accepts = json_object_get(o, "accepts"), *inputs = json_object_get(o, "inputs"), *v;
        size_t i;
        int r = 0;

        q->name = member_dup(o, "name", false, &r);
        q->version = member_dup(o, "version", false, &r);
        q->protocol = member_int(o, "protocol", false, 0, &r);
        q->question = member_dup(o, "question", false, &r);
        q->one = member_dup(o, "one", false, &r);
        q->zero = member_dup(o, "zero", false, &r);
        if (r < 0)
                return r;
        if (!json_is_array(accepts) || !json_is_array(inputs))
                return -EBADMSG;
        q->accepts = calloc(json_array_size(accepts) + 1, sizeof(char *));
        q->inputs = calloc(json_array_size(inputs) + 1, sizeof(LockdInput));
        if (!q->accepts || !q->inputs)
                return -ENOMEM;
        json_array_foreach(accepts, i, v) {
                if (!json_is_string(v))
                        return -EBADMSG;
                q->accepts[i] = strdup(json_string_value(v));
                if (!q->accepts[i])
                        return -ENOMEM;
                q->n_accepts = i + 1;
        }
        json_array_foreach(inputs, i, v) {
                q->inputs[i].name = member_dup(v, "name", false, &r);
                q->inputs[i].kind = member_dup(v, "kind", false, &r);
                q->inputs[i].max_bytes = member_int(v, "max_bytes", false, 0, &r);
                q->n_inputs = i + 1;
                if (r < 0)
                        return r;
        }
        return 0;
}

int lockd_agent_list_questions(LockdAgent *a, LockdQuestion **ret, size_t *ret_n,
                               LockdAgentError *err) {
        _cleanup_(json_decrefp) json_t *p = NULL;
        LockdQuestion *qs;
        json_t *list, *o;
        size_t i;
        int r;

        if (!ret || !ret_n)
                return -EINVAL;
        r = agent_call(a, "ListPlugins", NULL, &p, err);
        if (r < 0)
                return r;
        list = json_object_get(p, "plugins");
        if (!json_is_array(list))
                return -EBADMSG;
        qs = calloc(json_array_size(list) + 1, sizeof(*qs));
        if (!qs)
                return -ENOMEM;
        json_array_foreach(list, i, o) {
                r = question_fill(&qs[i], o);
                if (r < 0) {
                        lockd_questions_free(qs, json_array_size(list));
                        return r;
                }
        }
        *ret = qs;
        *ret_n = json_array_size(list);
        return 0;
}

/* The Submit parameters for steps. */
static json_t *steps_to_json(const LockdStep *steps, size_t n) {
        _cleanup_(json_decrefp) json_t *list = json_array();

        if (!list)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                _cleanup_(json_decrefp) json_t *s = NULL, *in = NULL;

                if (!steps[i].plugin || !steps[i].handle)
                        return NULL;
                s = json_pack("{s:s, s:s}", "plugin", steps[i].plugin, "handle", steps[i].handle);
                if (!s)
                        return NULL;
                if (steps[i].n_inputs > 0) {
                        in = json_object();
                        if (!in)
                                return NULL;
                        for (size_t j = 0; j < steps[i].n_inputs; j++) {
                                const LockdBinding *b = &steps[i].inputs[j];

                                if (!b->input || !b->value ||
                                    json_object_set_new(in, b->input, json_string(b->value)) < 0)
                                        return NULL;
                        }
                        if (json_object_set(s, "inputs", in) < 0)
                                return NULL;
                }
                if (json_array_append(list, s) < 0)
                        return NULL;
        }
        return json_pack("{s:O}", "steps", list);
}

int lockd_agent_submit(LockdAgent *a, const LockdStep *steps, size_t n_steps, char **ret_ticket,
                       char **ret_state, LockdAgentError *err) {
        _cleanup_(json_decrefp) json_t *params = NULL, *p = NULL;
        _cleanup_free_ char *ticket = NULL, *state = NULL;
        int r = 0;

        if (!steps || n_steps == 0 || !ret_ticket)
                return -EINVAL;
        params = steps_to_json(steps, n_steps);
        if (!params)
                return -EINVAL;
        r = agent_call(a, "Submit", params, &p, err);
        if (r < 0)
                return r;
        ticket = member_dup(p, "ticket", false, &r);
        state = member_dup(p, "state", false, &r);
        if (r < 0)
                return r;
        *ret_ticket = TAKE_PTR(ticket);
        if (ret_state)
                *ret_state = TAKE_PTR(state);
        return 0;
}

void lockd_ticket_clear(LockdTicket *t) {
        if (!t)
                return;
        free(t->state);
        for (size_t i = 0; i < t->n_outcomes; i++)
                free(t->outcomes[i].error);
        free(t->outcomes);
        *t = (LockdTicket){};
}

static bool state_final(const char *s) {
        return strcmp(s, "done") == 0 || strcmp(s, "denied") == 0 || strcmp(s, "cancelled") == 0 ||
               strcmp(s, "expired") == 0;
}

/* A Wait answer as a LockdTicket. */
static int ticket_from_json(json_t *p, LockdTicket *ret) {
        LockdTicket t = {};
        json_t *list = json_object_get(p, "outcomes"), *o;
        size_t i;
        int r = 0;

        t.state = member_dup(p, "state", false, &r);
        if (r < 0)
                return r;
        t.final = state_final(t.state);
        if (!json_is_array(list)) {
                lockd_ticket_clear(&t);
                return -EBADMSG;
        }
        t.outcomes = calloc(json_array_size(list) + 1, sizeof(*t.outcomes));
        if (!t.outcomes) {
                lockd_ticket_clear(&t);
                return -ENOMEM;
        }
        json_array_foreach(list, i, o) {
                LockdOutcome *out = &t.outcomes[i];
                int64_t result = member_int(o, "result", true, -1, &r);

                out->step = member_int(o, "step", false, 0, &r);
                out->error = member_dup(o, "error", true, &r);
                t.n_outcomes = i + 1;
                /* Exactly one of result (1 or 0) and error, as the interface declares. */
                if (r >= 0 && !((result == 0 || result == 1) != !!out->error))
                        r = -EBADMSG;
                out->result = (int)result;
                if (r < 0) {
                        lockd_ticket_clear(&t);
                        return r;
                }
        }
        *ret = t;
        return 0;
}

int lockd_agent_status(LockdAgent *a, const char *ticket, LockdTicket *ret, LockdAgentError *err) {
        _cleanup_(json_decrefp) json_t *params = NULL, *p = NULL;
        int r;

        if (!ticket || !ret)
                return -EINVAL;
        params = json_pack("{s:s}", "ticket", ticket);
        if (!params)
                return -ENOMEM;
        r = agent_call(a, "Wait", params, &p, err);
        if (r < 0)
                return r;
        return ticket_from_json(p, ret);
}

int lockd_agent_wait(LockdAgent *a, const char *ticket, uint64_t timeout_usec, uint64_t tick_usec,
                     LockdWaitFn fn, void *userdata, LockdTicket *ret, LockdAgentError *err) {
        _cleanup_(json_decrefp) json_t *params = NULL;
        LockdTicket last = {};
        uint64_t start = varlink_client_now_usec(), next_tick;
        int r;

        if (!a || !ticket)
                return -EINVAL;
        params = json_pack("{s:s}", "ticket", ticket);
        if (!params)
                return -ENOMEM;
        r = varlink_client_start_more(a->client, AGENT_INTERFACE ".Wait", params);
        if (r < 0)
                return r;
        next_tick = tick_usec > 0 ? start + tick_usec : 0;
        for (;;) {
                _cleanup_(json_decrefp) json_t *p = NULL;
                _cleanup_free_ char *error = NULL;
                uint64_t deadline = timeout_usec > 0 ? start + timeout_usec : 0;
                bool continues = false, tick = false;

                if (next_tick > 0 && (deadline == 0 || next_tick < deadline)) {
                        deadline = next_tick;
                        tick = true;
                }
                r = varlink_client_next_reply(a->client, deadline, &p, &error, &continues);
                if (r == -ETIMEDOUT && tick) {
                        next_tick += tick_usec;
                        if (fn && last.state) {
                                r = fn(&last, false, userdata);
                                if (r != 0)
                                        break;
                        }
                        continue;
                }
                if (r < 0)
                        break;
                if (error) {
                        r = error_fill(err, error, p);
                        break;
                }
                lockd_ticket_clear(&last);
                r = ticket_from_json(p, &last);
                if (r < 0)
                        break;
                if (fn) {
                        r = fn(&last, true, userdata);
                        if (r != 0)
                                break;
                }
                if (!continues) {
                        /* lockd ends the stream at a final state, and only there. */
                        r = last.final ? 0 : -EBADMSG;
                        break;
                }
        }
        if ((r == 0 || r == -ETIMEDOUT) && ret && last.state)
                *ret = last;
        else
                lockd_ticket_clear(&last);
        return r;
}

int lockd_agent_cancel(LockdAgent *a, const char *ticket, LockdAgentError *err) {
        _cleanup_(json_decrefp) json_t *params = NULL, *p = NULL;

        if (!ticket)
                return -EINVAL;
        params = json_pack("{s:s}", "ticket", ticket);
        if (!params)
                return -ENOMEM;
        return agent_call(a, "Cancel", params, &p, err);
}
