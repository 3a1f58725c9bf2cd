/* lockctl budget show and reset: the answers kept per file content (io.lockd.Console.ListBudgets
 * and ResetBudget). */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "escape.h"
#include "lockctl-console.h"
#include "lockctl-pages.h"
#include "lockctl.h"
#include "macro.h"

#define DIGEST_HEX   64
#define DIGEST_SHORT 12 /* the hex digits shown in the table */
#define CONFIRM_MAX  16 /* the longest answer read at the confirmation prompt */

static int usage_budget(void) {
        fputs("usage: lockctl [--socket PATH] budget show [HANDLE|SHA256] [--json]\n"
              "       lockctl [--socket PATH] budget reset HANDLE|SHA256 [--yes] [--json]\n",
              stderr);
        return LOCKCTL_EXIT_USAGE;
}

/* Whether s is a content digest as lockd writes it: 64 lowercase hex digits. */
static bool is_digest(const char *s) {
        return strlen(s) == DIGEST_HEX && hex_lower_valid(s, DIGEST_HEX);
}

/*
 * The parameters naming a content: {"sha256": s} for a digest, else {"handle": s}, so a
 * mistyped digest reaches lockd as an unknown handle and is refused there, by name. NULL (after
 * a message) when s is not UTF-8.
 */
static json_t *target_params(const char *s) {
        json_t *p = json_pack("{s:s}", is_digest(s) ? "sha256" : "handle", s);

        if (!p)
                fprintf(stderr, "lockctl: the handle or digest must be UTF-8\n");
        return p;
}

/*
 * Prints the message for an error of the budget methods, or leaves it to console_print_error()
 * for the others. Every string from lockd is escaped. Returns the exit code.
 */
static int print_budget_error(const char *what, const char *error, json_t *params) {
        if (strcmp(error, CONSOLE_INTERFACE ".UnknownHandle") == 0) {
                fprintf(stderr, "lockctl: %s refused: no handle ", what);
                console_fputs_escaped(console_json_string(params, "handle"), stderr);
                fputs(" (never granted, revoked, or expired; a content's budget outlives its "
                      "handles: name it by its sha256)\n",
                      stderr);
                return LOCKCTL_EXIT_FAIL;
        }
        if (strcmp(error, CONSOLE_INTERFACE ".UnknownBudget") == 0) {
                fprintf(stderr, "lockctl: %s refused: the content ", what);
                console_fputs_escaped(console_json_string(params, "sha256"), stderr);
                fputs(" has no budget (no question about it was ever answered, or it was reset)\n",
                      stderr);
                return LOCKCTL_EXIT_FAIL;
        }
        return console_print_error(what, error, params);
}

static int budget_call(const char *what, const char *method, json_t *params, json_t **ret) {
        return console_call_once_printing(what, method, params, print_budget_error, ret);
}

/* An escaped copy of the untrusted s ("-" for NULL), or NULL on out of memory. */
static char *escaped(const char *s) {
        return s ? escape_bytes(s, strlen(s)) : strdup("-");
}

/*
 * The placeholder tuple of an answer as "input=${placeholder} ...", in the order lockd sends it
 * (sorted by input), escaped; "-" for a question without inputs. NULL on out of memory.
 */
static char *format_inputs(const json_t *inputs) {
        _cleanup_free_ char *out = NULL;
        size_t len = 0;
        const char *key;
        json_t *v;

        if (!json_is_object(inputs) || json_object_size(inputs) == 0)
                return strdup("-");
        json_object_foreach((json_t *)inputs, key, v) {
                _cleanup_free_ char *k = escaped(key), *p = escaped(json_string_value(v));
                size_t add;
                char *n;

                if (!k || !p)
                        return NULL;
                add = strlen(k) + strlen(p) + 5; /* " " "=" "${" "}" */
                n = realloc(out, len + add + 1);
                if (!n)
                        return NULL;
                out = n;
                len += (size_t)sprintf(out + len, "%s%s=${%s}", len > 0 ? " " : "", k, p);
        }
        return TAKE_PTR(out);
}

/* One answer's printable columns. */
typedef struct Row {
        char *plugin, *version, *inputs, *outcome;
        long long time_usec, in_flight;
} Row;

static void row_done(Row *r) {
        free(r->plugin);
        free(r->version);
        free(r->inputs);
        free(r->outcome);
}

static size_t width(size_t w, const char *s) {
        size_t n = strlen(s);

        return n > w ? n : w;
}

