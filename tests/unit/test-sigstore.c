/* Tests of the Sigstore verifier: every conformance case by path and by digest, Merkle proofs,
 * checkpoints, identity patterns, and hostile bundles and trust roots. */
#include <check.h>
#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "codec.h"
#include "fd-util.h"
#include "lockctl-verify.h"
#include "sigstore-util.h"
#include "check-run.h"

#define DEFAULT_IDENTITY                                                                           \
        "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/"  \
        "workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
#define DEFAULT_ISSUER "https://token.actions.githubusercontent.com"

static const char *conformance_dir(void) {
        const char *d = getenv("LOCKD_CONFORMANCE");
        return d ? d : "../shared/testdata/sigstore-conformance";
}

/* The file's bytes (NUL-terminated), or NULL when it cannot be read; len may be NULL. */
static char *slurp(const char *path, size_t *len) {
        char *buf = NULL;
        size_t n = 0;

        if (len)
                *len = 0;
        if (read_full_file(path, 64 * MiB, &buf, &n) < 0)
                return NULL;
        if (len)
                *len = n;
        return buf;
}

static bool exists(const char *path) {
        struct stat st;
        return stat(path, &st) == 0;
}

static char *trimmed(const char *path) {
        char *s = slurp(path, NULL);
        if (s)
                s[strcspn(s, "\r\n")] = 0;
        return s;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs one case through the CLI entry point, by path and by digest, and checks the verdict. */
static void run_case(const char *dir, const char *name, int *n_run) {
        char p[PATH_MAX], bundle[PATH_MAX], root[PATH_MAX], key[PATH_MAX], art[PATH_MAX];
        snprintf(bundle, sizeof(bundle), "%s/bundle-verify/%s/bundle.sigstore.json", dir, name);
        snprintf(root, sizeof(root), "%s/bundle-verify/%s/trusted_root.json", dir, name);
        if (!exists(root))
                snprintf(root, sizeof(root), "%s/public-good/trusted_root.json", dir);
        snprintf(key, sizeof(key), "%s/bundle-verify/%s/key.pub", dir, name);
        snprintf(art, sizeof(art), "%s/bundle-verify/%s/artifact", dir, name);
        if (!exists(art))
                snprintf(art, sizeof(art), "%s/bundle-verify/a.txt", dir);
        snprintf(p, sizeof(p), "%s/bundle-verify/%s/identity", dir, name);
        _cleanup_free_ char *identity = trimmed(p);
        snprintf(p, sizeof(p), "%s/bundle-verify/%s/issuer", dir, name);
        _cleanup_free_ char *issuer = trimmed(p);

        size_t alen;
        _cleanup_free_ char *data = slurp(art, &alen);
        ck_assert_ptr_nonnull(data);
        uint8_t d[32];
        sha256((const uint8_t *)data, alen, d);
        char digest[7 + 65] = "sha256:";
        hex_encode(d, 32, digest + 7);

        size_t nl = strlen(name);
        int expect = nl > 5 && strcmp(name + nl - 5, "_fail") == 0 ? 1 : 0;
        const char *targets[] = {art, digest};
        for (size_t i = 0; i < ELEMENTSOF(targets); i++) {
                char *argv[16];
                int argc = 0;
                argv[argc++] = (char *)"verify-bundle";
                argv[argc++] = (char *)"--bundle";
                argv[argc++] = bundle;
                if (exists(key)) {
                        argv[argc++] = (char *)"--key";
                        argv[argc++] = key;
                } else {
                        argv[argc++] = (char *)"--certificate-identity";
                        argv[argc++] = identity ? identity : (char *)DEFAULT_IDENTITY;
                        argv[argc++] = (char *)"--certificate-oidc-issuer";
                        argv[argc++] = issuer ? issuer : (char *)DEFAULT_ISSUER;
                }
                argv[argc++] = (char *)"--trusted-root";
                argv[argc++] = root;
                argv[argc++] = (char *)targets[i];
                argv[argc] = NULL;
                int rc = verb_verify_bundle(argc, argv);
                ck_assert_msg(rc == expect, "%s (%s): exit %d, expected %d", name,
                              i == 0 ? "path" : "digest", rc, expect);
                (*n_run)++;
        }
}

START_TEST(test_conformance) {
        const char *dir = conformance_dir();
        char p[PATH_MAX];
        snprintf(p, sizeof(p), "%s/bundle-verify", dir);
        DIR *d = opendir(p);
        ck_assert_msg(d, "conformance data not found at %s (set LOCKD_CONFORMANCE)", p);
        char *names[256];
        size_t n = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                char q[PATH_MAX + 512];
                snprintf(q, sizeof(q), "%s/%s/bundle.sigstore.json", p, de->d_name);
                if (de->d_name[0] != '.' && exists(q) && n < ELEMENTSOF(names))
                        names[n++] = strdup(de->d_name);
        }
        closedir(d);
        qsort(names, n, sizeof(char *), cmp_str);
        ck_assert_uint_ge(n, 20);
        int run = 0;
        for (size_t i = 0; i < n; i++) {
                run_case(dir, names[i], &run);
                free(names[i]);
        }
        ck_assert_int_eq(run, (int)(2 * n));
}
END_TEST

