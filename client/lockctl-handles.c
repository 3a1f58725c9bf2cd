/* lockctl grant, revoke and handles: files granted to agents (io.lockd.Console.Grant, Revoke and
 * ListHandles). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockctl-console.h"
#include "lockctl-pages.h"
#include "lockctl.h"
#include "macro.h"

/* The longest --ttl lockd accepts: a year (366 days). */
#define TTL_SEC_MAX (366LL * 24 * 3600)

static int usage_grant(void) {
        fprintf(stderr, "usage: lockctl [--socket PATH] grant FILE --agent USER [--label LABEL]\n"
                        "               [--budget N] [--ttl DURATION] [--auto] [--json]\n"
                        "DURATION is a number of seconds, or a number followed by s, m, h or d "
                        "(90s, 15m, 2h, 1d).\n");
        return LOCKCTL_EXIT_USAGE;
}

static int usage_revoke(void) {
        fprintf(stderr, "usage: lockctl [--socket PATH] revoke HANDLE [--json]\n");
        return LOCKCTL_EXIT_USAGE;
}

/*
 * Parses a duration: decimal digits with an optional unit s, m, h or d (seconds without one).
 * 0 with *ret in seconds, 1..TTL_SEC_MAX; -EINVAL for anything else (no sign, no space, no
 * fraction, no unit but one of those four).
 */
static int parse_duration(const char *s, long long *ret) {
        unsigned long long v = 0, mult = 1;
        size_t i = 0;

        if (!s || s[0] < '0' || s[0] > '9')
                return -EINVAL;
        for (; s[i] >= '0' && s[i] <= '9'; i++) {
                v = v * 10 + (unsigned long long)(s[i] - '0');
                if (v > (unsigned long long)TTL_SEC_MAX)
                        return -EINVAL;
        }
        if (s[i] != 0) {
                if (s[i + 1] != 0)
                        return -EINVAL;
                switch (s[i]) {
                case 's':
                        mult = 1;
                        break;
                case 'm':
                        mult = 60;
                        break;
                case 'h':
                        mult = 3600;
                        break;
                case 'd':
                        mult = 86400;
                        break;
                default:
                        return -EINVAL;
                }
        }
        if (v == 0 || v > (unsigned long long)TTL_SEC_MAX / mult)
                return -EINVAL;
        *ret = (long long)(v * mult);
        return 0;
}

/*
 * Prints the message for an error of the handle methods, or leaves it to console_print_error()
 * for the others. Every string from lockd is escaped. Returns the exit code.
 */
static int print_handle_error(const char *what, const char *error, json_t *params) {
        if (strcmp(error, CONSOLE_INTERFACE ".UnknownHandle") == 0) {
                fprintf(stderr, "lockctl: %s refused: no handle ", what);
                console_fputs_escaped(console_json_string(params, "handle"), stderr);
                fputs(" (never granted, revoked, or expired)\n", stderr);
        } else if (strcmp(error, CONSOLE_INTERFACE ".NotAnAgent") == 0) {
                fprintf(stderr, "lockctl: %s refused: ", what);
                console_fputs_escaped(console_json_string(params, "agent"), stderr);
                fputs(" is not an agent of lockd's policy (no such user, or not listed under "
                      "agents:)\n",
                      stderr);
        } else if (strcmp(error, CONSOLE_INTERFACE ".TooManyHandles") == 0)
                fprintf(stderr,
                        "lockctl: %s refused: too many handles (at most %lld); revoke some "
                        "first\n",
                        what, console_json_integer(params, "limit", 0));
        else
                return console_print_error(what, error, params);
        return LOCKCTL_EXIT_FAIL;
}

/* One call that answers with print_handle_error()'s messages. 0 with *ret, or an exit code. */
static int handle_call(const char *what, const char *method, json_t *params, const int *fds,
                       size_t n_fds, json_t **ret) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(json_decrefp) json_t *reply = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        r = console_connect(&c);
        if (r != 0)
                return r;
        r = console_call_raw(c, what, method, params, fds, n_fds, &reply, &error);
        if (r != 0)
                return r;
        if (error)
                return print_handle_error(what, error, reply);
        *ret = TAKE_PTR(reply);
        return 0;
}

/*
 * grant FILE --agent USER [--label L] [--budget N] [--ttl D] [--auto] [--json]. FILE is opened
 * here, with the human's own rights, and only its fd goes to lockd, which never opens a path.
 * A symbolic link is followed on purpose: the open happens with exactly the rights of the human
 * who typed the path, so a link gives nobody more than that human could read anyway, and a human
 * may well mean the file a link points at. What lockd snapshots is the bytes of the file opened,
 * read once at the grant. Anything but a regular file (a FIFO, a device) is refused.
 */
