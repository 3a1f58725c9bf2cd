/*
 * The catalog end to end: real releases signed by tests/tools/lockd-sign, installed through
 * catalog_install() into a temporary state directory, updated, refused, removed, reloaded from
 * disk, tampered with, and kept alive by a reference while removed.
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "check-run.h"
#include "fd-util.h"
#include "macro.h"
#include "store.h"
#include "test-release.h"
#include "verifier.h"

#define NAME  "text.is-utf8"
#define NAME2 "pdf.has-text"
#define Q1    "Is the file valid UTF-8?"
#define Q2    "Is the file valid UTF-8 without a BOM?"

static char top[] = "/tmp/lockd-test-catalog-XXXXXX";
static int statefd = -1;
static Marketplaces *marketplaces;
static const MarketplaceEntry *acme, *other;
/* The same marketplace parsed in process, for release_verify_fds(). */
static Marketplace acme_local;

static void fds_open(const char *tag, ReleaseFds *fds) {
        fds->manifest = release_open(top, tag, RELEASE_MANIFEST_FILE);
        fds->binary = release_open(top, tag, RELEASE_BINARY_FILE);
        fds->manifest_bundle = release_open(top, tag, RELEASE_MANIFEST_BUNDLE_FILE);
        fds->binary_bundle = release_open(top, tag, RELEASE_BINARY_BUNDLE_FILE);
        ck_assert_int_ge(fds->manifest, 0);
        ck_assert_int_ge(fds->binary, 0);
}

static void fds_close(ReleaseFds *fds) {
        safe_close(fds->manifest);
        safe_close(fds->binary);
        safe_close(fds->manifest_bundle);
        safe_close(fds->binary_bundle);
}

/* Installs top/<tag>/ under m (NULL: unsigned); res is left for the caller to inspect. */
static int install(Catalog *c, const MarketplaceEntry *m, const char *tag, const char *accept,
                   CatalogInstallResult *res) {
        ReleaseFds fds;
        int r;

        fds_open(tag, &fds);
        r = catalog_install(c, statefd, m, &fds, NULL, accept, res);
        fds_close(&fds);
        return r;
}

static void install_ok(Catalog *c, const MarketplaceEntry *m, const char *tag, const char *accept) {
        CatalogInstallResult res;
        int r = install(c, m, tag, accept, &res);

        ck_assert_msg(r == 0, "%s: %d status %d: %s / %s", tag, r, res.status,
                      res.release_error.message, res.store_error.message);
        ck_assert_int_eq(res.status, CATALOG_INSTALLED);
        ck_assert_ptr_nonnull(res.plugin);
        catalog_install_result_done(&res);
}

static void marketplace_open(Marketplace *m, const char *name) {
        char path[512], *json;
        size_t len;

        snprintf(path, sizeof(path), "%s/root/trusted_root.json", top);
        ck_assert_int_eq(read_full_file(path, 1 << 20, &json, &len), 0);
        *m = (Marketplace){.name = strdup(name),
                           .issuer = strdup(ISSUER),
                           .identity_pattern = strdup(PATTERN)};
        ck_assert_int_eq(sigstore_trust_root_load(json, len, &m->root), 0);
        free(json);
}

static void setup(void) {
        char path[512];

        ck_assert_ptr_nonnull(mkdtemp(top));
        sh("%s init %s/root >/dev/null", getenv("LOCKD_SIGN"), top);
        snprintf(path, sizeof(path), "%s/state", top);
        ck_assert_int_eq(mkdir(path, 0700), 0);
        statefd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(statefd, 0);
        marketplace_open(&acme_local, "acme");
        snprintf(path, sizeof(path), "%s/root/trusted_root.json", top);
        MarketplaceSpec specs[] = {{"acme", ISSUER, PATTERN, path},
                                   {"other", ISSUER, PATTERN, path}};
        ck_assert_int_eq(verifier_set_helper_path(getenv("LOCKD_VERIFY")), 0);
        ck_assert_int_eq(marketplaces_load(statefd, specs, 2, NULL, NULL, &marketplaces), 0);
        acme = marketplaces_find(marketplaces, "acme");
        other = marketplaces_find(marketplaces, "other");
        ck_assert_ptr_nonnull(acme);
        ck_assert_ptr_nonnull(other);
}

