/* lockctl approve, results and session end: the human's yes with typed values, the runs as the
 * human sees them, and the end of the human's input session. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "escape.h"
#include "fd-util.h"
#include "lockctl-approve.h"
#include "lockctl-console.h"
#include "lockctl-pinentry.h"
#include "lockctl-tty.h"
#include "lockctl-values.h"
#include "lockctl.h"
#include "macro.h"
#include "plan.h"
#include "seal.h"
#include "secmem.h"
#include "sigstore-util.h"

/* The longest y/N answer read; anything longer is no "y". */
#define CONFIRM_BYTES_MAX 16

int approve_print_error(const char *what, const char *error, json_t *params) {
        _cleanup_free_ char *a = NULL;
        const char *p = console_json_string(params, "placeholder");

        if (strcmp(error, CONSOLE_INTERFACE ".MissingValue") == 0 ||
            strcmp(error, CONSOLE_INTERFACE ".ValueNotSealed") == 0) {
                a = p ? escape_bytes(p, strlen(p)) : strdup("?");
                if (strcmp(error, CONSOLE_INTERFACE ".MissingValue") == 0)
                        fprintf(stderr,
                                "lockctl: %s refused: no value for the agent's placeholder "
                                "\"${%s}\", "
                                "and this input session holds none (the session may have ended "
                                "meanwhile: approve "
                                "again)\n",
                                what, a ? a : "?");
                else
                        fprintf(stderr,
                                "lockctl: %s refused: the value for the agent's placeholder "
                                "\"${%s}\" "
                                "did not open with the ticket's key (sealed to another ticket or "
                                "key)\n",
                                what, a ? a : "?");
                return LOCKCTL_EXIT_FAIL;
        }
        if (strcmp(error, CONSOLE_INTERFACE ".ResultsRefused") == 0) {
                fprintf(stderr,
                        "lockctl: %s refused: results are shown only at security level 3; this "
                        "lockd runs at level %lld (security_level in lockd.yaml)\n",
                        what, console_json_integer(params, "security_level", -1));
                return LOCKCTL_EXIT_FAIL;
        }
        return console_print_ticket_error(what, error, params);
}

/* One call on a fresh connection; an error answer is printed by approve_print_error(). */
static int ticket_call(const char *what, const char *method, json_t *params, json_t **ret) {
        return console_call_once_printing(what, method, params, approve_print_error, ret);
}

/* A ticket id as the human typed it: something lockd could have made, checked before sending. */
static int ticket_arg(const char *usage, int argc, char **argv, int i) {
        if (i >= argc || argv[i][0] == 0 || argv[i][0] == '-' ||
            strlen(argv[i]) > SEAL_TICKET_ID_MAX) {
                fprintf(stderr, "%s\n", usage);
                return LOCKCTL_EXIT_USAGE;
        }
        for (const char *s = argv[i]; *s; s++)
                if (*s <= ' ' || *s > '~') {
                        fprintf(stderr, "lockctl: a ticket id is printable ASCII\n");
                        return LOCKCTL_EXIT_USAGE;
                }
        return 0;
}

static bool string_in(const json_t *array, const char *s) {
        json_t *v;
        size_t i;

        json_array_foreach(array, i, v) {
                if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
                        return true;
        }
        return false;
}

/* Prints each step as the human decides on it: what runs, what it asks, on which file, with
 * which placeholders, and whether it spends the file's budget. Every string is escaped. */
