/*
 * The verification helper: it runs as nobody without capabilities under its seccomp filter; it
 * refuses a tampered release exactly as the in-process verification does; and a helper that
 * exits, crashes, hangs, answers garbage, too much, too little or for other bytes fails closed,
 * with nothing installed or added and no child left behind.
 */
#include <check.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "check-run.h"
#include "fd-util.h"
#include "codec.h"
#include "macro.h"
#include "store.h"
#include "verifier.h"
#include "sigstore-util.h"

#define ISSUER   "https://token.actions.githubusercontent.com"
#define WORKFLOW "https://github.com/acme/lockfile-plugins/.github/workflows/release.yml@"
#define PATTERN                                                                                    \
        "^https://github\\.com/acme/lockfile-plugins/\\.github/workflows/release\\.yml@refs/tags/" \
        ".*"
/* A pattern the test releases' signer does not match: RELEASE_E_IDENTITY. */
#define OTHER_PATTERN "^https://github\\.com/other/plugins/\\.github/workflows/release\\.yml@.*"
#define NAME          "text.is-utf8"
#define Q1            "Is the file valid UTF-8?"

static char top[] = "/tmp/lockd-test-verifier-XXXXXX";
static int statefd = -1;
static Marketplaces *marketplaces;
static const MarketplaceEntry *acme, *strict;
static Marketplace acme_local, strict_local; /* the same, parsed in process */

__attribute__((format(printf, 1, 2))) static void sh(const char *fmt, ...) {
        char cmd[4096];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
}

/* Makes top/<tag>/ for version, signed from ref (NULL: the release's own tag). */
static void make_release(const char *tag, const char *version, const char *ref) {
        char own_ref[128];

        snprintf(own_ref, sizeof(own_ref), "refs/tags/%s/v%s", NAME, version);
        if (!ref)
                ref = own_ref;
        sh("mkdir -p %s/%s && cp %s %s/%s/plugin", top, tag, getenv("LOCKD_PLUGIN_BIN"), top, tag);
        sh("printf '%%s\\n' 'name = \"%s\"' 'version = \"%s\"' 'protocol = 1' "
           "'question = \"%s\"' 'one = \"it is\"' 'zero = \"it is not\"' "
           "'accepts = [\"text/plain\"]' 'limits = { cpu_s = 5, memory = \"128MiB\", timeout_s = "
           "10 }' > %s/%s/plugin.toml",
           NAME, version, Q1, top, tag);
        sh("%s sign %s/root --identity '" WORKFLOW "%s' --issuer " ISSUER
           " --ref '%s' %s/%s/plugin.toml %s/%s/plugin >/dev/null",
           getenv("LOCKD_SIGN"), top, ref, ref, top, tag, top, tag);
}

static int open_in(const char *tag, const char *file) {
        char path[512];

        snprintf(path, sizeof(path), "%s/%s/%s", top, tag, file);
        return open(path, O_RDONLY | O_CLOEXEC);
}

static void fds_open(const char *tag, ReleaseFds *fds) {
        fds->manifest = open_in(tag, RELEASE_MANIFEST_FILE);
        fds->binary = open_in(tag, RELEASE_BINARY_FILE);
        fds->manifest_bundle = open_in(tag, RELEASE_MANIFEST_BUNDLE_FILE);
        fds->binary_bundle = open_in(tag, RELEASE_BINARY_BUNDLE_FILE);
}

static void marketplace_parse(Marketplace *m, const char *name, const char *pattern) {
        char path[512], *json;
        size_t len;

        snprintf(path, sizeof(path), "%s/root/trusted_root.json", top);
        ck_assert_int_eq(read_full_file(path, 1 << 20, &json, &len), 0);
        *m = (Marketplace){.name = strdup(name),
                           .issuer = strdup(ISSUER),
                           .identity_pattern = strdup(pattern)};
        ck_assert_int_eq(sigstore_trust_root_load(json, len, &m->root), 0);
        free(json);
}

