/* lockctl's side of lockd's console socket: the socket's path, connecting, one call helper that
 * turns every Varlink error into a one-line human message, and small output helpers. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "escape.h"
#include "fd-util.h"
#include "lockctl-console.h"
#include "lockctl-tty.h"
#include "lockctl.h"
#include "macro.h"

/* Calls that get no answer within this long fail; TestPlugin and InstallPlugin set their own. */
#define CONSOLE_TIMEOUT_USEC (60ULL * 1000 * 1000)

static const char *arg_socket = NULL;
static bool arg_json = false;

int console_parse_global_options(int *argc, char ***argv) {
        while (*argc >= 2) {
                char **v = *argv;

                if (strcmp(v[1], "--socket") == 0) {
                        if (*argc < 3 || v[2][0] == 0) {
                                fprintf(stderr, "lockctl: --socket takes a path\n");
                                return LOCKCTL_EXIT_USAGE;
                        }
                        arg_socket = v[2];
                        /* Keep argv[0]: the verb moves to argv[1]. */
                        v[2] = v[0];
                        *argv = v + 2;
                        *argc -= 2;
                } else if (strncmp(v[1], "--socket=", 9) == 0) {
                        if (v[1][9] == 0) {
                                fprintf(stderr, "lockctl: --socket takes a path\n");
                                return LOCKCTL_EXIT_USAGE;
                        }
                        arg_socket = v[1] + 9;
                        v[1] = v[0];
                        *argv = v + 1;
                        *argc -= 1;
                } else if (strcmp(v[1], "--json") == 0) {
                        /* Before the verb, as after it: the verb finds it in its arguments
                         * (lockctl.c appends it). */
                        arg_json = true;
                        v[1] = v[0];
                        *argv = v + 1;
                        *argc -= 1;
                } else
                        break;
        }
        return 0;
}

int console_print_json_steal(json_t *v) {
        int r;

        if (!v) {
                fprintf(stderr, "lockctl: out of memory\n");
                return LOCKCTL_EXIT_FAIL;
        }
        r = console_print_json(v);
        json_decref(v);
        return r;
}

int console_stdout_redirect(int fd) {
        int saved;

        fflush(stdout);
        saved = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        if (saved < 0)
                return negative_errno();
        if (dup2(fd, STDOUT_FILENO) < 0) {
                int r = negative_errno();

                safe_close(saved);
                return r;
        }
        return saved;
}

int console_stdout_restore(int saved) {
        int r = 0;

        fflush(stdout);
        if (dup2(saved, STDOUT_FILENO) < 0)
                r = negative_errno();
        safe_close(saved);
        return r;
}

int console_report_json(ConsoleVerbFn fn, int argc, char **argv) {
        _cleanup_close_ int mem = -1;
        _cleanup_free_ char *text = NULL;
        _cleanup_(json_decrefp) json_t *lines = NULL;
        size_t len = 0;
        int rc, r, saved;

        /* What the verb prints on stdout goes into a memfd (a pipe could fill up and block it). */
        mem = memfd_create("lockctl-report", MFD_CLOEXEC);
        saved = mem < 0 ? negative_errno() : console_stdout_redirect(mem);
        if (saved < 0) {
                fprintf(stderr, "lockctl: %s\n", strerror(-saved));
                return LOCKCTL_EXIT_FAIL;
        }
        rc = fn(argc, argv);
        if (console_stdout_restore(saved) < 0)
                return LOCKCTL_EXIT_FAIL;
        if (rc == LOCKCTL_EXIT_USAGE)
                return rc;
        r = read_full_fd(mem, 16 * MiB, &text, &len);
        lines = json_array();
        if (r < 0 || !lines) {
                fprintf(stderr, "lockctl: the report: %s\n", strerror(r < 0 ? -r : ENOMEM));
                return LOCKCTL_EXIT_FAIL;
        }
        for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                nl = strchr(line, '\n');
                if (nl)
                        *nl = 0;
                if (json_array_append_new(lines, json_string(line)) < 0)
                        return LOCKCTL_EXIT_FAIL;
        }
        r = console_print_json_steal(
                json_pack("{s:b, s:O}", "ok", rc == LOCKCTL_EXIT_OK, "report", lines));
        return r != 0 ? r : rc;
}