static void print_steps(const json_t *t) {
        json_t *steps = json_object_get(t, "steps"), *s;
        size_t i;

        fputs("ticket ", stdout);
        console_fputs_escaped(console_json_string(t, "ticket"), stdout);
        printf(" from agent uid %lld, submitted ", console_json_integer(t, "agent_uid", -1));
        console_print_time(stdout, console_json_integer(t, "created_usec", 0));
        fputs(", expires ", stdout);
        console_print_time(stdout, console_json_integer(t, "expires_usec", 0));
        putchar('\n');
        json_array_foreach(steps, i, s) {
                json_t *inputs = json_object_get(s, "inputs"), *v;
                const char *k, *label = console_json_string(s, "label");

                printf("\nstep %zu: ", i);
                console_fputs_escaped(console_json_string(s, "plugin"), stdout);
                fputs(" version ", stdout);
                console_fputs_escaped(console_json_string(s, "version"), stdout);
                fputs("\n  question: ", stdout);
                console_fputs_escaped(console_json_string(s, "question"), stdout);
                fputs("\n  1 means:  ", stdout);
                console_fputs_escaped(console_json_string(s, "one"), stdout);
                fputs("\n  0 means:  ", stdout);
                console_fputs_escaped(console_json_string(s, "zero"), stdout);
                fputs("\n  file:     ", stdout);
                if (label) {
                        console_fputs_escaped(label, stdout);
                        fputs(" (", stdout);
                        console_fputs_escaped(console_json_string(s, "handle"), stdout);
                        putchar(')');
                } else
                        console_fputs_escaped(console_json_string(s, "handle"), stdout);
                json_object_foreach(inputs, k, v) {
                        fputs("\n  input:    ", stdout);
                        console_fputs_escaped(k, stdout);
                        fputs(", the value the agent calls \"${", stdout);
                        console_fputs_escaped(json_string_value(v), stdout);
                        fputs("}\" (the agent's wording)", stdout);
                }
                fputs(json_is_true(json_object_get(s, "charged"))
                              ? "\n  budget:   costs one answer of the file's budget\n"
                              : "\n  budget:   costs nothing (asked before: the answer is known)\n",
                      stdout);
        }
}

/*
 * The placeholders to type: those of the ticket its input session does not hold, each checked
 * (lockd sends names; a prompt quotes them), and the list of them all, each named by the
 * plugin's input (plugins: ListPlugins', may be NULL). 0 with *ret (a new array), or an exit code
 * after printing why.
 */
static int needed_placeholders(const json_t *t, const json_t *plugins, json_t **ret) {
        json_t *phs = json_object_get(t, "placeholders"),
               *holds = json_object_get(t, "session_holds");
        _cleanup_(json_decrefp) json_t *need = json_array();
        json_t *v;
        size_t i;

        if (!need)
                return LOCKCTL_EXIT_FAIL;
        if (!json_is_array(phs) || json_array_size(phs) > PLAN_PLACEHOLDERS_MAX ||
            (holds && !json_is_array(holds))) {
                fprintf(stderr, "lockctl: approve failed: lockd sent a malformed ticket\n");
                return LOCKCTL_EXIT_FAIL;
        }
        json_array_foreach(phs, i, v) {
                if (!seal_name_valid(json_string_value(v))) {
                        fprintf(stderr, "lockctl: approve failed: lockd sent an invalid "
                                        "placeholder name\n");
                        return LOCKCTL_EXIT_FAIL;
                }
                if (!string_in(holds, json_string_value(v)) && json_array_append(need, v) < 0)
                        return LOCKCTL_EXIT_FAIL;
        }
        if (json_array_size(phs) > 0) {
                fputs("\nvalues:\n", stdout);
                json_array_foreach(phs, i, v) {
                        ValueLabel l = {};

                        if (value_label_make(t, plugins, json_string_value(v), &l) < 0)
                                return LOCKCTL_EXIT_FAIL;
                        printf("  %s, the agent's \"${%s}\": %s\n", l.prompt, json_string_value(v),
                               string_in(need, json_string_value(v)) ? "typed now"
                                                                     : "from this input session");
                        value_label_done(&l);
                }
        }
        *ret = TAKE_PTR(need);
        return 0;
}

/* Asks "Approve? [y/N]" on the terminal; true only for y or yes. */
static bool confirm(void) {
        _cleanup_free_ char *line = NULL;

        if (console_tty_read_line(NULL, "\nApprove this ticket? [y/N] ", false, CONFIRM_BYTES_MAX,
                                  &line) < 0)
                return false;
        return strcmp(line, "y") == 0 || strcmp(line, "Y") == 0 || strcmp(line, "yes") == 0;
}

