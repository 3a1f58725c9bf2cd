/* Unit tests of the plugin store, update rules, index.json and the release checks that need no
 * real Sigstore bundle: atomic install and load, tampering, removal, SemVer and typed names,
 * every case under tests/data/index, digest mismatches, the release tag and file handling. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check-run.h"
#include "tmp-dir.h"
#include "fd-util.h"
#include "index.h"
#include "codec.h"
#include "macro.h"
#include "manifest.h"
#include "marketplace.h"
#include "release.h"
#include "sigstore-util.h"
#include "store.h"
#include "update.h"

#define NAME "pdf.has-blank-page"

static const char *data_dir(void) {
        const char *d = getenv("LOCKD_TEST_DATA");
        return d ? d : "tests/data";
}

static char *manifest_text(const char *version, const char *question, const char *one,
                           const char *zero) {
        char *s = NULL;

        ck_assert_int_ge(asprintf(&s,
                                  "name = \"%s\"\nversion = \"%s\"\nprotocol = 1\n"
                                  "question = \"%s\"\none = \"%s\"\nzero = \"%s\"\n"
                                  "accepts = [\"application/pdf\"]\n"
                                  "limits = { cpu_s = 20, memory = \"512MiB\", timeout_s = 30 }\n",
                                  NAME, version, question, one, zero),
                         0);
        return s;
}

#define Q    "Does the PDF have at least one blank page?"
#define ONE  "at least one page paints nothing"
#define ZERO "every page paints something"

static Manifest *manifest_new(const char *version, const char *q, const char *one,
                              const char *zero) {
        _cleanup_free_ char *t = manifest_text(version, q, one, zero);
        Manifest *m = NULL;
        ManifestDiag diag = {};

        ck_assert_msg(manifest_parse(t, strlen(t), &m, &diag) == 0, "manifest: %s", diag.message);
        return m;
}

static Manifest *manifest_named(const char *name, const char *version) {
        _cleanup_free_ char *t = NULL;
        Manifest *m = NULL;
        ManifestDiag diag = {};

        ck_assert_int_ge(asprintf(&t,
                                  "name = \"%s\"\nversion = \"%s\"\nprotocol = 1\n"
                                  "question = \"" Q "\"\none = \"" ONE "\"\nzero = \"" ZERO "\"\n"
                                  "accepts = [\"application/pdf\"]\n"
                                  "limits = { cpu_s = 20, memory = \"512MiB\", timeout_s = 30 }\n",
                                  name, version),
                         0);
        ck_assert_msg(manifest_parse(t, strlen(t), &m, &diag) == 0, "manifest: %s", diag.message);
        return m;
}

/* A Release as release_verify() would return it, without signatures (the store does not look at
 * them). */
static Release *release_fake(const char *version, const char *binary) {
        Release *r = calloc(1, sizeof(*r));
        ManifestDiag diag = {};

        ck_assert_ptr_nonnull(r);
        r->manifest_data = manifest_text(version, Q, ONE, ZERO);
        r->manifest_len = strlen(r->manifest_data);
        ck_assert_int_eq(manifest_parse(r->manifest_data, r->manifest_len, &r->manifest, &diag), 0);
        r->manifest_bundle = strdup("{\"manifest\": \"bundle\"}");
        r->manifest_bundle_len = strlen(r->manifest_bundle);
        r->binary_bundle = strdup("{\"binary\": \"bundle\"}");
        r->binary_bundle_len = strlen(r->binary_bundle);
        r->binary_fd = memfd_from_buffer(binary, strlen(binary), "plugin");
        ck_assert_int_ge(r->binary_fd, 0);
        r->binary_size = strlen(binary);
        sha256((const uint8_t *)r->manifest_data, r->manifest_len, r->manifest_sha256);
        sha256((const uint8_t *)binary, strlen(binary), r->binary_sha256);
        return r;
}

static char *read_path(const char *path, size_t *len) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        char *buf = NULL;

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(read_full_fd(fd, 64 * MiB, &buf, len), 0);
        close(fd);
        return buf;
}

static void write_path(const char *path, const char *data) {
        int fd;

        (void)chmod(path, 0644);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(loop_write(fd, data, strlen(data)), 0);
        close(fd);
}

