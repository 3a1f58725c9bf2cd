/* lockctl marketplace lint|add|list|remove: a marketplace's identity pattern checked offline, and
 * the marketplaces of the running lockd. */
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "identity.h"
#include "lockctl-console.h"
#include "lockctl-pages.h"
#include "lockctl.h"
#include "macro.h"

static int usage_lint(void) {
        fprintf(stderr, "usage: lockctl marketplace lint --identity PATTERN\n");
        return LOCKCTL_EXIT_USAGE;
}

/* Prints why pattern is not a valid ERE on stderr: regcomp's reason, or the unmatched ')'. */
static void print_invalid(const char *pattern) {
        char reason[256] = "unmatched ')'";
        const char *why = NULL;
        regex_t re;
        int r;

        /* A pattern the check refuses is never compiled here either: regcomp() could take the
         * machine's memory for it. */
        if (identity_pattern_check(pattern, &why) < 0) {
                fprintf(stderr, "error: invalid regular expression: %s\n", why);
                return;
        }
        r = regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB);
        if (r != 0)
                regerror(r, &re, reason, sizeof(reason));
        regfree(&re);
        fprintf(stderr, "error: invalid regular expression: %s\n", reason);
}

/*
 * marketplace lint --identity PATTERN (or --identity=PATTERN): prints each warning as
 * "warning: CODE: message (at byte N)" on stdout, or "ok". Exit 0 without a warning, 1 with one,
 * 2 for a usage error or an invalid regular expression.
 */
static int verb_marketplace_lint(int argc, char **argv) {
        IdentityWarning warnings[64];
        const char *pattern = NULL;
        size_t n = 0;
        int r;

        for (int i = 0; i < argc; i++) {
                const char *value;

                if (strcmp(argv[i], "--identity") == 0) {
                        if (i + 1 >= argc)
                                return usage_lint();
                        value = argv[++i];
                } else if (strncmp(argv[i], "--identity=", 11) == 0) {
                        value = argv[i] + 11;
                } else {
                        fprintf(stderr, "lockctl: unknown argument '%s'\n", argv[i]);
                        return usage_lint();
                }
                if (pattern) {
                        fprintf(stderr, "lockctl: --identity given twice\n");
                        return usage_lint();
                }
                pattern = value;
        }
        if (!pattern)
                return usage_lint();

        r = identity_pattern_lint(pattern, warnings, ELEMENTSOF(warnings), &n);
        if (r == -EINVAL) {
                print_invalid(pattern);
                return LOCKCTL_EXIT_USAGE;
        }
        if (r < 0) {
                fprintf(stderr, "lockctl: %s\n", strerror(-r));
                return LOCKCTL_EXIT_USAGE;
        }
        for (size_t i = 0; i < n && i < ELEMENTSOF(warnings); i++)
                printf("warning: %s: %s (at byte %zu)\n", identity_warning_name(warnings[i].code),
                       warnings[i].message, warnings[i].offset);
        if (n > ELEMENTSOF(warnings))
                printf("warning: %zu more warnings not shown\n", n - ELEMENTSOF(warnings));
        if (n > 0)
                return LOCKCTL_EXIT_FAIL;
        printf("ok\n");
        return LOCKCTL_EXIT_OK;
}

/* Prints each string of the array warnings as "warning: W", escaped. */
static void print_warnings(const json_t *warnings, FILE *f) {
        json_t *w;
        size_t i;

        json_array_foreach(warnings, i, w) {
                fputs("warning: ", f);
                console_fputs_escaped(json_string_value(w), f);
                fputc('\n', f);
        }
}

static int usage_add(void) {
        fprintf(stderr, "usage: lockctl marketplace add NAME [--url URL] --issuer URL "
                        "--identity PATTERN --trusted-root FILE [--force] [--json]\n");
        return LOCKCTL_EXIT_USAGE;
}

/*
 * marketplace add NAME --issuer URL --identity PATTERN --trusted-root FILE [--force] [--json]:
 * AddMarketplace, the trusted root passed as an fd opened here with the human's rights. Prints
 * lockd's lint warnings; warnings without --force refuse the marketplace (exit 1).
 */
