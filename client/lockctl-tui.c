/* lockctl console: the interactive full-screen view of the agents' tickets, drawn with plain ANSI
 * escape sequences on the terminal in raw mode; the tickets come live from WatchTickets. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "escape.h"
#include "fd-util.h"
#include "lockctl-approve.h"
#include "lockctl-console.h"
#include "lockctl-pinentry.h"
#include "lockctl-ticket-list.h"
#include "lockctl-tty.h"
#include "lockctl-pages.h"
#include "lockctl-tui.h"
#include "lockctl-watch.h"
#include "lockctl.h"
#include "macro.h"
#include "secmem.h"

/* The alternate screen with the cursor hidden and the window title saved (xterm's title stack),
 * and back to the human's screen, cursor and title. */
#define SCREEN_ENTER "\033[22;2t\033[?1049h\033[?25l"
#define SCREEN_LEAVE "\033[?25h\033[?1049l\033[23;2t"
/* The normal screen cleared with its scrollback, the cursor home: an approval's prompt starts on
 * an empty screen, so no earlier ticket's lines stand above it. */
#define SCREEN_CLEAR "\033[H\033[2J\033[3J"
/* The longest ticket id kept for the outcome awaited. */
#define AWAITED_MAX 64
/* How long the first answer of WatchTickets may take. */
#define WATCH_LIVE_TIMEOUT_MS 10000
#define STATUS_MAX            256

typedef struct Console {
        int tty;
        Tty mode;
        TicketList list;
        Watch watch;
        size_t top;                /* the first ticket on the screen */
        const char *pinentry;      /* a approves with this pinentry program, NULL on the terminal */
        bool help;                 /* the key list is shown until the next key */
        bool loaded;               /* the first list is in: a pending ticket from now on is new */
        char awaited[AWAITED_MAX]; /* approved here: its outcome shows when the ticket ends */
        size_t titled;             /* the pending count the window's title shows, +1; 0: none */
        char status[STATUS_MAX];
} Console;

/* What ? shows. */
static const char *const help_lines[] = {
        "keys:",
        "  j, k, down, up   move the selection",
        "  a                approve the selected ticket: its steps and questions, then the values",
        "                   it needs, each named by the plugin's input (on this terminal, or in",
        "                   pinentry with lockctl console --pinentry)",
        "  d                deny the selected ticket",
        "  r                the selected ticket's results (security level 3)",
        "  ?                this list",
        "  q                quit",
        "",
        "A new pending ticket rings the terminal's bell. The outcome of a ticket approved here",
        "shows on the last line when the ticket ends.",
        "",
        "(any key returns to the tickets)",
};

/* A resize or a continue after ^Z: the screen is drawn anew (poll() returns EINTR). */
static void on_redraw(int sig) {
}

