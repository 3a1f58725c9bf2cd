/*
 * bench/verify: install-time verification cost per release (two bundles: manifest and binary)
 * through lockd's verifier, against the openssl CLI doing only the chain check and the signature
 * check of the same bundle. Prints both and the ratio. Usage: verify [N] [CASE_DIR TRUSTED_ROOT].
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "sigstore.h"

static const char *const identity =
        "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/"
        "workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
static const char *const issuer = "https://token.actions.githubusercontent.com";

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Decodes base64 into out; EVP_DecodeBlock counts the padding as zero bytes, so drop them. */
static int b64_decode(const char *b64, unsigned char *out) {
        size_t len = strlen(b64);
        int n = EVP_DecodeBlock(out, (const unsigned char *)b64, (int)len);

        for (size_t i = len; n > 0 && i > 0 && b64[i - 1] == '='; i--)
                n--;
        return n;
}

static char *slurp(const char *path, size_t *len) {
        char *buf = NULL;

        if (read_full_file(path, 64 * MiB, &buf, len) < 0) {
                fprintf(stderr, "verify: %s: cannot read\n", path);
                exit(2);
        }
        return buf;
}

/* Writes base64 DER from j as PEM of the given kind into path. */
static void write_der_pem(const char *b64, const char *path, bool append) {
        unsigned char der[16384];
        int n = b64_decode(b64, der);
        const unsigned char *p = der;
        X509 *x;
        FILE *f;

        if (n <= 0)
                exit(2);
        x = d2i_X509(NULL, &p, n);
        if (!x)
                exit(2);
        f = fopen(path, append ? "a" : "w");
        PEM_write_X509(f, x);
        fclose(f);
        X509_free(x);
}

static int run(char *const argv[]) {
        pid_t pid = fork();
        int status;

        if (pid == 0) {
                int null = open("/dev/null", O_WRONLY);
                dup2(null, 1);
                dup2(null, 2);
                execvp(argv[0], argv);
                _exit(127);
        }
        waitpid(pid, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int main(int argc, char **argv) {
        int n = argc > 1 ? atoi(argv[1]) : 200;
        const char *dir = argc > 3 ? argv[2] : BENCH_CONFORMANCE "/bundle-verify/happy-path-v0.3";
        const char *root_path =
                argc > 3 ? argv[3] : BENCH_CONFORMANCE "/public-good/trusted_root.json";
        char path[4096], tmp[] = "/tmp/lockd-bench-verify-XXXXXX";
        size_t bundle_len, root_len, art_len;
        SigstoreTrustRoot *root = NULL;
        json_error_t jerr;
        double t0, ours, cli;
        char *bundle, *root_json, *art;

        snprintf(path, sizeof(path), "%s/bundle.sigstore.json", dir);
        bundle = slurp(path, &bundle_len);
        root_json = slurp(root_path, &root_len);
        snprintf(path, sizeof(path), "%s/../a.txt", dir);
        art = slurp(path, &art_len);
        if (sigstore_trust_root_load(root_json, root_len, &root) < 0)
                return 2;

        SigstoreArtifact a = {.data = (const uint8_t *)art, .size = art_len};
        SigstorePolicy pol = {.identity = identity, .issuer = issuer};
        t0 = now_s();
        for (int i = 0; i < n; i++) {
                SigstoreResult res = {};
                if (sigstore_verify(root, bundle, bundle_len, &a, &pol, &res) < 0) {
                        fprintf(stderr, "verify: rejected: %s\n", res.reason);
                        return 1;
                }
                sigstore_result_done(&res);
        }
        ours = (now_s() - t0) / n;

        /* The openssl CLI doing only the chain and the signature: certificate, CA chain, sig. */
        json_t *b = json_loadb(bundle, bundle_len, 0, &jerr),
               *r = json_loadb(root_json, root_len, 0, &jerr);
        const char *leaf = json_string_value(json_object_get(
                json_object_get(json_object_get(b, "verificationMaterial"), "certificate"),
                "rawBytes"));
        const char *sig = json_string_value(
                json_object_get(json_object_get(b, "messageSignature"), "signature"));
        long long itime = atoll(json_string_value(json_object_get(
                json_array_get(
                        json_object_get(json_object_get(b, "verificationMaterial"), "tlogEntries"),
                        0),
                "integratedTime")));
        if (!leaf || !sig || !mkdtemp(tmp))
                return 2;
        char leaf_pem[128], ca_pem[128], pub_pem[128], sig_bin[128], attime[32];
        snprintf(leaf_pem, sizeof(leaf_pem), "%s/leaf.pem", tmp);
        snprintf(ca_pem, sizeof(ca_pem), "%s/ca.pem", tmp);
        snprintf(pub_pem, sizeof(pub_pem), "%s/pub.pem", tmp);
        snprintf(sig_bin, sizeof(sig_bin), "%s/sig.bin", tmp);
        snprintf(attime, sizeof(attime), "%lld", itime);
        write_der_pem(leaf, leaf_pem, false);
        json_t *cas = json_object_get(r, "certificateAuthorities"), *ca;
        size_t i;
        json_array_foreach(cas, i, ca) {
                json_t *certs = json_object_get(json_object_get(ca, "certChain"), "certificates"),
                       *c;
                size_t k;
                json_array_foreach(certs, k, c) write_der_pem(
                        json_string_value(json_object_get(c, "rawBytes")), ca_pem, true);
        }
        unsigned char sigder[512];
        int sl = b64_decode(sig, sigder);
        FILE *f = fopen(sig_bin, "w");
        fwrite(sigder, 1, (size_t)sl, f);
        fclose(f);
        char cmd_pub[512];
        snprintf(cmd_pub, sizeof(cmd_pub), "openssl x509 -in %s -pubkey -noout > %s", leaf_pem,
                 pub_pem);
        if (system(cmd_pub) != 0)
                return 2;
        snprintf(path, sizeof(path), "%s/../a.txt", dir);
        char *verify_argv[] = {"openssl", "verify",  "-attime", attime,   "-purpose",
                               "any",     "-CAfile", ca_pem,    leaf_pem, NULL};
        char *dgst_argv[] = {"openssl",    "dgst",  "-sha256", "-verify", pub_pem,
                             "-signature", sig_bin, path,      NULL};
        if (run(verify_argv) != 0 || run(dgst_argv) != 0) {
                fprintf(stderr, "verify: the openssl CLI refused the same bundle\n");
                return 1;
        }
        int m = n < 50 ? n : 50; /* the CLI is slow: fewer rounds */
        t0 = now_s();
        for (int k = 0; k < m; k++) {
                run(verify_argv);
                run(dgst_argv);
        }
        cli = (now_s() - t0) / m;

        printf("verify: per bundle: lockd %.3f ms (every check), openssl CLI %.3f ms "
               "(chain + signature only)\n",
               ours * 1e3, cli * 1e3);
        printf("verify: per release (manifest + binary bundle): lockd %.3f ms, openssl CLI %.3f "
               "ms\n",
               2 * ours * 1e3, 2 * cli * 1e3);
        printf("lockd/openssl = %.3f\n", ours / cli);
        snprintf(cmd_pub, sizeof(cmd_pub), "rm -rf %s", tmp);
        (void)!system(cmd_pub);
        json_decref(b);
        json_decref(r);
        sigstore_trust_root_free(root);
        free(bundle);
        free(root_json);
        free(art);
        return 0;
}
