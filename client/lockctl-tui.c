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
#include "lockctl-ticket-list.h"
#include "lockctl-tty.h"
#include "lockctl-tui.h"
#include "lockctl-watch.h"
#include "lockctl.h"
#include "macro.h"
#include "secmem.h"

/* The alternate screen with the cursor hidden, and back to the human's screen and cursor. */
#define SCREEN_ENTER "\033[?1049h\033[?25l"
#define SCREEN_LEAVE "\033[?25h\033[?1049l"
/* How long the first answer of WatchTickets may take. */
#define WATCH_LIVE_TIMEOUT_MS 10000
#define STATUS_MAX            256

typedef struct Console {
        int tty;
        Tty mode;
        TicketList list;
        Watch watch;
        size_t top; /* the first ticket on the screen */
        char status[STATUS_MAX];
} Console;

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
        fputs("\033[H\033[2J", f);
        snprintf(line, sizeof(line),
                 "lockd console: %zu ticket%s   j/k move  a approve  d deny  r results  q quit",
                 c->list.n, c->list.n == 1 ? "" : "s");
        line[cols] = 0;
        fprintf(f, "\033[1m%s\033[0m\r\n\r\n", line);
        if (c->list.n == 0)
                fputs("no tickets yet: they show here as agents submit them\r\n", f);
        for (size_t i = c->top; i < c->list.n && i < c->top + avail; i++) {
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

/* Takes every complete answer the watch holds into the list. */
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
                if (t && ticket_list_upsert(&c->list, t) < 0)
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
        json_t *list, *t;
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
        r = console_call(lc, "console", "ListTickets", NULL, NULL, 0, &reply);
        if (r != 0)
                return r;
        list = json_object_get(reply, "tickets");
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

/* Leaves the screen for a verb's own output (approve, results), waits for Enter, comes back. */
static int run_outside(Console *c, const char *id, bool approve) {
        _cleanup_free_ char *line = NULL;
        int r, exit_code;

        tty_leave(&c->mode);
        if (approve)
                exit_code = approve_ticket(id, false, NULL, 0);
        else
                exit_code = verb_results(1, (char *[]){(char *)id, NULL});
        fflush(stdout);
        (void)console_tty_read_line(NULL, "\n(press Enter to return to the console) ", false, 256,
                                    &line);
        set_status(c, "%s %.*s: %s", approve ? "approve" : "results", TICKET_SHORT_ID, id,
                   exit_code == 0 ? "done" : "failed (see above)");
        r = tty_enter(&c->mode, c->tty, TTY_RAW, SCREEN_ENTER, SCREEN_LEAVE);
        if (r < 0)
                fprintf(stderr, "lockctl: console: cannot take the terminal back: %s\n",
                        strerror(-r));
        return r;
}

/*
 * Acts on the keys in buf: j/k and the arrow keys move, a/d/r act on the selected ticket, q
 * quits. Returns 1 to quit, 0 to go on, a negative errno when the terminal is lost.
 */
static int handle_keys(Console *c, const char *buf, size_t n) {
        for (size_t i = 0; i < n; i++) {
                const char *id = ticket_list_selected_id(&c->list);
                int r = 0;

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

        if (argc > 0) {
                fprintf(stderr, "lockctl: unknown argument '%s'\nusage: lockctl console\n",
                        argv[0]);
                return LOCKCTL_EXIT_USAGE;
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
