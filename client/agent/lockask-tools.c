/* lockask mcp's tools: list_files, list_questions, ask, ticket_status, cancel. Each describes
 * lockd's rules in plain words for a model, checks its arguments, and turns lockd's errors into
 * tool errors carrying their codes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockask-json.h"
#include "lockask-mcp.h"
#include "lockd-agent.h"
#include "macro.h"

#define STEPS_MAX            16
#define INPUTS_MAX           16
#define WAIT_DEFAULT_SEC     50 /* under the 60 s most clients give a request */
#define WAIT_MAX_SEC         3600
#define TICK_USEC            ((uint64_t)250 * 1000) /* how often a wait looks at cancellation */
#define PROGRESS_EVERY_TICKS 20                     /* a progress notification every 5 s */

static const char list_files_text[] =
        "List the files a human granted you. You cannot read them: you can only ask the "
        "installed plugins' fixed yes/no questions about them (list_questions, ask). Each file "
        "has a handle, the only way to name it; the human's label; budget_left, how many more "
        "distinct answers about its content you may get; and when the grant expires.";

static const char list_questions_text[] =
        "List the plugins you may ask about a granted file. Each plugin asks one fixed yes/no "
        "question, written and reviewed before it was installed: you cannot change it. 'one' "
        "and 'zero' say what the answers 1 and 0 mean; 'accepts' the kinds of file it reads; "
        "'inputs' the values it needs. You never send an input's value: you bind the input to "
        "a placeholder such as \"${word}\", and the human types the value when approving.";

static const char ask_text[] =
        "Ask plugins' fixed yes/no questions about files granted to you (see list_files and "
        "list_questions). Give handle and plugin (and inputs) for one question, or steps for up "
        "to 16. Bind every input the plugin declares to a placeholder \"${name}\" (name: 1 to 32 "
        "of a-z, 0-9 and _); the human types its value when approving and you never see it. A "
        "literal value is refused (LiteralInput). Unless the human granted the file for "
        "automatic questions, the human approves each ticket first: this tool waits for the "
        "outcome, reporting progress, for up to wait_seconds (default 50), then returns the "
        "ticket; ticket_status gives its outcome later. Each step's outcome is 1 or 0 (their "
        "meanings are in list_questions) or an error: plugin_error (the plugin could not "
        "answer, e.g. the file is not of a kind it accepts; the cause is shown to the human "
        "only), denied, input_invalid (a typed value did not fit), budget_exhausted, "
        "cancelled, expired. Each new answer about a file's content uses one unit of its "
        "budget; asking a question again gives the same answer at no cost.";

static const char status_text[] =
        "The state of a ticket from ask (pending: waiting for the human; running; done; denied; "
        "cancelled; expired) and the outcome of each step known so far. With wait_seconds, "
        "waits up to that long for the final state, reporting progress.";

static const char cancel_text[] =
        "Take back a ticket of yours that is still pending, before the human approved it.";