/* The ticket's public key from GetTicket's seal_key: strict base64 of exactly 32 bytes. */
static int decode_seal_key(const json_t *t, uint8_t out[SEAL_KEY_SIZE]) {
        const char *k = console_json_string(t, "seal_key");
        SigstoreBytes b = {};
        int r;

        if (!k || strlen(k) > 64)
                return -EBADMSG;
        r = sigstore_b64_decode(k, strlen(k), &b);
        if (r < 0)
                return r;
        if (b.len != SEAL_KEY_SIZE)
                r = -EBADMSG;
        else
                memcpy(out, b.data, SEAL_KEY_SIZE);
        free(b.data);
        return r;
}

/* Seals the value v for placeholder name to the ticket: 0 with *ret, or an exit code after
 * printing why. */
static int seal_or_say(const uint8_t pub[SEAL_KEY_SIZE], const char *id, const char *name,
                       const SecBuf *v, char **ret) {
        int r = seal_value(pub, id, name, v->data, v->len, ret);

        if (r < 0) {
                fprintf(stderr, "lockctl: cannot seal the value for \"${%s}\": %s\n", name,
                        r == -EINVAL ? "lockd's ticket key is unusable" : strerror(-r));
                return LOCKCTL_EXIT_FAIL;
        }
        return 0;
}

/* Says why a value could not be read (r, a negative errno of tty_prompt_secret() or
 * pinentry_getpin()), naming it by the agent's placeholder, quoted; from names the reader. */
static void say_value_error(int r, const char *name, const char *from) {
        if (r == -EOVERFLOW)
                fprintf(stderr,
                        "lockctl: the value for \"${%s}\" is longer than %d bytes: refused, "
                        "nothing was sent\n",
                        name, SEAL_VALUE_MAX);
        else if (r == -ENOMSG)
                fprintf(stderr,
                        "lockctl: an empty value for \"${%s}\" is refused, nothing was sent\n",
                        name);
        else if (r == -ENODATA)
                fprintf(stderr, "lockctl: no value typed for \"${%s}\", nothing was sent\n", name);
        else if (r == -ENOMEM)
                fprintf(stderr,
                        "lockctl: cannot keep the value for \"${%s}\" in locked memory "
                        "(RLIMIT_MEMLOCK?), nothing was sent\n",
                        name);
        else
                fprintf(stderr, "lockctl: cannot read the value for \"${%s}\" %s: %s\n", name, from,
                        strerror(-r));
}

/*
 * Prompts for the value of placeholder name on the terminal (echo off) and seals it to the
 * ticket. The value lives only in secure memory, wiped before this returns. 0 with *ret (the
 * sealed text), or an exit code after printing why; nothing is sent either way.
 */
static int read_and_seal(int tty, const json_t *t, const json_t *plugins,
                         const uint8_t pub[SEAL_KEY_SIZE], const char *id, const char *name,
                         char **ret) {
        _cleanup_secbuf_ SecBuf *v = NULL;
        _cleanup_free_ char *prompt = NULL;
        ValueLabel l = {};
        int r;

        if (value_label_make(t, plugins, name, &l) < 0)
                return LOCKCTL_EXIT_FAIL;
        /* The prompt is the plugin's input; the agent's name for it only in the quoted line. */
        r = asprintf(&prompt, "\n%svalue of %s: ", l.about, l.prompt);
        value_label_done(&l);
        if (r < 0)
                return LOCKCTL_EXIT_FAIL;
        r = tty_prompt_secret(tty, prompt, SEAL_VALUE_MAX, &v);
        if (r < 0) {
                say_value_error(r, name, "on the terminal");
                return LOCKCTL_EXIT_FAIL;
        }
        return seal_or_say(pub, id, name, v, ret);
}