/*
 * Prints one budget as a table: a header line with the digest (first DIGEST_SHORT hex digits),
 * the answers used and the live handles of that content, then one line per answer with its
 * plugin, version, placeholder tuple, outcome and time. Returns 0, or -ENOMEM.
 */
static int print_budget(const json_t *b) {
        json_t *answers = json_object_get(b, "answers"), *handles = json_object_get(b, "handles");
        _cleanup_free_ char *sha = escaped(console_json_string(b, "sha256"));
        size_t n = json_is_array(answers) ? json_array_size(answers) : 0, i;
        size_t wp = strlen("PLUGIN"), wv = strlen("VERSION"), wi = strlen("INPUTS"),
               wo = strlen("OUTCOME");
        _cleanup_free_ Row *rows = NULL;
        json_t *h;
        int r = 0;

        if (!sha)
                return -ENOMEM;
        printf("%.*s  used %lld  handles:", DIGEST_SHORT, sha, console_json_integer(b, "used", -1));
        if (!json_is_array(handles) || json_array_size(handles) == 0)
                fputs(" none", stdout);
        json_array_foreach(handles, i, h) {
                putchar(' ');
                console_fputs_escaped(json_string_value(h), stdout);
        }
        putchar('\n');
        if (n == 0) {
                puts("  no answers");
                return 0;
        }

        rows = calloc(n, sizeof(Row));
        if (!rows)
                return -ENOMEM;
        for (i = 0; i < n; i++) {
                json_t *a = json_array_get(answers, i);

                rows[i] = (Row){
                        .plugin = escaped(console_json_string(a, "plugin")),
                        .version = escaped(console_json_string(a, "version")),
                        .inputs = format_inputs(json_object_get(a, "inputs")),
                        .outcome = escaped(console_json_string(a, "outcome")),
                        .time_usec = console_json_integer(a, "time_usec", 0),
                        .in_flight = console_json_integer(a, "in_flight", 0),
                };
                if (!rows[i].plugin || !rows[i].version || !rows[i].inputs || !rows[i].outcome) {
                        r = -ENOMEM;
                        n = i + 1;
                        goto finish;
                }
                wp = width(wp, rows[i].plugin);
                wv = width(wv, rows[i].version);
                wi = width(wi, rows[i].inputs);
                wo = width(wo, rows[i].outcome);
        }
        printf("  %-*s  %-*s  %-*s  %-*s  TIME\n", (int)wp, "PLUGIN", (int)wv, "VERSION", (int)wi,
               "INPUTS", (int)wo, "OUTCOME");
        for (i = 0; i < n; i++) {
                printf("  %-*s  %-*s  %-*s  %-*s  ", (int)wp, rows[i].plugin, (int)wv,
                       rows[i].version, (int)wi, rows[i].inputs, (int)wo, rows[i].outcome);
                console_print_time(stdout, rows[i].time_usec);
                if (rows[i].in_flight > 0)
                        printf("  (%lld run%s in flight)", rows[i].in_flight,
                               rows[i].in_flight == 1 ? "" : "s");
                putchar('\n');
        }
finish:
        for (i = 0; i < n; i++)
                row_done(&rows[i]);
        return r;
}

/* budget show [HANDLE|SHA256] [--json]: every content's budget, or the one named. */
static int verb_budget_show(int argc, char **argv) {
        _cleanup_(json_decrefp) json_t *params = NULL, *reply = NULL;
        const char *target = NULL;
        bool json = false;
        json_t *list, *b;
        size_t i;
        int r;

        for (int k = 0; k < argc; k++) {
                if (strcmp(argv[k], "--json") == 0)
                        json = true;
                else if (!target && argv[k][0] != 0 && argv[k][0] != '-')
                        target = argv[k];
                else {
                        fprintf(stderr, "lockctl: unknown argument '%s'\n", argv[k]);
                        return usage_budget();
                }
        }
        if (target) {
                params = target_params(target);
                if (!params)
                        return LOCKCTL_EXIT_USAGE;
        }
        /* One content's budget is one answer; the whole list comes a page at a time. */
        r = params ? budget_call("budget show", "ListBudgets", params, &reply)
                   : console_call_all_pages("budget show", "ListBudgets", NULL, "budgets", &reply);
        if (r != 0)
                return r;
        if (json)
                return console_print_json(reply);
        list = json_object_get(reply, "budgets");
        if (!json_is_array(list) || json_array_size(list) == 0) {
                puts("no budgets");
                return fflush(stdout) == 0 ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
        }
        json_array_foreach(list, i, b) {
                if (i > 0)
                        putchar('\n');
                if (print_budget(b) < 0) {
                        fprintf(stderr, "lockctl: out of memory\n");
                        return LOCKCTL_EXIT_FAIL;
                }
        }
        return fflush(stdout) == 0 ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
}