bool console_take_json(int *argc, char **argv) {
        bool json = false;
        int n = 0;

        for (int i = 0; i < *argc; i++) {
                if (strcmp(argv[i], "--") == 0) {
                        while (i < *argc)
                                argv[n++] = argv[i++];
                        break;
                }
                if (strcmp(argv[i], "--json") == 0)
                        json = true;
                else
                        argv[n++] = argv[i];
        }
        *argc = n;
        return json;
}

bool console_json_global(void) {
        return arg_json;
}

const char *console_socket_path(void) {
        const char *e;

        if (arg_socket)
                return arg_socket;
        e = getenv(CONSOLE_SOCKET_ENV);
        if (e && e[0] != 0)
                return e;
        return CONSOLE_SOCKET_DEFAULT;
}

/* Why a connection could not be made or was lost, with the likely cause for the human. */
static const char *transport_reason(int r) {
        switch (r) {
        case -ENOENT:
                return "no such socket (is lockd running?)";
        case -ECONNREFUSED:
                return "nobody is listening (is lockd running?)";
        case -EACCES:
        case -EPERM:
                return "permission denied on the socket";
        case -ENOTSOCK:
                return "not a socket";
        case -ENAMETOOLONG:
                return "the path is too long for a Unix socket";
        case -ECONNRESET:
        case -EPIPE:
                /* lockd tells a peer over a connection cap so (TooManyConnections), and one
                 * whose answer is too large (ReplyTooLarge); a close without a word is its
                 * answer to a peer in no role of this socket, or a drop it logs with its cause. */
                return "lockd closed the connection without an answer: this user is not a "
                       "console of lockd's policy (consoles:), or lockd dropped the connection "
                       "(its log says why: journalctl -u lockd)";
        case -ETIMEDOUT:
                return "no answer in time";
        case -EBADMSG:
                return "lockd sent a malformed answer";
        default:
                return strerror(-r);
        }
}

int console_connect(VarlinkClient **ret) {
        _cleanup_free_ char *path = NULL;
        struct stat st;
        int r;

        r = varlink_client_connect(console_socket_path(), ret);
        if (r == -ECONNREFUSED && stat(console_socket_path(), &st) == 0 && !S_ISSOCK(st.st_mode))
                r = -ENOTSOCK; /* connect() says "refused" for a path that is no socket at all */
        if (r < 0) {
                /* The path is the human's own choice, but may hold anything: escape it too. */
                path = escape_bytes(console_socket_path(), strlen(console_socket_path()));
                fprintf(stderr, "lockctl: cannot connect to lockd at %s: %s\n",
                        path ? path : "(out of memory)", transport_reason(r));
                return LOCKCTL_EXIT_FAIL;
        }
        varlink_client_set_timeout(*ret, CONSOLE_TIMEOUT_USEC);
        return 0;
}

int console_call_raw(VarlinkClient *c, const char *what, const char *method, json_t *params,
                     const int *fds, size_t n_fds, json_t **ret_params, char **ret_error) {
        _cleanup_free_ char *full = NULL;
        json_t *reply = NULL;
        char *error = NULL;
        int r;

        if (asprintf(&full, "%s.%s", CONSOLE_INTERFACE, method) < 0) {
                fprintf(stderr, "lockctl: %s failed: out of memory\n", what);
                return LOCKCTL_EXIT_FAIL;
        }
        r = varlink_client_call(c, full, params, fds, n_fds, &reply, &error);
        if (r < 0) {
                fprintf(stderr, "lockctl: %s failed: lost the connection to lockd: %s\n", what,
                        transport_reason(r));
                return LOCKCTL_EXIT_FAIL;
        }
        *ret_params = reply ? reply : json_object();
        *ret_error = error;
        return 0;
}

void console_fputs_escaped(const char *s, FILE *f) {
        _cleanup_free_ char *e = NULL;

        if (!s) {
                fputs("-", f);
                return;
        }
        e = escape_bytes(s, strlen(s));
        fputs(e ? e : "(out of memory)", f);
}