static void teardown(void) {
        marketplace_done(&acme_local);
        marketplaces = marketplaces_free(marketplaces);
        acme = other = NULL;
        statefd = safe_close(statefd);
        sh("rm -rf %s", top);
        strcpy(top, "/tmp/lockd-test-catalog-XXXXXX");
}

static size_t stored_versions(const char *name, char *first, size_t size) {
        StoreEntry *e = NULL;
        size_t n = 0, k = 0;

        ck_assert_int_eq(store_list(statefd, &e, &n), 0);
        for (size_t i = 0; i < n; i++)
                if (strcmp(e[i].name, name) == 0 && k++ == 0 && first)
                        snprintf(first, size, "%s", e[i].version);
        store_entries_free(e, n);
        return k;
}

START_TEST(test_catalog_install_update_reload) {
        _cleanup_(catalog_freep) Catalog *c = NULL, *again = NULL;
        CatalogInstallResult res;
        const CatalogPlugin *p;
        char version[32];

        ck_assert_int_eq(catalog_load(statefd, NULL, NULL, &c), 0);
        ck_assert_uint_eq(catalog_n(c), 0);

        release_make(top, "v1.0.0", NAME, "1.0.0", Q1, NULL, true);
        install_ok(c, acme, "v1.0.0", NULL);
        p = catalog_find(c, NAME);
        ck_assert_ptr_nonnull(p);
        ck_assert_str_eq(p->release->manifest->version, "1.0.0");
        ck_assert_str_eq(p->marketplace, "acme");
        ck_assert(p->signed_);
        ck_assert_uint_eq(p->image.spec.protocol, 1);
        ck_assert_int_ge(p->image.binary_fd, 0);

        /* A newer version with the same question: accepted, the old one leaves the store. */
        release_make(top, "v1.1.0", NAME, "1.1.0", Q1, NULL, true);
        ck_assert_int_eq(install(c, acme, "v1.1.0", NULL, &res), 0);
        ck_assert_str_eq(res.replaced, "1.0.0");
        ck_assert_str_eq(res.plugin->release->manifest->version, "1.1.0");
        catalog_install_result_done(&res);
        ck_assert_uint_eq(stored_versions(NAME, version, sizeof(version)), 1);
        ck_assert_str_eq(version, "1.1.0");

        /* A downgrade and the same version again: refused, nothing changes. */
        release_make(top, "v1.0.5", NAME, "1.0.5", Q1, NULL, true);
        ck_assert_int_eq(install(c, acme, "v1.0.5", NULL, &res), -EPERM);
        ck_assert_int_eq(res.status, CATALOG_UPDATE_REFUSED);
        ck_assert_int_eq(res.verdict, UPDATE_REFUSED_NOT_NEWER);
        ck_assert_str_eq(res.installed, "1.1.0");
        catalog_install_result_done(&res);
        ck_assert_int_eq(install(c, acme, "v1.1.0", NULL, &res), -EPERM);
        ck_assert_int_eq(res.verdict, UPDATE_REFUSED_NOT_NEWER);
        catalog_install_result_done(&res);

        /* A new question without a new major version: refused outright. */
        release_make(top, "v1.2.0", NAME, "1.2.0", Q2, NULL, true);
        ck_assert_int_eq(install(c, acme, "v1.2.0", NAME, &res), -EPERM);
        ck_assert_int_eq(res.status, CATALOG_UPDATE_REFUSED);
        ck_assert_int_eq(res.verdict, UPDATE_REFUSED_MEANING);
        catalog_install_result_done(&res);

        /* A new major version changing the question: only with the typed name. */
        release_make(top, "v2.0.0", NAME, "2.0.0", Q2, NULL, true);
        ck_assert_int_eq(install(c, acme, "v2.0.0", NULL, &res), -EPERM);
        ck_assert_int_eq(res.status, CATALOG_NEEDS_TYPED_NAME);
        ck_assert_ptr_nonnull(res.manifest);
        ck_assert_str_eq(res.manifest->question, Q2);
        catalog_install_result_done(&res);
        ck_assert_int_eq(install(c, acme, "v2.0.0", "text.is-utf", &res), -EPERM);
        ck_assert_int_eq(res.status, CATALOG_NEEDS_TYPED_NAME);
        catalog_install_result_done(&res);
        ck_assert_int_eq(install(c, acme, "v2.0.0", NAME " ", &res), -EPERM);
        catalog_install_result_done(&res);
        ck_assert_str_eq(catalog_find(c, NAME)->release->manifest->version, "1.1.0");
        ck_assert_int_eq(install(c, acme, "v2.0.0", NAME, &res), 0);
        ck_assert_str_eq(res.replaced, "1.1.0");
        catalog_install_result_done(&res);
        ck_assert_str_eq(catalog_find(c, NAME)->release->manifest->question, Q2);

        /* A second plugin: the catalog stays sorted by name. */
        release_make(top, "other-1", NAME2, "0.1.0", "Does the PDF have a text layer?", NULL, true);
        install_ok(c, acme, "other-1", NULL);
        ck_assert_uint_eq(catalog_n(c), 2);
        ck_assert_str_eq(catalog_get(c, 0)->release->manifest->name, NAME2);
        ck_assert_str_eq(catalog_get(c, 1)->release->manifest->name, NAME);
        ck_assert_ptr_null(catalog_get(c, 2));

        /* From disk: the same set, the same origins. */
        ck_assert_int_eq(catalog_load(statefd, NULL, NULL, &again), 0);
        ck_assert_uint_eq(catalog_n(again), 2);
        for (size_t i = 0; i < 2; i++) {
                const CatalogPlugin *a = catalog_get(c, i), *b = catalog_get(again, i);

                ck_assert_str_eq(a->release->manifest->name, b->release->manifest->name);
                ck_assert_str_eq(a->release->manifest->version, b->release->manifest->version);
                ck_assert_mem_eq(a->release->binary_sha256, b->release->binary_sha256, 32);
                ck_assert_str_eq(b->marketplace, "acme");
                ck_assert(b->signed_);
        }

        /* Removal: every version, then nothing left to remove. */
        ck_assert_int_eq(catalog_remove(c, statefd, NAME, "9.9.9"), -ENOENT);
        ck_assert_int_eq(catalog_remove(c, statefd, NAME, NULL), 0);
        ck_assert_ptr_null(catalog_find(c, NAME));
        ck_assert_uint_eq(stored_versions(NAME, NULL, 0), 0);
        ck_assert_int_eq(catalog_remove(c, statefd, NAME, NULL), -ENOENT);
        ck_assert_int_eq(catalog_remove(c, statefd, NAME2, "0.1.0"), 0);
        ck_assert_uint_eq(catalog_n(c), 0);
        ck_assert_int_eq(catalog_remove(c, statefd, "no/such", NULL), -EINVAL);
}
END_TEST