static unsigned count_entries(const char *path) {
        DIR *d = opendir(path);
        struct dirent *de;
        unsigned n = 0;

        ck_assert_ptr_nonnull(d);
        while ((de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                        n++;
        closedir(d);
        return n;
}

/* ---- the store ---- */

START_TEST(test_store_roundtrip) {
        _cleanup_(release_freep) Release *rel = release_fake("1.2.3", "\x7f"
                                                                      "ELF binary bytes");
        _cleanup_(release_freep) Release *loaded = NULL;
        TmpDir t;
        StoreError err = {};
        char path[256], hex[65];
        size_t len;
        _cleanup_free_ char *digests = NULL, *binary = NULL;

        tmpdir_new(&t);
        ck_assert_int_eq(store_install(t.fd, rel, &err), 0);
        ck_assert_int_eq(err.code, STORE_OK);

        /* Exactly the five files, no temporary name left behind, nothing else in the name dir. */
        snprintf(path, sizeof(path), "%s/plugins/" NAME "/1.2.3", t.path);
        ck_assert_uint_eq(count_entries(path), 5);
        snprintf(path, sizeof(path), "%s/plugins/" NAME, t.path);
        ck_assert_uint_eq(count_entries(path), 1);

        snprintf(path, sizeof(path), "%s/plugins/" NAME "/1.2.3/digests", t.path);
        digests = read_path(path, &len);
        hex_encode(rel->binary_sha256, 32, hex);
        ck_assert_ptr_nonnull(strstr(digests, hex));
        ck_assert_ptr_nonnull(strstr(digests, "  plugin\n"));
        snprintf(path, sizeof(path), "%s/plugins/" NAME "/1.2.3/plugin", t.path);
        binary = read_path(path, &len);
        ck_assert_str_eq(binary, "\x7f"
                                 "ELF binary bytes");

        ck_assert_int_eq(store_load(t.fd, NAME, "1.2.3", &loaded, &err), 0);
        ck_assert_str_eq(loaded->manifest->name, NAME);
        ck_assert_str_eq(loaded->manifest->version, "1.2.3");
        ck_assert_mem_eq(loaded->manifest_sha256, rel->manifest_sha256, 32);
        ck_assert_mem_eq(loaded->binary_sha256, rel->binary_sha256, 32);
        ck_assert_str_eq(loaded->manifest_bundle, rel->manifest_bundle);
        ck_assert_str_eq(loaded->binary_bundle, rel->binary_bundle);
        ck_assert_uint_eq(loaded->binary_size, strlen("\x7f"
                                                      "ELF binary bytes"));
        ck_assert_int_eq(fcntl(loaded->binary_fd, F_GET_SEALS) & MEMFD_SEALS_IMMUTABLE,
                         MEMFD_SEALS_IMMUTABLE);
        ck_assert_ptr_null(loaded->san);

        /* Installing the same version again is refused and changes nothing. */
        ck_assert_int_eq(store_install(t.fd, rel, &err), -EEXIST);
        ck_assert_int_eq(err.code, STORE_E_EXISTS);
        snprintf(path, sizeof(path), "%s/plugins/" NAME, t.path);
        ck_assert_uint_eq(count_entries(path), 1);
        tmpdir_done(&t);
}
END_TEST

START_TEST(test_store_tamper) {
        static const char *const files[] = {"plugin.toml", "plugin", "plugin.toml.sigstore.json",
                                            "plugin.sigstore.json"};
        _cleanup_(release_freep) Release *rel = release_fake("1.0.0", "binary");
        Release *sentinel = (Release *)0x1, *loaded = sentinel;
        StoreError err = {};
        TmpDir t;
        char path[256];
        size_t len;

        tmpdir_new(&t);
        ck_assert_int_eq(store_install(t.fd, rel, &err), 0);
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_free_ char *orig = NULL, *changed = NULL;

                snprintf(path, sizeof(path), "%s/plugins/" NAME "/1.0.0/%s", t.path, files[i]);
                orig = read_path(path, &len);
                changed = strdup(orig);
                changed[len / 2] ^= 0x01;
                write_path(path, changed);
                err = (StoreError){};
                ck_assert_int_eq(store_load(t.fd, NAME, "1.0.0", &loaded, &err), -EKEYREJECTED);
                ck_assert_int_eq(err.code, STORE_E_DIGEST_MISMATCH);
                ck_assert_ptr_nonnull(strstr(err.message, files[i]));
                ck_assert_ptr_eq(loaded, sentinel);
                write_path(path, orig);
                ck_assert_int_eq(store_load(t.fd, NAME, "1.0.0", &loaded, &err), 0);
                loaded = release_free(loaded);
                loaded = sentinel;
        }

        /* A symlink instead of a file. */
        snprintf(path, sizeof(path), "%s/plugins/" NAME "/1.0.0/plugin", t.path);
        ck_assert_int_eq(unlink(path), 0);
        ck_assert_int_eq(symlink("/bin/sh", path), 0);
        ck_assert_int_eq(store_load(t.fd, NAME, "1.0.0", &loaded, &err), -ENOENT);
        ck_assert_int_eq(err.code, STORE_E_MISSING_FILE);
        ck_assert_ptr_eq(loaded, sentinel);

        /* A malformed digests file. */
        snprintf(path, sizeof(path), "%s/plugins/" NAME "/1.0.0/digests", t.path);
        write_path(path, "0000  plugin.toml\n");
        ck_assert_int_eq(store_load(t.fd, NAME, "1.0.0", &loaded, &err), -EINVAL);
        ck_assert_int_eq(err.code, STORE_E_DIGESTS);
        ck_assert_int_eq(unlink(path), 0);
        ck_assert_int_eq(store_load(t.fd, NAME, "1.0.0", &loaded, &err), -ENOENT);
        ck_assert_int_eq(err.code, STORE_E_MISSING_FILE);
        ck_assert_ptr_eq(loaded, sentinel);
        tmpdir_done(&t);
}
END_TEST

START_TEST(test_store_refusals) {
        _cleanup_(release_freep) Release *rel = release_fake("1.0.0", "binary");
        Release *sentinel = (Release *)0x1, *loaded = sentinel;
        StoreError err = {};
        TmpDir t;
        char path[256];

        tmpdir_new(&t);
        ck_assert_int_eq(store_load(t.fd, NAME, "1.0.0", &loaded, &err), -ENOENT);
        ck_assert_int_eq(err.code, STORE_E_NOT_FOUND);
        ck_assert_int_eq(store_load(t.fd, "../etc", "1.0.0", &loaded, &err), -EINVAL);
        ck_assert_int_eq(err.code, STORE_E_NAME);
        ck_assert_int_eq(store_load(t.fd, NAME, "../../x", &loaded, &err), -EINVAL);
        ck_assert_int_eq(store_load(t.fd, NAME, "1.0", &loaded, &err), -EINVAL);
        ck_assert_ptr_eq(loaded, sentinel);

        /* A release whose bytes are not its digests is not stored, and leaves nothing behind. */
        rel->binary_sha256[0] ^= 1;
        ck_assert_int_eq(store_install(t.fd, rel, &err), -EKEYREJECTED);
        ck_assert_int_eq(err.code, STORE_E_DIGEST_MISMATCH);
        snprintf(path, sizeof(path), "%s/plugins/" NAME, t.path);
        ck_assert_uint_eq(count_entries(path), 0);
        rel->binary_sha256[0] ^= 1;

        /* The stored manifest must be the directory's release. */
        ck_assert_int_eq(store_install(t.fd, rel, &err), 0);
        snprintf(path, sizeof(path), "%s/plugins/" NAME "/1.0.0", t.path);
        char to[256];
        snprintf(to, sizeof(to), "%s/plugins/" NAME "/1.0.1", t.path);
        ck_assert_int_eq(rename(path, to), 0);
        ck_assert_int_eq(store_load(t.fd, NAME, "1.0.1", &loaded, &err), -EINVAL);
        ck_assert_int_eq(err.code, STORE_E_MANIFEST);
        ck_assert_ptr_eq(loaded, sentinel);
        tmpdir_done(&t);
}
END_TEST

START_TEST(test_store_list_remove) {
        static const char *const versions[] = {"1.10.0", "1.9.0", "2.0.0", "1.9.1"};
        StoreEntry *e = NULL;
        size_t n = 99;
        TmpDir t;
        char path[256];
        StoreError err = {};

        tmpdir_new(&t);
        ck_assert_int_eq(store_list(t.fd, &e, &n), 0);
        ck_assert_uint_eq(n, 0);
        ck_assert_ptr_null(e);

        for (size_t i = 0; i < ELEMENTSOF(versions); i++) {
                _cleanup_(release_freep) Release *rel = release_fake(versions[i], "bin");
                ck_assert_int_eq(store_install(t.fd, rel, &err), 0);
        }
        /* A temporary directory (as a crash would leave) and a stray file are not listed. */
        snprintf(path, sizeof(path), "%s/plugins/" NAME "/.tmp-3.0.0-0011", t.path);
        ck_assert_int_eq(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/plugins/" NAME "/README", t.path);
        write_path(path, "x");

        ck_assert_int_eq(store_list(t.fd, &e, &n), 0);
        ck_assert_uint_eq(n, 4);
        ck_assert_str_eq(e[0].version, "1.9.0");
        ck_assert_str_eq(e[1].version, "1.9.1");
        ck_assert_str_eq(e[2].version, "1.10.0");
        ck_assert_str_eq(e[3].version, "2.0.0");
        for (size_t i = 0; i < n; i++)
                ck_assert_str_eq(e[i].name, NAME);
        store_entries_free(e, n);

        ck_assert_int_eq(store_remove(t.fd, NAME, "1.9.0"), 0);
        ck_assert_int_eq(store_remove(t.fd, NAME, "1.9.0"), -ENOENT);
        ck_assert_int_eq(store_remove(t.fd, NAME, ".."), -EINVAL);
        ck_assert_int_eq(store_remove(t.fd, "x/y", "1.0.0"), -EINVAL);
        ck_assert_int_eq(store_list(t.fd, &e, &n), 0);
        ck_assert_uint_eq(n, 3);
        ck_assert_str_eq(e[0].version, "1.9.1");
        store_entries_free(e, n);

        /* Removing the last version removes the name's directory. */
        snprintf(path, sizeof(path), "%s/plugins/" NAME "/.tmp-3.0.0-0011", t.path);
        ck_assert_int_eq(rmdir(path), 0);
        snprintf(path, sizeof(path), "%s/plugins/" NAME "/README", t.path);
        ck_assert_int_eq(unlink(path), 0);
        ck_assert_int_eq(store_remove(t.fd, NAME, "1.9.1"), 0);
        ck_assert_int_eq(store_remove(t.fd, NAME, "1.10.0"), 0);
        ck_assert_int_eq(store_remove(t.fd, NAME, "2.0.0"), 0);
        snprintf(path, sizeof(path), "%s/plugins", t.path);
        ck_assert_uint_eq(count_entries(path), 0);
        ck_assert_int_eq(store_list(t.fd, &e, &n), 0);
        ck_assert_uint_eq(n, 0);
        tmpdir_done(&t);
}
END_TEST

START_TEST(test_store_error_names) {
        ck_assert_str_eq(store_error_name(STORE_E_DIGEST_MISMATCH), "STORE_E_DIGEST_MISMATCH");
        ck_assert_str_eq(store_error_name(_STORE_E_MAX), "STORE_E_UNKNOWN");
        for (int i = 0; i < _STORE_E_MAX; i++)
                ck_assert(strncmp(store_error_name(i), "STORE_", 6) == 0);
        ck_assert_str_eq(release_error_name(RELEASE_E_TAG), "RELEASE_E_TAG");
        ck_assert_str_eq(release_error_name(_RELEASE_E_MAX), "RELEASE_E_UNKNOWN");
        for (int i = 0; i < _RELEASE_E_MAX; i++)
                ck_assert(strncmp(release_error_name(i), "RELEASE_", 8) == 0);
        ck_assert_str_eq(update_verdict_name(UPDATE_NEEDS_TYPED_NAME), "UPDATE_NEEDS_TYPED_NAME");
        ck_assert_str_eq(update_verdict_name(_UPDATE_VERDICT_MAX), "UPDATE_UNKNOWN");
}
END_TEST

/* ---- updates ---- */

static void check_update(const Manifest *installed, const Manifest *new, int expect_r,
                         UpdateVerdict expect) {
        UpdateVerdict v = _UPDATE_VERDICT_MAX;

        ck_assert_int_eq(update_check(installed, new, &v), expect_r);
        ck_assert_msg(v == expect, "%s %s -> %s: %s, expected %s", installed->version, new->version,
                      new->name, update_verdict_name(v), update_verdict_name(expect));
}

START_TEST(test_update_rules) {
        _cleanup_(manifest_freep) Manifest *base = manifest_new("1.2.3", Q, ONE, ZERO);
        _cleanup_(manifest_freep) Manifest *patch = manifest_new("1.2.4", Q, ONE, ZERO);
        _cleanup_(manifest_freep) Manifest *minor = manifest_new("1.3.0", Q, ONE, ZERO);
        _cleanup_(manifest_freep) Manifest *major = manifest_new("2.0.0", Q, ONE, ZERO);
        _cleanup_(manifest_freep) Manifest *numeric = manifest_new("1.10.0", Q, ONE, ZERO);
        _cleanup_(manifest_freep) Manifest *q_minor =
                manifest_new("1.3.0", "Another question?", ONE, ZERO);
        _cleanup_(manifest_freep) Manifest *one_patch = manifest_new("1.2.4", Q, "other one", ZERO);
        _cleanup_(manifest_freep) Manifest *zero_patch =
                manifest_new("1.2.4", Q, ONE, "other zero");
        _cleanup_(manifest_freep) Manifest *q_major =
                manifest_new("2.0.0", "Another question?", ONE, ZERO);
        _cleanup_(manifest_freep) Manifest *zero_major =
                manifest_new("3.1.4", Q, ONE, "other zero");
        _cleanup_(manifest_freep) Manifest *same = manifest_new("1.2.3", Q, ONE, ZERO);
        _cleanup_(manifest_freep) Manifest *down_patch = manifest_new("1.2.2", Q, ONE, ZERO);
        _cleanup_(manifest_freep) Manifest *down_major =
                manifest_new("0.9.9", "Another question?", ONE, ZERO);
        _cleanup_(manifest_freep) Manifest *other = manifest_named("pdf.has-blank-pages", "2.0.0");
        UpdateVerdict v = UPDATE_ACCEPT;

        check_update(base, patch, 0, UPDATE_ACCEPT);
        check_update(base, minor, 0, UPDATE_ACCEPT);
        check_update(base, major, 0, UPDATE_ACCEPT);
        check_update(base, numeric, 0, UPDATE_ACCEPT);
        check_update(numeric, minor, -EPERM, UPDATE_REFUSED_NOT_NEWER); /* 1.3.0 < 1.10.0 */
        check_update(base, q_minor, -EPERM, UPDATE_REFUSED_MEANING);
        check_update(base, one_patch, -EPERM, UPDATE_REFUSED_MEANING);
        check_update(base, zero_patch, -EPERM, UPDATE_REFUSED_MEANING);
        check_update(base, q_major, 0, UPDATE_NEEDS_TYPED_NAME);
        check_update(base, zero_major, 0, UPDATE_NEEDS_TYPED_NAME);
        check_update(base, same, -EPERM, UPDATE_REFUSED_NOT_NEWER);
        check_update(base, down_patch, -EPERM, UPDATE_REFUSED_NOT_NEWER);
        check_update(base, down_major, -EPERM, UPDATE_REFUSED_NOT_NEWER);
        check_update(base, other, -EPERM, UPDATE_REFUSED_OTHER_NAME);

        /* Usage errors leave *ret alone. */
        ck_assert_int_eq(update_check(NULL, base, &v), -EINVAL);
        ck_assert_int_eq(update_check(base, NULL, &v), -EINVAL);
        ck_assert_int_eq(update_check(base, patch, NULL), -EINVAL);
        ck_assert_int_eq(v, UPDATE_ACCEPT);

        ck_assert(update_confirm(q_major, NAME));
        ck_assert(!update_confirm(q_major, "PDF.has-blank-page"));
        ck_assert(!update_confirm(q_major, " " NAME));
        ck_assert(!update_confirm(q_major, NAME "\n"));
        ck_assert(!update_confirm(q_major, "pdf.has-blank-pag"));
        ck_assert(!update_confirm(q_major, "pdf.has-blank-pages"));
        ck_assert(!update_confirm(q_major, ""));
        ck_assert(!update_confirm(q_major, NULL));
        ck_assert(!update_confirm(NULL, NAME));
}
END_TEST

/* ---- index.json ---- */

static unsigned run_index_dir(const char *kind, bool valid) {
        char path[4096];
        unsigned count = 0;
        DIR *dir;
        struct dirent *de;

        snprintf(path, sizeof(path), "%s/index/%s", data_dir(), kind);
        dir = opendir(path);
        ck_assert_msg(dir, "cannot open %s (set LOCKD_TEST_DATA)", path);
        while ((de = readdir(dir))) {
                MarketplaceIndex *sentinel = (MarketplaceIndex *)0x1, *idx = sentinel;
                ReleaseError err = {};
                _cleanup_free_ char *json = NULL;
                char file[4096 + 256 + 16];
                size_t len;
                int r;

                if (de->d_name[0] == '.')
                        continue;
                count++;
                snprintf(file, sizeof(file), "%s/%s/index.json", path, de->d_name);
                json = read_path(file, &len);
                r = index_parse(json, len, &idx, &err);
                if (valid) {
                        ck_assert_msg(r == 0, "valid/%s refused: %s", de->d_name, err.message);
                        ck_assert_int_eq(err.code, RELEASE_OK);
                        index_free(idx);
                } else {
                        ck_assert_msg(r == -EINVAL, "invalid/%s: %d", de->d_name, r);
                        ck_assert_int_eq(err.code, RELEASE_E_INDEX);
                        ck_assert_msg(err.message[0], "invalid/%s: no message", de->d_name);
                        ck_assert_ptr_eq(idx, sentinel);
                }
        }
        closedir(dir);
        return count;
}

START_TEST(test_index_data) {
        ck_assert_uint_ge(run_index_dir("valid", true), 4);
        ck_assert_uint_ge(run_index_dir("invalid", false), 20);
}
END_TEST

START_TEST(test_index_content) {
        _cleanup_(index_freep) MarketplaceIndex *idx = NULL;
        _cleanup_free_ char *json = NULL, *big = NULL;
        ReleaseError err = {};
        char path[4096];
        size_t len;

        snprintf(path, sizeof(path), "%s/index/valid/versions-and-names/index.json", data_dir());
        json = read_path(path, &len);
        ck_assert_int_eq(index_parse(json, len, &idx, &err), 0);
        ck_assert_str_eq(idx->name, "acme");
        ck_assert_uint_eq(idx->version, 1);
        ck_assert_int_eq(idx->expires, INT64_C(4102444799)); /* 2099-12-31T23:59:59Z */
        ck_assert_uint_eq(idx->n_releases, 3);
        ck_assert_str_eq(idx->releases[2].name, "zip.has-encrypted-entry");
        ck_assert_uint_eq(idx->releases[0].manifest_sha256[0], 0xaa);
        ck_assert_uint_eq(idx->releases[0].binary_sha256[1], 0x23);
        ck_assert_ptr_nonnull(index_find(idx, NAME, "1.0.1"));
        ck_assert_ptr_null(index_find(idx, NAME, "1.0.2"));

        /* Over 1 MiB: refused before parsing. */
        big = malloc(INDEX_BYTES_MAX + 1);
        memset(big, ' ', INDEX_BYTES_MAX + 1);
        ck_assert_int_eq(index_parse(big, INDEX_BYTES_MAX + 1, &idx, &err), -EFBIG);
        ck_assert_int_eq(err.code, RELEASE_E_TOO_LARGE);
}
END_TEST

/* "expires" has one spelling per instant, and versions compare as SemVer. */
START_TEST(test_index_time_and_versions) {
        static const char *const refused[] = {
                "2099-12-31T23:59:59",    "2099-12-31 23:59:59Z",
                "2099-12-31T23:59:59.0Z", "2099-12-31T23:59:59+00:00",
                "2099-02-29T00:00:00Z",   "2099-13-01T00:00:00Z",
                "2099-12-31T24:00:00Z",   "1969-12-31T23:59:59Z",
                "2099-1-31T23:59:59Z",    "",
        };
        char out[INDEX_TIME_SIZE];
        int64_t t = -1;

        ck_assert_int_eq(index_parse_time("2099-12-31T23:59:59Z", &t), 0);
        ck_assert_int_eq(t, INT64_C(4102444799));
        ck_assert_int_eq(index_parse_time("2096-02-29T12:00:00Z", &t), 0);
        ck_assert_int_eq(index_format_time(t, out), 0);
        ck_assert_str_eq(out, "2096-02-29T12:00:00Z");
        ck_assert_int_eq(index_format_time(0, out), 0);
        ck_assert_str_eq(out, "1970-01-01T00:00:00Z");
        for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
                t = 42;
                ck_assert_msg(index_parse_time(refused[i], &t) == -EINVAL, "%s", refused[i]);
                ck_assert_int_eq(t, 42);
        }
        ck_assert_int_gt(index_version_compare("1.10.0", "1.9.0"), 0);
        ck_assert_int_lt(index_version_compare("1.0.9", "1.0.10"), 0);
        ck_assert_int_eq(index_version_compare("2.0.0", "2.0.0"), 0);
}
END_TEST

START_TEST(test_index_check_release) {
        _cleanup_(release_freep) Release *rel = release_fake("1.2.3", "binary");
        _cleanup_(index_freep) MarketplaceIndex *idx = NULL;
        _cleanup_free_ char *json = NULL;
        char mhex[65], bhex[65];
        ReleaseError err = {};

        hex_encode(rel->manifest_sha256, 32, mhex);
        hex_encode(rel->binary_sha256, 32, bhex);
        ck_assert_int_ge(asprintf(&json,
                                  "{\"name\": \"official\", \"version\": 7, \"expires\": "
                                  "\"2099-12-31T23:59:59Z\", \"releases\": ["
                                  "{\"name\": \"%s\", \"version\": \"1.2.3\", \"manifest_sha256\": "
                                  "\"%s\", \"binary_sha256\": \"%s\"},"
                                  "{\"name\": \"%s\", \"version\": \"1.2.4\", \"manifest_sha256\": "
                                  "\"%s\", \"binary_sha256\": \"%s\"}]}",
                                  NAME, mhex, bhex, NAME, mhex, bhex),
                         0);
        ck_assert_int_eq(index_parse(json, strlen(json), &idx, &err), 0);
        ck_assert_int_eq(index_check_release(idx, rel, &err), 0);

        rel->binary_sha256[31] ^= 0x80;
        ck_assert_int_eq(index_check_release(idx, rel, &err), -EKEYREJECTED);
        ck_assert_int_eq(err.code, RELEASE_E_INDEX_MISMATCH);
        ck_assert_ptr_nonnull(strstr(err.message, "binary"));
        rel->binary_sha256[31] ^= 0x80;

        rel->manifest_sha256[0] ^= 0x01;
        ck_assert_int_eq(index_check_release(idx, rel, &err), -EKEYREJECTED);
        ck_assert_int_eq(err.code, RELEASE_E_INDEX_MISMATCH);
        ck_assert_ptr_nonnull(strstr(err.message, "manifest"));
        rel->manifest_sha256[0] ^= 0x01;
        ck_assert_int_eq(index_check_release(idx, rel, &err), 0);

        /* A release the index does not list. */
        _cleanup_(release_freep) Release *absent = release_fake("1.2.5", "binary");
        ck_assert_int_eq(index_check_release(idx, absent, &err), -ENOENT);
        ck_assert_int_eq(err.code, RELEASE_E_INDEX_MISSING);
}
END_TEST

/* ---- releases ---- */

START_TEST(test_release_ref) {
        static const char *const refused[] = {
                "",
                "refs/tags/" NAME "/1.2.3",
                "refs/tags/" NAME "/v1.2.4",
                "refs/tags/" NAME "/v1.2.30",
                "refs/tags/" NAME "/v1.2",
                "refs/tags/" NAME "/v1.2.3/x",
                "refs/tags/" NAME "/v1.2.3 ",
                "refs/tags/" NAME "/V1.2.3",
                "refs/heads/" NAME "/v1.2.3",
                "refs/tags/" NAME "-evil/v1.2.3",
                "refs/tags/x" NAME "/v1.2.3",
                "refs/tags/pdf/v1.2.3",
                "refs/tags/v1.2.3",
                "tags/" NAME "/v1.2.3",
                "/refs/tags/" NAME "/v1.2.3",
                "refs/tags/" NAME "/v1.2.3-rc.1",
                "refs/tags/" NAME "v1.2.3",
        };
        _cleanup_(manifest_freep) Manifest *m = manifest_new("1.2.3", Q, ONE, ZERO);

        ck_assert_int_eq(release_check_ref(m, "refs/tags/" NAME "/v1.2.3"), 0);
        ck_assert_int_eq(release_check_ref(m, NULL), -EKEYREJECTED);
        ck_assert_int_eq(release_check_ref(NULL, "refs/tags/" NAME "/v1.2.3"), -EKEYREJECTED);
        for (size_t i = 0; i < ELEMENTSOF(refused); i++)
                ck_assert_msg(release_check_ref(m, refused[i]) == -EKEYREJECTED, "accepted %s",
                              refused[i]);
}
END_TEST

START_TEST(test_release_names) {
        ck_assert(manifest_name_valid(NAME));
        ck_assert(manifest_name_valid("a.b"));
        ck_assert(!manifest_name_valid("pdf"));
        ck_assert(!manifest_name_valid(".."));
        ck_assert(!manifest_name_valid("a..b"));
        ck_assert(!manifest_name_valid("a/b.c"));
        ck_assert(!manifest_name_valid("-a.b"));
        ck_assert(!manifest_name_valid(""));
        ck_assert(!manifest_name_valid(NULL));
        ck_assert(manifest_version_valid("0.0.0"));
        ck_assert(manifest_version_valid("10.20.30"));
        ck_assert(!manifest_version_valid("01.0.0"));
        ck_assert(!manifest_version_valid("1.0"));
        ck_assert(!manifest_version_valid("1.0.0.0"));
        ck_assert(!manifest_version_valid("1.0.0-rc.1"));
        ck_assert(!manifest_version_valid("1.0.0+b"));
        ck_assert(!manifest_version_valid("1234567890.0.0"));
        ck_assert(!manifest_version_valid(NULL));
}
END_TEST

static void put(int dfd, const char *name, const char *data, size_t len) {
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(loop_write(fd, data, len), 0);
        close(fd);
}

static void check_release_refused(int dfd, int expect_r, ReleaseErrorCode expect,
                                  const char *what) {
        Marketplace m = {.name = (char *)"official",
                         .issuer = (char *)"https://issuer",
                         .identity_pattern = (char *)"^https://x/$"};
        Release *sentinel = (Release *)0x1, *rel = sentinel;
        ReleaseError err = {};

        ck_assert_int_eq(release_verify(&m, dfd, &rel, &err), expect_r);
        ck_assert_msg(err.code == expect, "%s: %s (%s)", what, release_error_name(err.code),
                      err.message);
        ck_assert_ptr_nonnull(strstr(err.message, what));
        ck_assert_ptr_eq(rel, sentinel);
}

/* The file handling of release_verify(), up to the point where a real bundle is needed. */
START_TEST(test_release_files) {
        _cleanup_free_ char *toml = manifest_text("1.2.3", Q, ONE, ZERO), *big = NULL;
        TmpDir t;

        tmpdir_new(&t);
        check_release_refused(t.fd, -ENOENT, RELEASE_E_MISSING_FILE, "plugin.toml");
        put(t.fd, "plugin.toml", toml, strlen(toml));
        check_release_refused(t.fd, -ENOENT, RELEASE_E_MISSING_FILE, "plugin.toml.sigstore.json");
        put(t.fd, "plugin.toml.sigstore.json", "{}", 2);
        check_release_refused(t.fd, -ENOENT, RELEASE_E_MISSING_FILE, "plugin.sigstore.json");
        put(t.fd, "plugin.sigstore.json", "{}", 2);
        check_release_refused(t.fd, -ENOENT, RELEASE_E_MISSING_FILE, "plugin");

        /* A FIFO is not a regular file (and must not block the reader). */
        ck_assert_int_eq(mkfifoat(t.fd, "plugin", 0644), 0);
        check_release_refused(t.fd, -EBADFD, RELEASE_E_MISSING_FILE, "plugin");
        ck_assert_int_eq(unlinkat(t.fd, "plugin", 0), 0);
        /* A symlink is never followed. */
        ck_assert_int_eq(symlinkat("/bin/true", t.fd, "plugin"), 0);
        check_release_refused(t.fd, -ELOOP, RELEASE_E_MISSING_FILE, "plugin");
        ck_assert_int_eq(unlinkat(t.fd, "plugin", 0), 0);

        put(t.fd, "plugin", "#!/bin/sh\necho 1\n", 17);
        check_release_refused(t.fd, -EINVAL, RELEASE_E_BINARY, "plugin");
        put(t.fd, "plugin", "", 0);
        check_release_refused(t.fd, -EINVAL, RELEASE_E_BINARY, "plugin");

        put(t.fd, "plugin.toml", "name = \"x\"\n", 11);
        check_release_refused(t.fd, -EINVAL, RELEASE_E_MANIFEST, "plugin.toml");

        big = malloc(RELEASE_BUNDLE_MAX + 1);
        memset(big, ' ', RELEASE_BUNDLE_MAX + 1);
        put(t.fd, "plugin.toml", big, RELEASE_MANIFEST_MAX + 1);
        check_release_refused(t.fd, -EFBIG, RELEASE_E_TOO_LARGE, "plugin.toml");
        put(t.fd, "plugin.toml", toml, strlen(toml));
        put(t.fd, "plugin.sigstore.json", big, RELEASE_BUNDLE_MAX + 1);
        check_release_refused(t.fd, -EFBIG, RELEASE_E_TOO_LARGE, "plugin.sigstore.json");

        ck_assert_int_eq(unlinkat(t.fd, "plugin.toml", 0), 0);
        ck_assert_int_eq(symlinkat("plugin.sigstore.json", t.fd, "plugin.toml"), 0);
        check_release_refused(t.fd, -ELOOP, RELEASE_E_MISSING_FILE, "plugin.toml");
        tmpdir_done(&t);
}
END_TEST

START_TEST(test_marketplace_usage) {
        Marketplace m = {.name = (char *)"official",
                         .issuer = (char *)"https://issuer",
                         .identity_pattern = (char *)"^https://x/$"};
        SigstoreResult res;

        /* No trusted root: a usage error, never an acceptance. */
        memset(&res, 0xaa, sizeof(res));
        ck_assert_int_eq(marketplace_verify_file(&m, "x", 1, "{}", 2, &res), -EINVAL);
        ck_assert_ptr_null(res.san);
        ck_assert(res.reason[0] != 0);
        ck_assert_int_eq(marketplace_verify_file(NULL, "x", 1, "{}", 2, &res), -EINVAL);
}
END_TEST

static Suite *store_suite(void) {
        Suite *s = suite_create("store");

        suite_add_case(s, NULL, test_store_roundtrip);
        suite_add_case(s, NULL, test_store_tamper);
        suite_add_case(s, NULL, test_store_refusals);
        suite_add_case(s, NULL, test_store_list_remove);
        suite_add_case(s, NULL, test_store_error_names);
        suite_add_case(s, NULL, test_update_rules);
        suite_add_case(s, NULL, test_index_data);
        suite_add_case(s, NULL, test_index_content);
        suite_add_case(s, NULL, test_index_time_and_versions);
        suite_add_case(s, NULL, test_index_check_release);
        suite_add_case(s, NULL, test_release_ref);
        suite_add_case(s, NULL, test_release_names);
        suite_add_case(s, NULL, test_release_files);
        suite_add_case(s, NULL, test_marketplace_usage);
        return s;
}

int main(void) {
        return check_run(store_suite());
}
