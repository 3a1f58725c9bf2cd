/* lockctl tickets and deny: the agents' plans as the console sees them, and the human's no. */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "lockctl-console.h"
#include "lockctl-pages.h"
#include "lockctl.h"
#include "macro.h"

static int usage_deny(void) {
        fputs("usage: lockctl deny TICKET [--json]\n", stderr);
        return LOCKCTL_EXIT_USAGE;
}

int console_print_ticket_error(const char *what, const char *error, json_t *params) {
        if (strcmp(error, CONSOLE_INTERFACE ".UnknownTicket") == 0) {
                fprintf(stderr, "lockctl: %s refused: no ticket ", what);
                console_fputs_escaped(console_json_string(params, "ticket"), stderr);
                fputs(" (never submitted, or forgotten)\n", stderr);
                return LOCKCTL_EXIT_FAIL;
        }
        if (strcmp(error, CONSOLE_INTERFACE ".TicketNotPending") == 0) {
                fprintf(stderr, "lockctl: %s refused: ticket ", what);
                console_fputs_escaped(console_json_string(params, "ticket"), stderr);
                fputs(" is not pending (", stderr);
                console_fputs_escaped(console_json_string(params, "state"), stderr);
                fputs(")\n", stderr);
                return LOCKCTL_EXIT_FAIL;
        }
        return console_print_error(what, error, params);
}

static int ticket_call(const char *what, const char *method, json_t *params, json_t **ret) {
        return console_call_once_printing(what, method, params, console_print_ticket_error, ret);
}

/* One ticket: a header line, then each step's plugin, handle label, question and answers. */
static void print_ticket(const json_t *t) {
        json_t *steps = json_object_get(t, "steps"), *s;
        size_t i;

        console_fputs_escaped(console_json_string(t, "ticket"), stdout);
        fputs("  ", stdout);
        console_fputs_escaped(console_json_string(t, "state"), stdout);
        printf("  agent %lld  submitted ", console_json_integer(t, "agent_uid", -1));
        console_print_time(stdout, console_json_integer(t, "created_usec", 0));
        fputs("  expires ", stdout);
        console_print_time(stdout, console_json_integer(t, "expires_usec", 0));
        putchar('\n');
        json_array_foreach(steps, i, s) {
                json_t *inputs = json_object_get(s, "inputs"), *v;
                const char *k;

                printf("  step %zu: ", i);
                console_fputs_escaped(console_json_string(s, "plugin"), stdout);
                putchar(' ');
                console_fputs_escaped(console_json_string(s, "version"), stdout);
                fputs(" on ", stdout);
                console_fputs_escaped(console_json_string(s, "handle"), stdout);
                fputs(" (", stdout);
                console_fputs_escaped(console_json_string(s, "label"), stdout);
                fputs(")\n    question: ", stdout);
                console_fputs_escaped(console_json_string(s, "question"), stdout);
                fputs("\n    1: ", stdout);
                console_fputs_escaped(console_json_string(s, "one"), stdout);
                fputs("\n    0: ", stdout);
                console_fputs_escaped(console_json_string(s, "zero"), stdout);
                putchar('\n');
                json_object_foreach(inputs, k, v) {
                        fputs("    input ", stdout);
                        console_fputs_escaped(k, stdout);
                        fputs(" = ${", stdout);
                        console_fputs_escaped(json_string_value(v), stdout);
                        fputs("}\n", stdout);
                }
        }
}

static int usage_tickets(void) {
        fputs("usage: lockctl tickets [--state STATE] [--agent UID] [--limit N] [--cursor C] "
              "[--all] [--json]\n",
              stderr);
        return LOCKCTL_EXIT_USAGE;
}

/* A decimal in [min, max] with nothing after it. */
static bool parse_number(const char *s, long long min, long long max, long long *ret) {
        char *end = NULL;
        long long v;

        if (!s || !*s || *s == '-' || *s == '+')
                return false;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno != 0 || *end || v < min || v > max)
                return false;
        *ret = v;
        return true;
}