int verb_grant(int argc, char **argv) {
        _cleanup_(json_decrefp) json_t *params = json_object(), *reply = NULL;
        _cleanup_close_ int fd = -1;
        const char *file = NULL, *agent = NULL, *label = NULL, *budget = NULL, *ttl = NULL;
        bool json = false, automatic = false;
        long long ttl_sec = 0;
        int r;

        if (!params) {
                fprintf(stderr, "lockctl: out of memory\n");
                return LOCKCTL_EXIT_FAIL;
        }
        for (int i = 0; i < argc; i++) {
                if ((r = lockctl_option(argc, argv, &i, "--agent", &agent)) != 0 ||
                    (r = lockctl_option(argc, argv, &i, "--label", &label)) != 0 ||
                    (r = lockctl_option(argc, argv, &i, "--budget", &budget)) != 0 ||
                    (r = lockctl_option(argc, argv, &i, "--ttl", &ttl)) != 0) {
                        if (r < 0)
                                return usage_grant();
                } else if (strcmp(argv[i], "--auto") == 0)
                        automatic = true;
                else if (strcmp(argv[i], "--json") == 0)
                        json = true;
                else if (argv[i][0] == '-' && argv[i][1] != 0) {
                        fprintf(stderr, "lockctl: unknown option '%s'\n", argv[i]);
                        return usage_grant();
                } else if (!file)
                        file = argv[i];
                else
                        return usage_grant();
        }
        if (!file || !agent || agent[0] == 0)
                return usage_grant();

        if (json_object_set_new(params, "agent", json_string(agent)) < 0) {
                fprintf(stderr, "lockctl: --agent must be UTF-8\n");
                return LOCKCTL_EXIT_USAGE;
        }
        if (label && json_object_set_new(params, "label", json_string(label)) < 0) {
                fprintf(stderr, "lockctl: --label must be UTF-8\n");
                return LOCKCTL_EXIT_USAGE;
        }
        if (budget) {
                char *end;
                long v;

                errno = 0;
                v = strtol(budget, &end, 10);
                if (errno != 0 || end == budget || *end != 0 || v < 1 || v > 1000000) {
                        fprintf(stderr, "lockctl: --budget takes a positive number\n");
                        return LOCKCTL_EXIT_USAGE;
                }
                json_object_set_new(params, "budget", json_integer(v));
        }
        if (ttl) {
                if (parse_duration(ttl, &ttl_sec) < 0) {
                        fprintf(stderr, "lockctl: --ttl takes a duration from 1s to 366d, as "
                                        "90s, 15m, 2h or 1d\n");
                        return LOCKCTL_EXIT_USAGE;
                }
                json_object_set_new(params, "ttl_sec", json_integer(ttl_sec));
        }
        if (automatic)
                json_object_set_new(params, "auto", json_true());

        fd = lockctl_open_file_at(AT_FDCWD, file, false);
        if (fd < 0) {
                fprintf(stderr, "lockctl: ");
                console_fputs_escaped(file, stderr);
                fprintf(stderr, ": %s\n", lockctl_open_strerror(fd));
                return LOCKCTL_EXIT_USAGE;
        }
        if (json_object_set_new(params, "file_fd", json_integer(0)) < 0) {
                fprintf(stderr, "lockctl: out of memory\n");
                return LOCKCTL_EXIT_FAIL;
        }

        r = handle_call("grant", "Grant", params, &fd, 1, &reply);
        if (r != 0)
                return r;
        if (json)
                return console_print_json(reply);
        fputs("handle: ", stdout);
        console_fputs_escaped(console_json_string(reply, "handle"), stdout);
        fputs("\nsha256: ", stdout);
        console_fputs_escaped(console_json_string(reply, "sha256"), stdout);
        printf("\nbytes: %lld\nexpires: ", console_json_integer(reply, "bytes", -1));
        console_print_time(stdout, console_json_integer(reply, "expires_usec", 0));
        putchar('\n');
        return fflush(stdout) == 0 ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
}

/* revoke HANDLE: takes the handle away at once. */
int verb_revoke(int argc, char **argv) {
        _cleanup_(json_decrefp) json_t *params = NULL, *reply = NULL;
        bool json = console_take_json(&argc, argv);
        int r;

        if (argc != 1 || argv[0][0] == 0 || argv[0][0] == '-')
                return usage_revoke();
        params = json_pack("{s:s}", "handle", argv[0]);
        if (!params) {
                fprintf(stderr, "lockctl: the handle must be UTF-8\n");
                return LOCKCTL_EXIT_USAGE;
        }
        r = handle_call("revoke", "Revoke", params, NULL, 0, &reply);
        if (r != 0 || !json)
                return r;
        return console_print_json_steal(json_pack("{s:s, s:b}", "handle", argv[0], "revoked", 1));
}

/* handles [--json]: one line per live handle, every string from lockd escaped. */
int verb_handles(int argc, char **argv) {
        _cleanup_(json_decrefp) json_t *reply = NULL;
        bool json = false;
        json_t *list, *h;
        size_t i;
        int r;

        r = console_parse_json_only(argc, argv, "usage: lockctl [--socket PATH] handles [--json]",
                                    &json);
        if (r != LOCKCTL_EXIT_OK)
                return r;
        r = console_call_all_pages("handles", "ListHandles", NULL, "handles", &reply);
        if (r != 0)
                return r;
        if (json)
                return console_print_json(reply);
        list = json_object_get(reply, "handles");
        if (!json_is_array(list) || json_array_size(list) == 0) {
                puts("no handles");
                return fflush(stdout) == 0 ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
        }
        json_array_foreach(list, i, h) {
                console_fputs_escaped(console_json_string(h, "handle"), stdout);
                printf("  agent %lld  budget %lld  %lld bytes%s  expires ",
                       console_json_integer(h, "agent_uid", -1),
                       console_json_integer(h, "budget", -1), console_json_integer(h, "bytes", -1),
                       json_is_true(json_object_get(h, "auto")) ? "  auto" : "");
                console_print_time(stdout, console_json_integer(h, "expires_usec", 0));
                fputs("\n    label: ", stdout);
                console_fputs_escaped(console_json_string(h, "label"), stdout);
                fputs("\n    sha256: ", stdout);
                console_fputs_escaped(console_json_string(h, "sha256"), stdout);
                putchar('\n');
        }
        return fflush(stdout) == 0 ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
}