static void set_status(Console *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_status(Console *c, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(c->status, sizeof(c->status), fmt, ap);
        va_end(ap);
}

/* The terminal's size, 80×24 when it cannot be asked. */
static void screen_size(int tty, size_t *rows, size_t *cols) {
        struct winsize ws = {};

        if (ioctl(tty, TIOCGWINSZ, &ws) < 0 || ws.ws_row == 0 || ws.ws_col == 0)
                ws = (struct winsize){.ws_row = 24, .ws_col = 80};
        *rows = ws.ws_row;
        *cols = ws.ws_col;
}

/* How many tickets of the list are pending. */
static size_t pending_count(const Console *c) {
        size_t n = 0;

        for (size_t i = 0; i < c->list.n; i++)
                if (strcmp(json_string_value(json_object_get(c->list.items[i], "state")) ?: "",
                           "pending") == 0)
                        n++;
        return n;
}

/*
 * Draws the whole screen into one buffer and writes it at once: a header, the tickets that fit
 * (the selected one in reverse video, scrolled into view) and the status line at the bottom.
 */
static void render(Console *c) {
        _cleanup_free_ char *out = NULL;
        char line[512];
        size_t rows, cols, size = 0, avail;
        FILE *f;

        screen_size(c->tty, &rows, &cols);
        if (cols > sizeof(line) - 1)
                cols = sizeof(line) - 1;
        avail = rows > 4 ? rows - 4 : 1;
        if (c->list.selected < c->top)
                c->top = c->list.selected;
        else if (c->list.selected >= c->top + avail)
                c->top = c->list.selected - avail + 1;

        f = open_memstream(&out, &size);
        if (!f)
                return;
        /* The window's title (a taskbar's entry) says how many tickets wait: a number, nothing of
         * a ticket's own. */
        if (c->titled != pending_count(c) + 1) {
                c->titled = pending_count(c) + 1;
                fprintf(f, "\033]2;lockd console: %zu waiting\a", c->titled - 1);
        }
        fputs("\033[H\033[2J", f);
        snprintf(line, sizeof(line),
                 "lockd console: %zu ticket%s   j/k move  a approve  d deny  r results  ? keys  "
                 "q quit",
                 c->list.n, c->list.n == 1 ? "" : "s");
        line[cols] = 0;
        fprintf(f, "\033[1m%s\033[0m\r\n\r\n", line);
        if (c->help) {
                for (size_t i = 0; i < ELEMENTSOF(help_lines); i++)
                        fprintf(f, "%.*s\r\n", (int)cols, help_lines[i]);
        } else if (c->list.n == 0)
                fputs("no tickets yet: they show here as agents submit them\r\n", f);
        for (size_t i = c->top; !c->help && i < c->list.n && i < c->top + avail; i++) {
                ticket_line_format(c->list.items[i], cols, line, sizeof(line));
                if (i == c->list.selected)
                        fprintf(f, "\033[7m%s\033[0m\r\n", line);
                else
                        fprintf(f, "%s\r\n", line);
        }
        snprintf(line, sizeof(line), "%s", c->status);
        line[cols] = 0;
        fprintf(f, "\033[%zu;1H%s", rows, line);
        if (fclose(f) != 0)
                return;
        (void)loop_write(c->tty, out, size);
}

/* Whether the list holds a ticket with t's id. */
static bool list_has(const Console *c, const json_t *t) {
        const char *id = json_string_value(json_object_get(t, "ticket"));

        for (size_t i = 0; id && i < c->list.n; i++)
                if (strcmp(json_string_value(json_object_get(c->list.items[i], "ticket")) ?: "",
                           id) == 0)
                        return true;
        return false;
}

/* Whether state is one a ticket ends in. */
static bool state_final(const char *state) {
        return state && (strcmp(state, "done") == 0 || strcmp(state, "denied") == 0 ||
                         strcmp(state, "cancelled") == 0 || strcmp(state, "expired") == 0);
}

/*
 * The status line for ticket t that ended: its state and each step's outcome as the console may
 * see it (the bit only at security level 3; "final" below it). Every string is escaped.
 */
static void set_outcome(Console *c, const json_t *t) {
        _cleanup_free_ char *state = NULL;
        const char *st = json_string_value(json_object_get(t, "state"));
        char steps[STATUS_MAX] = "";
        size_t used = 0, i;
        json_t *o;

        state = st ? escape_bytes(st, strnlen(st, 32)) : NULL;
        json_array_foreach(json_object_get(t, "outcomes"), i, o) {
                long long step = console_json_integer(o, "step", -1),
                          res = console_json_integer(o, "result", -1);
                const char *e = console_json_string(o, "error");
                _cleanup_free_ char *ee = e ? escape_bytes(e, strnlen(e, 32)) : NULL;
                int n;

                if (res == 0 || res == 1)
                        n = snprintf(steps + used, sizeof(steps) - used, "  step %lld: %lld", step,
                                     res);
                else
                        n = snprintf(steps + used, sizeof(steps) - used, "  step %lld: %s", step,
                                     ee ? ee : "final (the bit shows at security level 3)");
                if (n < 0 || (size_t)n >= sizeof(steps) - used)
                        break;
                used += (size_t)n;
        }
        set_status(c, "%.*s ended: %s%s", TICKET_SHORT_ID, c->awaited, state ? state : "?", steps);
}

/*
 * Takes every complete answer the watch holds into the list. A ticket that arrives pending and
 * new rings the terminal's bell (which also sets the window's urgent hint where the terminal
 * does that, as xterm's bellIsUrgent); the awaited ticket's end shows its outcome.
 */
static void take_watch(Console *c) {
        for (;;) {
                _cleanup_(json_decrefp) json_t *t = NULL;
                _cleanup_free_ char *error = NULL;
                int r = watch_next(&c->watch, &t, &error);

                if (r == 0)
                        return;
                if (r < 0) {
                        _cleanup_free_ char *e = error ? escape_bytes(error, strlen(error)) : NULL;

                        set_status(c, "the live feed ended (%s): press q and start again",
                                   e               ? e
                                   : r == -EBADMSG ? "malformed answer"
                                                   : "lockd ended it");
                        watch_done(&c->watch);
                        return;
                }
                if (!t)
                        continue;
                if (c->loaded && !list_has(c, t) &&
                    strcmp(json_string_value(json_object_get(t, "state")) ?: "", "pending") == 0)
                        (void)loop_write(c->tty, "\a", 1);
                if (c->awaited[0] &&
                    strcmp(json_string_value(json_object_get(t, "ticket")) ?: "", c->awaited) ==
                            0 &&
                    state_final(json_string_value(json_object_get(t, "state")))) {
                        set_outcome(c, t);
                        c->awaited[0] = 0;
                }
                if (ticket_list_upsert(&c->list, t) < 0)
                        set_status(c, "out of memory");
        }
}

/*
 * Starts the watch and waits for its first answer, so no ticket submitted after the list below
 * was read can be missed; then reads ListTickets. Returns an exit code after printing why not.
 */
static int console_load(Console *c) {
        _cleanup_(varlink_client_freep) VarlinkClient *wc = NULL, *lc = NULL;
        _cleanup_(json_decrefp) json_t *reply = NULL, *first = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_(json_decrefp) json_t *list = NULL;
        json_t *t;
        size_t i;
        int r;

        r = console_connect(&wc);
        if (r != 0)
                return r;
        r = watch_start(&c->watch, TAKE_PTR(wc));
        for (;;) {
                struct pollfd p = {.fd = watch_fd(&c->watch), .events = POLLIN};

                if (r < 0)
                        break;
                r = watch_next(&c->watch, &first, &error);
                if (r != 0)
                        break;
                r = poll(&p, 1, WATCH_LIVE_TIMEOUT_MS);
                if (r == 0)
                        r = -ETIMEDOUT;
                else if (r > 0)
                        r = watch_read(&c->watch);
                else if (errno == EINTR)
                        r = 0;
                else
                        r = negative_errno();
        }
        if (r < 0) {
                if (error)
                        return approve_print_error("console", error, NULL);
                fprintf(stderr, "lockctl: console failed: WatchTickets: %s\n", strerror(-r));
                return LOCKCTL_EXIT_FAIL;
        }
        if (first)
                (void)ticket_list_upsert(&c->list, first);

        r = console_connect(&lc);
        if (r != 0)
                return r;
        /* Pending tickets come first and are all loaded; then the newest others (the rest of a
         * full set is a lockctl tickets --all away). */
        r = console_tickets_load(lc, CONSOLE_TICKETS_LOAD, &list, &error, &reply);
        if (r < 0) {
                fprintf(stderr, "lockctl: console failed: lost the connection to lockd: %s\n",
                        console_transport_error(r));
                return LOCKCTL_EXIT_FAIL;
        }
        if (error)
                return console_print_error("console", error, reply);
        json_array_foreach(list, i, t) {
                if (ticket_list_upsert(&c->list, t) < 0)
                        break;
        }
        take_watch(c);
        /* The newest pending ticket is the likeliest to be acted on. */
        for (i = c->list.n; i > 0; i--)
                if (strcmp(json_string_value(json_object_get(c->list.items[i - 1], "state")) ?: "",
                           "pending") == 0) {
                        c->list.selected = i - 1;
                        break;
                }
        return 0;
}

/* Denies the selected ticket without leaving the screen; the watch shows the new state. */
static void action_deny(Console *c, const char *id) {
        _cleanup_(varlink_client_freep) VarlinkClient *vc = NULL;
        _cleanup_(json_decrefp) json_t *params = json_pack("{s:s}", "ticket", id), *reply = NULL;
        _cleanup_free_ char *error = NULL, *e = NULL;
        const char *state;
        int r;

        r = varlink_client_connect(console_socket_path(), &vc);
        if (r >= 0) {
                varlink_client_set_timeout(vc, 30ULL * 1000 * 1000);
                r = varlink_client_call(vc, "io.lockd.Console.Deny", params, NULL, 0, &reply,
                                        &error);
        }
        if (r < 0) {
                set_status(c, "deny failed: %s", strerror(-r));
                return;
        }
        if (!error) {
                set_status(c, "denied %.*s", TICKET_SHORT_ID, id);
                return;
        }
        state = console_json_string(reply, "state");
        e = state ? escape_bytes(state, strlen(state)) : escape_bytes(error, strlen(error));
        if (strcmp(error, CONSOLE_INTERFACE ".TicketNotPending") == 0)
                set_status(c, "deny refused: %.*s is not pending (%s)", TICKET_SHORT_ID, id,
                           e ? e : "?");
        else
                set_status(c, "deny refused: %s", e ? e : "?");
}

/*
 * Leaves the screen for a verb's own output (approve, results) on a cleared screen, and comes
 * back: at once after an approval that went through (its outcome shows on the status line when
 * the ticket ends), after Enter otherwise, so what the verb printed can be read.
 */
static int run_outside(Console *c, const char *id, bool approve) {
        _cleanup_free_ char *line = NULL;
        char state[32] = "";
        int r, exit_code;

        tty_leave(&c->mode);
        (void)loop_write(c->tty, SCREEN_CLEAR, strlen(SCREEN_CLEAR));
        if (approve)
                exit_code = approve_ticket(id, &(ApproveOptions){.pinentry = c->pinentry}, state,
                                           sizeof(state));
        else
                exit_code = verb_results(1, (char *[]){(char *)id, NULL});
        fflush(stdout);
        if (approve && exit_code == 0) {
                snprintf(c->awaited, sizeof(c->awaited), "%s", id);
                set_status(c, "approved %.*s: %s; its outcome shows here when it ends",
                           TICKET_SHORT_ID, id, state_final(state) ? "ended" : "running");
        } else {
                (void)console_tty_read_line(NULL, "\n(press Enter to return to the console) ",
                                            false, 256, &line);
                set_status(c, "%s %.*s: %s", approve ? "approve" : "results", TICKET_SHORT_ID, id,
                           exit_code == 0 ? "done" : "failed (see above)");
        }
        r = tty_enter(&c->mode, c->tty, TTY_RAW, SCREEN_ENTER, SCREEN_LEAVE);
        c->titled = 0; /* the title was put back on the way out: set it again */
        if (r < 0)
                fprintf(stderr, "lockctl: console: cannot take the terminal back: %s\n",
                        strerror(-r));
        return r;
}

/*
 * Acts on the keys in buf: j/k and the arrow keys move, a/d/r act on the selected ticket, ?
 * shows the keys, q quits. Returns 1 to quit, 0 to go on, a negative errno when the terminal is
 * lost.
 */
static int handle_keys(Console *c, const char *buf, size_t n) {
        for (size_t i = 0; i < n; i++) {
                const char *id = ticket_list_selected_id(&c->list);
                int r = 0;

                /* The key list goes on any key, which does nothing else. */
                if (c->help) {
                        c->help = false;
                        continue;
                }
                /* ESC [ A / ESC O A (up), B (down); other sequences are skipped. */
                if (buf[i] == '\033' && i + 2 < n && (buf[i + 1] == '[' || buf[i + 1] == 'O')) {
                        if (buf[i + 2] == 'A')
                                ticket_list_move(&c->list, -1);
                        else if (buf[i + 2] == 'B')
                                ticket_list_move(&c->list, 1);
                        i += 2;
                        continue;
                }
                switch (buf[i]) {
                case 'q':
                case 'Q':
                        return 1;
                case '?':
                        c->help = true;
                        break;
                case 'k':
                        ticket_list_move(&c->list, -1);
                        break;
                case 'j':
                        ticket_list_move(&c->list, 1);
                        break;
                case 'a':
                case 'r':
                        if (!id) {
                                set_status(c, "no ticket selected");
                                break;
                        }
                        r = run_outside(c, id, buf[i] == 'a');
                        /* Whatever was typed after the key belongs to the verb's prompts. */
                        return r < 0 ? r : 0;
                case 'd':
                        if (id)
                                action_deny(c, id);
                        else
                                set_status(c, "no ticket selected");
                        break;
                default:
                        break;
                }
        }
        return 0;
}

/* The main loop: the terminal's keys and the watch's answers, polled together. */
static int console_loop(Console *c) {
        for (;;) {
                struct pollfd p[2] = {
                        {.fd = c->tty, .events = POLLIN},
                        {.fd = watch_fd(&c->watch), .events = POLLIN},
                };
                char keys[64];
                ssize_t k;
                int r;

                render(c);
                r = poll(p, 2, -1);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return negative_errno();
                if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
                        r = watch_read(&c->watch);
                        take_watch(c);
                        if (r < 0 && c->watch.client) {
                                set_status(c, "lost the connection to lockd: press q");
                                watch_done(&c->watch);
                        }
                }
                if (p[0].revents & (POLLHUP | POLLERR))
                        return -EIO;
                if (!(p[0].revents & POLLIN))
                        continue;
                k = read(c->tty, keys, sizeof(keys));
                if (k < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (k <= 0)
                        return -EIO;
                r = handle_keys(c, keys, (size_t)k);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
}

int verb_console(int argc, char **argv) {
        struct sigaction sa = {.sa_handler = on_redraw}, old_winch, old_cont;
        Console c = {.tty = -1};
        int r;

        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--pinentry") == 0)
                        c.pinentry = PINENTRY_DEFAULT;
                else if (strncmp(argv[i], "--pinentry=", 11) == 0 && argv[i][11])
                        c.pinentry = argv[i] + 11;
                else {
                        fprintf(stderr,
                                "lockctl: unknown argument '%s'\nusage: lockctl console "
                                "[--pinentry[=PROGRAM]]\n",
                                argv[i]);
                        return LOCKCTL_EXIT_USAGE;
                }
        }
        /* Approving from here reads typed values: no core file, no ptrace by this uid. */
        r = secmem_harden_process();
        if (r < 0) {
                fprintf(stderr, "lockctl: cannot protect this process's memory: %s\n",
                        strerror(-r));
                return LOCKCTL_EXIT_FAIL;
        }
        c.tty = tty_open();
        if (c.tty < 0) {
                fprintf(stderr, "lockctl: console needs a terminal\n");
                return LOCKCTL_EXIT_FAIL;
        }
        r = console_load(&c);
        if (r == 0) {
                /* What was pending before the console started rang no bell; what comes now does. */
                c.loaded = true;
                /* No SA_RESTART: a resize or a continue interrupts poll() and the screen is
                 * drawn anew. */
                sigemptyset(&sa.sa_mask);
                sigaction(SIGWINCH, &sa, &old_winch);
                sigaction(SIGCONT, &sa, &old_cont);
                r = tty_enter(&c.mode, c.tty, TTY_RAW, SCREEN_ENTER, SCREEN_LEAVE);
                if (r == 0)
                        r = console_loop(&c);
                tty_leave(&c.mode);
                sigaction(SIGWINCH, &old_winch, NULL);
                sigaction(SIGCONT, &old_cont, NULL);
                if (r < 0)
                        fprintf(stderr, "lockctl: console: the terminal failed: %s\n",
                                strerror(-r));
                r = r < 0 ? LOCKCTL_EXIT_FAIL : LOCKCTL_EXIT_OK;
        }
        watch_done(&c.watch);
        ticket_list_clear(&c.list);
        safe_close(c.tty);
        return r;
}