/* Verifies happy-path bundle `name` under root_json (a possibly modified trust root). */
static int verify_case(const char *name, const char *root_json, SigstoreResult *res) {
        const char *dir = conformance_dir();
        char p[PATH_MAX];
        snprintf(p, sizeof(p), "%s/bundle-verify/%s/bundle.sigstore.json", dir, name);
        size_t blen, alen;
        _cleanup_free_ char *bundle = slurp(p, &blen);
        snprintf(p, sizeof(p), "%s/bundle-verify/a.txt", dir);
        _cleanup_free_ char *data = slurp(p, &alen);
        ck_assert_ptr_nonnull(bundle);
        ck_assert_ptr_nonnull(data);
        SigstoreTrustRoot *root = NULL;
        int r = sigstore_trust_root_load(root_json, strlen(root_json), &root);
        if (r < 0)
                return r;
        SigstoreArtifact a = {.data = (const uint8_t *)data, .size = alen};
        SigstorePolicy pol = {.identity = DEFAULT_IDENTITY, .issuer = DEFAULT_ISSUER};
        r = sigstore_verify(root, bundle, blen, &a, &pol, res);
        sigstore_trust_root_free(root);
        return r;
}

static char *root_without(const char *root_file, const char *key) {
        char p[PATH_MAX];
        snprintf(p, sizeof(p), "%s/%s", conformance_dir(), root_file);
        json_error_t err;
        _cleanup_(json_decrefp) json_t *j = json_load_file(p, 0, &err);
        ck_assert_ptr_nonnull(j);
        if (key)
                json_object_set_new(j, key, json_array());
        return json_dumps(j, 0);
}

START_TEST(test_result_fields) {
        _cleanup_free_ char *root = root_without("public-good/trusted_root.json", NULL);
        SigstoreResult res;
        ck_assert_int_eq(verify_case("happy-path-v0.3", root, &res), 0);
        ck_assert_str_eq(res.san, DEFAULT_IDENTITY);
        ck_assert_str_eq(res.issuer, DEFAULT_ISSUER);
        ck_assert_ptr_nonnull(res.source_ref);
        ck_assert_str_eq(res.source_ref, "refs/heads/main");
        ck_assert_int_eq(res.verified_time, 1710869186);
        sigstore_result_done(&res);
}
END_TEST

START_TEST(test_missing_trust) {
        /* without CT logs the SCT cannot verify; without TSAs a Rekor v2 entry has no time */
        SigstoreResult res;
        _cleanup_free_ char *no_ct = root_without("public-good/trusted_root.json", "ctlogs");
        ck_assert_int_eq(verify_case("happy-path-v0.3", no_ct, &res), -EKEYREJECTED);
        ck_assert(strstr(res.reason, "SCT"));
        sigstore_result_done(&res);
        _cleanup_free_ char *no_tsa = root_without(
                "bundle-verify/rekor2-happy-path/trusted_root.json", "timestampAuthorities");
        ck_assert_int_eq(verify_case("rekor2-happy-path", no_tsa, &res), -EKEYREJECTED);
        sigstore_result_done(&res);
        _cleanup_free_ char *no_ca =
                root_without("public-good/trusted_root.json", "certificateAuthorities");
        ck_assert_int_eq(verify_case("happy-path-v0.3", no_ca, &res), -EKEYREJECTED);
        sigstore_result_done(&res);
        _cleanup_free_ char *no_tlog = root_without("public-good/trusted_root.json", "tlogs");
        ck_assert_int_eq(verify_case("happy-path-v0.3", no_tlog, &res), -EKEYREJECTED);
        sigstore_result_done(&res);
}
END_TEST