/*
 * tickets: the tickets lockd keeps, a page at a time as lockd lists them (pending first, then
 * the rest, each newest first), so the tickets waiting for the human come first however many an
 * agent churned. Without --all one page, and a line on stderr saying how to get the next;
 * --all reads every page. --state and --agent select; --json prints lockd's answer (with --all,
 * one object holding every page's tickets).
 */
int verb_tickets(int argc, char **argv) {
        _cleanup_(json_decrefp) json_t *reply = NULL, *params = json_object();
        bool json = false, all = false;
        const char *next;
        json_t *list, *t;
        size_t i;
        int r;

        if (!params)
                return LOCKCTL_EXIT_FAIL;
        for (int k = 0; k < argc; k++) {
                const char *a = argv[k], *v = k + 1 < argc ? argv[k + 1] : NULL;
                long long n;

                if (strcmp(a, "--json") == 0)
                        json = true;
                else if (strcmp(a, "--all") == 0)
                        all = true;
                else if (strcmp(a, "--state") == 0 && v) {
                        if (json_object_set_new(params, "state", json_string(v)) < 0)
                                return usage_tickets();
                        k++;
                } else if (strcmp(a, "--agent") == 0 && v) {
                        if (!parse_number(v, 0, UINT32_MAX - 1, &n)) {
                                fprintf(stderr, "lockctl: --agent takes a uid number\n");
                                return LOCKCTL_EXIT_USAGE;
                        }
                        json_object_set_new(params, "agent_uid", json_integer(n));
                        k++;
                } else if (strcmp(a, "--limit") == 0 && v) {
                        if (!parse_number(v, 1, 256, &n)) {
                                fprintf(stderr, "lockctl: --limit takes 1 to 256\n");
                                return LOCKCTL_EXIT_USAGE;
                        }
                        json_object_set_new(params, "limit", json_integer(n));
                        k++;
                } else if (strcmp(a, "--cursor") == 0 && v) {
                        if (json_object_set_new(params, "cursor", json_string(v)) < 0)
                                return usage_tickets();
                        k++;
                } else {
                        fprintf(stderr, "lockctl: unknown argument '%s'\n", a);
                        return usage_tickets();
                }
        }
        if (all && json_object_get(params, "cursor")) {
                fprintf(stderr, "lockctl: --all starts at the first page: no --cursor with it\n");
                return LOCKCTL_EXIT_USAGE;
        }
        if (all)
                r = console_call_all_pages("tickets", "ListTickets", params, "tickets", &reply);
        else
                r = ticket_call("tickets", "ListTickets", params, &reply);
        if (r != 0)
                return r;
        if (json)
                return console_print_json(reply);
        list = json_object_get(reply, "tickets");
        if (!json_is_array(list) || json_array_size(list) == 0)
                puts("no tickets");
        json_array_foreach(list, i, t) print_ticket(t);
        next = json_string_value(json_object_get(reply, "next"));
        if (next && !all) {
                /* The cursor is lockd's: shown escaped, as everything lockd sends. */
                fprintf(stderr,
                        "lockctl: more tickets (%lld kept, %lld pending): lockctl tickets "
                        "--cursor ",
                        console_json_integer(reply, "total", -1),
                        console_json_integer(reply, "pending", -1));
                console_fputs_escaped(next, stderr);
                fputs(" (or --all)\n", stderr);
        }
        return fflush(stdout) == 0 ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
}

/* deny TICKET: every step of a pending ticket ends as denied. */
int verb_deny(int argc, char **argv) {
        _cleanup_(json_decrefp) json_t *params = NULL, *reply = NULL;
        bool json = console_take_json(&argc, argv);
        int r;

        if (argc != 1 || argv[0][0] == 0 || argv[0][0] == '-')
                return usage_deny();
        params = json_pack("{s:s}", "ticket", argv[0]);
        if (!params) {
                fprintf(stderr, "lockctl: the ticket must be UTF-8\n");
                return LOCKCTL_EXIT_USAGE;
        }
        r = ticket_call("deny", "Deny", params, &reply);
        if (r != 0 || !json)
                return r;
        return console_print_json_steal(
                json_pack("{s:s, s:s}", "ticket", argv[0], "state", "denied"));
}
