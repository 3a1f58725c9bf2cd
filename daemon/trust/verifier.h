/* The engine's client of lockd-verify: the engine never parses a Sigstore bundle, a certificate or
 * a trusted root itself; it spawns the short-lived, unprivileged helper on sealed memfds and
 * believes only its fixed-size answer checked against its own digests (verifier-proto.h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "marketplace.h"
#include "release.h"
#include "verifier-proto.h"

/* How long the engine waits for the helper's answer and exit before it kills it (fail closed). */
#define VERIFIER_TIMEOUT_USEC ((uint64_t)30 * 1000000)

/* What a verified release adds to what the engine reads itself: the signer, from the helper. */
typedef struct VerifiedRelease {
        char *san;
        char *source_ref;
} VerifiedRelease;

void verified_release_done(VerifiedRelease *v);

/*
 * The helper the engine runs. The default is decided at build time, never from the environment:
 * the build tree's lockd-verify when this process is the build tree's lockd-engine
 * (/proc/self/exe, which no peer controls), the installed one (libexecdir/lockd/lockd-verify)
 * otherwise. A helper is as trusted as the engine's own binary, so it is found only where the
 * engine itself was put.
 */
const char *verifier_helper_path(void);
/* Replaces the helper (tests; NULL restores the default). The path is copied. */
int verifier_set_helper_path(const char *path);
/* Replaces the timeout (tests; 0 restores VERIFIER_TIMEOUT_USEC). */
void verifier_set_timeout_usec(uint64_t usec);

/*
 * Has the helper check that root_fd (a sealed memfd of a trusted_root.json, whose SHA-256 the
 * engine computed as root_sha256) parses as a Sigstore trusted root. 0 yes; -EINVAL no (err says
 * why); -EPROTO the helper failed (crashed, timed out, answered malformed or for other bytes: err
 * RELEASE_E_VERIFIER); -ENOMEM; other errnos from spawning it.
 */
int verifier_check_root(int root_fd, const uint8_t root_sha256[32], ReleaseError *err);

/*
 * Has the helper verify a release under the marketplace m (its name, issuer and identity pattern;
 * m->root is not used) whose trusted root is root_fd (a sealed memfd, checked before by
 * verifier_check_root()) of digest root_sha256: sealed (every fd a sealed memfd from
 * release_snapshot_fds()) with both bundles, and with index_fds (both sealed memfds, or NULL) the
 * marketplace's index, as release_verify_fds(), index_verify() and index_check_release() would in
 * process. The helper's digests must equal manifest_sha256 and binary_sha256 (the engine's own
 * over the same memfds), its root digest root_sha256, and its SAN must match m's pattern: a reply
 * that does not is the helper failing. The ref is the caller's to check against the manifest it
 * parsed itself (release_check_ref()). Returns 0 and the signer in *ret (release it with
 * verified_release_done()); or a negative errno with err filled and *ret untouched: the release's
 * refusal as release_verify_fds() would give it, -EPROTO with RELEASE_E_VERIFIER when the helper
 * failed, -ENOMEM.
 */
int verifier_verify_release(const Marketplace *m, int root_fd, const uint8_t root_sha256[32],
                            const ReleaseFds *sealed, const int index_fds[2],
                            const uint8_t manifest_sha256[32], const uint8_t binary_sha256[32],
                            VerifiedRelease *ret, ReleaseError *err);

/* What the engine learns of a verified index: the bytes' digest, the version and the expiry. */
typedef struct VerifiedIndex {
        uint8_t sha256[32];
        uint64_t version;
        int64_t expires;
} VerifiedIndex;

/*
 * Has the helper verify a marketplace's index alone (index_fds: index.json and its bundle, both
 * sealed memfds) under m with its trusted root root_fd of digest root_sha256 (as
 * verifier_verify_release()), as index_verify() would in process: the bundle under the trusted
 * root, issuer and identity pattern, the strict parse, the marketplace's own name. The helper's
 * digest must be the engine's own over the same memfd. 0 and *ret; or a negative errno with err
 * filled (RELEASE_E_BUNDLE, RELEASE_E_IDENTITY, RELEASE_E_INDEX, RELEASE_E_TOO_LARGE; -EPROTO
 * with RELEASE_E_VERIFIER when the helper failed), *ret untouched.
 */
int verifier_verify_index(const Marketplace *m, int root_fd, const uint8_t root_sha256[32],
                          const int index_fds[2], VerifiedIndex *ret, ReleaseError *err);

/*
 * Tests: runs the helper's probe and returns its message ("uid=... caps=..."), one line, in
 * message (size bytes). 0 or a negative errno as verifier_check_root().
 */
int verifier_probe(char *message, size_t size, ReleaseError *err);