/* Loads bundle `name`, applies mutate, verifies against the case's trust root (or public good). */
static int verify_mutated(const char *name, void (*mutate)(json_t *), const SigstorePolicy *pol_in,
                          const char *artifact_text, SigstoreResult *res) {
        const char *dir = conformance_dir();
        char p[PATH_MAX];
        snprintf(p, sizeof(p), "%s/bundle-verify/%s/bundle.sigstore.json", dir, name);
        json_error_t err;
        _cleanup_(json_decrefp) json_t *b = json_load_file(p, 0, &err);
        ck_assert_ptr_nonnull(b);
        if (mutate)
                mutate(b);
        _cleanup_free_ char *bundle = json_dumps(b, 0);
        snprintf(p, sizeof(p), "%s/bundle-verify/%s/trusted_root.json", dir, name);
        if (!exists(p))
                snprintf(p, sizeof(p), "%s/public-good/trusted_root.json", dir);
        size_t rlen, alen;
        _cleanup_free_ char *root_json = slurp(p, &rlen);
        snprintf(p, sizeof(p), "%s/bundle-verify/a.txt", dir);
        _cleanup_free_ char *data = artifact_text ? strdup(artifact_text) : slurp(p, &alen);
        if (artifact_text)
                alen = strlen(artifact_text);
        SigstoreTrustRoot *root = NULL;
        ck_assert_int_eq(sigstore_trust_root_load(root_json, rlen, &root), 0);
        SigstoreArtifact a = {.data = (const uint8_t *)data, .size = alen};
        SigstorePolicy pol = {.identity = DEFAULT_IDENTITY, .issuer = DEFAULT_ISSUER};
        int r = sigstore_verify(root, bundle, strlen(bundle), &a, pol_in ? pol_in : &pol, res);
        sigstore_trust_root_free(root);
        return r;
}

static json_t *entry0(json_t *b) {
        return json_array_get(
                json_object_get(json_object_get(b, "verificationMaterial"), "tlogEntries"), 0);
}

static void add_witness(json_t *b) {
        json_t *cp = json_object_get(json_object_get(entry0(b), "inclusionProof"), "checkpoint");
        char *env = NULL;
        ck_assert_int_ge(asprintf(&env, "%s\xe2\x80\x94 witness.example AAAAAAAAAAAAAAAA\n",
                                  json_string_value(json_object_get(cp, "envelope"))),
                         0);
        json_object_set_new(cp, "envelope", json_string(env));
        free(env);
}

static void drop_log_signature(json_t *b) {
        json_t *cp = json_object_get(json_object_get(entry0(b), "inclusionProof"), "checkpoint");
        char *env = strdup(json_string_value(json_object_get(cp, "envelope")));
        char *sig = strstr(env, "\n\n");
        ck_assert_ptr_nonnull(sig);
        strcpy(sig + 2, "\xe2\x80\x94 witness.example AAAAAAAAAAAAAAAA\n");
        json_object_set_new(cp, "envelope", json_string(env));
        free(env);
}

static void bump_integrated_time(json_t *b) {
        json_t *e = entry0(b);
        uint64_t t;
        ck_assert_int_eq(sigstore_json_uint64(json_object_get(e, "integratedTime"), &t), 0);
        char buf[32];
        snprintf(buf, sizeof(buf), "%" PRIu64, t + 1);
        json_object_set_new(e, "integratedTime", json_string(buf));
}

static void bump_tree_size(json_t *b) {
        json_t *proof = json_object_get(entry0(b), "inclusionProof");
        uint64_t t;
        ck_assert_int_eq(sigstore_json_uint64(json_object_get(proof, "treeSize"), &t), 0);
        json_object_set_new(proof, "treeSize", json_integer((json_int_t)t + 1));
}

static void drop_promise(json_t *b) {
        json_object_del(entry0(b), "inclusionPromise");
}

static void media_v02(json_t *b) {
        json_object_set_new(b, "mediaType",
                            json_string("application/vnd.dev.sigstore.bundle+json;version=0.2"));
}

static void drop_timestamps(json_t *b) {
        json_object_del(json_object_get(b, "verificationMaterial"), "timestampVerificationData");
}

static void drop_proof(json_t *b) {
        json_object_del(entry0(b), "inclusionProof");
}