json_t *mcp_tools_list(void) {
        json_t *step = json_pack(
                "{s:s, s:{s:{s:s, s:s}, s:{s:s, s:s}, s:{s:s, s:s, s:{s:s}}}, s:[s, s], s:b}",
                "type", "object", "properties", "handle", "type", "string", "description",
                "a file's handle, from list_files", "plugin", "type", "string", "description",
                "a plugin's name, from list_questions", "inputs", "type", "object", "description",
                "each input the plugin declares, bound to a placeholder: {\"needle\": "
                "\"${word}\"}",
                "additionalProperties", "type", "string", "required", "handle", "plugin",
                "additionalProperties", false);
        _cleanup_(json_decrefp) json_t *wait = json_pack(
                "{s:s, s:i, s:i, s:s}", "type", "integer", "minimum", 0, "maximum", WAIT_MAX_SEC,
                "description", "how long to wait for the final state, in seconds");

        if (!step || !wait) {
                json_decref(step);
                return NULL;
        }
        /* step is stolen ("o": its items' schema), wait shared ("O": ask and ticket_status). */
        return json_pack(
                "[{s:s, s:s, s:s, s:{s:s, s:{}, s:b}, s:{s:b, s:b}},"
                " {s:s, s:s, s:s, s:{s:s, s:{}, s:b}, s:{s:b, s:b}},"
                " {s:s, s:s, s:s, s:{s:s, s:{s:O, s:O, s:O, s:{s:s, s:i, s:i, s:o}, s:O}, s:b},"
                "  s:{s:b, s:b}},"
                " {s:s, s:s, s:s, s:{s:s, s:{s:{s:s}, s:O}, s:[s], s:b}, s:{s:b, s:b}},"
                " {s:s, s:s, s:s, s:{s:s, s:{s:{s:s}}, s:[s], s:b}, s:{s:b, s:b}}]",
                /* list_files */
                "name", "list_files", "title", "Files granted to you", "description",
                list_files_text, "inputSchema", "type", "object", "properties",
                "additionalProperties", false, "annotations", "readOnlyHint", true, "openWorldHint",
                false,
                /* list_questions */
                "name", "list_questions", "title", "Questions you may ask", "description",
                list_questions_text, "inputSchema", "type", "object", "properties",
                "additionalProperties", false, "annotations", "readOnlyHint", true, "openWorldHint",
                false,
                /* ask */
                "name", "ask", "title", "Ask a yes/no question about a file", "description",
                ask_text, "inputSchema", "type", "object", "properties", "handle",
                json_object_get(json_object_get(step, "properties"), "handle"), "plugin",
                json_object_get(json_object_get(step, "properties"), "plugin"), "inputs",
                json_object_get(json_object_get(step, "properties"), "inputs"), "steps", "type",
                "array", "minItems", 1, "maxItems", STEPS_MAX, "items", step, "wait_seconds", wait,
                "additionalProperties", false, "annotations", "readOnlyHint", false,
                "openWorldHint", false,
                /* ticket_status */
                "name", "ticket_status", "title", "A ticket's state and outcomes", "description",
                status_text, "inputSchema", "type", "object", "properties", "ticket", "type",
                "string", "wait_seconds", wait, "required", "ticket", "additionalProperties", false,
                "annotations", "readOnlyHint", true, "openWorldHint", false,
                /* cancel */
                "name", "cancel", "title", "Cancel a pending ticket", "description", cancel_text,
                "inputSchema", "type", "object", "properties", "ticket", "type", "string",
                "required", "ticket", "additionalProperties", false, "annotations", "readOnlyHint",
                false, "openWorldHint", false);
}

/* A tool result: text for the model and the same as structured content. */
static json_t *tool_result(json_t *structured, const char *text, bool is_error) {
        return json_pack("{s:[{s:s, s:s}], s:O, s:b}", "content", "type", "text", "text", text,
                         "structuredContent", structured, "isError", is_error);
}

/* A tool error with its code (an io.lockd.Agent error, "unreachable" or "InvalidArguments"). */
static json_t *tool_error(const char *code, int64_t step, const char *input, const char *detail) {
        _cleanup_(json_decrefp) json_t *s = json_pack("{s:s}", "error", code);
        _cleanup_free_ char *text = NULL;
        const char *why = lockd_agent_explain(code);
        char where[160] = "";

        if (!s)
                return NULL;
        if (step >= 0) {
                json_object_set_new(s, "step", json_integer(step));
                if (input) {
                        json_object_set_new(s, "input", json_string(input));
                        snprintf(where, sizeof(where), " (step %lld, input %s)", (long long)step,
                                 input);
                } else
                        snprintf(where, sizeof(where), " (step %lld)", (long long)step);
        }
        if (detail)
                json_object_set_new(s, "reason", json_string(detail));
        if (asprintf(&text, "%s%s%s%s%s%s", code, where, why ? ": " : "", why ? why : "",
                     detail ? ": " : "", detail ? detail : "") < 0)
                return NULL;
        return tool_result(s, text, true);
}

/* The tool error for r, a failed lockd_agent_*() call. */
static json_t *agent_failure(const char *socket, int r, const LockdAgentError *e) {
        char detail[512];

        if (r == -EREMOTEIO && e->name)
                return tool_error(e->code, e->step, e->input, e->reason);
        snprintf(detail, sizeof(detail), "lockd at %s: %s", socket, strerror(-r));
        return tool_error("unreachable", -1, NULL, detail);
}

static json_t *invalid_arguments(const char *what) {
        return tool_error("InvalidArguments", -1, NULL, what);
}

/* Every key of args is one of allowed (NULL-terminated). */
static bool keys_allowed(json_t *args, const char *const *allowed) {
        const char *key;
        json_t *v;

        json_object_foreach(args, key, v) {
                bool ok = false;

                for (const char *const *a = allowed; *a; a++)
                        ok = ok || strcmp(*a, key) == 0;
                if (!ok)
                        return false;
        }
        return true;
}

