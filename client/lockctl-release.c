/* lockctl release verify: a release directory checked offline under a marketplace's trust. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fd-util.h"
#include "index.h"
#include "lockctl-console.h"
#include "lockctl.h"
#include "macro.h"
#include "marketplace.h"
#include "release.h"

static int usage_verify(void) {
        fprintf(stderr, "usage: lockctl release verify DIR --trusted-root FILE --issuer URL "
                        "--identity PATTERN [--index DIR] [--name MARKETPLACE]\n");
        return LOCKCTL_EXIT_USAGE;
}

/* Loads the trusted root at path into m->root; prints the reason itself. 0 or an exit code. */
static int load_root(const char *path, Marketplace *m) {
        _cleanup_free_ char *json = NULL;
        size_t len;
        int r;

        r = read_full_file(path, SIGSTORE_JSON_MAX, &json, &len);
        if (r < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", path, strerror(-r));
                return LOCKCTL_EXIT_USAGE;
        }
        r = sigstore_trust_root_load(json, len, &m->root);
        if (r < 0) {
                fprintf(stderr, "lockctl: %s: not a usable trusted root (%s)\n", path,
                        strerror(-r));
                return LOCKCTL_EXIT_USAGE;
        }
        return 0;
}

/*
 * release verify DIR ...: verifies the release in DIR as lockd's install would (both bundles
 * under the marketplace, the tag of the manifest's own name and version, the strict manifest, a
 * static binary) and, with --index, that the signed index lists it with the same digests.
 * Prints "ok NAME VERSION" (exit 0) or "error: CODE: message" (exit 1).
 */
static int verb_release_verify(int argc, char **argv) {
        _cleanup_(release_freep) Release *rel = NULL;
        _cleanup_(index_freep) MarketplaceIndex *idx = NULL;
        const char *dir = NULL, *root = NULL, *issuer = NULL, *identity = NULL, *index = NULL;
        const char *name = "local";
        _cleanup_close_ int dirfd = -1, idxfd = -1;
        Marketplace m = {};
        ReleaseError err = {};
        int r;

        for (int i = 0; i < argc; i++) {
                const char **opt = NULL;

                if (strcmp(argv[i], "--trusted-root") == 0)
                        opt = &root;
                else if (strcmp(argv[i], "--issuer") == 0)
                        opt = &issuer;
                else if (strcmp(argv[i], "--identity") == 0)
                        opt = &identity;
                else if (strcmp(argv[i], "--index") == 0)
                        opt = &index;
                else if (strcmp(argv[i], "--name") == 0)
                        opt = &name;
                else if (argv[i][0] == '-')
                        return usage_verify();
                else if (!dir)
                        dir = argv[i];
                else
                        return usage_verify();
                if (opt) {
                        if (i + 1 >= argc)
                                return usage_verify();
                        *opt = argv[++i];
                }
        }
        if (!dir || !root || !issuer || !identity)
                return usage_verify();

        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", dir, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        r = load_root(root, &m);
        if (r != 0)
                return r;
        m.name = strdup(name);
        m.issuer = strdup(issuer);
        m.identity_pattern = strdup(identity);
        if (!m.name || !m.issuer || !m.identity_pattern) {
                marketplace_done(&m);
                return LOCKCTL_EXIT_USAGE;
        }

        r = release_verify(&m, dirfd, &rel, &err);
        if (r >= 0 && index) {
                idxfd = open(index, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (idxfd < 0) {
                        fprintf(stderr, "lockctl: %s: %s\n", index, strerror(errno));
                        marketplace_done(&m);
                        return LOCKCTL_EXIT_USAGE;
                }
                r = index_load(&m, idxfd, &idx, &err);
                if (r >= 0)
                        r = index_check_release(idx, rel, &err);
        }
        marketplace_done(&m);
        if (r < 0) {
                printf("error: %s: %s\n", release_error_name(err.code), err.message);
                return LOCKCTL_EXIT_FAIL;
        }
        printf("ok %s %s\n", rel->manifest->name, rel->manifest->version);
        return LOCKCTL_EXIT_OK;
}

int verb_release(int argc, char **argv) {
        if (argc >= 1 && strcmp(argv[0], "verify") == 0) {
                argc--, argv++;
                if (console_take_json(&argc, argv))
                        return console_report_json(verb_release_verify, argc, argv);
                return verb_release_verify(argc, argv);
        }
        return usage_verify();
}