START_TEST(test_mutations) {
        SigstoreResult res;
        /* unknown witness signatures are ignored */
        ck_assert_int_eq(verify_mutated("happy-path-v0.3", add_witness, NULL, NULL, &res), 0);
        sigstore_result_done(&res);
        ck_assert_int_eq(verify_mutated("rekor2-happy-path", add_witness, NULL, NULL, &res), 0);
        sigstore_result_done(&res);
        /* but the log's own signature is required */
        ck_assert_int_eq(verify_mutated("happy-path-v0.3", drop_log_signature, NULL, NULL, &res),
                         -EKEYREJECTED);
        sigstore_result_done(&res);
        ck_assert_int_eq(verify_mutated("happy-path-v0.3", bump_integrated_time, NULL, NULL, &res),
                         -EKEYREJECTED);
        ck_assert(strstr(res.reason, "signed entry timestamp"));
        sigstore_result_done(&res);
        ck_assert_int_eq(verify_mutated("happy-path-v0.3", bump_tree_size, NULL, NULL, &res),
                         -EKEYREJECTED);
        sigstore_result_done(&res);
        /* without the SET, a Rekor v1 entry gives no verified time, and there is no timestamp */
        ck_assert_int_eq(verify_mutated("happy-path-v0.3", drop_promise, NULL, NULL, &res),
                         -EKEYREJECTED);
        sigstore_result_done(&res);
        ck_assert_int_lt(verify_mutated("happy-path-v0.3", media_v02, NULL, NULL, &res), 0);
        sigstore_result_done(&res);
        ck_assert_int_lt(verify_mutated("happy-path-v0.3", drop_proof, NULL, NULL, &res), 0);
        sigstore_result_done(&res);
        ck_assert_int_eq(verify_mutated("rekor2-happy-path", drop_timestamps, NULL, NULL, &res),
                         -EKEYREJECTED);
        sigstore_result_done(&res);
        /* DSSE: the artifact must be a subject of the statement */
        ck_assert_int_eq(verify_mutated("rekor2-dsse-happy-path", NULL, NULL, "other", &res),
                         -EKEYREJECTED);
        ck_assert(strstr(res.reason, "subject"));
        sigstore_result_done(&res);
        ck_assert_int_eq(verify_mutated("happy-path-intoto-in-dsse-v3", NULL, NULL, NULL, &res), 0);
        sigstore_result_done(&res);
        /* identity patterns are anchored; the issuer is exact */
        SigstorePolicy pat = {.identity_regex = "https://github\\.com/sigstore-conformance/.*",
                              .issuer = DEFAULT_ISSUER};
        ck_assert_int_eq(verify_mutated("happy-path-v0.3", NULL, &pat, NULL, &res), 0);
        sigstore_result_done(&res);
        pat.identity_regex = "https://github\\.com/sigstore-conformance";
        ck_assert_int_eq(verify_mutated("happy-path-v0.3", NULL, &pat, NULL, &res), -EKEYREJECTED);
        sigstore_result_done(&res);
        SigstorePolicy iss = {.identity = DEFAULT_IDENTITY,
                              .issuer = "https://token.actions.githubusercontent.com/"};
        ck_assert_int_eq(verify_mutated("happy-path-v0.3", NULL, &iss, NULL, &res), -EKEYREJECTED);
        sigstore_result_done(&res);
}
END_TEST

START_TEST(test_hostile_bundles) {
        static const char *const bad[] = {
                "",
                "[]",
                "{\"mediaType\":1}",
                "{\"mediaType\":\"application/vnd.dev.sigstore.bundle+json;version=0.9\"}",
                "{\"mediaType\":\"application/vnd.dev.sigstore.bundle.v0.3+json\"}",
                "{\"mediaType\":\"application/"
                "vnd.dev.sigstore.bundle.v0.3+json\",\"mediaType\":\"x\"}",
                "{\"mediaType\":\"application/"
                "vnd.dev.sigstore.bundle.v0.3+json\",\"verificationMaterial\":"
                "{\"certificate\":{\"rawBytes\":\"!!!\"}}}",
                "{\"mediaType\":\"application/"
                "vnd.dev.sigstore.bundle.v0.3+json\",\"verificationMaterial\":"
                "{\"publicKey\":{},\"tlogEntries\":[{\"logIndex\":\"-1\"}]}}",
        };
        _cleanup_free_ char *root_json = root_without("public-good/trusted_root.json", NULL);
        SigstoreTrustRoot *root = NULL;
        ck_assert_int_eq(sigstore_trust_root_load(root_json, strlen(root_json), &root), 0);
        SigstoreArtifact a = {.have_digest = true};
        SigstorePolicy pol = {.identity = "x", .issuer = "y"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                SigstoreResult res;
                ck_assert_int_lt(sigstore_verify(root, bad[i], strlen(bad[i]), &a, &pol, &res), 0);
                ck_assert(res.reason[0]);
                sigstore_result_done(&res);
        }
        /* over the cap: refused before parsing */
        size_t big = SIGSTORE_JSON_MAX + 1;
        char *huge = malloc(big);
        ck_assert_ptr_nonnull(huge);
        memset(huge, ' ', big);
        SigstoreResult res;
        ck_assert_int_eq(sigstore_verify(root, huge, big, &a, &pol, &res), -EBADMSG);
        ck_assert(strstr(res.reason, "larger"));
        free(huge);
        /* deep nesting */
        char deep[8192];
        memset(deep, '[', sizeof(deep) - 1);
        deep[sizeof(deep) - 1] = 0;
        ck_assert_int_lt(sigstore_verify(root, deep, strlen(deep), &a, &pol, &res), 0);
        sigstore_trust_root_free(root);
}
END_TEST

