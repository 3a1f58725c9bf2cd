/*
 * Releases end to end with real bundles: a private trusted root and signatures from
 * tests/tools/lockd-sign, verified by release_verify() under a marketplace, checked against a
 * signed index, installed into the store and loaded back.
 */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check-run.h"
#include "fd-util.h"
#include "index.h"
#include "macro.h"
#include "marketplace.h"
#include "release.h"
#include "store.h"

#define ISSUER   "https://token.actions.githubusercontent.com"
#define WORKFLOW "https://github.com/acme/lockfile-plugins/.github/workflows/release.yml@"
#define PATTERN                                                                                    \
        "^https://github\\.com/acme/lockfile-plugins/\\.github/workflows/release\\.yml@refs/tags/" \
        ".*"
#define NAME    "text.is-utf8"
#define VERSION "1.2.3"
#define REF     "refs/tags/" NAME "/v" VERSION

static char top[] = "/tmp/lockd-test-release-XXXXXX";
static const char *workflow = WORKFLOW; /* the signing identity is workflow + ref */

/* Runs a shell command built from fmt; the test fails when it does. */
__attribute__((format(printf, 1, 2))) static void sh(const char *fmt, ...) {
        char cmd[4096];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
}

/* Makes DIR/rel-NAME: manifest + static binary, signed with ref and an optional break. */
static void make_release(const char *tag, const char *ref, const char *brk) {
        sh("mkdir -p %s/rel-%s && cp %s %s/rel-%s/plugin", top, tag, getenv("LOCKD_PLUGIN_BIN"),
           top, tag);
        sh("printf '%%s\\n' 'name = \"" NAME "\"' 'version = \"" VERSION "\"' 'protocol = 1' "
           "'question = \"Is the file valid UTF-8?\"' 'one = \"it is\"' 'zero = \"it is not\"' "
           "'accepts = [\"text/plain\"]' 'limits = { cpu_s = 5, memory = \"128MiB\", timeout_s = "
           "10 }' > %s/rel-%s/plugin.toml",
           top, tag);
        sh("%s sign %s/root --identity '%s%s' --issuer " ISSUER " --ref '%s' %s %s "
           "%s/rel-%s/plugin.toml %s/rel-%s/plugin >/dev/null",
           getenv("LOCKD_SIGN"), top, workflow, ref, ref, brk ? "--break" : "", brk ? brk : "", top,
           tag, top, tag);
}

static void marketplace_open(Marketplace *m) {
        char path[512], *json;
        size_t len;
        int fd;

        snprintf(path, sizeof(path), "%s/root/trusted_root.json", top);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(read_full_fd(fd, 1 << 20, &json, &len), 0);
        close(fd);
        *m = (Marketplace){.name = strdup("acme"),
                           .issuer = strdup(ISSUER),
                           .identity_pattern = strdup(PATTERN)};
        ck_assert_int_eq(sigstore_trust_root_load(json, len, &m->root), 0);
        free(json);
}

static int verify_dir(const Marketplace *m, const char *tag, Release **ret, ReleaseError *err) {
        char path[512];
        int dirfd, r;

        snprintf(path, sizeof(path), "%s/rel-%s", top, tag);
        dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(dirfd, 0);
        r = release_verify(m, dirfd, ret, err);
        close(dirfd);
        return r;
}

static void setup(void) {
        ck_assert_ptr_nonnull(mkdtemp(top));
        sh("%s init %s/root >/dev/null", getenv("LOCKD_SIGN"), top);
}

static void teardown(void) {
        sh("rm -rf %s", top);
        strcpy(top, "/tmp/lockd-test-release-XXXXXX");
}