const char *console_json_string(const json_t *obj, const char *key) {
        json_t *v = json_object_get(obj, key);

        return json_is_string(v) ? json_string_value(v) : NULL;
}

long long console_json_integer(const json_t *obj, const char *key, long long def) {
        json_t *v = json_object_get(obj, key);

        return json_is_integer(v) ? (long long)json_integer_value(v) : def;
}

/* The parameter key of params escaped for the terminal, "?" when it is missing. */
static char *param_escaped(const json_t *params, const char *key) {
        const char *s = console_json_string(params, key);

        if (!s)
                return strdup("?");
        return escape_bytes(s, strlen(s));
}

/* An error answer whose message is fixed text, or text around one parameter of it, escaped. */
typedef struct ErrorText {
        const char *name;   /* the error, past "io.lockd.Console." */
        const char *before; /* the message, or its part before the parameter */
        const char *key;    /* the parameter shown; NULL: none */
        const char *after;  /* the message after the parameter */
} ErrorText;

static const ErrorText error_texts[] = {
        {.name = "PermissionDenied",
         .before = "permission denied (this user may not do this on lockd's console)"},
        /* lockd serves io.lockd.Console only to console peers on the console socket. */
        {.name = VARLINK_ERROR_INTERFACE_NOT_FOUND,
         .before = "this socket does not serve lockd's console to this user (is it the console "
                   "socket, and is this user listed under consoles in lockd.yaml?)"},
        {"InvalidRequest", "invalid request: ", "reason", ""},
        {"UnknownPlugin", "no plugin '", "name", "' is installed"},
        {"UnknownMarketplace", "no marketplace '", "name", "' is configured"},
        {"MarketplaceExists", "a marketplace '", "name", "' exists already"},
        {"MarketplaceFromPolicy", "marketplace '", "name",
         "' comes from lockd's policy file: change it there"},
        {.name = "UnsignedRefused",
         .before = "the release is unsigned and lockd's policy does not allow unsigned "
                   "plugins (install with --marketplace NAME from a signed release)"},
        /* Names the input only: its value is the human's and never shown. */
        {"InputInvalid", "input_invalid: the value of '", "name",
         "' does not fit its kind or max_bytes"},
        {.name = "TooManyRuns", .before = "too many runs at once on lockd; try again later"},
        {"Unavailable", "lockd cannot do this now: ", "reason", ""},
};

/* Prints the message of error name from error_texts, with its parameter from params: false when
 * the table has no such error. */
static bool print_error_text(const char *name, const json_t *params) {
        for (size_t i = 0; i < ELEMENTSOF(error_texts); i++) {
                const ErrorText *t = &error_texts[i];
                _cleanup_free_ char *a = NULL;

                if (strcmp(name, t->name) != 0)
                        continue;
                fputs(t->before, stderr);
                if (t->key) {
                        a = param_escaped(params, t->key);
                        fputs(a ? a : "?", stderr);
                        fputs(t->after, stderr);
                }
                return true;
        }
        return false;
}

/* Prints the message of an error error_texts does not hold (name: error past the interface's
 * prefix), an unknown one as its name and parameters, escaped. */