/* What the human asks of pinentry, and what it answered. */
typedef enum Asked {
        ASKED_YES,     /* confirmed, every value read */
        ASKED_DENY,    /* CONFIRM's Cancel: the human denies the ticket */
        ASKED_PENDING, /* a GETPIN's Cancel or a failure: nothing is sent, the ticket waits */
} Asked;

/* Starts pinentry as the approval's dialog; prints why not. */
static int pinentry_open(Pinentry *p, const ApproveOptions *o, int tty) {
        int r = pinentry_start(p, o->pinentry, tty);

        if (r < 0) {
                fprintf(stderr, "lockctl: approve: cannot run pinentry program '%s': %s\n",
                        o->pinentry && *o->pinentry ? o->pinentry : PINENTRY_DEFAULT,
                        r == -EPROTO ? "it does not speak the Assuan protocol" : strerror(-r));
                return LOCKCTL_EXIT_FAIL;
        }
        return 0;
}

/* CONFIRM with the ticket's question, file and agent: the human's yes or no. */
static int pinentry_ask_confirm(Pinentry *p, const json_t *t, const char *id, Asked *ret) {
        _cleanup_free_ char *summary = NULL, *title = NULL;
        PinentryAnswer a;
        int r;

        if (ticket_summary(t, true, &summary) < 0 || asprintf(&title, "lockd: ticket %s", id) < 0)
                return LOCKCTL_EXIT_FAIL;
        r = pinentry_confirm(p, title, summary, "Approve", "Deny", &a);
        if (r < 0) {
                fprintf(stderr,
                        "lockctl: approve: pinentry failed (%s); the ticket stays pending\n",
                        r == -EREMOTEIO ? "it answered with an error" : strerror(-r));
                *ret = ASKED_PENDING;
                return 0;
        }
        *ret = a == PINENTRY_OK ? ASKED_YES : ASKED_DENY;
        return 0;
}

/*
 * GETPIN for placeholder name, the prompt its plugin input, and seals the value (read into
 * locked memory, exactly as the terminal's). 0 with *ret (ASKED_YES with *ret_sealed, or
 * ASKED_PENDING after printing why), or an exit code.
 */
static int pinentry_ask_value(Pinentry *p, const json_t *t, const json_t *plugins,
                              const uint8_t pub[SEAL_KEY_SIZE], const char *id, const char *name,
                              Asked *ret, char **ret_sealed) {
        _cleanup_secbuf_ SecBuf *v = NULL;
        _cleanup_free_ char *prompt = NULL, *title = NULL;
        PinentryAnswer a = PINENTRY_CANCELED;
        ValueLabel l = {};
        int r;

        if (value_label_make(t, plugins, name, &l) < 0)
                return LOCKCTL_EXIT_FAIL;
        if (asprintf(&prompt, "%s:", l.prompt) < 0 ||
            asprintf(&title, "lockd: a value for ticket %s", id) < 0) {
                value_label_done(&l);
                return LOCKCTL_EXIT_FAIL;
        }
        r = pinentry_getpin(p, title, l.about, prompt, SEAL_VALUE_MAX, &a, &v);
        value_label_done(&l);
        if (r < 0) {
                say_value_error(r, name, "from pinentry");
                *ret = ASKED_PENDING;
                return 0;
        }
        if (a != PINENTRY_OK) {
                fprintf(stderr,
                        "lockctl: no value typed for \"${%s}\" (pinentry's Cancel), "
                        "nothing was sent\n",
                        name);
                *ret = ASKED_PENDING;
                return 0;
        }
        r = seal_or_say(pub, id, name, v, ret_sealed);
        if (r != 0)
                return r;
        *ret = ASKED_YES;
        return 0;
}

/* Denies ticket id because the human said so in pinentry; prints the state. */
static int deny_asked(const char *id, char *ret_state, size_t state_size) {
        _cleanup_(json_decrefp) json_t *params = json_pack("{s:s}", "ticket", id), *reply = NULL;
        int r;

        if (!params)
                return LOCKCTL_EXIT_FAIL;
        r = ticket_call("deny", "Deny", params, &reply);
        if (r != 0)
                return r;
        if (ret_state)
                snprintf(ret_state, state_size, "denied");
        fputs("ticket ", stdout);
        console_fputs_escaped(id, stdout);
        fputs(": denied (pinentry's Deny)\n", stdout);
        fflush(stdout);
        return LOCKCTL_EXIT_FAIL;
}