START_TEST(test_release_accepted_indexed_stored) {
        _cleanup_(release_freep) Release *rel = NULL, *back = NULL;
        _cleanup_(index_freep) MarketplaceIndex *idx = NULL;
        Marketplace m;
        ReleaseError err = {};
        StoreError serr = {};
        char hex_m[65], hex_b[65];
        int statefd, idxfd;

        marketplace_open(&m);
        make_release("good", REF, NULL);
        ck_assert_msg(verify_dir(&m, "good", &rel, &err) == 0, "%s: %s",
                      release_error_name(err.code), err.message);
        ck_assert_str_eq(rel->manifest->name, NAME);
        ck_assert_str_eq(rel->source_ref, REF);

        /* A signed index listing the release's digests: accepted; with one digest off: refused. */
        for (int i = 0; i < 32; i++) {
                snprintf(hex_m + 2 * i, 3, "%02x", rel->manifest_sha256[i]);
                snprintf(hex_b + 2 * i, 3, "%02x", rel->binary_sha256[i]);
        }
        sh("mkdir -p %s/index && printf "
           "'{\"name\":\"acme\",\"version\":1,\"expires\":\"2099-12-31T23:59:59Z\",\"releases\":[{"
           "\"name\":\"" NAME "\",\"version\":\"" VERSION
           "\",\"manifest_sha256\":\"%s\",\"binary_sha256\":\"%s\"}]}' "
           "> %s/index/index.json && %s sign %s/root --identity '" WORKFLOW
           "refs/tags/index' --issuer " ISSUER " --ref refs/tags/index %s/index/index.json "
           ">/dev/null",
           top, hex_m, hex_b, top, getenv("LOCKD_SIGN"), top, top);
        char path[512];
        snprintf(path, sizeof(path), "%s/index", top);
        idxfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(idxfd, 0);
        ck_assert_msg(index_load(&m, idxfd, &idx, &err) == 0, "%s", err.message);
        close(idxfd);
        ck_assert_int_eq(index_check_release(idx, rel, &err), 0);
        idx->releases[0].binary_sha256[0] ^= 1;
        ck_assert_int_lt(index_check_release(idx, rel, &err), 0);
        ck_assert_int_eq(err.code, RELEASE_E_INDEX_MISMATCH);

        /* Installed and loaded back: the digests hold. */
        snprintf(path, sizeof(path), "%s/state", top);
        sh("mkdir -p %s", path);
        statefd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(statefd, 0);
        ck_assert_msg(store_install(statefd, rel, &serr) == 0, "%s", serr.message);
        ck_assert_msg(store_load(statefd, NAME, VERSION, &back, &serr) == 0, "%s", serr.message);
        ck_assert_mem_eq(back->binary_sha256, rel->binary_sha256, 32);
        close(statefd);
        marketplace_done(&m);
}
END_TEST

START_TEST(test_release_refusals) {
        static const struct {
                const char *tag, *ref, *brk;
                ReleaseErrorCode want;
        } cases[] = {
                /* Signed for another version's tag: the certificate does not vouch for this one. */
                {"othertag", "refs/tags/" NAME "/v1.2.4", NULL, RELEASE_E_TAG},
                /* A branch build is not a release: the marketplace's pattern pins tags. */
                {"branch", "refs/heads/main", NULL, RELEASE_E_IDENTITY},
                {"brokentag", REF, "tag", RELEASE_E_TAG},
                {"expired", REF, "expired", RELEASE_E_BUNDLE},
                {"set", REF, "set", RELEASE_E_BUNDLE},
                {"proof", REF, "proof", RELEASE_E_BUNDLE},
                {"digest", REF, "digest", RELEASE_E_BUNDLE},
        };
        Marketplace m;

        marketplace_open(&m);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Release *rel = NULL;
                ReleaseError err = {};

                make_release(cases[i].tag, cases[i].ref, cases[i].brk);
                ck_assert_msg(verify_dir(&m, cases[i].tag, &rel, &err) < 0, "%s accepted",
                              cases[i].tag);
                ck_assert_ptr_null(rel);
                /* The identity break may be caught as a bundle or an identity failure. */
                ck_assert_msg(err.code == cases[i].want || (cases[i].want == RELEASE_E_BUNDLE &&
                                                            err.code == RELEASE_E_IDENTITY),
                              "%s: got %s (%s)", cases[i].tag, release_error_name(err.code),
                              err.message);
        }

        /* Another repository's workflow: acme-evil is not acme. */
        Release *evil = NULL;
        ReleaseError everr = {};
        workflow = "https://github.com/acme-evil/lockfile-plugins/.github/workflows/release.yml@";
        make_release("evil", REF, NULL);
        workflow = WORKFLOW;
        ck_assert_int_lt(verify_dir(&m, "evil", &evil, &everr), 0);
        ck_assert_int_eq(everr.code, RELEASE_E_IDENTITY);

        /* The binary swapped after signing: its bundle no longer verifies. */
        Release *rel = NULL;
        ReleaseError err = {};
        make_release("swapped", REF, NULL);
        sh("printf 'x' >> %s/rel-swapped/plugin", top);
        ck_assert_int_lt(verify_dir(&m, "swapped", &rel, &err), 0);
        ck_assert_int_eq(err.code, RELEASE_E_BUNDLE);
        marketplace_done(&m);
}
END_TEST

static Suite *release_suite(void) {
        Suite *s = suite_create("release");
        const CaseOptions each = {.timeout = 60, .setup = setup, .teardown = teardown};

        suite_add_case(s, &each, test_release_accepted_indexed_stored);
        suite_add_case(s, &each, test_release_refusals);
        return s;
}

int main(void) {
        return check_run(release_suite());
}
