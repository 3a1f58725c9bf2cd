/* lockctl verify-bundle: verifies a Sigstore bundle offline, speaking the sigstore-conformance CLI.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fd-util.h"
#include "lockctl-verify.h"
#include "trusted-root-default.h"
#include "codec.h"
#include "macro.h"
#include "sigstore.h"
#include "sigstore-util.h"

#ifndef LOCKD_DATADIR
#define LOCKD_DATADIR "/usr/share/lockd"
#endif

#define ARTIFACT_MAX ((size_t)4 * GiB)

DEFINE_TRIVIAL_CLEANUP_FUNC(SigstoreTrustRoot *, sigstore_trust_root_free)

/* Prints "error: fmt" as one line and returns the reject exit status. */
static int __attribute__((format(printf, 1, 2))) reject(const char *fmt, ...) {
        va_list ap;
        fputs("error: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return 1;
}

/* verify-bundle --bundle FILE (--certificate-identity ID --certificate-oidc-issuer URL | --key PEM)
 * [--trusted-root FILE] FILE_OR_DIGEST. Exit status 0 when accepted, 1 with one line on stderr
 * otherwise (also for usage errors). */
int verb_verify_bundle(int argc, char **argv) {
        static const struct option options[] = {
                {"bundle", required_argument, NULL, 'b'},
                {"certificate-identity", required_argument, NULL, 'i'},
                {"certificate-oidc-issuer", required_argument, NULL, 'o'},
                {"key", required_argument, NULL, 'k'},
                {"trusted-root", required_argument, NULL, 't'},
                {}};
        const char *bundle_path = NULL, *identity = NULL, *issuer = NULL, *key_path = NULL,
                   *root_path = NULL;
        int c;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'b':
                        bundle_path = optarg;
                        break;
                case 'i':
                        identity = optarg;
                        break;
                case 'o':
                        issuer = optarg;
                        break;
                case 'k':
                        key_path = optarg;
                        break;
                case 't':
                        root_path = optarg;
                        break;
                default:
                        return reject("unknown or incomplete option %s", argv[optind - 1]);
                }
        if (optind != argc - 1)
                return reject("%s",
                              "usage: verify-bundle --bundle FILE (--certificate-identity ID "
                              "--certificate-oidc-issuer URL | --key PATH) [--trusted-root FILE] "
                              "FILE_OR_DIGEST");
        if (!bundle_path)
                return reject("%s", "--bundle is required");
        if (key_path ? identity || issuer : !identity || !issuer)
                return reject(
                        "%s",
                        "give --key, or both --certificate-identity and --certificate-oidc-issuer");

        _cleanup_free_ char *root_json = NULL, *bundle = NULL, *key = NULL, *data = NULL;
        size_t root_len, bundle_len, key_len, data_len = 0;
        const char *root_text;
        if (root_path) {
                if (read_full_file(root_path, SIGSTORE_JSON_MAX, &root_json, &root_len) < 0)
                        return reject("cannot read trusted root %s", root_path);
                root_text = root_json;
        } else if (access(LOCKD_DATADIR "/trusted_root.json", F_OK) == 0) {
                /* The installed production root, which an administrator may have replaced. */
                root_path = LOCKD_DATADIR "/trusted_root.json";
                if (read_full_file(root_path, SIGSTORE_JSON_MAX, &root_json, &root_len) < 0)
                        return reject("cannot read trusted root %s", root_path);
                root_text = root_json;
        } else {
                /* Not installed (a build tree): the copy compiled in from the same data file. */
                root_path = "(compiled-in public-good root)";
                root_text = trusted_root_default(&root_len);
        }
        _cleanup_(sigstore_trust_root_freep) SigstoreTrustRoot *root = NULL;
        if (sigstore_trust_root_load(root_text, root_len, &root) < 0)
                return reject("invalid trusted root %s", root_path);
        if (read_full_file(bundle_path, SIGSTORE_JSON_MAX, &bundle, &bundle_len) < 0)
                return reject("cannot read bundle %s (or larger than 1 MiB)", bundle_path);
        if (key_path && read_full_file(key_path, 64 * KiB, &key, &key_len) < 0)
                return reject("cannot read key %s", key_path);

        SigstoreArtifact artifact = {};
        const char *a = argv[optind];
        if (strncmp(a, "sha256:", 7) == 0) {
                if (hex_decode(a + 7, strlen(a + 7), artifact.sha256, 32) < 0)
                        return reject("invalid digest %s", a);
                artifact.have_digest = true;
        } else {
                if (read_full_file(a, ARTIFACT_MAX, &data, &data_len) < 0)
                        return reject("cannot read artifact %s", a);
                artifact.data = (const uint8_t *)data;
                artifact.size = data_len;
        }

        SigstorePolicy policy = {.identity = identity, .issuer = issuer, .key_pem = key};
        SigstoreResult result;
        int r = sigstore_verify(root, bundle, bundle_len, &artifact, &policy, &result);
        if (r < 0) {
                reject("%s", result.reason[0] ? result.reason : strerror(-r));
                sigstore_result_done(&result);
                return 1;
        }
        sigstore_result_done(&result);
        return 0;
}