/* Checks that t, GetTicket's answer for id, is that ticket and pending: 0, or an exit code after
 * printing why not. */
static int ticket_pending(const json_t *t, const char *id) {
        const char *state;

        if (!json_is_object(t) || !console_json_string(t, "ticket") ||
            strcmp(console_json_string(t, "ticket"), id) != 0) {
                fprintf(stderr, "lockctl: approve failed: lockd answered with another ticket\n");
                return LOCKCTL_EXIT_FAIL;
        }
        state = console_json_string(t, "state");
        if (!state || strcmp(state, "pending") != 0) {
                fputs("lockctl: approve refused: ticket ", stderr);
                console_fputs_escaped(id, stderr);
                fputs(" is not pending (", stderr);
                console_fputs_escaped(state, stderr);
                fputs(")\n", stderr);
                return LOCKCTL_EXIT_FAIL;
        }
        return 0;
}

/*
 * Reads the value of each placeholder in need, from pe (NULL: the terminal tty), seals it to
 * ticket t and puts them all in params' "values": 0, or an exit code after printing why.
 */
static int read_values(Pinentry *pe, int tty, const json_t *t, const json_t *plugins,
                       const json_t *need, const char *id, json_t *params) {
        _cleanup_(json_decrefp) json_t *values = NULL;
        uint8_t pub[SEAL_KEY_SIZE];
        Asked asked = ASKED_YES;
        json_t *v;
        size_t i;
        int r;

        if (decode_seal_key(t, pub) < 0) {
                fprintf(stderr, "lockctl: approve failed: lockd sent no usable seal key "
                                "for a ticket that needs values\n");
                return LOCKCTL_EXIT_FAIL;
        }
        values = json_object();
        if (!values)
                return LOCKCTL_EXIT_FAIL;
        json_array_foreach(need, i, v) {
                _cleanup_free_ char *sealed = NULL;

                if (pe) {
                        r = pinentry_ask_value(pe, t, plugins, pub, id, json_string_value(v),
                                               &asked, &sealed);
                        if (r == 0 && asked != ASKED_YES) {
                                puts("not approved; the ticket stays pending");
                                return LOCKCTL_EXIT_FAIL;
                        }
                } else
                        r = read_and_seal(tty, t, plugins, pub, id, json_string_value(v), &sealed);
                if (r != 0)
                        return r;
                if (json_object_set_new(values, json_string_value(v), json_string(sealed)) < 0)
                        return LOCKCTL_EXIT_FAIL;
        }
        return json_object_set(params, "values", values) < 0 ? LOCKCTL_EXIT_FAIL : 0;
}