/* RFC 6962 reference: MTH over leaves [lo, hi). */
static void mth(uint8_t leaves[][32], size_t lo, size_t hi, uint8_t out[32]) {
        if (hi - lo == 1) {
                memcpy(out, leaves[lo], 32);
                return;
        }
        size_t k = 1;
        while (k * 2 < hi - lo)
                k *= 2;
        uint8_t buf[65], l[32], r[32];
        mth(leaves, lo, lo + k, l);
        mth(leaves, lo + k, hi, r);
        buf[0] = 1;
        memcpy(buf + 1, l, 32);
        memcpy(buf + 33, r, 32);
        sha256(buf, 65, out);
}

/* RFC 6962 reference: PATH(m, D[lo, hi)), appended bottom-up. */
static void audit_path(uint8_t leaves[][32], size_t m, size_t lo, size_t hi, uint8_t path[][32],
                       size_t *n) {
        if (hi - lo == 1)
                return;
        size_t k = 1;
        while (k * 2 < hi - lo)
                k *= 2;
        if (m - lo < k) {
                audit_path(leaves, m, lo, lo + k, path, n);
                mth(leaves, lo + k, hi, path[(*n)++]);
        } else {
                audit_path(leaves, m, lo + k, hi, path, n);
                mth(leaves, lo, lo + k, path[(*n)++]);
        }
}

START_TEST(test_merkle) {
        uint8_t leaves[13][32];
        for (size_t i = 0; i < 13; i++) {
                uint8_t b = (uint8_t)i;
                sigstore_merkle_leaf_hash(&b, 1, leaves[i]);
        }
        for (size_t size = 1; size <= 13; size++) {
                uint8_t root[32];
                mth(leaves, 0, size, root);
                for (size_t m = 0; m < size; m++) {
                        uint8_t path[8][32];
                        size_t n = 0;
                        audit_path(leaves, m, 0, size, path, &n);
                        ck_assert_int_eq(sigstore_merkle_verify(m, size, leaves[m],
                                                                (const uint8_t(*)[32])path, n,
                                                                root),
                                         0);
                        /* wrong index, wrong size, truncated path, flipped bit */
                        if (size > 1) {
                                ck_assert_int_ne(
                                        sigstore_merkle_verify((m + 1) % size, size, leaves[m],
                                                               (const uint8_t(*)[32])path, n, root),
                                        0);
                                ck_assert_int_ne(sigstore_merkle_verify(m, size, leaves[m],
                                                                        (const uint8_t(*)[32])path,
                                                                        n - 1, root),
                                                 0);
                                path[0][0] ^= 1;
                                ck_assert_int_ne(sigstore_merkle_verify(m, size, leaves[m],
                                                                        (const uint8_t(*)[32])path,
                                                                        n, root),
                                                 0);
                        }
                        ck_assert_int_ne(sigstore_merkle_verify(m, size + 1, leaves[m],
                                                                (const uint8_t(*)[32])path, n,
                                                                root),
                                         0);
                }
        }
        uint8_t z[32] = {};
        ck_assert_int_ne(sigstore_merkle_verify(0, 0, z, NULL, 0, z), 0);
        ck_assert_int_ne(sigstore_merkle_verify(5, 5, z, NULL, 0, z), 0);
}
END_TEST

#define ROOT_B64 "Fnnj13Uu1jdksPc4HZLapKX329dVlD5+MGNsiqBq1XM="
/* A copy of a conformance trust root with one field of logs[index] set: a publicKey field when
 * in_key, else a field of the log itself. A NULL value removes the field. */