START_TEST(test_catalog_refusals) {
        _cleanup_(catalog_freep) Catalog *c = NULL;
        CatalogInstallResult res;
        ReleaseFds fds;
        int pipefd[2];

        ck_assert_int_eq(catalog_load(statefd, NULL, NULL, &c), 0);

        /* Signed for another version's tag. */
        release_make(top, "wrongtag", NAME, "1.0.0", Q1, "refs/tags/" NAME "/v1.0.1", true);
        ck_assert_int_lt(install(c, acme, "wrongtag", NULL, &res), 0);
        ck_assert_int_eq(res.status, CATALOG_VERIFICATION_FAILED);
        ck_assert_int_eq(res.release_error.code, RELEASE_E_TAG);
        catalog_install_result_done(&res);

        /* A pipe is not a release file. */
        release_make(top, "good", NAME, "1.0.0", Q1, NULL, true);
        fds_open("good", &fds);
        ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
        int saved = fds.binary;
        fds.binary = pipefd[0];
        ck_assert_int_eq(catalog_install(c, statefd, acme, &fds, NULL, NULL, &res), -EBADFD);
        ck_assert_int_eq(res.status, CATALOG_VERIFICATION_FAILED);
        ck_assert_int_eq(res.release_error.code, RELEASE_E_MISSING_FILE);
        catalog_install_result_done(&res);
        fds.binary = saved;
        close(pipefd[0]);
        close(pipefd[1]);

        /* An index for an unsigned release, or half an index: a usage error. */
        ck_assert_int_eq(catalog_install(c, statefd, NULL, &fds, (const int[2]){fds.manifest, -1},
                                         NULL, &res),
                         -EINVAL);
        ck_assert_int_eq(catalog_install(c, statefd, acme, &fds, (const int[2]){fds.manifest, -1},
                                         NULL, &res),
                         -EINVAL);
        fds_close(&fds);
        ck_assert_uint_eq(catalog_n(c), 0);
        ck_assert_uint_eq(stored_versions(NAME, NULL, 0), 0);
}
END_TEST