int approve_ticket(const char *id, const ApproveOptions *o, char *ret_state, size_t state_size) {
        _cleanup_(json_decrefp) json_t *params = NULL, *reply = NULL, *need = NULL, *answer = NULL,
                                       *plugins = NULL;
        _cleanup_(pinentry_done) Pinentry pe = {.pid = -1, .to = -1, .from = -1};
        _cleanup_close_ int tty = -1;
        bool use_pinentry = o->pinentry != NULL;
        Asked asked = ASKED_YES;
        json_t *t;
        int r;

        params = json_pack("{s:s}", "ticket", id);
        if (!params)
                return LOCKCTL_EXIT_FAIL;
        r = ticket_call("approve", "GetTicket", params, &reply);
        if (r != 0)
                return r;
        t = json_object_get(reply, "ticket");
        r = ticket_pending(t, id);
        if (r != 0)
                return r;
        /* The plugins' inputs name the values (their kind and size); without them the labels
         * say so. */
        plugins = values_plugins();
        print_steps(t);
        r = needed_placeholders(t, plugins, &need);
        if (r != 0)
                return r;
        fflush(stdout);

        if (use_pinentry)
                tty = tty_open(); /* may be none: a graphical pinentry needs no terminal */
        else if (json_array_size(need) > 0 || !o->yes)
                tty = tty_open();
        if (!use_pinentry && tty < 0 && json_array_size(need) > 0) {
                fprintf(stderr,
                        "lockctl: approve needs a terminal to read values for \"${%s}\" "
                        "(or --pinentry)\n",
                        json_string_value(json_array_get(need, 0)));
                return LOCKCTL_EXIT_FAIL;
        }
        if (!use_pinentry && tty < 0 && !o->yes) {
                fprintf(stderr, "lockctl: approve needs a terminal to confirm (--yes approves "
                                "without asking, --pinentry asks in a dialog)\n");
                return LOCKCTL_EXIT_FAIL;
        }
        if (use_pinentry && (json_array_size(need) > 0 || !o->yes)) {
                r = pinentry_open(&pe, o, tty);
                if (r != 0)
                        return r;
        }
        if (!o->yes) {
                if (use_pinentry) {
                        r = pinentry_ask_confirm(&pe, t, id, &asked);
                        if (r != 0)
                                return r;
                } else
                        asked = confirm() ? ASKED_YES : ASKED_PENDING;
                if (asked == ASKED_DENY)
                        return deny_asked(id, ret_state, state_size);
                if (asked == ASKED_PENDING) {
                        puts("not approved; the ticket stays pending");
                        return LOCKCTL_EXIT_FAIL;
                }
        }

        if (json_array_size(need) > 0) {
                r = read_values(use_pinentry ? &pe : NULL, tty, t, plugins, need, id, params);
                if (r != 0)
                        return r;
        }
        pinentry_done(&pe);
        /* A fresh connection: the human may have taken longer than lockd keeps an idle one. */
        r = ticket_call("approve", "Approve", params, &answer);
        if (r != 0)
                return r;
        if (ret_state)
                snprintf(ret_state, state_size, "%s",
                         console_json_string(answer, "state") ? console_json_string(answer, "state")
                                                              : "");
        fputs("ticket ", stdout);
        console_fputs_escaped(id, stdout);
        fputs(": ", stdout);
        console_fputs_escaped(console_json_string(answer, "state"), stdout);
        putchar('\n');
        return fflush(stdout) == 0 ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
}

/* Takes arg as one of a verb's options, into userdata: true when arg was one. */
typedef bool (*TicketOption)(const char *arg, void *userdata);

/*
 * The arguments TICKET and the verb's options (those option takes), in any order: 0 with *ret_id,
 * or an exit code after the usage line.
 */
static int ticket_args(int argc, char **argv, const char *usage, TicketOption option,
                       void *userdata, const char **ret_id) {
        const char *id = NULL;
        int r;

        for (int i = 0; i < argc; i++) {
                if (option(argv[i], userdata))
                        continue;
                if (!id) {
                        r = ticket_arg(usage, argc, argv, i);
                        if (r != 0)
                                return r;
                        id = argv[i];
                } else {
                        fprintf(stderr, "%s\n", usage);
                        return LOCKCTL_EXIT_USAGE;
                }
        }
        if (!id) {
                fprintf(stderr, "%s\n", usage);
                return LOCKCTL_EXIT_USAGE;
        }
        *ret_id = id;
        return 0;
}

/* approve's options, --yes and --pinentry[=PROGRAM], into the ApproveOptions userdata. */
static bool approve_option(const char *arg, void *userdata) {
        ApproveOptions *o = userdata;

        if (strcmp(arg, "--yes") == 0)
                o->yes = true;
        else if (strcmp(arg, "--pinentry") == 0)
                o->pinentry = PINENTRY_DEFAULT;
        else if (strncmp(arg, "--pinentry=", 11) == 0 && arg[11])
                o->pinentry = arg + 11;
        else
                return false;
        return true;
}