static char *root_edited(const char *root_file, const char *logs, size_t index, bool in_key,
                         const char *field, const char *value) {
        char p[PATH_MAX];
        snprintf(p, sizeof(p), "%s/%s", conformance_dir(), root_file);
        json_error_t err;
        _cleanup_(json_decrefp) json_t *j = json_load_file(p, 0, &err);
        ck_assert_ptr_nonnull(j);
        json_t *log = json_array_get(json_object_get(j, logs), index);
        ck_assert_ptr_nonnull(log);
        json_t *o = in_key ? json_object_get(log, "publicKey") : log;
        if (value)
                json_object_set_new(o, field, json_string(value));
        else
                json_object_del(o, field);
        return json_dumps(j, 0);
}

START_TEST(test_key_details) {
        static const char pg[] = "public-good/trusted_root.json";
        static const char r2[] = "bundle-verify/rekor2-happy-path/trusted_root.json";
        SigstoreResult res = {};

        /* Declared details that do not describe the key make the trust root invalid: wrong type,
         * wrong curve, Ed25519 declared as ECDSA, an EC key declared as RSA. */
        static const struct {
                const char *file, *logs;
                size_t index;
                const char *details;
        } mismatches[] = {
                {pg, "tlogs", 0, "PKIX_ED25519"},
                {pg, "tlogs", 0, "PKIX_ECDSA_P384_SHA_384"},
                {pg, "tlogs", 0, "PKIX_ECDSA_P521_SHA_512"},
                {pg, "ctlogs", 1, "PKIX_RSA_PKCS1V15_2048_SHA256"},
                {r2, "tlogs", 1, "PKIX_ECDSA_P256_SHA_256"},
        };
        for (size_t i = 0; i < ELEMENTSOF(mismatches); i++) {
                _cleanup_free_ char *root =
                        root_edited(mismatches[i].file, mismatches[i].logs, mismatches[i].index,
                                    true, "keyDetails", mismatches[i].details);
                SigstoreTrustRoot *t = NULL;
                ck_assert_msg(sigstore_trust_root_load(root, strlen(root), &t) == -EBADMSG,
                              "case %zu", i);
                ck_assert_ptr_null(t);
                ck_assert_int_eq(
                        verify_case(i < 4 ? "happy-path-v0.3" : "rekor2-happy-path", root, &res),
                        -EBADMSG);
        }

        /* Unknown, unsupported or missing details leave the key unusable: the root loads, but the
         * bundle whose Rekor entry or SCT needs that key is refused. */
        static const char *const unusable[] = {"PKIX_ECDSA_P256_SHA_257", "PKIX_ED25519_PH",
                                               "PUBLIC_KEY_DETAILS_UNSPECIFIED", NULL};
        for (size_t i = 0; i < ELEMENTSOF(unusable); i++) {
                _cleanup_free_ char *tlog =
                        root_edited(pg, "tlogs", 0, true, "keyDetails", unusable[i]);
                ck_assert_int_eq(verify_case("happy-path-v0.3", tlog, &res), -EKEYREJECTED);
                ck_assert_msg(strstr(res.reason, "keyDetails"), "%s", res.reason);
                sigstore_result_done(&res);
                res = (SigstoreResult){};
                _cleanup_free_ char *ct =
                        root_edited(pg, "ctlogs", 1, true, "keyDetails", unusable[i]);
                ck_assert_int_eq(verify_case("happy-path-v0.3", ct, &res), -EKEYREJECTED);
                ck_assert_msg(strstr(res.reason, "SCT") || strstr(res.reason, "CT log"), "%s",
                              res.reason);
                sigstore_result_done(&res);
                res = (SigstoreResult){};
        }

        /* An unusable key the bundle does not need is harmless. */
        _cleanup_free_ char *other = root_edited(pg, "tlogs", 1, true, "keyDetails", "PKIX_FOO");
        ck_assert_int_eq(verify_case("happy-path-v0.3", other, &res), 0);
        sigstore_result_done(&res);
}
END_TEST

static void rename_log_signature(json_t *b) {
        json_t *cp = json_object_get(json_object_get(entry0(b), "inclusionProof"), "checkpoint");
        char *env = strdup(json_string_value(json_object_get(cp, "envelope")));
        char *sig = strstr(env, "\n\n\xe2\x80\x94 log2025-alpha1.");
        ck_assert_ptr_nonnull(sig);
        memcpy(sig + 6, "LOG", 3); /* same length, same signed text */
        json_object_set_new(cp, "envelope", json_string(env));
        free(env);
}

