/* lockd-engine's command line: `lockd-engine [--config FILE]`, as the spawner starts it (the
 * policy path it resolved, or none for the compiled-in default). */
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
#include "engine-seccomp.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "secmem.h"

/* jansson's free(): the whole block is wiped first (its usable size, which covers what jansson
 * wrote). */
static void json_wiping_free(void *p) {
        if (!p)
                return;
        explicit_bzero(p, malloc_usable_size(p));
        free(p);
}

static void usage(FILE *f) {
        fputs("usage: lockd-engine [--config FILE]\n"
              "\n"
              "lockd's engine: lockd (the spawner) starts it as user lockd with the sockets and "
              "its\n"
              "channel; it is not started by hand. `lockd --check-config` checks a policy.\n",
              f);
}

int lockd_main(int argc, char **argv) {
        static const struct option opts[] = {
                {"config", required_argument, NULL, 'c'},
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, 'V'},
                {},
        };
        _cleanup_(manager_freep) Manager *m = NULL;
        const char *config = NULL;
        int c, r;

        while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) >= 0) {
                switch (c) {
                case 'c':
                        config = optarg;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'V':
                        printf("lockd-engine %s\n", LOCKD_VERSION);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "lockd-engine: unexpected argument '%s'\n", argv[optind]);
                usage(stderr);
                return 2;
        }

        log_open(false);
        /* Before anything is read: lockd's memory never reaches a core file or another
         * process's ptrace, whatever it will come to hold. */
        r = secmem_harden_process();
        if (r < 0)
                return log_error_errno(r, NULL, "cannot make lockd undumpable: %m"), 1;
        /* Before the first byte of anyone else's is parsed: no privilege, and the filter. */
        r = engine_confine();
        if (r < 0)
                return log_error_errno(r, NULL, "cannot confine the engine: %m"), 1;
        /* jansson holds what lockd parses and builds, fd 6 JSON with a human's values among
         * it: its memory is wiped when freed, so no value outlives its use in the heap. */
        json_set_alloc_funcs(malloc, json_wiping_free);
        r = manager_new(config, &m);
        if (r < 0)
                return 1;
        r = manager_start(m);
        if (r < 0)
                return 1;
        r = manager_loop(m);
        /* Every way the engine ends says why (ARCHITECTURE.md, two processes). */
        if (r < 0)
                return log_error_errno(r, NULL, "the engine's event loop failed: %m"), 1;
        return 0;
}