/* results' one option, --json, into the bool userdata. */
static bool json_option(const char *arg, void *userdata) {
        if (strcmp(arg, "--json") != 0)
                return false;
        *(bool *)userdata = true;
        return true;
}

/* approve TICKET [--yes] [--pinentry[=PROGRAM]] */
int verb_approve(int argc, char **argv) {
        static const char usage[] =
                "usage: lockctl approve TICKET [--yes] [--pinentry[=PROGRAM]] [--json]";
        bool json = console_take_json(&argc, argv);
        ApproveOptions o = {};
        const char *id = NULL;
        char state[32] = "";
        int r, saved;

        r = ticket_args(argc, argv, usage, approve_option, &o, &id);
        if (r != 0)
                return r;
        /* The typed values pass through this process: no core file, no ptrace by this uid. */
        r = secmem_harden_process();
        if (r < 0) {
                fprintf(stderr, "lockctl: cannot protect this process's memory: %s\n",
                        strerror(-r));
                return LOCKCTL_EXIT_FAIL;
        }
        if (!json)
                return approve_ticket(id, &o, NULL, 0);
        /* With --json, what approve shows the human (the steps, the prompts, the state) goes to
         * stderr; stdout gets the one JSON object. */
        saved = console_stdout_redirect(STDERR_FILENO);
        if (saved < 0) {
                fprintf(stderr, "lockctl: approve: %s\n", strerror(-saved));
                return LOCKCTL_EXIT_FAIL;
        }
        r = approve_ticket(id, &o, state, sizeof(state));
        if (console_stdout_restore(saved) < 0)
                return LOCKCTL_EXIT_FAIL;
        if (r != 0)
                return r;
        return console_print_json_steal(json_pack("{s:s, s:s}", "ticket", id, "state", state));
}

/* A measure from lockd: the number with its unit, "-" when lockd sent none. */
static void print_usec(const char *name, const json_t *s, const char *key) {
        long long v = console_json_integer(s, key, -1);

        if (v < 0)
                printf("  %s -", name);
        else
                printf("  %s %lld.%03lld ms", name, v / 1000, v % 1000);
}

/*
 * The plugin's detail as lockd sent it: lockd escaped it already, so it is printable ASCII. Any
 * other byte means something went wrong on the way, and is escaped here once more rather than
 * reaching the terminal.
 */
static void print_detail(const char *d) {
        bool plain = true;

        for (const char *p = d; *p; p++)
                if (*p < 0x20 || *p > 0x7e)
                        plain = false;
        fputs("    ", stdout);
        if (plain)
                fputs(d, stdout);
        else
                console_fputs_escaped(d, stdout);
        putchar('\n');
}