START_TEST(test_checkpoint_origin) {
        static const char r2[] = "bundle-verify/rekor2-happy-path/trusted_root.json";
        SigstoreResult res = {};

        /* Rekor v2: the origin must be the hostname of the log's baseUrl (port and path do not
         * count), and a baseUrl is required. */
        _cleanup_free_ char *port =
                root_edited(r2, "tlogs", 1, false, "baseUrl",
                            "https://log2025-alpha1.rekor.sigstage.dev:443/api");
        ck_assert_int_eq(verify_case("rekor2-happy-path", port, &res), 0);
        sigstore_result_done(&res);
        res = (SigstoreResult){};
        _cleanup_free_ char *moved = root_edited(r2, "tlogs", 1, false, "baseUrl",
                                                 "https://log2025-alpha2.rekor.sigstage.dev");
        ck_assert_int_eq(verify_case("rekor2-happy-path", moved, &res), -EKEYREJECTED);
        ck_assert_msg(strstr(res.reason, "origin"), "%s", res.reason);
        sigstore_result_done(&res);
        res = (SigstoreResult){};
        _cleanup_free_ char *none = root_edited(r2, "tlogs", 1, false, "baseUrl", NULL);
        ck_assert_int_eq(verify_case("rekor2-happy-path", none, &res), -EKEYREJECTED);
        ck_assert_msg(strstr(res.reason, "baseUrl"), "%s", res.reason);
        sigstore_result_done(&res);
        res = (SigstoreResult){};

        /* Rekor v2: the log's signature line must carry the origin as its name. The name is not
         * signed, so only this check catches the change. */
        ck_assert_int_eq(
                verify_mutated("rekor2-happy-path", rename_log_signature, NULL, NULL, &res),
                -EKEYREJECTED);
        ck_assert_msg(strstr(res.reason, "checkpoint not signed"), "%s", res.reason);
        sigstore_result_done(&res);
        res = (SigstoreResult){};

        /* Rekor v1: like sigstore-go and sigstore-python, the origin "<host> - <tree id>" is not
         * compared with the log, so a different baseUrl does not matter. */
        _cleanup_free_ char *v1 = root_edited("public-good/trusted_root.json", "tlogs", 0, false,
                                              "baseUrl", "https://elsewhere.example");
        ck_assert_int_eq(verify_case("happy-path-v0.3", v1, &res), 0);
        sigstore_result_done(&res);
}
END_TEST

START_TEST(test_checkpoint) {
        static const char good[] =
                "rekor.sigstore.dev - 2605736670972794746\n75408393\n" ROOT_B64 "\n\n"
                "\xe2\x80\x94 rekor.sigstore.dev wNI9ajBFAiBT\n"
                "\xe2\x80\x94 witness.example AAAAAAAAAAAA\n";
        SigstoreCheckpoint c;
        ck_assert_int_eq(sigstore_checkpoint_parse(good, strlen(good), &c), 0);
        ck_assert_str_eq(c.origin, "rekor.sigstore.dev - 2605736670972794746");
        ck_assert_uint_eq(c.size, 75408393);
        ck_assert_uint_eq(c.n_sigs, 2);
        ck_assert_str_eq(c.sigs[0].name, "rekor.sigstore.dev");
        ck_assert_str_eq(c.sigs[1].name, "witness.example");
        ck_assert_uint_eq(c.text_len, strchr(strstr(good, ROOT_B64), '\n') + 1 - good);
        ck_assert_uint_eq(c.sigs[0].key_hint[0], 0xc0);
        sigstore_checkpoint_done(&c);

        /* an extension line in the text is allowed */
        static const char ext[] = "o\n1\n" ROOT_B64 "\nextra\n\n\xe2\x80\x94 o AAAAAAAA\n";
        ck_assert_int_eq(sigstore_checkpoint_parse(ext, strlen(ext), &c), 0);
        sigstore_checkpoint_done(&c);

        static const char *const bad[] = {
                "o\n1\n" ROOT_B64 "\n\n",                           /* no signature */
                "o\n1\n" ROOT_B64 "\n\xe2\x80\x94 o AAAAAAAA\n",    /* no blank line */
                "o\n1\n" ROOT_B64 "\n\n- o AAAAAAAA\n",             /* not an em dash */
                "o\n1\n" ROOT_B64 "\n\n\xe2\x80\x94 o AAAAAAAA",    /* no final newline */
                "o\n1\n" ROOT_B64 "\n\n\xe2\x80\x94 o AAAA\n",      /* shorter than a key hint */
                "o\n1\n" ROOT_B64 "\n\n\xe2\x80\x94 oAAAAAAAA\n",   /* no name */
                "o\nx1\n" ROOT_B64 "\n\n\xe2\x80\x94 o AAAAAAAA\n", /* bad size */
                "o\n01\n" ROOT_B64 "\n\n\xe2\x80\x94 o AAAAAAAA\n", /* leading zero */
                "o\n1\nAAAA\n\n\xe2\x80\x94 o AAAAAAAA\n",          /* short root */
                "\n1\n" ROOT_B64 "\n\n\xe2\x80\x94 o AAAAAAAA\n",   /* empty origin */
                "o\n99999999999999999999999\n" ROOT_B64 "\n\n\xe2\x80\x94 o AAAAAAAA\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                ck_assert_msg(sigstore_checkpoint_parse(bad[i], strlen(bad[i]), &c) < 0, "case %zu",
                              i);
                sigstore_checkpoint_done(&c);
        }
}
END_TEST