static void use_helper(const char *path) {
        ck_assert_int_eq(verifier_set_helper_path(path ? path : getenv("LOCKD_VERIFY")), 0);
}

static void setup(void) {
        char path[512], root[512];

        ck_assert_ptr_nonnull(mkdtemp(top));
        sh("%s init %s/root >/dev/null", getenv("LOCKD_SIGN"), top);
        snprintf(path, sizeof(path), "%s/state", top);
        ck_assert_int_eq(mkdir(path, 0700), 0);
        statefd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(statefd, 0);
        snprintf(root, sizeof(root), "%s/root/trusted_root.json", top);
        MarketplaceSpec specs[] = {{"acme", ISSUER, PATTERN, root},
                                   {"strict", ISSUER, OTHER_PATTERN, root}};
        use_helper(NULL);
        verifier_set_timeout_usec(0);
        ck_assert_int_eq(marketplaces_load(statefd, specs, 2, NULL, NULL, &marketplaces), 0);
        acme = marketplaces_find(marketplaces, "acme");
        strict = marketplaces_find(marketplaces, "strict");
        marketplace_parse(&acme_local, "acme", PATTERN);
        marketplace_parse(&strict_local, "strict", OTHER_PATTERN);
}

static void teardown(void) {
        marketplaces = marketplaces_free(marketplaces);
        marketplace_done(&acme_local);
        marketplace_done(&strict_local);
        statefd = safe_close(statefd);
        sh("rm -rf %s", top);
        strcpy(top, "/tmp/lockd-test-verifier-XXXXXX");
}

START_TEST(test_verifier_helper_is_unprivileged) {
        static const char *const expected[] = {
                "uid=65534,65534,65534 ",
                "gid=65534,65534,65534 ",
                "groups=0 ",
                "cap=0,0,0 ",
                "bset=0 ",
                "nnp=1 ",
                "seccomp=2 ",
                "dumpable=0 ",
                "fsize=0 ",
                "nofile=16 ",
                "nproc=0 ",
                "open=EPERM ",
                "socket=EPERM ",
                "mmap_exec=EPERM ",
                "kill=EPERM",
        };
        char msg[256];
        ReleaseError err = {};

        ck_assert_int_eq(getuid(), 0); /* the daemon's situation: root spawns the helper */
        ck_assert_int_eq(verifier_probe(msg, sizeof(msg), &err), 0);
        for (size_t i = 0; i < ELEMENTSOF(expected); i++)
                ck_assert_msg(strstr(msg, expected[i]), "%s not in: %s", expected[i], msg);
}
END_TEST

/* Installs tag under m through the helper and verifies it in process under local: the same
 * errno, code and message either way. */
static void same_verdict(const char *tag, const MarketplaceEntry *m, const Marketplace *local,
                         int want) {
        _cleanup_(catalog_freep) Catalog *c = NULL;
        _cleanup_(release_freep) Release *rel = NULL;
        CatalogInstallResult res;
        ReleaseError err = {};
        ReleaseFds fds;
        int r1, r2;

        ck_assert_int_eq(catalog_load(statefd, NULL, NULL, &c), 0);
        fds_open(tag, &fds);
        r1 = release_verify_fds(local, &fds, &rel, &err);
        r2 = catalog_install(c, statefd, m, &fds, NULL, NULL, &res);
        release_fds_close(&fds);
        ck_assert_msg(r1 == want, "%s: in process %d (%s)", tag, r1, err.message);
        ck_assert_msg(r2 == r1, "%s: helper %d (%s), in process %d (%s)", tag, r2,
                      res.release_error.message, r1, err.message);
        if (want < 0) {
                ck_assert_int_eq(res.status, CATALOG_VERIFICATION_FAILED);
                ck_assert_str_eq(release_error_name(res.release_error.code),
                                 release_error_name(err.code));
                ck_assert_str_eq(res.release_error.message, err.message);
                ck_assert_uint_eq(catalog_n(c), 0);
        } else {
                ck_assert_int_eq(res.status, CATALOG_INSTALLED);
                ck_assert_str_eq(res.plugin->release->san, rel->san);
                ck_assert_str_eq(res.plugin->release->source_ref, rel->source_ref);
                ck_assert_int_eq(catalog_remove(c, statefd, NAME, NULL), 0);
        }
        catalog_install_result_done(&res);
}