/* Each step's outcome as the human sees it; ticket (may be NULL) names each step's plugin. */
static void print_results(const json_t *reply, const json_t *ticket) {
        json_t *steps = json_object_get(reply, "steps"), *s;
        json_t *tsteps = json_object_get(ticket, "steps");
        size_t i;

        fputs("ticket ", stdout);
        console_fputs_escaped(console_json_string(reply, "ticket"), stdout);
        fputs(": ", stdout);
        console_fputs_escaped(console_json_string(reply, "state"), stdout);
        putchar('\n');
        json_array_foreach(steps, i, s) {
                long long step = console_json_integer(s, "step", -1), res;
                json_t *ts = step >= 0 ? json_array_get(tsteps, (size_t)step) : NULL;
                const char *error = console_json_string(s, "error");
                const char *detail = console_json_string(s, "detail");

                if (i >= PLAN_STEPS_MAX) {
                        puts("(lockd sent more steps than a plan can have; not shown)");
                        break;
                }
                printf("\nstep %lld", step);
                if (ts) {
                        fputs(": ", stdout);
                        console_fputs_escaped(console_json_string(ts, "plugin"), stdout);
                        putchar(' ');
                        console_fputs_escaped(console_json_string(ts, "version"), stdout);
                }
                res = console_json_integer(s, "result", -1);
                if (res == 0 || res == 1)
                        printf("\n  outcome: %lld", res);
                else if (error) {
                        fputs("\n  outcome: error ", stdout);
                        console_fputs_escaped(error, stdout);
                } else
                        fputs("\n  outcome: none yet", stdout);
                fputs("\n  cause:   ", stdout);
                console_fputs_escaped(console_json_string(s, "cause"), stdout);
                fputs(json_is_true(json_object_get(s, "cached"))
                              ? "\n  cached:  yes (the answer was known: no run, nothing spent)"
                              : "\n  cached:  no",
                      stdout);
                fputs("\n  unit:    ", stdout);
                console_fputs_escaped(console_json_string(s, "unit"), stdout);
                putchar('\n');
                print_usec("wall", s, "wall_usec");
                print_usec("setup", s, "setup_usec");
                print_usec("scope wait", s, "scope_wait_usec");
                print_usec("cpu", s, "cpu_usec");
                /* A run's step without the figure: lockd could not tell the plugin's own. */
                if (console_json_integer(s, "peak_memory_bytes", -1) >= 0)
                        printf("  peak memory %lld bytes",
                               console_json_integer(s, "peak_memory_bytes", -1));
                else if (console_json_integer(s, "wall_usec", -1) >= 0)
                        fputs("  peak memory unknown", stdout);
                if (console_json_integer(s, "stderr_bytes", -1) >= 0)
                        printf("  stderr %lld bytes", console_json_integer(s, "stderr_bytes", -1));
                putchar('\n');
                if (detail) {
                        puts("  detail, shown here only (never to the agent, the audit or a log):");
                        print_detail(detail);
                }
        }
}

/* results TICKET [--json] */
int verb_results(int argc, char **argv) {
        static const char usage[] = "usage: lockctl results TICKET [--json]";
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(json_decrefp) json_t *params = NULL, *reply = NULL, *ticket = NULL;
        _cleanup_free_ char *error = NULL;
        const char *id = NULL;
        bool json = false;
        int r;

        r = ticket_args(argc, argv, usage, json_option, &json, &id);
        if (r != 0)
                return r;
        params = json_pack("{s:s}", "ticket", id);
        if (!params)
                return LOCKCTL_EXIT_FAIL;
        r = console_connect(&c);
        if (r != 0)
                return r;
        r = console_call_raw(c, "results", "Results", params, NULL, 0, &reply, &error);
        if (r != 0)
                return r;
        if (error)
                return approve_print_error("results", error, reply);
        if (json)
                return console_print_json(reply);
        /* The plugins' names, for the human: from GetTicket, left out when it fails. */
        r = console_call_raw(c, "results", "GetTicket", params, NULL, 0, &ticket, &error);
        if (r == 0 && !error)
                print_results(reply, json_object_get(ticket, "ticket"));
        else
                print_results(reply, NULL);
        return fflush(stdout) == 0 ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
}

/* session end [--json] */
int verb_session(int argc, char **argv) {
        static const char usage[] = "usage: lockctl session end [--json]";
        _cleanup_(json_decrefp) json_t *reply = NULL;
        bool json = false;
        long long n;
        int r;

        if (argc < 1 || strcmp(argv[0], "end") != 0) {
                fprintf(stderr, "%s\n", usage);
                return LOCKCTL_EXIT_USAGE;
        }
        r = console_parse_json_only(argc - 1, argv + 1, usage, &json);
        if (r != 0)
                return r;
        r = ticket_call("session end", "EndSession", NULL, &reply);
        if (r != 0)
                return r;
        if (json)
                return console_print_json(reply);
        n = console_json_integer(reply, "values", -1);
        if (n < 0) {
                fprintf(stderr, "lockctl: session end: lockd sent a malformed answer\n");
                return LOCKCTL_EXIT_FAIL;
        }
        printf("input session ended: %lld value%s wiped\n", n, n == 1 ? "" : "s");
        return fflush(stdout) == 0 ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
}