/* Writes index.json listing tag's release (digests as given) into top/index/ and signs it. */
static void make_index(const char *name, const char *version, const uint8_t m_sha[32],
                       const uint8_t b_sha[32]) {
        char hex_m[65], hex_b[65];

        for (int i = 0; i < 32; i++) {
                snprintf(hex_m + 2 * i, 3, "%02x", m_sha[i]);
                snprintf(hex_b + 2 * i, 3, "%02x", b_sha[i]);
        }
        sh("mkdir -p %s/index && printf "
           "'{\"name\":\"acme\",\"version\":1,\"expires\":\"2099-12-31T23:59:59Z\",\"releases\":[{"
           "\"name\":\"%s\","
           "\"version\":\"%s\",\"manifest_sha256\":\"%s\",\"binary_sha256\":\"%s\"}]}' "
           "> %s/index/index.json && %s sign %s/root --identity '" WORKFLOW
           "refs/tags/index' --issuer " ISSUER " --ref refs/tags/index %s/index/index.json "
           ">/dev/null",
           top, name, version, hex_m, hex_b, top, getenv("LOCKD_SIGN"), top, top);
}

START_TEST(test_catalog_index) {
        _cleanup_(catalog_freep) Catalog *c = NULL;
        _cleanup_(release_freep) Release *rel = NULL;
        CatalogInstallResult res;
        ReleaseError err;
        ReleaseFds fds;
        int idx[2];
        uint8_t wrong[32] = {1};

        ck_assert_int_eq(catalog_load(statefd, NULL, NULL, &c), 0);
        release_make(top, "good", NAME, "1.0.0", Q1, NULL, true);
        fds_open("good", &fds);
        ck_assert_int_eq(release_verify_fds(&acme_local, &fds, &rel, &err), 0);

        /* Listed with another binary digest: refused. */
        make_index(NAME, "1.0.0", rel->manifest_sha256, wrong);
        idx[0] = release_open(top, "index", "index.json");
        idx[1] = release_open(top, "index", "index.json.sigstore.json");
        ck_assert_int_lt(catalog_install(c, statefd, acme, &fds, idx, NULL, &res), 0);
        ck_assert_int_eq(res.status, CATALOG_VERIFICATION_FAILED);
        ck_assert_int_eq(res.release_error.code, RELEASE_E_INDEX_MISMATCH);
        catalog_install_result_done(&res);
        close(idx[0]);
        close(idx[1]);

        /* Listed as it is: installed. */
        make_index(NAME, "1.0.0", rel->manifest_sha256, rel->binary_sha256);
        idx[0] = release_open(top, "index", "index.json");
        idx[1] = release_open(top, "index", "index.json.sigstore.json");
        ck_assert_int_eq(catalog_install(c, statefd, acme, &fds, idx, NULL, &res), 0);
        catalog_install_result_done(&res);
        close(idx[0]);
        close(idx[1]);
        fds_close(&fds);
        ck_assert_ptr_nonnull(catalog_find(c, NAME));
}
END_TEST

