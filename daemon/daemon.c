/* lockd's command line: `lockd [--config FILE]` runs the daemon; `lockd --check-config FILE`
 * validates a policy and prints the effective one. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "daemon.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "identity.h"
#include "macro.h"
#include "policy.h"
#include "secmem.h"

#define DEFAULT_POLICY_PATH "/etc/lockd/lockd.yaml"

/* jansson's free(): the whole block is wiped first (its usable size, which covers what jansson
 * wrote). */
static void json_wiping_free(void *p) {
        if (!p)
                return;
        explicit_bzero(p, malloc_usable_size(p));
        free(p);
}

static void usage(FILE *f) {
        fputs("usage: lockd [--config FILE]\n"
              "       lockd --check-config [FILE]\n"
              "\n"
              "  --config FILE        the policy (default " DEFAULT_POLICY_PATH
              ", or the compiled-in\n"
              "                       default when that file does not exist)\n"
              "  --check-config [FILE] validate FILE (default: as --config would pick) and print\n"
              "                       the effective policy; exit 0 valid, 1 invalid\n"
              "  --version            print the version\n",
              f);
}

/* The policy lockd uses: the one named, else the default path if it exists, else built in. */
static const char *pick_policy(const char *given) {
        if (given)
                return given;
        if (access(DEFAULT_POLICY_PATH, F_OK) == 0)
                return DEFAULT_POLICY_PATH;
        return NULL;
}

static void print_forced(const PolicyMarketplace *mp, const IdentityWarning *w, void *userdata) {
        fprintf(stderr, "lockd: %s:%u:%u: warning: marketplace %s: %s: %s (force: true)\n",
                (const char *)userdata, mp->identity_line, mp->identity_column, mp->name,
                identity_warning_name(w->code), w->message);
}

static int check_config(const char *path) {
        _cleanup_(policy_freep) Policy *p = NULL;
        char why[512] = "";
        int r;

        r = manager_load_policy(path, &p, why, sizeof(why));
        if (r < 0) {
                fprintf(stderr, "lockd: %s\n", why[0] ? why : strerror(-r));
                return 1;
        }
        /* Accepted with force: true, still said every time. */
        policy_forced_warnings(p, print_forced, (void *)(path ? path : "-"));
        printf("# effective policy (%s)\n", path ? path : "the compiled-in default");
        if (policy_format(p, stdout) < 0 || fflush(stdout) != 0) {
                fprintf(stderr, "lockd: cannot print the policy\n");
                return 1;
        }
        return 0;
}

int lockd_main(int argc, char **argv) {
        static const struct option opts[] = {
                {"config", required_argument, NULL, 'c'},
                {"check-config", optional_argument, NULL, 'C'},
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, 'V'},
                {},
        };
        _cleanup_(manager_freep) Manager *m = NULL;
        const char *config = NULL, *check = NULL;
        bool checking = false;
        int c, r;

        while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) >= 0) {
                switch (c) {
                case 'c':
                        config = optarg;
                        break;
                case 'C':
                        checking = true;
                        check = optarg;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'V':
                        printf("lockd %s\n", LOCKD_VERSION);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (checking && !check && optind < argc)
                check = argv[optind++];
        if (optind < argc) {
                fprintf(stderr, "lockd: unexpected argument '%s'\n", argv[optind]);
                usage(stderr);
                return 2;
        }
        if (checking)
                return check_config(pick_policy(check ? check : config));

        log_open(false);
        /* Before anything is read: lockd's memory never reaches a core file or another
         * process's ptrace, whatever it will come to hold. */
        r = secmem_harden_process();
        if (r < 0)
                return log_error_errno(r, NULL, "cannot make lockd undumpable: %m"), 1;
        /* jansson holds what lockd parses and builds, fd 6 JSON with a human's values among
         * it: its memory is wiped when freed, so no value outlives its use in the heap. */
        json_set_alloc_funcs(malloc, json_wiping_free);
        r = manager_new(pick_policy(config), &m);
        if (r < 0)
                return 1;
        r = manager_start(m);
        if (r < 0)
                return 1;
        r = manager_loop(m);
        return r < 0 ? 1 : 0;
}
