/* lockask's commands for people and scripts: files, questions, ask, wait, cancel (lockask(1)). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lockask-json.h"
#include "lockask.h"
#include "macro.h"

#define STEPS_MAX  16 /* lockd's own cap on a plan; a longer one is refused before it is sent */
#define INPUTS_MAX 16 /* --input options per command */

enum {
        OPT_SOCKET = 0x100,
        OPT_JSON,
        OPT_INPUT,
        OPT_PLAN,
        OPT_NO_WAIT,
        OPT_TIMEOUT,
};

/* The options every command takes. */
#define COMMON_OPTIONS                                                                             \
        {"socket", required_argument, NULL, OPT_SOCKET}, {"json", no_argument, NULL, OPT_JSON}, {  \
                "help", no_argument, NULL, 'h'                                                     \
        }

/* Handles one of COMMON_OPTIONS; false for any other. */
static bool common_option(int c, LockaskOptions *o) {
        switch (c) {
        case OPT_SOCKET:
                o->socket = optarg;
                return true;
        case OPT_JSON:
                o->json = true;
                return true;
        default:
                return false;
        }
}

__attribute__((format(printf, 2, 3))) static int usage_error(const char *usage, const char *fmt,
                                                             ...) {
        va_list ap;

        if (fmt) {
                fputs("lockask: ", stderr);
                va_start(ap, fmt);
                vfprintf(stderr, fmt, ap);
                va_end(ap);
                fputc('\n', stderr);
        }
        fputs(usage, stderr);
        return LOCKASK_EXIT_REFUSED;
}

static void print_json(json_t *v) {
        _cleanup_free_ char *s = json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII);

        if (s)
                puts(s);
}

int lockask_fail(const LockaskOptions *o, const char *what, int r, const LockdAgentError *e) {
        if (r == -EREMOTEIO && e && e->name) {
                const char *why = lockd_agent_explain(e->code);

                if (o->json) {
                        _cleanup_(json_decrefp) json_t *p = json_loads(e->parameters, 0, NULL);
                        _cleanup_(json_decrefp) json_t *v =
                                json_pack("{s:s, s:s, s:O?}", "error", e->code, "name", e->name,
                                          "parameters", p);
                        print_json(v);
                }
                fprintf(stderr, "lockask: %s refused: %s", what, e->code);
                if (e->step >= 0 && e->input)
                        fprintf(stderr, " (step %lld, input %s)", (long long)e->step, e->input);
                else if (e->step >= 0)
                        fprintf(stderr, " (step %lld)", (long long)e->step);
                if (why)
                        fprintf(stderr, ": %s", why);
                if (e->reason)
                        fprintf(stderr, ": %s", e->reason);
                fputc('\n', stderr);
                return LOCKASK_EXIT_REFUSED;
        }
        if (o->json) {
                _cleanup_(json_decrefp) json_t *v =
                        json_pack("{s:s, s:s}", "error", "unreachable", "reason", strerror(-r));
                print_json(v);
        }
        if (lockd_agent_unreachable(r))
                fprintf(stderr, "lockask: cannot reach lockd at %s: %s\n", o->socket, strerror(-r));
        else
                fprintf(stderr, "lockask: %s failed: lockd at %s: %s\n", what, o->socket,
                        strerror(-r));
        return LOCKASK_EXIT_UNREACHABLE;
}

int lockask_parse_duration(const char *s, unsigned long long *ret) {
        static const struct {
                const char *unit;
                unsigned long long usec;
        } units[] = {{"ms", 1000ULL},    {"s", 1000000ULL},    {"", 1000000ULL},
                     {"m", 60000000ULL}, {"min", 60000000ULL}, {"h", 3600000000ULL}};
        unsigned long long n = 0;
        const char *p = s;

        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
                n = n * 10 + (unsigned long long)(*p - '0');
                if (n > 86400000ULL)
                        return -EINVAL;
        }
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (strcmp(p, units[i].unit) == 0) {
                        unsigned long long usec = n * units[i].usec;

                        if (usec == 0 || usec > 86400ULL * 1000000ULL)
                                return -EINVAL;
                        *ret = usec;
                        return 0;
                }
        return -EINVAL;
}

/*
 * Parses the options of a command that takes only COMMON_OPTIONS into o (a copy of the global
 * ones) and checks that want positional arguments follow. Their index in argv, or -1 with
 * *ret_exit set (--help printed, or a usage error).
 */
