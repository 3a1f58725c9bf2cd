/* Tests of tests/tools/lockd-sign against the verifier: its bundles, with their RFC 3161
 * timestamps, are accepted under its trusted root, and each --break variant is refused for exactly
 * the thing it breaks. */
#include <check.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "check-run.h"
#include "fd-util.h"
#include "sigstore-util.h"

#define IDENTITY                                                                                   \
        "https://github.com/acme/text-contains/.github/workflows/release.yml@refs/tags/"           \
        "text.contains/v1.0.0"
#define ISSUER "https://token.actions.githubusercontent.com"
#define REF    "refs/tags/text.contains/v1.0.0"

static char tmpdir[] = "/tmp/lockd-test-signer-XXXXXX";
static char ca_dir[PATH_MAX], other_dir[PATH_MAX];

/* One --break variant and the start of the reason the verifier must give (NULL: the verifier
 * accepts, the caller refuses on the source ref). */
static const struct {
        const char *kind;
        const char *reason;
} breaks[] = {
        {"identity", "certificate identity"},
        {"tag", NULL},
        {"expired", "certificate chain not valid"},
        {"set", "signed entry timestamp does not verify"},
        {"proof", "inclusion proof does not verify"},
        {"digest", "message digest in the bundle does not match"},
        {"tsa", "RFC 3161 timestamp not verified by a trusted TSA"},
};

static const char *signer(void) {
        const char *s = getenv("LOCKD_SIGN");
        return s ? s : "build/tests/tools/lockd-sign";
}

/* Runs lockd-sign with the NULL-terminated argv (argv[0] is set here); returns its exit status. */
static int run_signer(char **argv) {
        argv[0] = (char *)signer();
        pid_t pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0) {
                /* What lockd-sign says it wrote goes to its stdout: not into this TAP stream. */
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

                if (null < 0 || dup2(null, STDOUT_FILENO) < 0)
                        _exit(127);
                execv(argv[0], argv);
                _exit(127);
        }
        int status;
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
                return -1;
        return WEXITSTATUS(status);
}

/* Set by setup() when it could not prepare the bundles; every test then fails with it. */
static const char *setup_error;

static bool write_text(const char *path, const char *text) {
        FILE *f = fopen(path, "we");
        if (!f)
                return false;
        bool ok = fputs(text, f) >= 0;
        return fclose(f) == 0 && ok;
}

static char *slurp(const char *path, size_t *len) {
        char *buf = NULL;

        ck_assert_msg(read_full_file(path, 64 * MiB, &buf, len) == 0, "cannot read %s", path);
        return buf;
}

static bool sign(const char *dir, const char *file, const char *brk) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", tmpdir, file);
        char *argv[] = {NULL,    "sign", (char *)dir, "--identity", IDENTITY, "--issuer", ISSUER,
                        "--ref", REF,    path,        NULL,         NULL,     NULL};
        if (brk) {
                argv[9] = "--break";
                argv[10] = (char *)brk;
                argv[11] = path;
        }
        return run_signer(argv) == 0;
}

/* Creates two private instances and signs a release directory's files and every variant once.
 * Runs in the parent (unchecked fixture) before the first test that runs, and not again for the
 * next (main() removes it all at the end): failures go to setup_error, not to ck_assert. */