static void on_skip(const char *name, const char *version, int error, const char *message,
                    void *userdata) {
        int *n = userdata;

        ck_assert_str_eq(name, NAME);
        ck_assert_str_eq(version, "1.0.0");
        ck_assert_int_eq(error, -EKEYREJECTED);
        ck_assert_ptr_nonnull(strstr(message, "STORE_E_DIGEST_MISMATCH"));
        (*n)++;
}

START_TEST(test_catalog_tampered_skipped) {
        _cleanup_(catalog_freep) Catalog *c = NULL, *again = NULL;
        int skipped = 0;

        ck_assert_int_eq(catalog_load(statefd, NULL, NULL, &c), 0);
        release_make(top, "good", NAME, "1.0.0", Q1, NULL, true);
        install_ok(c, acme, "good", NULL);

        sh("chmod u+w %s/state/plugins/" NAME "/1.0.0/plugin && printf x >> "
           "%s/state/plugins/" NAME "/1.0.0/plugin",
           top, top);
        ck_assert_int_eq(catalog_load(statefd, on_skip, &skipped, &again), 0);
        ck_assert_int_eq(skipped, 1);
        ck_assert_uint_eq(catalog_n(again), 0);
        ck_assert_ptr_null(catalog_find(again, NAME));

        /* A fresh install of that very version replaces the broken copy. */
        install_ok(again, acme, "good", NULL);
        catalog_free(again);
        again = NULL;
        skipped = 0;
        ck_assert_int_eq(catalog_load(statefd, on_skip, &skipped, &again), 0);
        ck_assert_int_eq(skipped, 0);
        ck_assert_ptr_nonnull(catalog_find(again, NAME));

        /* The origin is checked like the release's files: no passing a plugin off as another
         * marketplace's. */
        sh("chmod u+w %s/state/plugins/" NAME "/1.0.0/origin && sed -i s/acme/evil/ "
           "%s/state/plugins/" NAME "/1.0.0/origin",
           top, top);
        catalog_free(again);
        again = NULL;
        ck_assert_int_eq(catalog_load(statefd, on_skip, &skipped, &again), 0);
        ck_assert_int_eq(skipped, 1);
        ck_assert_ptr_null(catalog_find(again, NAME));
}
END_TEST