/* wait_seconds of args, or def; -1 when it is not an integer in range. */
static long long wait_seconds(json_t *args, long long def) {
        json_t *v = json_object_get(args, "wait_seconds");

        if (!v || json_is_null(v))
                return def;
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > WAIT_MAX_SEC)
                return -1;
        return json_integer_value(v);
}

static json_t *list_files(const char *socket) {
        _cleanup_(json_decrefp) json_t *s = NULL;
        _cleanup_free_ char *text = NULL;
        LockdAgentError e = {.step = -1};
        LockdAgent *a = NULL;
        LockdFile *f = NULL;
        size_t n = 0;
        int r;

        r = lockd_agent_connect(socket, &a);
        if (r >= 0)
                r = lockd_agent_list_files(a, &f, &n, &e);
        lockd_agent_free(a);
        if (r < 0) {
                json_t *err = agent_failure(socket, r, &e);

                lockd_agent_error_clear(&e);
                return err;
        }
        s = lockask_files_json(f, n);
        lockd_files_free(f, n);
        text = json_dumps(s, JSON_INDENT(1));
        return s && text ? tool_result(s, text, false) : NULL;
}

static json_t *list_questions(const char *socket) {
        _cleanup_(json_decrefp) json_t *list = json_array(), *s = NULL;
        _cleanup_free_ char *text = NULL;
        LockdAgentError e = {.step = -1};
        LockdAgent *a = NULL;
        LockdQuestion *q = NULL;
        size_t n = 0;
        int r;

        r = lockd_agent_connect(socket, &a);
        if (r >= 0)
                r = lockd_agent_list_questions(a, &q, &n, &e);
        lockd_agent_free(a);
        if (r < 0) {
                json_t *err = agent_failure(socket, r, &e);

                lockd_agent_error_clear(&e);
                return err;
        }
        for (size_t i = 0; list && i < n; i++) {
                json_t *acc = lockask_accepts_json(&q[i]), *in = lockask_inputs_json(&q[i]);

                json_array_append_new(list,
                                      json_pack("{s:s, s:s, s:s, s:s, s:s, s:o*, s:o*}", "plugin",
                                                q[i].name, "version", q[i].version, "question",
                                                q[i].question, "one", q[i].one, "zero", q[i].zero,
                                                "accepts", acc, "inputs", in));
        }
        lockd_questions_free(q, n);
        s = json_pack("{s:O}", "questions", list);
        text = json_dumps(s, JSON_INDENT(1));
        return s && text ? tool_result(s, text, false) : NULL;
}

/* The result for a ticket's state: its outcomes, or how to get them later. */
static json_t *ticket_result(const char *ticket, const LockdTicket *t) {
        _cleanup_(json_decrefp) json_t *s = NULL;
        _cleanup_free_ char *text = NULL;
        char *buf = NULL;
        size_t len = 0;
        FILE *f;

        f = open_memstream(&buf, &len);
        if (!f)
                return NULL;
        if (t->final)
                fprintf(f, "ticket %s: %s\n", ticket, t->state);
        else
                fprintf(f,
                        "ticket %s is still %s%s. Call ticket_status with this ticket (and "
                        "wait_seconds) for its outcome, or cancel to take it back.\n",
                        ticket, t->state,
                        strcmp(t->state, "pending") == 0 ? ": the human has not approved it yet"
                                                         : "");
        for (size_t i = 0; i < t->n_outcomes; i++) {
                const LockdOutcome *o = &t->outcomes[i];
                const char *why = o->error ? lockd_agent_explain(o->error) : NULL;

                if (o->result >= 0)
                        fprintf(f, "step %lld: %d\n", (long long)o->step, o->result);
                else
                        fprintf(f, "step %lld: %s%s%s\n", (long long)o->step, o->error,
                                why ? ": " : "", why ? why : "");
        }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        text = buf;
        s = json_pack("{s:s, s:s, s:b, s:o*}", "ticket", ticket, "state", t->state, "final",
                      t->final, "outcomes", lockask_outcomes_json(t));
        return s ? tool_result(s, text, false) : NULL;
}

typedef struct WaitState {
        McpCall *call;
        const char *ticket;
        unsigned ticks;
} WaitState;

enum { WAIT_CANCELLED = 1, WAIT_CLOSING = 2 };