START_TEST(test_verifier_refuses_as_in_process) {
        make_release("good", "1.0.0", NULL);
        same_verdict("good", acme, &acme_local, 0);

        /* The binary changed after signing. */
        make_release("binary", "1.0.0", NULL);
        sh("printf x >> %s/binary/plugin", top);
        same_verdict("binary", acme, &acme_local, -EKEYREJECTED);

        /* The manifest changed after signing (still a valid manifest). */
        make_release("manifest", "1.0.0", NULL);
        sh("sed -i 's/it is not/it is NOT/' %s/manifest/plugin.toml", top);
        same_verdict("manifest", acme, &acme_local, -EKEYREJECTED);

        /* Signed from another version's tag. */
        make_release("tag", "1.0.0", "refs/tags/" NAME "/v1.0.1");
        same_verdict("tag", acme, &acme_local, -EKEYREJECTED);

        /* A signer the marketplace's pattern does not admit. */
        same_verdict("good", strict, &strict_local, -EKEYREJECTED);

        /* A bundle that is not a bundle, and bundles swapped. */
        make_release("bundle", "1.0.0", NULL);
        sh("printf '{}' > %s/bundle/plugin.sigstore.json", top);
        same_verdict("bundle", acme, &acme_local, -EBADMSG);
        make_release("swapped", "1.0.0", NULL);
        sh("cd %s/swapped && mv plugin.sigstore.json t && mv plugin.toml.sigstore.json "
           "plugin.sigstore.json && mv t plugin.toml.sigstore.json",
           top);
        same_verdict("swapped", acme, &acme_local, -EKEYREJECTED);
}
END_TEST

/* Writes top/<mode>.sh, which runs the bad helper in that mode, and makes it the helper. */
static void bad_helper(const char *mode) {
        char path[512];

        snprintf(path, sizeof(path), "%s/%s.sh", top, mode);
        sh("printf '#!/bin/sh\\nexec %s %s\\n' > %s && chmod 755 %s", getenv("LOCKD_BAD_HELPER"),
           mode, path, path);
        use_helper(path);
}

static uint64_t now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