static void print_error_other(const char *error, const char *name, json_t *params) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *raw = NULL, *name_esc = NULL;

        if (strcmp(name, "TooManyConnections") == 0) {
                const char *limit = json_string_value(json_object_get(params, "limit"));

                fprintf(stderr, "lockd is at its connection limit (%s): %s", limit ? limit : "?",
                        limit && strcmp(limit, "uid") == 0
                                ? "this user has limits.connections_per_uid connections open "
                                  "already"
                        : limit && strcmp(limit, "socket") == 0
                                ? "the console socket has limits.console_connections open "
                                  "already"
                                : "lockd has all the connections it takes open");
        } else if (strcmp(name, "ReplyTooLarge") == 0) {
                fprintf(stderr,
                        "lockd's answer would be %lld bytes, past its output cap of %lld bytes "
                        "(a defect of lockd: its listings page; please report it)",
                        console_json_integer(params, "bytes", -1),
                        console_json_integer(params, "limit", -1));
        } else if (strcmp(name, "LintWarnings") == 0) {
                json_t *w = json_object_get(params, "warnings");
                fprintf(stderr, "the identity pattern has %zu warning(s); --force accepts them",
                        json_is_array(w) ? json_array_size(w) : (size_t)0);
        } else if (strcmp(name, "VerificationFailed") == 0) {
                a = param_escaped(params, "code");
                b = param_escaped(params, "message");
                fprintf(stderr, "%s: %s", a ? a : "?", b ? b : "?");
        } else if (strcmp(name, "UpdateNeedsTypedName") == 0) {
                a = param_escaped(params, "name");
                b = param_escaped(params, "installed");
                c = param_escaped(params, "version");
                fprintf(stderr,
                        "%s %s changes what %s asks or what its answers mean: it is accepted "
                        "only with the plugin's name typed (--accept-name NAME)",
                        a ? a : "?", c ? c : "?", b ? b : "?");
        } else if (strcmp(name, "UpdateRefused") == 0) {
                a = param_escaped(params, "reason");
                b = param_escaped(params, "installed");
                c = param_escaped(params, "version");
                fprintf(stderr, "update from %s to %s: %s", b ? b : "?", c ? c : "?", a ? a : "?");
        } else if (strcmp(error, VARLINK_ERROR_METHOD_NOT_FOUND) == 0) {
                /* InterfaceNotFound has its own message (error_texts). */
                a = param_escaped(params, "method");
                fprintf(stderr, "lockd does not know %s (a different version of lockd?)",
                        a ? a : "?");
        } else if (strcmp(error, VARLINK_ERROR_INVALID_PARAMETER) == 0) {
                a = param_escaped(params, "parameter");
                fprintf(stderr, "lockd refused the parameter '%s'", a ? a : "?");
        } else {
                /* An error this lockctl does not know: its name and parameters, escaped. */
                name_esc = escape_bytes(error, strlen(error));
                raw = json_dumps(params, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
                a = raw ? escape_bytes(raw, strlen(raw)) : NULL;
                fprintf(stderr, "%s %s", name_esc ? name_esc : "?", a ? a : "{}");
        }
}

int console_print_error(const char *what, const char *error, json_t *params) {
        const char *name = error;
        size_t plen = strlen(CONSOLE_INTERFACE ".");

        if (strncmp(error, CONSOLE_INTERFACE ".", plen) == 0)
                name = error + plen;

        fprintf(stderr, "lockctl: %s refused: ", what);
        if (!print_error_text(name, params))
                print_error_other(error, name, params);
        fputc('\n', stderr);
        return LOCKCTL_EXIT_FAIL;
}

/* console_call() with the printer of error answers given. */
static int call_printing(VarlinkClient *c, const char *what, const char *method, json_t *params,
                         const int *fds, size_t n_fds, ConsoleErrorPrinter print,
                         json_t **ret_params) {
        _cleanup_(json_decrefp) json_t *reply = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        r = console_call_raw(c, what, method, params, fds, n_fds, &reply, &error);
        if (r != 0)
                return r;
        if (error)
                return print(what, error, reply);
        *ret_params = TAKE_PTR(reply);
        return 0;
}

int console_call(VarlinkClient *c, const char *what, const char *method, json_t *params,
                 const int *fds, size_t n_fds, json_t **ret_params) {
        return call_printing(c, what, method, params, fds, n_fds, console_print_error, ret_params);
}

int console_call_once_printing(const char *what, const char *method, json_t *params,
                               ConsoleErrorPrinter print, json_t **ret_params) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        int r;

        r = console_connect(&c);
        if (r != 0)
                return r;
        return call_printing(c, what, method, params, NULL, 0, print, ret_params);
}

int console_call_once(const char *what, const char *method, json_t *params, const int *fds,
                      size_t n_fds, json_t **ret_params) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        int r;

        r = console_connect(&c);
        if (r != 0)
                return r;
        return console_call(c, what, method, params, fds, n_fds, ret_params);
}

