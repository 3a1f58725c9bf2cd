/* lockctl's side of lockd's console socket: where it is, one call helper, and the verbs that use
 * it. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "varlink.h"

#define CONSOLE_SOCKET_DEFAULT "/run/lockd/console.sock"
#define CONSOLE_SOCKET_ENV     "LOCKD_CONSOLE_SOCKET"
#define CONSOLE_INTERFACE      "io.lockd.Console"

/*
 * Consumes the global options that come before the verb (--socket PATH, --socket=PATH, --json) from
 * *argc and *argv, leaving argv[0] in place and the verb in (*argv)[1]. 0, or LOCKCTL_EXIT_USAGE
 * after printing why.
 */
int console_parse_global_options(int *argc, char ***argv);
/* Points stdout at fd (flushing it first) until console_stdout_restore(saved): returns the saved
 * stdout, or a negative errno with stdout unchanged. */
int console_stdout_redirect(int fd);
/* Flushes and puts the saved stdout back (closing saved): 0 or a negative errno. */
int console_stdout_restore(int saved);
/* A verb's function, for console_report_json(). */
typedef int (*ConsoleVerbFn)(int argc, char **argv);
/*
 * --json for a verb that prints a report (audit verify, release verify): runs fn with its
 * stdout captured and prints {"ok": exit status 0, "report": [its lines]} instead. A usage error
 * stays as it is. Returns fn's exit code.
 */
int console_report_json(ConsoleVerbFn fn, int argc, char **argv);
/* console_print_json() of v, which it takes (NULL: out of memory, exit 1). */
int console_print_json_steal(json_t *v);
/* Removes every --json from a verb's arguments (those before a "--"); whether there was one. For
 * the verbs whose own parsing knows no --json. */
bool console_take_json(int *argc, char **argv);
/* Whether --json came before the verb. */
bool console_json_global(void);

/* The console socket: --socket, else $LOCKD_CONSOLE_SOCKET if set and non-empty, else the default.
 */
const char *console_socket_path(void);

/*
 * Connects to the console socket. 0 with *ret, or LOCKCTL_EXIT_FAIL after printing
 * "lockctl: cannot connect to lockd at PATH: reason" on stderr.
 */
int console_connect(VarlinkClient **ret);
/* Why a connection could not be made or was lost (r a negative errno), for the human. */
const char *console_transport_error(int r);

/*
 * Calls io.lockd.Console.<method> (params borrowed, may be NULL; fds sent with the call, not
 * closed). what names the action for messages ("install", "status"). Returns 0 when an answer
 * arrived: *ret_error NULL and *ret_params the reply's parameters, or *ret_error the error's name
 * and *ret_params its parameters (the caller decides what to say). When the transport fails,
 * prints "lockctl: WHAT failed: lost the connection to lockd: reason" and returns
 * LOCKCTL_EXIT_FAIL, outputs untouched.
 */
int console_call_raw(VarlinkClient *c, const char *what, const char *method, json_t *params,
                     const int *fds, size_t n_fds, json_t **ret_params, char **ret_error);

/*
 * Prints the one-line human message for a Varlink error on stderr,
 * "lockctl: WHAT refused: <why>", every string from lockd escaped. Returns the exit code
 * (LOCKCTL_EXIT_FAIL).
 */
int console_print_error(const char *what, const char *error, json_t *params);

/*
 * Prints the message for an error of the ticket methods (UnknownTicket, TicketNotPending), or
 * leaves it to console_print_error() for the others. Every string from lockd is escaped. Returns
 * the exit code.
 */
int console_print_ticket_error(const char *what, const char *error, json_t *params);

/*
 * console_call_raw() that turns an error answer into console_print_error()'s message and exit
 * code. 0 with *ret_params on success; an exit code otherwise, *ret_params untouched.
 */
int console_call(VarlinkClient *c, const char *what, const char *method, json_t *params,
                 const int *fds, size_t n_fds, json_t **ret_params);

/* Prints an error answer's message and returns the exit code (console_print_error() and the
 * verbs' own, which know their methods' errors). */
typedef int (*ConsoleErrorPrinter)(const char *what, const char *error, json_t *params);

/* Connects, calls without fds, prints an error answer with print, frees the connection. 0 with
 * *ret_params; an exit code otherwise, *ret_params untouched. */
int console_call_once_printing(const char *what, const char *method, json_t *params,
                               ConsoleErrorPrinter print, json_t **ret_params);

/* Connects, calls, and frees the connection: for the verbs that make a single call. */
int console_call_once(const char *what, const char *method, json_t *params, const int *fds,
                      size_t n_fds, json_t **ret_params);

/*
 * For the verbs whose only option is --json: sets *ret_json and returns LOCKCTL_EXIT_OK, or
 * prints "unknown argument" and usage (a full "usage: ..." line) and returns
 * LOCKCTL_EXIT_USAGE.
 */
int console_parse_json_only(int argc, char **argv, const char *usage, bool *ret_json);

/* Prints a CLOCK_REALTIME time in microseconds (from lockd) as local "YYYY-MM-DD HH:MM:SS ZONE",
 * "never" for a missing or non-positive one, "@SECONDS" when it cannot be formatted. */
void console_print_time(FILE *f, long long usec);

/* Prints params as indented JSON on stdout, non-ASCII escaped (--json). Returns an exit code. */
int console_print_json(const json_t *params);

/* Prints the untrusted text s (may be NULL: printed as "-") escaped with escape_bytes(). */
void console_fputs_escaped(const char *s, FILE *f);

/* The string value of key in obj, or NULL when absent or not a string. */
const char *console_json_string(const json_t *obj, const char *key);
/* The integer value of key in obj, or def when absent or not an integer. */
long long console_json_integer(const json_t *obj, const char *key, long long def);

/*
 * Opens name below dirfd for reading with the caller's own rights, refusing symlinks and
 * anything but a regular file (a FIFO cannot block it). Returns the fd, or a negative errno:
 * -ELOOP a symlink, -EBADFD not a regular file.
 */
int lockctl_open_file_at(int dirfd, const char *name, bool nofollow);
/* lockctl_open_file_at()'s errors in words. */
const char *lockctl_open_strerror(int r);

/*
 * Matches argv[*i] against the option name ("--issuer") in both its forms, "--issuer VALUE" and
 * "--issuer=VALUE". 1 with *ret set (and *i moved to a separate value), 0 when argv[*i] is
 * something else, -1 when the value is missing.
 */
int lockctl_option(int argc, char **argv, int *i, const char *name, const char **ret);

/*
 * Writes text (may be NULL) and prompt on the controlling terminal (/dev/tty, never stdin) and
 * reads one line there, without echo when secret (echo comes back on a signal too). The newline
 * is dropped, nothing else is trimmed. 0 with *ret (max bytes at most; the caller wipes a
 * secret), or a negative errno: -ENXIO no terminal, -ENODATA nothing before the end of input,
 * -EOVERFLOW a line longer than max.
 */
int console_tty_read_line(const char *text, const char *prompt, bool secret, size_t max,
                          char **ret);

/* The verbs. */
int verb_status(int argc, char **argv);
int verb_plugin_install(int argc, char **argv);
int verb_plugin_search(int argc, char **argv);
int verb_plugin_update(int argc, char **argv);
int verb_plugin_list(int argc, char **argv);
int verb_plugin_remove(int argc, char **argv);
int verb_plugin_run(int argc, char **argv);