static int on_wait(const LockdTicket *t, bool changed, void *userdata) {
        WaitState *w = userdata;
        char message[256];

        if (mcp_call_cancelled(w->call))
                return WAIT_CANCELLED;
        /* stdin closed: a running ticket's answer is moments away and still worth writing;
         * one that waits for the human is returned as it stands. */
        if (mcp_closing() && strcmp(t->state, "running") != 0)
                return WAIT_CLOSING;
        if (!changed && ++w->ticks % PROGRESS_EVERY_TICKS != 0)
                return 0;
        if (strcmp(t->state, "pending") == 0)
                snprintf(message, sizeof(message),
                         "ticket %s is pending: waiting for the human to approve it", w->ticket);
        else
                snprintf(message, sizeof(message), "ticket %s is %s (%zu of its steps known)",
                         w->ticket, t->state, t->n_outcomes);
        mcp_call_progress(w->call, message);
        return 0;
}

/* Takes back ticket after the client cancelled the call that asked it. */
static void cancel_ticket(const char *socket, const char *ticket) {
        LockdAgentError e = {.step = -1};
        LockdAgent *a = NULL;

        if (lockd_agent_connect(socket, &a) >= 0)
                (void)lockd_agent_cancel(a, ticket, &e);
        lockd_agent_free(a);
        lockd_agent_error_clear(&e);
}

/* Waits up to seconds for ticket's final state on a (owned), then answers. */
static json_t *wait_ticket(McpCall *call, const char *socket, LockdAgent *a, const char *ticket,
                           long long seconds, bool cancel_on_cancel) {
        WaitState w = {.call = call, .ticket = ticket};
        LockdAgentError e = {.step = -1};
        LockdTicket t = {};
        json_t *result;
        int r;

        if (seconds == 0)
                r = lockd_agent_status(a, ticket, &t, &e);
        else
                r = lockd_agent_wait(a, ticket, (uint64_t)seconds * 1000000, TICK_USEC, on_wait, &w,
                                     &t, &e);
        lockd_agent_free(a);
        if (r == WAIT_CANCELLED) {
                /* Not answered: the call was cancelled. Its ticket goes with it. */
                if (cancel_on_cancel)
                        cancel_ticket(socket, ticket);
                return json_object();
        }
        if (r == WAIT_CLOSING || (r == -ETIMEDOUT && !t.state)) {
                lockd_ticket_clear(&t);
                a = NULL;
                r = lockd_agent_connect(socket, &a);
                if (r >= 0)
                        r = lockd_agent_status(a, ticket, &t, &e);
                lockd_agent_free(a);
        }
        if (r < 0 && r != -ETIMEDOUT) {
                result = agent_failure(socket, r, &e);
                lockd_agent_error_clear(&e);
                lockd_ticket_clear(&t);
                return result;
        }
        result = ticket_result(ticket, &t);
        lockd_ticket_clear(&t);
        return result;
}

/* One step of ask's arguments; false when it is malformed. */
static bool step_from_json(json_t *o, LockdStep *step, LockdBinding *bindings) {
        json_t *inputs = json_object_get(o, "inputs"), *v;
        const char *key;
        size_t n = 0;

        *step = (LockdStep){
                .handle = json_string_value(json_object_get(o, "handle")),
                .plugin = json_string_value(json_object_get(o, "plugin")),
                .inputs = bindings,
        };
        if (!step->handle || !step->plugin || (inputs && !json_is_object(inputs)))
                return false;
        json_object_foreach(inputs, key, v) {
                if (!json_is_string(v) || n >= INPUTS_MAX)
                        return false;
                bindings[n++] = (LockdBinding){key, json_string_value(v)};
        }
        step->n_inputs = n;
        return true;
}