/*
 * Shows what a reset of the budget named by params drops and asks the human on the terminal.
 * LOCKCTL_EXIT_OK to go on; an exit code (after a message) otherwise: no terminal, an answer
 * other than y or yes, or nothing to reset.
 */
static int confirm_reset(json_t *params) {
        _cleanup_(json_decrefp) json_t *reply = NULL;
        _cleanup_free_ char *answer = NULL, *sha = NULL, *text = NULL;
        json_t *b;
        long long used;
        int r;

        r = budget_call("budget reset", "ListBudgets", params, &reply);
        if (r != 0)
                return r;
        b = json_array_get(json_object_get(reply, "budgets"), 0);
        used = console_json_integer(b, "used", 0);
        sha = escaped(console_json_string(b, "sha256"));
        if (!sha) {
                fprintf(stderr, "lockctl: out of memory\n");
                return LOCKCTL_EXIT_FAIL;
        }
        if (used <= 0) {
                fprintf(stderr,
                        "lockctl: budget reset refused: the content %s has no budget (no "
                        "question about it was ever answered, or it was reset)\n",
                        sha);
                return LOCKCTL_EXIT_FAIL;
        }
        if (asprintf(&text,
                     "The content %s holds %lld answer(s). A reset drops them: agents with a "
                     "handle on it may then ask %lld new question(s) about it.\n",
                     sha, used, used) < 0) {
                fprintf(stderr, "lockctl: out of memory\n");
                return LOCKCTL_EXIT_FAIL;
        }
        r = console_tty_read_line(text, "Reset this budget? [y/N] ", false, CONFIRM_MAX, &answer);
        if (r == -ENXIO) {
                fprintf(stderr, "lockctl: budget reset refused: there is no terminal to confirm "
                                "on; run again with --yes to reset without asking\n");
                return LOCKCTL_EXIT_FAIL;
        }
        if (r < 0 && r != -EOVERFLOW) {
                fprintf(stderr, "lockctl: budget reset refused: cannot read the answer: %s\n",
                        r == -ENODATA ? "end of input" : strerror(-r));
                return LOCKCTL_EXIT_FAIL;
        }
        if (r < 0 || (strcmp(answer, "y") != 0 && strcmp(answer, "yes") != 0)) {
                fprintf(stderr, "lockctl: budget reset cancelled; nothing was changed\n");
                return LOCKCTL_EXIT_FAIL;
        }
        return LOCKCTL_EXIT_OK;
}

/* budget reset HANDLE|SHA256 [--yes]: drops the content's answers after the human confirmed. */
static int verb_budget_reset(int argc, char **argv) {
        _cleanup_(json_decrefp) json_t *params = NULL, *reply = NULL;
        bool json = console_take_json(&argc, argv);
        const char *target = NULL;
        bool yes = false;
        int r;

        for (int k = 0; k < argc; k++) {
                if (strcmp(argv[k], "--yes") == 0)
                        yes = true;
                else if (!target && argv[k][0] != 0 && argv[k][0] != '-')
                        target = argv[k];
                else {
                        fprintf(stderr, "lockctl: unknown argument '%s'\n", argv[k]);
                        return usage_budget();
                }
        }
        if (!target)
                return usage_budget();
        params = target_params(target);
        if (!params)
                return LOCKCTL_EXIT_USAGE;
        if (!yes) {
                r = confirm_reset(params);
                if (r != LOCKCTL_EXIT_OK)
                        return r;
        }
        r = budget_call("budget reset", "ResetBudget", params, &reply);
        if (r != 0)
                return r;
        if (json)
                return console_print_json(reply);
        printf("budget reset: %lld answer(s) dropped\n", console_json_integer(reply, "answers", 0));
        return fflush(stdout) == 0 ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
}

int verb_budget(int argc, char **argv) {
        if (argc < 1)
                return usage_budget();
        if (strcmp(argv[0], "show") == 0)
                return verb_budget_show(argc - 1, argv + 1);
        if (strcmp(argv[0], "reset") == 0)
                return verb_budget_reset(argc - 1, argv + 1);
        fprintf(stderr, "lockctl: unknown budget command '%s'\n", argv[0]);
        return usage_budget();
}