START_TEST(test_identity_match) {
        const char *san = "https://github.com/acme/repo/.github/workflows/release.yml@refs/tags/v1";
        ck_assert(sigstore_identity_match("https://github\\.com/acme/repo/.*", san));
        ck_assert(sigstore_identity_match("^https://github\\.com/acme/repo/.*$", san));
        ck_assert(!sigstore_identity_match("https://github\\.com/acme", san));
        ck_assert(!sigstore_identity_match("github\\.com/acme/repo/.*", san));
        ck_assert(!sigstore_identity_match("acme", san));
        ck_assert(!sigstore_identity_match(".*repo", san));
        ck_assert(sigstore_identity_match("a|b", "a"));
        ck_assert(!sigstore_identity_match("a|b", "ab"));
        ck_assert(!sigstore_identity_match("a|b", "xb"));
        ck_assert(!sigstore_identity_match("(", "("));
        ck_assert(!sigstore_identity_match("x", ""));
        ck_assert(sigstore_identity_match(".*", ""));
}
END_TEST

START_TEST(test_codecs) {
        SigstoreBytes b = {};
        ck_assert_int_eq(sigstore_b64_decode("aGk=", 4, &b), 0);
        ck_assert_uint_eq(b.len, 2);
        free(b.data);
        ck_assert_int_eq(sigstore_b64_decode("aGk", 3, &b), 0);
        free(b.data);
        ck_assert_int_lt(sigstore_b64_decode("aGl=", 4, &b), 0); /* non-zero trailing bits */
        ck_assert_int_lt(sigstore_b64_decode("a", 1, &b), 0);
        ck_assert_int_lt(sigstore_b64_decode("aG k", 4, &b), 0);
        ck_assert_int_lt(sigstore_b64_decode("aGk==", 5, &b), 0);
        int64_t t;
        ck_assert_int_eq(sigstore_parse_rfc3339("2023-07-12T15:56:36Z", &t), 0);
        ck_assert_int_eq(t, 1689177396);
        ck_assert_int_eq(sigstore_parse_rfc3339("2022-12-31T23:59:59.999Z", &t), 0);
        ck_assert_int_lt(sigstore_parse_rfc3339("2022-12-31 23:59:59Z", &t), 0);
        ck_assert_int_lt(sigstore_parse_rfc3339("2022-12-31T23:59:59+01:00", &t), 0);
        ck_assert_int_lt(sigstore_parse_rfc3339("2022-13-31T23:59:59Z", &t), 0);
}
END_TEST

static Suite *sigstore_suite(void) {
        Suite *s = suite_create("sigstore");
        const CaseOptions each = {.timeout = 120};

        suite_add_case(s, &each, test_conformance);
        suite_add_case(s, &each, test_result_fields);
        suite_add_case(s, &each, test_missing_trust);
        suite_add_case(s, &each, test_mutations);
        suite_add_case(s, &each, test_hostile_bundles);
        suite_add_case(s, &each, test_merkle);
        suite_add_case(s, &each, test_checkpoint);
        suite_add_case(s, &each, test_key_details);
        suite_add_case(s, &each, test_checkpoint_origin);
        suite_add_case(s, &each, test_identity_match);
        suite_add_case(s, &each, test_codecs);
        return s;
}

int main(void) {
        return check_run(sigstore_suite());
}