START_TEST(test_catalog_unsigned_and_origins) {
        _cleanup_(catalog_freep) Catalog *c = NULL, *again = NULL;
        CatalogInstallResult res;
        const CatalogPlugin *p;

        ck_assert_int_eq(catalog_load(statefd, NULL, NULL, &c), 0);
        release_make(top, "unsigned", NAME, "1.0.0", Q1, NULL, false);
        install_ok(c, NULL, "unsigned", NULL);
        p = catalog_find(c, NAME);
        ck_assert(!p->signed_);
        ck_assert_ptr_null(p->marketplace);
        ck_assert_ptr_null(p->release->san);

        ck_assert_int_eq(catalog_load(statefd, NULL, NULL, &again), 0);
        p = catalog_find(again, NAME);
        ck_assert_ptr_nonnull(p);
        ck_assert(!p->signed_);
        ck_assert_ptr_null(p->marketplace);

        /* Unsigned to signed, and one marketplace to another, take the typed name even when the
         * question stays. */
        release_make(top, "signed", NAME, "1.0.1", Q1, NULL, true);
        ck_assert_int_eq(install(c, acme, "signed", NULL, &res), -EPERM);
        ck_assert_int_eq(res.status, CATALOG_NEEDS_TYPED_NAME);
        catalog_install_result_done(&res);
        install_ok(c, acme, "signed", NAME);
        ck_assert_str_eq(catalog_find(c, NAME)->marketplace, "acme");

        release_make(top, "moved", NAME, "1.0.2", Q1, NULL, true);
        ck_assert_int_eq(install(c, other, "moved", NULL, &res), -EPERM);
        ck_assert_int_eq(res.status, CATALOG_NEEDS_TYPED_NAME);
        catalog_install_result_done(&res);
        install_ok(c, other, "moved", NAME);
        ck_assert_str_eq(catalog_find(c, NAME)->marketplace, "other");

        release_make(top, "back", NAME, "1.0.3", Q1, NULL, false);
        ck_assert_int_eq(install(c, NULL, "back", NULL, &res), -EPERM);
        ck_assert_int_eq(res.status, CATALOG_NEEDS_TYPED_NAME);
        catalog_install_result_done(&res);
}
END_TEST

static void *hammer(void *arg) {
        const CatalogPlugin *p = arg;

        for (int i = 0; i < 100000; i++)
                catalog_plugin_unref(catalog_plugin_ref(p));
        return NULL;
}

START_TEST(test_catalog_refcount) {
        _cleanup_(catalog_freep) Catalog *c = NULL;
        CatalogPlugin *held;
        pthread_t t[4];
        struct stat st;
        int seals;

        ck_assert_int_eq(catalog_load(statefd, NULL, NULL, &c), 0);
        release_make(top, "good", NAME, "1.0.0", Q1, NULL, true);
        install_ok(c, acme, "good", NULL);
        held = catalog_plugin_ref(catalog_find(c, NAME));

        /* Concurrent references from worker threads leave the count where it was. */
        for (size_t i = 0; i < ELEMENTSOF(t); i++)
                ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, held), 0);
        for (size_t i = 0; i < ELEMENTSOF(t); i++)
                ck_assert_int_eq(pthread_join(t[i], NULL), 0);
        ck_assert_uint_eq(__atomic_load_n(&held->n_ref, __ATOMIC_SEQ_CST), 2);

        /* Removed from the catalog and the store, the held plugin is whole: its sealed binary
         * still there, its manifest readable. */
        ck_assert_int_eq(catalog_remove(c, statefd, NAME, NULL), 0);
        ck_assert_ptr_null(catalog_find(c, NAME));
        ck_assert_uint_eq(__atomic_load_n(&held->n_ref, __ATOMIC_SEQ_CST), 1);
        ck_assert_int_eq(fstat(held->image.binary_fd, &st), 0);
        ck_assert_int_gt(st.st_size, 0);
        seals = fcntl(held->image.binary_fd, F_GET_SEALS);
        ck_assert_int_eq(seals & MEMFD_SEALS_IMMUTABLE, MEMFD_SEALS_IMMUTABLE);
        ck_assert_str_eq(held->release->manifest->question, Q1);
        ck_assert_ptr_null(catalog_plugin_unref(held));
}
END_TEST

static Suite *catalog_suite(void) {
        Suite *s = suite_create("catalog");
        const CaseOptions each = {.timeout = 120, .setup = setup, .teardown = teardown};

        suite_add_case(s, &each, test_catalog_install_update_reload);
        suite_add_case(s, &each, test_catalog_refusals);
        suite_add_case(s, &each, test_catalog_index);
        suite_add_case(s, &each, test_catalog_tampered_skipped);
        suite_add_case(s, &each, test_catalog_unsigned_and_origins);
        suite_add_case(s, &each, test_catalog_refcount);
        return s;
}

int main(void) {
        return check_run(catalog_suite());
}