static json_t *ask(McpCall *call, const char *socket, json_t *args) {
        static const char *const keys[] = {"handle", "plugin",       "inputs",
                                           "steps",  "wait_seconds", NULL};
        static const char *const step_keys[] = {"handle", "plugin", "inputs", NULL};
        LockdBinding bindings[STEPS_MAX][INPUTS_MAX];
        LockdStep steps[STEPS_MAX];
        _cleanup_free_ char *ticket = NULL, *state = NULL;
        LockdAgentError e = {.step = -1};
        json_t *list = json_object_get(args, "steps"), *o;
        long long seconds = wait_seconds(args, WAIT_DEFAULT_SEC);
        LockdAgent *a = NULL;
        size_t n = 0, i;
        int r;

        if (!keys_allowed(args, keys) || seconds < 0)
                return invalid_arguments("ask takes handle, plugin and inputs, or steps; and "
                                         "wait_seconds (0 to 3600)");
        if (list) {
                if (json_object_get(args, "handle") || json_object_get(args, "plugin") ||
                    json_object_get(args, "inputs") || !json_is_array(list) ||
                    json_array_size(list) == 0 || json_array_size(list) > STEPS_MAX)
                        return invalid_arguments("steps is an array of 1 to 16 steps "
                                                 "{handle, plugin, inputs}, given alone");
                json_array_foreach(list, i, o) {
                        if (!json_is_object(o) || !keys_allowed(o, step_keys) ||
                            !step_from_json(o, &steps[i], bindings[i]))
                                return invalid_arguments(
                                        "a step is {handle: string, plugin: string, inputs: "
                                        "{name: \"${placeholder}\"}}");
                }
                n = json_array_size(list);
        } else {
                if (!step_from_json(args, &steps[0], bindings[0]))
                        return invalid_arguments("ask takes handle and plugin (strings), and "
                                                 "inputs {name: \"${placeholder}\"}, or steps");
                n = 1;
        }

        r = lockd_agent_connect(socket, &a);
        if (r >= 0)
                r = lockd_agent_submit(a, steps, n, &ticket, &state, &e);
        if (r < 0) {
                json_t *err = agent_failure(socket, r, &e);

                lockd_agent_free(a);
                lockd_agent_error_clear(&e);
                return err;
        }
        if (mcp_call_cancelled(call)) {
                lockd_agent_free(a);
                cancel_ticket(socket, ticket);
                return json_object();
        }
        if (strcmp(state, "pending") == 0) {
                char message[256];

                snprintf(message, sizeof(message),
                         "ticket %s is pending: waiting for the human to approve it", ticket);
                mcp_call_progress(call, message);
        }
        return wait_ticket(call, socket, a, ticket, seconds, true);
}

static json_t *ticket_status(McpCall *call, const char *socket, json_t *args) {
        static const char *const keys[] = {"ticket", "wait_seconds", NULL};
        const char *ticket = json_string_value(json_object_get(args, "ticket"));
        long long seconds = wait_seconds(args, 0);
        LockdAgent *a = NULL;
        LockdAgentError e = {.step = -1};
        int r;

        if (!keys_allowed(args, keys) || !ticket || seconds < 0)
                return invalid_arguments("ticket_status takes ticket (a string) and "
                                         "wait_seconds (0 to 3600)");
        r = lockd_agent_connect(socket, &a);
        if (r < 0)
                return agent_failure(socket, r, &e);
        /* Cancelling a call that only watches leaves the ticket alone. */
        return wait_ticket(call, socket, a, ticket, seconds, false);
}

static json_t *cancel(const char *socket, json_t *args) {
        static const char *const keys[] = {"ticket", NULL};
        const char *ticket = json_string_value(json_object_get(args, "ticket"));
        _cleanup_(json_decrefp) json_t *s = NULL;
        LockdAgentError e = {.step = -1};
        LockdAgent *a = NULL;
        int r;

        if (!keys_allowed(args, keys) || !ticket)
                return invalid_arguments("cancel takes ticket (a string)");
        r = lockd_agent_connect(socket, &a);
        if (r >= 0)
                r = lockd_agent_cancel(a, ticket, &e);
        lockd_agent_free(a);
        if (r < 0) {
                json_t *err = agent_failure(socket, r, &e);

                lockd_agent_error_clear(&e);
                return err;
        }
        s = json_pack("{s:s, s:s}", "ticket", ticket, "state", "cancelled");
        return s ? tool_result(s, "cancelled", false) : NULL;
}

json_t *mcp_tools_call(McpCall *c, const char *socket, const char *name, json_t *args,
                       int *ret_code, const char **ret_message) {
        static const char *const none[] = {NULL};
        json_t *r;

        if (strcmp(name, "list_files") == 0)
                r = keys_allowed(args, none) ? list_files(socket)
                                             : invalid_arguments("list_files takes no arguments");
        else if (strcmp(name, "list_questions") == 0)
                r = keys_allowed(args, none)
                            ? list_questions(socket)
                            : invalid_arguments("list_questions takes no arguments");
        else if (strcmp(name, "ask") == 0)
                r = ask(c, socket, args);
        else if (strcmp(name, "ticket_status") == 0)
                r = ticket_status(c, socket, args);
        else if (strcmp(name, "cancel") == 0)
                r = cancel(socket, args);
        else {
                /* An unknown tool is a protocol error, not a tool error. */
                *ret_code = -32602;
                *ret_message = "unknown tool";
                return NULL;
        }
        if (!r) {
                *ret_code = -32603;
                *ret_message = "out of memory";
        }
        return r;
}