static int parse_args(const char *usage, LockaskOptions *o, int argc, char **argv, int want,
                      int *ret_exit) {
        static const struct option options[] = {COMMON_OPTIONS, {}};
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                if (common_option(c, o))
                        continue;
                if (c == 'h') {
                        fputs(usage, stdout);
                        *ret_exit = LOCKASK_EXIT_ANSWER;
                } else
                        *ret_exit = usage_error(usage, NULL);
                return -1;
        }
        if (argc - optind != want) {
                *ret_exit = usage_error(
                        usage,
                        argc - optind < want ? "missing arguments%s" : "too many arguments%s", "");
                return -1;
        }
        return optind;
}

static void format_time(int64_t usec, char *buf, size_t len) {
        time_t t = (time_t)(usec / 1000000);
        struct tm tm;

        if (usec < 0 || !gmtime_r(&t, &tm) || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                snprintf(buf, len, "never");
}

static const char files_usage[] = "usage: lockask files [--json] [--socket PATH]\n"
                                  "The files a human granted you: handle, budget left, expiry "
                                  "(UTC), label.\n";

int lockask_files(const LockaskOptions *global, int argc, char **argv) {
        LockaskOptions o = *global;
        LockdAgentError e = {.step = -1};
        LockdAgent *a = NULL;
        LockdFile *f = NULL;
        size_t n = 0;
        int r, ex = LOCKASK_EXIT_REFUSED;

        if (parse_args(files_usage, &o, argc, argv, 0, &ex) < 0)
                return ex;
        r = lockd_agent_connect(o.socket, &a);
        if (r >= 0)
                r = lockd_agent_list_files(a, &f, &n, &e);
        lockd_agent_free(a);
        if (r < 0) {
                ex = lockask_fail(&o, "files", r, &e);
                lockd_agent_error_clear(&e);
                return ex;
        }
        if (o.json) {
                _cleanup_(json_decrefp) json_t *v = lockask_files_json(f, n);
                print_json(v);
        } else if (n == 0)
                puts("no files are granted to you");
        else {
                printf("%-24s %6s  %-20s  %s\n", "HANDLE", "BUDGET", "EXPIRES", "LABEL");
                for (size_t i = 0; i < n; i++) {
                        char when[32];

                        format_time(f[i].expires_usec, when, sizeof(when));
                        printf("%-24s %6lld  %-20s  %s\n", f[i].handle, (long long)f[i].budget_left,
                               when, f[i].label ? f[i].label : "");
                }
        }
        lockd_files_free(f, n);
        return LOCKASK_EXIT_ANSWER;
}

static const char questions_usage[] =
        "usage: lockask questions [--json] [--socket PATH]\n"
        "The plugins you may ask: each one's fixed question, what 1 and 0 mean, the kinds of\n"
        "file it accepts and the inputs you bind to placeholders.\n";

int lockask_questions(const LockaskOptions *global, int argc, char **argv) {
        LockaskOptions o = *global;
        LockdAgentError e = {.step = -1};
        LockdAgent *a = NULL;
        LockdQuestion *q = NULL;
        size_t n = 0;
        int r, ex = LOCKASK_EXIT_REFUSED;

        if (parse_args(questions_usage, &o, argc, argv, 0, &ex) < 0)
                return ex;
        r = lockd_agent_connect(o.socket, &a);
        if (r >= 0)
                r = lockd_agent_list_questions(a, &q, &n, &e);
        lockd_agent_free(a);
        if (r < 0) {
                ex = lockask_fail(&o, "questions", r, &e);
                lockd_agent_error_clear(&e);
                return ex;
        }
        if (o.json) {
                _cleanup_(json_decrefp) json_t *list = json_array();

                for (size_t i = 0; list && i < n; i++) {
                        json_t *acc = lockask_accepts_json(&q[i]), *in = lockask_inputs_json(&q[i]);

                        json_array_append_new(
                                list, json_pack("{s:s, s:s, s:I, s:s, s:s, s:s, s:o*, s:o*}",
                                                "name", q[i].name, "version", q[i].version,
                                                "protocol", (json_int_t)q[i].protocol, "question",
                                                q[i].question, "one", q[i].one, "zero", q[i].zero,
                                                "accepts", acc, "inputs", in));
                }
                _cleanup_(json_decrefp) json_t *v = json_pack("{s:O}", "questions", list);
                print_json(v);
        } else if (n == 0)
                puts("no plugins are installed");
        else
                for (size_t i = 0; i < n; i++) {
                        printf("%s%s %s (protocol %lld)\n", i > 0 ? "\n" : "", q[i].name,
                               q[i].version, (long long)q[i].protocol);
                        printf("  question: %s\n  1: %s\n  0: %s\n", q[i].question, q[i].one,
                               q[i].zero);
                        fputs("  accepts:", stdout);
                        for (size_t j = 0; j < q[i].n_accepts; j++)
                                printf(" %s", q[i].accepts[j]);
                        putchar('\n');
                        for (size_t j = 0; j < q[i].n_inputs; j++)
                                printf("  input %s: %s, at most %lld bytes "
                                       "(bind it: --input %s='${placeholder}')\n",
                                       q[i].inputs[j].name, q[i].inputs[j].kind,
                                       (long long)q[i].inputs[j].max_bytes, q[i].inputs[j].name);
                }
        lockd_questions_free(q, n);
        return LOCKASK_EXIT_ANSWER;
}

/* Prints a ticket's outcomes (or, with --json, all of it) and returns the exit code. */
static int print_ticket(const LockaskOptions *o, const char *ticket, const LockdTicket *t,
                        bool timed_out) {
        bool all_answered = t->final && t->n_outcomes > 0;

        for (size_t i = 0; i < t->n_outcomes; i++)
                if (t->outcomes[i].result < 0)
                        all_answered = false;
        if (o->json) {
                _cleanup_(json_decrefp) json_t *v =
                        json_pack("{s:s, s:s, s:b, s:o*}", "ticket", ticket, "state", t->state,
                                  "final", t->final, "outcomes", lockask_outcomes_json(t));
                if (v && timed_out)
                        json_object_set_new(v, "timed_out", json_true());
                print_json(v);
        } else
                for (size_t i = 0; i < t->n_outcomes; i++) {
                        if (t->outcomes[i].result >= 0)
                                printf("%d\n", t->outcomes[i].result);
                        else
                                printf("%s\n", t->outcomes[i].error);
                }
        if (timed_out)
                fprintf(stderr,
                        "lockask: ticket %s is still %s; wait for it with: lockask wait %s\n",
                        ticket, t->state, ticket);
        return all_answered ? LOCKASK_EXIT_ANSWER : LOCKASK_EXIT_NO_ANSWER;
}

/* Tells the person running lockask, once, that the ticket now waits for the human. */
static int on_change(const LockdTicket *t, bool changed, void *userdata) {
        const char *ticket = userdata;
        static bool told;

        if (changed && !told && strcmp(t->state, "pending") == 0) {
                fprintf(stderr,
                        "lockask: ticket %s waits for the human's approval (lockctl approve %s)\n",
                        ticket, ticket);
                told = true;
        }
        return 0;
}

/* Waits for ticket on a, prints the outcome, returns the exit code. */
static int wait_and_print(const LockaskOptions *o, LockdAgent *a, const char *ticket,
                          unsigned long long timeout_usec) {
        LockdAgentError e = {.step = -1};
        LockdTicket t = {};
        int r, ex = LOCKASK_EXIT_REFUSED;

        r = lockd_agent_wait(a, ticket, timeout_usec, 0, on_change, (void *)ticket, &t, &e);
        if (r == -ETIMEDOUT && t.state) {
                ex = print_ticket(o, ticket, &t, true);
                lockd_ticket_clear(&t);
                return ex;
        }
        if (r < 0) {
                ex = lockask_fail(o, "wait", r, &e);
                lockd_agent_error_clear(&e);
                return ex;
        }
        ex = print_ticket(o, ticket, &t, false);
        lockd_ticket_clear(&t);
        return ex;
}

/* A plan file: the steps of Submit, as a JSON array or {"steps": [...]}. */
typedef struct Plan {
        json_t *json;
        LockdStep steps[STEPS_MAX];
        LockdBinding bindings[STEPS_MAX][INPUTS_MAX];
        size_t n;
} Plan;

static int plan_load(Plan *plan, const char *path, char *why, size_t why_len) {
        json_error_t jerr;
        json_t *steps, *s;
        size_t i;

        plan->json = strcmp(path, "-") == 0 ? json_loadf(stdin, JSON_REJECT_DUPLICATES, &jerr)
                                            : json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
        if (!plan->json) {
                snprintf(why, why_len, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
                return -EINVAL;
        }
        steps = json_is_object(plan->json) ? json_object_get(plan->json, "steps") : plan->json;
        if (!json_is_array(steps) || json_array_size(steps) == 0 ||
            json_array_size(steps) > STEPS_MAX) {
                snprintf(why, why_len,
                         "%s: a plan is an array of 1 to %d steps, or {\"steps\": [...]}", path,
                         STEPS_MAX);
                return -EINVAL;
        }
        json_array_foreach(steps, i, s) {
                json_t *inputs = json_object_get(s, "inputs"), *v;
                const char *key;
                size_t j = 0;

                plan->steps[i] = (LockdStep){
                        .plugin = json_string_value(json_object_get(s, "plugin")),
                        .handle = json_string_value(json_object_get(s, "handle")),
                        .inputs = plan->bindings[i],
                };
                if (!json_is_object(s) || !plan->steps[i].plugin || !plan->steps[i].handle ||
                    (inputs && !json_is_object(inputs) && !json_is_null(inputs)) ||
                    json_object_size(s) != 2 + (inputs ? 1 : 0)) {
                        snprintf(why, why_len,
                                 "%s: step %zu: a step is {\"plugin\": string, \"handle\": string, "
                                 "\"inputs\": {name: \"${placeholder}\"}} and nothing else",
                                 path, i);
                        return -EINVAL;
                }
                json_object_foreach(json_is_object(inputs) ? inputs : NULL, key, v) {
                        if (!json_is_string(v) || j >= INPUTS_MAX) {
                                snprintf(why, why_len,
                                         "%s: step %zu: input %s: a value is a string "
                                         "\"${placeholder}\" (at most %d inputs)",
                                         path, i, key, INPUTS_MAX);
                                return -EINVAL;
                        }
                        plan->bindings[i][j++] = (LockdBinding){key, json_string_value(v)};
                }
                plan->steps[i].n_inputs = j;
        }
        plan->n = json_array_size(steps);
        return 0;
}

static const char ask_usage[] =
        "usage: lockask ask HANDLE PLUGIN [--input NAME='${placeholder}']... [--no-wait]\n"
        "                   [--timeout D] [--json] [--socket PATH]\n"
        "       lockask ask --plan FILE [--no-wait] [--timeout D] [--json] [--socket PATH]\n"
        "Asks PLUGIN's fixed question about the file HANDLE names (lockask files, lockask\n"
        "questions). An input is bound to a placeholder \"${name}\" whose value only the human\n"
        "types when approving; a literal value is refused. Prints 1, 0, or the step's error code\n"
        "(plugin_error, denied, input_invalid, budget_exhausted, cancelled, expired), one line\n"
        "per step. --plan FILE (- for stdin): several steps as JSON, [{\"plugin\": P, \"handle\": "
        "H,\n"
        "\"inputs\": {NAME: \"${placeholder}\"}}, ...]. --no-wait prints the ticket instead;\n"
        "--timeout D (100ms, 30s, 5m, 1h) gives up waiting after D, exit status 1.\n";

/*
 * The steps to submit: --plan's file (plan_path, may be NULL), or the one step of HANDLE and
 * PLUGIN (the n_args of args) with the --input bindings. -1 with *plan (whose json the caller
 * releases), or the exit status to return after saying why.
 */
static int ask_plan(const char *plan_path, int n_args, char **args, LockdBinding *bindings,
                    size_t n_bindings, Plan *plan) {
        char why[512];

        if (!plan_path) {
                if (n_args != 2)
                        return usage_error(ask_usage, "ask takes HANDLE and PLUGIN%s", "");
                plan->steps[0] = (LockdStep){.handle = args[0],
                                             .plugin = args[1],
                                             .inputs = bindings,
                                             .n_inputs = n_bindings};
                plan->n = 1;
                return -1;
        }
        if (n_args != 0 || n_bindings > 0)
                return usage_error(ask_usage,
                                   "--plan takes the steps from its file: no HANDLE, "
                                   "PLUGIN or --input%s",
                                   "");
        if (plan_load(plan, plan_path, why, sizeof(why)) < 0) {
                json_decref(plan->json);
                plan->json = NULL;
                fprintf(stderr, "lockask: %s\n", why);
                return LOCKASK_EXIT_REFUSED;
        }
        return -1;
}

int lockask_ask(const LockaskOptions *global, int argc, char **argv) {
        static const struct option options[] = {
                COMMON_OPTIONS,
                {"input", required_argument, NULL, OPT_INPUT},
                {"plan", required_argument, NULL, OPT_PLAN},
                {"no-wait", no_argument, NULL, OPT_NO_WAIT},
                {"timeout", required_argument, NULL, OPT_TIMEOUT},
                {},
        };
        LockaskOptions o = *global;
        LockdBinding bindings[INPUTS_MAX];
        _cleanup_free_ char *ticket = NULL, *state = NULL;
        LockdAgentError e = {.step = -1};
        unsigned long long timeout = 0;
        const char *plan_path = NULL;
        Plan plan = {};
        LockdAgent *a = NULL;
        size_t n_bindings = 0;
        bool no_wait = false;
        int c, r, ex;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                if (common_option(c, &o))
                        continue;
                switch (c) {
                case 'h':
                        fputs(ask_usage, stdout);
                        return LOCKASK_EXIT_ANSWER;
                case OPT_INPUT: {
                        char *eq = strchr(optarg, '=');

                        if (!eq || eq == optarg)
                                return usage_error(ask_usage,
                                                   "--input takes NAME='${placeholder}', not '%s'",
                                                   optarg);
                        if (n_bindings >= INPUTS_MAX)
                                return usage_error(ask_usage, "too many --input options%s", "");
                        *eq = '\0';
                        bindings[n_bindings++] = (LockdBinding){optarg, eq + 1};
                        break;
                }
                case OPT_PLAN:
                        plan_path = optarg;
                        break;
                case OPT_NO_WAIT:
                        no_wait = true;
                        break;
                case OPT_TIMEOUT:
                        if (lockask_parse_duration(optarg, &timeout) < 0)
                                return usage_error(ask_usage,
                                                   "--timeout takes a duration (100ms, 30s, 5m, "
                                                   "1h; at most a day), not '%s'",
                                                   optarg);
                        break;
                default:
                        return usage_error(ask_usage, NULL);
                }
        }
        r = ask_plan(plan_path, argc - optind, argv + optind, bindings, n_bindings, &plan);
        if (r >= 0)
                return r;

        r = lockd_agent_connect(o.socket, &a);
        if (r >= 0)
                r = lockd_agent_submit(a, plan.steps, plan.n, &ticket, &state, &e);
        json_decref(plan.json);
        if (r < 0) {
                lockd_agent_free(a);
                ex = lockask_fail(&o, "ask", r, &e);
                lockd_agent_error_clear(&e);
                return ex;
        }
        if (no_wait) {
                if (o.json) {
                        _cleanup_(json_decrefp) json_t *v =
                                json_pack("{s:s, s:s}", "ticket", ticket, "state", state);
                        print_json(v);
                } else
                        puts(ticket);
                lockd_agent_free(a);
                return LOCKASK_EXIT_ANSWER;
        }
        ex = wait_and_print(&o, a, ticket, timeout);
        lockd_agent_free(a);
        return ex;
}

static const char wait_usage[] =
        "usage: lockask wait TICKET [--timeout D] [--json] [--socket PATH]\n"
        "Waits until the ticket is done, denied, cancelled or expired and prints its outcomes as\n"
        "lockask ask does; --timeout D gives up after D (exit status 1).\n";

int lockask_wait(const LockaskOptions *global, int argc, char **argv) {
        static const struct option options[] = {
                COMMON_OPTIONS,
                {"timeout", required_argument, NULL, OPT_TIMEOUT},
                {},
        };
        LockaskOptions o = *global;
        unsigned long long timeout = 0;
        LockdAgent *a = NULL;
        int c, r, ex;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                if (common_option(c, &o))
                        continue;
                if (c == 'h') {
                        fputs(wait_usage, stdout);
                        return LOCKASK_EXIT_ANSWER;
                }
                if (c == OPT_TIMEOUT && lockask_parse_duration(optarg, &timeout) >= 0)
                        continue;
                return usage_error(wait_usage, c == OPT_TIMEOUT ? "bad --timeout '%s'" : NULL,
                                   optarg);
        }
        if (argc - optind != 1)
                return usage_error(wait_usage, "wait takes one TICKET%s", "");
        r = lockd_agent_connect(o.socket, &a);
        if (r < 0)
                return lockask_fail(&o, "wait", r, NULL);
        ex = wait_and_print(&o, a, argv[optind], timeout);
        lockd_agent_free(a);
        return ex;
}

static const char cancel_usage[] = "usage: lockask cancel TICKET [--json] [--socket PATH]\n"
                                   "Takes back a ticket of yours that is still pending.\n";

int lockask_cancel(const LockaskOptions *global, int argc, char **argv) {
        LockaskOptions o = *global;
        LockdAgentError e = {.step = -1};
        LockdAgent *a = NULL;
        int i, r, ex = LOCKASK_EXIT_REFUSED;

        i = parse_args(cancel_usage, &o, argc, argv, 1, &ex);
        if (i < 0)
                return ex;
        r = lockd_agent_connect(o.socket, &a);
        if (r >= 0)
                r = lockd_agent_cancel(a, argv[i], &e);
        lockd_agent_free(a);
        if (r < 0) {
                ex = lockask_fail(&o, "cancel", r, &e);
                lockd_agent_error_clear(&e);
                return ex;
        }
        if (o.json) {
                _cleanup_(json_decrefp) json_t *v =
                        json_pack("{s:s, s:s}", "ticket", argv[i], "state", "cancelled");
                print_json(v);
        }
        return LOCKASK_EXIT_ANSWER;
}
