/* lockctl marketplace lint: a marketplace's identity pattern checked offline, before it is added.
 */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "identity.h"
#include "lockctl.h"
#include "macro.h"

static int usage_lint(void) {
        fprintf(stderr, "usage: lockctl marketplace lint --identity PATTERN\n");
        return LOCKCTL_EXIT_USAGE;
}

/* Prints why pattern is not a valid ERE on stderr: regcomp's reason, or the unmatched ')'. */
static void print_invalid(const char *pattern) {
        char reason[256] = "unmatched ')'";
        regex_t re;
        int r;

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

int verb_marketplace(int argc, char **argv) {
        if (argc >= 1 && strcmp(argv[0], "lint") == 0)
                return verb_marketplace_lint(argc - 1, argv + 1);
        return usage_lint();
}