int console_parse_json_only(int argc, char **argv, const char *usage, bool *ret_json) {
        bool json = false;

        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--json") != 0) {
                        fprintf(stderr, "lockctl: unknown argument '%s'\n%s\n", argv[i], usage);
                        return LOCKCTL_EXIT_USAGE;
                }
                json = true;
        }
        *ret_json = json;
        return LOCKCTL_EXIT_OK;
}

void console_print_time(FILE *f, long long usec) {
        char buf[64];
        struct tm tm;
        time_t t;

        if (usec <= 0) {
                fputs("never", f);
                return;
        }
        t = (time_t)(usec / 1000000);
        if (!localtime_r(&t, &tm) || strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S %Z", &tm) == 0) {
                fprintf(f, "@%lld", usec / 1000000);
                return;
        }
        fputs(buf, f);
}

int console_print_json(const json_t *params) {
        /* ENSURE_ASCII: JSON escapes control characters, and this escapes C1 and the rest too. */
        _cleanup_free_ char *s =
                json_dumps(params, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENSURE_ASCII);

        if (!s) {
                fprintf(stderr, "lockctl: out of memory\n");
                return LOCKCTL_EXIT_FAIL;
        }
        if (puts(s) < 0 || fflush(stdout) != 0) {
                fprintf(stderr, "lockctl: cannot write the reply: %s\n", strerror(errno));
                return LOCKCTL_EXIT_FAIL;
        }
        return LOCKCTL_EXIT_OK;
}

int lockctl_open_file_at(int dirfd, const char *name, bool nofollow) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        int flags;

        /* O_NONBLOCK so that a FIFO planted in place of a file cannot hang the open. */
        fd = openat(dirfd, name,
                    O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (nofollow ? O_NOFOLLOW : 0));
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
                return negative_errno();
        return TAKE_FD(fd);
}

const char *lockctl_open_strerror(int r) {
        switch (r) {
        case -ELOOP:
                return "is a symbolic link (refused)";
        case -EBADFD:
                return "not a regular file";
        default:
                return strerror(-r);
        }
}

int lockctl_option(int argc, char **argv, int *i, const char *name, const char **ret) {
        size_t n = strlen(name);

        if (strcmp(argv[*i], name) == 0) {
                if (*i + 1 >= argc)
                        return -1;
                *i += 1;
                *ret = argv[*i];
                return 1;
        }
        if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=') {
                *ret = argv[*i] + n + 1;
                return 1;
        }
        return 0;
}

int console_tty_read_line(const char *text, const char *prompt, bool secret, size_t max,
                          char **ret) {
        _cleanup_close_ int tty = -1;
        _cleanup_free_ char *line = NULL;
        Tty mode = {.fd = -1};
        size_t len = 0;
        int r = 0;

        tty = tty_open();
        if (tty < 0)
                return tty;
        line = malloc(max + 1);
        if (!line)
                return -ENOMEM;
        /* Echo goes off before the prompt shows, and what was typed before it is discarded:
         * only a line typed in answer to the prompt counts, and none of it is ever echoed. Echo
         * comes back on a signal too (tty_enter()), and leaving ends the line the human did not
         * see echoed. */
        if (secret) {
                r = tty_enter(&mode, tty, TTY_NOECHO, NULL, "\n");
                if (r < 0)
                        return r;
        }
        if ((text && loop_write(tty, text, strlen(text)) < 0) ||
            loop_write(tty, prompt, strlen(prompt)) < 0)
                r = -EIO;
        /* One line, byte by byte, so nothing after the newline is consumed. */
        while (r == 0) {
                ssize_t n = read(tty, line + len, 1);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        r = negative_errno();
                else if (n == 0)
                        r = len == 0 ? -ENODATA : 1;
                else if (line[len] == '\n')
                        r = 1;
                else if (++len > max)
                        r = -EOVERFLOW;
        }
        tty_leave(&mode);
        if (r < 0) {
                explicit_bzero(line, max + 1);
                return r;
        }
        line[len] = 0;
        *ret = TAKE_PTR(line);
        return 0;
}

const char *console_transport_error(int r) {
        return transport_reason(r);
}