static void setup(void) {
        static bool done;

        if (done)
                return;
        done = true;
        if (!mkdtemp(tmpdir)) {
                setup_error = "mkdtemp failed";
                return;
        }
        snprintf(ca_dir, sizeof(ca_dir), "%s/ca", tmpdir);
        snprintf(other_dir, sizeof(other_dir), "%s/other", tmpdir);
        if (run_signer((char *[]){NULL, "init", ca_dir, NULL}) != 0 ||
            run_signer((char *[]){NULL, "init", other_dir, NULL}) != 0) {
                setup_error = "lockd-sign init failed (is LOCKD_SIGN set?)";
                return;
        }
        char toml[PATH_MAX], plugin[PATH_MAX];
        snprintf(toml, sizeof(toml), "%s/plugin.toml", tmpdir);
        snprintf(plugin, sizeof(plugin), "%s/plugin", tmpdir);
        /* A whole manifest: lockd-sign refuses to sign one lockd would refuse. */
        if (!write_text(toml, "name = \"text.contains\"\nversion = \"1.0.0\"\nprotocol = 1\n"
                              "question = \"Does the file hold at least one byte?\"\n"
                              "one = \"the file is not empty\"\nzero = \"the file is empty\"\n"
                              "accepts = [\"text/plain\"]\n"
                              "limits = { cpu_s = 2, memory = \"64MiB\", timeout_s = 3 }\n") ||
            !write_text(plugin, "\x7f"
                                "ELF not really a plugin\n")) {
                setup_error = "cannot write the release files";
                return;
        }
        if (run_signer((char *[]){NULL, "sign", ca_dir, "--identity", IDENTITY, "--issuer", ISSUER,
                                  "--ref", REF, toml, plugin, NULL}) != 0) {
                setup_error = "lockd-sign sign failed";
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(breaks); i++) {
                char name[64], path[PATH_MAX];
                snprintf(name, sizeof(name), "art-%s", breaks[i].kind);
                snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
                if (!write_text(path, "an artifact\n") || !sign(ca_dir, name, breaks[i].kind)) {
                        setup_error = "lockd-sign sign --break failed";
                        return;
                }
        }
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static void teardown(void) {
        if (strchr(tmpdir, 'X'))
                return; /* mkdtemp never ran */
        nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Verifies tmpdir/file with its bundle under the given trusted_root.json text; the artifact by
 * bytes, or by digest only. */
static int verify_under(const char *root_json, size_t root_len, const char *file,
                        const char *identity, const char *issuer, bool by_digest,
                        SigstoreResult *res) {
        char path[PATH_MAX];
        size_t bundle_len, art_len;
        snprintf(path, sizeof(path), "%s/%s.sigstore.json", tmpdir, file);
        _cleanup_free_ char *bundle = slurp(path, &bundle_len);
        snprintf(path, sizeof(path), "%s/%s", tmpdir, file);
        _cleanup_free_ char *art = slurp(path, &art_len);

        SigstoreTrustRoot *root = NULL;
        ck_assert_int_eq(sigstore_trust_root_load(root_json, root_len, &root), 0);
        SigstoreArtifact a = {.data = (const uint8_t *)art, .size = art_len};
        if (by_digest) {
                a = (SigstoreArtifact){.have_digest = true};
                sha256((const uint8_t *)art, art_len, a.sha256);
        }
        SigstorePolicy p = {.identity = identity, .issuer = issuer};
        int r = sigstore_verify(root, bundle, bundle_len, &a, &p, res);
        sigstore_trust_root_free(root);
        return r;
}

/* Verifies tmpdir/file with its bundle under the trust root of dir. */
static int verify(const char *dir, const char *file, const char *identity, const char *issuer,
                  bool by_digest, SigstoreResult *res) {
        char path[PATH_MAX];
        size_t root_len;
        snprintf(path, sizeof(path), "%s/trusted_root.json", dir);
        _cleanup_free_ char *root_json = slurp(path, &root_len);
        return verify_under(root_json, root_len, file, identity, issuer, by_digest, res);
}

START_TEST(test_accept) {
        ck_assert_msg(!setup_error, "setup: %s", setup_error);
        static const char *const files[] = {"plugin.toml", "plugin"};
        for (size_t i = 0; i < ELEMENTSOF(files); i++)
                for (int by_digest = 0; by_digest <= 1; by_digest++) {
                        SigstoreResult res;
                        int r = verify(ca_dir, files[i], IDENTITY, ISSUER, by_digest, &res);
                        ck_assert_msg(r == 0, "%s: %s", files[i], res.reason);
                        ck_assert_str_eq(res.san, IDENTITY);
                        ck_assert_str_eq(res.issuer, ISSUER);
                        ck_assert_ptr_nonnull(res.source_ref);
                        ck_assert_str_eq(res.source_ref, REF);
                        int64_t now = (int64_t)time(NULL);
                        ck_assert_int_le(res.verified_time, now);
                        ck_assert_int_ge(res.verified_time, now - 600);
                        sigstore_result_done(&res);
                }
}
END_TEST

/* Every bundle carries one RFC 3161 timestamp by the instance's TSA, and the verifier checks it:
 * the bundle verifies under the trust root, and not once the TSA is taken out of it. */
START_TEST(test_timestamp) {
        ck_assert_msg(!setup_error, "setup: %s", setup_error);
        char path[PATH_MAX + 32];
        size_t len;
        snprintf(path, sizeof(path), "%s/plugin.sigstore.json", tmpdir);
        _cleanup_free_ char *bundle_text = slurp(path, &len);
        ck_assert_ptr_nonnull(strstr(bundle_text, "\"rfc3161Timestamps\""));
        _cleanup_(json_decrefp) json_t *bundle = json_loadb(bundle_text, len, 0, NULL);
        json_t *ts =
                json_object_get(json_object_get(json_object_get(bundle, "verificationMaterial"),
                                                "timestampVerificationData"),
                                "rfc3161Timestamps");
        ck_assert_int_eq(json_array_size(ts), 1);
        ck_assert_int_gt(
                json_string_length(json_object_get(json_array_get(ts, 0), "signedTimestamp")), 0);

        snprintf(path, sizeof(path), "%s/trusted_root.json", ca_dir);
        _cleanup_free_ char *root_text = slurp(path, &len);
        SigstoreTrustRoot *root = NULL;
        ck_assert_int_eq(sigstore_trust_root_load(root_text, len, &root), 0);
        ck_assert_int_eq(root->n_tsas, 1);
        sigstore_trust_root_free(root);
        SigstoreResult res;
        int r = verify_under(root_text, len, "plugin", IDENTITY, ISSUER, false, &res);
        ck_assert_msg(r == 0, "%s", res.reason);
        sigstore_result_done(&res);

        /* the same trust root without its timestamp authority */
        _cleanup_(json_decrefp) json_t *stripped = json_loadb(root_text, len, 0, NULL);
        ck_assert_ptr_nonnull(stripped);
        ck_assert_int_eq(json_object_set_new(stripped, "timestampAuthorities", json_array()), 0);
        _cleanup_free_ char *stripped_text = json_dumps(stripped, JSON_COMPACT);
        ck_assert_ptr_nonnull(stripped_text);
        r = verify_under(stripped_text, strlen(stripped_text), "plugin", IDENTITY, ISSUER, false,
                         &res);
        ck_assert_int_eq(r, -EKEYREJECTED);
        ck_assert_str_eq(res.reason, "RFC 3161 timestamp not verified by a trusted TSA");
        sigstore_result_done(&res);
}
END_TEST

START_TEST(test_wrong_policy) {
        ck_assert_msg(!setup_error, "setup: %s", setup_error);
        SigstoreResult res;
        ck_assert_int_eq(verify(ca_dir, "plugin", IDENTITY "x", ISSUER, false, &res),
                         -EKEYREJECTED);
        sigstore_result_done(&res);
        ck_assert_int_eq(
                verify(ca_dir, "plugin", IDENTITY, "https://accounts.google.com", false, &res),
                -EKEYREJECTED);
        sigstore_result_done(&res);
        /* another private instance does not vouch for this one's bundles */
        ck_assert_int_eq(verify(other_dir, "plugin", IDENTITY, ISSUER, false, &res), -EKEYREJECTED);
        sigstore_result_done(&res);
}
END_TEST

START_TEST(test_break) {
        ck_assert_msg(!setup_error, "setup: %s", setup_error);
        char name[64];
        snprintf(name, sizeof(name), "art-%s", breaks[_i].kind);
        SigstoreResult res;
        int r = verify(ca_dir, name, IDENTITY, ISSUER, false, &res);
        if (breaks[_i].reason) {
                ck_assert_msg(r < 0, "--break %s accepted", breaks[_i].kind);
                ck_assert_msg(strncmp(res.reason, breaks[_i].reason, strlen(breaks[_i].reason)) ==
                                      0,
                              "--break %s: unexpected reason: %s", breaks[_i].kind, res.reason);
        } else {
                /* only the ref is wrong: the signature is good, the tag is not the release's */
                ck_assert_msg(r == 0, "--break %s: %s", breaks[_i].kind, res.reason);
                ck_assert_ptr_nonnull(res.source_ref);
                ck_assert_str_ne(res.source_ref, REF);
        }
        sigstore_result_done(&res);
}
END_TEST

static Suite *signer_suite(void) {
        Suite *s = suite_create("signer");
        const CaseOptions each = {.timeout = 60, .unchecked_setup = setup};

        suite_add_case(s, &each, test_accept);
        suite_add_case(s, &each, test_timestamp);
        suite_add_case(s, &each, test_wrong_policy);
        suite_add_loop_case(s, &each, test_break, 0, (int)ELEMENTSOF(breaks));
        return s;
}

int main(void) {
        int r = check_run(signer_suite());

        teardown();
        return r;
}