START_TEST(test_verifier_fails_closed) {
        static const char *const modes[] = {
                "exit1", "crash",          "hang",         "garbage",  "short",
                "lie",   "lie-then-exit1", "unterminated", "too-much", "missing",
        };
        _cleanup_(catalog_freep) Catalog *c = NULL;

        ck_assert_int_eq(catalog_load(statefd, NULL, NULL, &c), 0);
        make_release("good", "1.0.0", NULL);
        for (size_t i = 0; i < ELEMENTSOF(modes); i++) {
                Marketplaces *ms = marketplaces;
                CatalogInstallResult res;
                ReleaseError err = {};
                const char *reason = NULL;
                ReleaseFds fds;
                char root[512];
                uint64_t start;
                int fd, r;

                if (strcmp(modes[i], "missing") == 0)
                        use_helper("/nonexistent/lockd-verify");
                else
                        bad_helper(modes[i]);
                verifier_set_timeout_usec(strcmp(modes[i], "hang") == 0 ? 1000000 : 0);

                /* A trusted root. */
                start = now_ms();
                r = verifier_check_root(acme->trusted_root_fd, acme->trusted_root_digest, &err);
                ck_assert_msg(r == -EPROTO, "%s: root: %d", modes[i], r);
                ck_assert_int_eq(err.code, RELEASE_E_VERIFIER);
                ck_assert_uint_lt(now_ms() - start, 5000);

                /* A release. */
                fds_open("good", &fds);
                r = catalog_install(c, statefd, acme, &fds, NULL, NULL, &res);
                release_fds_close(&fds);
                ck_assert_msg(r == -EPROTO, "%s: install: %d (%s)", modes[i], r,
                              res.release_error.message);
                ck_assert_int_eq(res.status, CATALOG_VERIFICATION_FAILED);
                ck_assert_int_eq(res.release_error.code, RELEASE_E_VERIFIER);
                ck_assert_ptr_nonnull(strstr(res.release_error.message, "verification helper"));
                catalog_install_result_done(&res);
                ck_assert_uint_eq(catalog_n(c), 0);

                /* A marketplace. */
                snprintf(root, sizeof(root), "%s/root/trusted_root.json", top);
                fd = open(root, O_RDONLY | O_CLOEXEC);
                ck_assert_int_ge(fd, 0);
                r = marketplaces_add(ms, statefd, "added", ISSUER, PATTERN, NULL, fd, true, NULL,
                                     &reason);
                close(fd);
                ck_assert_msg(r == -EPROTO, "%s: add: %d", modes[i], r);
                ck_assert_ptr_nonnull(strstr(reason, "helper"));
                ck_assert_ptr_null(marketplaces_find(ms, "added"));

                /* Every helper was reaped: no child is left, running or zombie. */
                ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
                ck_assert_int_eq(errno, ECHILD);
        }

        /* Nothing reached the store; the real helper installs the same release. */
        StoreEntry *e = NULL;
        size_t n = 0;
        ck_assert_int_eq(store_list(statefd, &e, &n), 0);
        ck_assert_uint_eq(n, 0);
        store_entries_free(e, n);
        use_helper(NULL);
        verifier_set_timeout_usec(0);
        {
                CatalogInstallResult res;
                ReleaseFds fds;

                fds_open("good", &fds);
                ck_assert_int_eq(catalog_install(c, statefd, acme, &fds, NULL, NULL, &res), 0);
                release_fds_close(&fds);
                catalog_install_result_done(&res);
        }
        ck_assert_uint_eq(catalog_n(c), 1);
}
END_TEST

START_TEST(test_verifier_root_refused) {
        char path[512];
        uint8_t digest[32];
        ReleaseError err = {};
        int fd, mfd;

        /* JSON, but not a trusted root: refused by the helper as such, not as its failure. */
        snprintf(path, sizeof(path), "%s/bogus.json", top);
        sh("printf '{\"mediaType\":\"x\"}' > %s", path);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        mfd = release_snapshot_fd(fd, MARKETPLACE_ROOT_MAX, "trusted_root.json", NULL);
        close(fd);
        ck_assert_int_ge(mfd, 0);
        ck_assert_int_eq(sha256_fd(mfd, digest), 0);
        ck_assert_int_eq(verifier_check_root(mfd, digest, &err), -EINVAL);
        ck_assert_int_ne(err.code, RELEASE_E_VERIFIER);

        /* The right bytes under a wrong digest: the helper checked other bytes, so it failed. */
        digest[0] ^= 1;
        ck_assert_int_eq(verifier_check_root(acme->trusted_root_fd, digest, &err), -EPROTO);
        ck_assert_int_eq(err.code, RELEASE_E_VERIFIER);
        close(mfd);
}
END_TEST

static Suite *verifier_suite(void) {
        Suite *s = suite_create("verifier");
        const CaseOptions each = {.timeout = 120, .setup = setup, .teardown = teardown};

        suite_add_case(s, &each, test_verifier_helper_is_unprivileged);
        suite_add_case(s, &each, test_verifier_refuses_as_in_process);
        suite_add_case(s, &each, test_verifier_fails_closed);
        suite_add_case(s, &each, test_verifier_root_refused);
        return s;
}

int main(void) {
        return check_run(verifier_suite());
}