static int verb_marketplace_add(int argc, char **argv) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(json_decrefp) json_t *params = NULL, *reply = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_close_ int fd = -1;
        const char *name = NULL, *issuer = NULL, *identity = NULL, *root = NULL, *url = NULL;
        bool force = false, json = false;
        int r;

        for (int i = 0; i < argc; i++) {
                if ((r = lockctl_option(argc, argv, &i, "--issuer", &issuer)) != 0 ||
                    (r = lockctl_option(argc, argv, &i, "--identity", &identity)) != 0 ||
                    (r = lockctl_option(argc, argv, &i, "--trusted-root", &root)) != 0 ||
                    (r = lockctl_option(argc, argv, &i, "--url", &url)) != 0) {
                        if (r < 0)
                                return usage_add();
                } else if (strcmp(argv[i], "--force") == 0)
                        force = true;
                else if (strcmp(argv[i], "--json") == 0)
                        json = true;
                else if (argv[i][0] == '-' && argv[i][1] != 0) {
                        fprintf(stderr, "lockctl: unknown option '%s'\n", argv[i]);
                        return usage_add();
                } else if (!name)
                        name = argv[i];
                else
                        return usage_add();
        }
        if (!name || !issuer || !identity || !root || name[0] == 0)
                return usage_add();

        fd = lockctl_open_file_at(AT_FDCWD, root, false);
        if (fd < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", root, lockctl_open_strerror(fd));
                return LOCKCTL_EXIT_USAGE;
        }
        params = json_object();
        if (!params || json_object_set_new(params, "name", json_string(name)) < 0 ||
            json_object_set_new(params, "issuer", json_string(issuer)) < 0 ||
            json_object_set_new(params, "identity", json_string(identity)) < 0 ||
            json_object_set_new(params, "trusted_root_fd", json_integer(0)) < 0 ||
            (url && json_object_set_new(params, "url", json_string(url)) < 0) ||
            (force && json_object_set_new(params, "force", json_true()) < 0)) {
                fprintf(stderr, "lockctl: the name, URL, issuer and identity must be UTF-8\n");
                return LOCKCTL_EXIT_USAGE;
        }

        r = console_connect(&c);
        if (r != 0)
                return r;
        r = console_call_raw(c, "marketplace add", "AddMarketplace", params, &fd, 1, &reply,
                             &error);
        if (r != 0)
                return r;
        if (error) {
                if (strcmp(error, CONSOLE_INTERFACE ".LintWarnings") == 0)
                        print_warnings(json_object_get(reply, "warnings"), stderr);
                return console_print_error("marketplace add", error, reply);
        }
        if (json)
                return console_print_json(reply);
        print_warnings(json_object_get(reply, "warnings"), stdout);
        fputs("added marketplace ", stdout);
        console_fputs_escaped(name, stdout);
        if (url) {
                fputs(" at ", stdout);
                console_fputs_escaped(url, stdout);
        }
        putchar('\n');
        return fflush(stdout) == 0 ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
}

/*
 * Prints an identity pattern so that copying it gives the same pattern: as it is when it is
 * printable ASCII (lockd keeps no other), so its backslashes stay single; escaped otherwise.
 */
static void print_pattern(const char *p) {
        for (const char *c = p; c && *c; c++)
                if (*c < 0x20 || *c > 0x7e) {
                        console_fputs_escaped(p, stdout);
                        return;
                }
        fputs(p ? p : "?", stdout);
}

/* marketplace list [--json]: "NAME (SOURCE)", then issuer, identity and trusted root indented. */
static int verb_marketplace_list(int argc, char **argv) {
        _cleanup_(json_decrefp) json_t *reply = NULL;
        json_t *list, *m;
        bool json = false;
        size_t i;
        int r;

        r = console_parse_json_only(argc, argv, "usage: lockctl marketplace list [--json]", &json);
        if (r != LOCKCTL_EXIT_OK)
                return r;
        r = console_call_all_pages("marketplace list", "ListMarketplaces", NULL, "marketplaces",
                                   &reply);
        if (r != 0)
                return r;
        if (json)
                return console_print_json(reply);
        list = json_object_get(reply, "marketplaces");
        json_array_foreach(list, i, m) {
                console_fputs_escaped(console_json_string(m, "name"), stdout);
                fputs(" (", stdout);
                console_fputs_escaped(console_json_string(m, "source"), stdout);
                fputs(")\n    issuer: ", stdout);
                console_fputs_escaped(console_json_string(m, "issuer"), stdout);
                fputs("\n    identity: ", stdout);
                print_pattern(console_json_string(m, "identity"));
                if (console_json_string(m, "url")) {
                        fputs("\n    url: ", stdout);
                        console_fputs_escaped(console_json_string(m, "url"), stdout);
                }
                if (console_json_integer(m, "index_version", 0) > 0)
                        printf("\n    index version: %lld",
                               console_json_integer(m, "index_version", 0));
                fputs("\n    trusted root: sha256:", stdout);
                console_fputs_escaped(console_json_string(m, "trusted_root_sha256"), stdout);
                putchar('\n');
        }
        return fflush(stdout) == 0 ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
}

/* marketplace remove NAME: RemoveMarketplace. */
static int verb_marketplace_remove(int argc, char **argv) {
        _cleanup_(json_decrefp) json_t *params = NULL, *reply = NULL;
        bool json = console_take_json(&argc, argv);
        int r;

        if (argc != 1 || argv[0][0] == 0 || argv[0][0] == '-') {
                fprintf(stderr, "usage: lockctl marketplace remove NAME [--json]\n");
                return LOCKCTL_EXIT_USAGE;
        }
        params = json_pack("{s:s}", "name", argv[0]);
        if (!params) {
                fprintf(stderr, "lockctl: the name must be UTF-8\n");
                return LOCKCTL_EXIT_USAGE;
        }
        r = console_call_once("marketplace remove", "RemoveMarketplace", params, NULL, 0, &reply);
        if (r != 0)
                return r;
        if (json)
                return console_print_json_steal(
                        json_pack("{s:s, s:b}", "name", argv[0], "removed", 1));
        fputs("removed marketplace ", stdout);
        console_fputs_escaped(argv[0], stdout);
        putchar('\n');
        return fflush(stdout) == 0 ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
}

int verb_marketplace(int argc, char **argv) {
        if (argc >= 1 && strcmp(argv[0], "lint") == 0)
                return verb_marketplace_lint(argc - 1, argv + 1);
        if (argc >= 1 && strcmp(argv[0], "add") == 0)
                return verb_marketplace_add(argc - 1, argv + 1);
        if (argc >= 1 && strcmp(argv[0], "list") == 0)
                return verb_marketplace_list(argc - 1, argv + 1);
        if (argc >= 1 && strcmp(argv[0], "remove") == 0)
                return verb_marketplace_remove(argc - 1, argv + 1);
        fprintf(stderr, "usage: lockctl marketplace lint|add|list|remove ...\n");
        return LOCKCTL_EXIT_USAGE;
}
