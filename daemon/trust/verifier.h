/* The verification helper: lockd never parses a Sigstore bundle, a certificate or a trusted root
 * itself; a short-lived, unprivileged lockd-verify process does, on sealed memfds. Both sides. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "marketplaces.h"
#include "release.h"

/* The uid and gid the helper runs as when started by root: nobody. */
#define VERIFIER_UID ((uint32_t)65534)
#define VERIFIER_GID ((uint32_t)65534)

/* How long lockd waits for the helper's answer and exit before it kills it (fail closed). */
#define VERIFIER_TIMEOUT_USEC ((uint64_t)30 * 1000000)
/* The helper's own limits: CPU seconds, address space (the binary is mapped, up to 256 MiB). */
#define VERIFIER_CPU_S    20
#define VERIFIER_AS_BYTES ((uint64_t)1024 * 1024 * 1024)
#define VERIFIER_NOFILE   16

#define VERIFIER_MAGIC   UINT32_C(0x6c6b7672) /* "rvkl" in memory */
#define VERIFIER_VERSION UINT32_C(2)
#define VERIFIER_SAN_MAX 1024 /* bytes of a certificate's SAN the helper reports */
#define VERIFIER_REF_MAX 255  /* bytes of a certificate's source ref */

/* The helper's file descriptors, fixed: nothing else is open in it. */
enum {
        VERIFIER_FD_DEVNULL_IN = 0,
        VERIFIER_FD_REPLY = 1, /* a pipe to lockd: one VerifierReply, then EOF */
        VERIFIER_FD_DEVNULL_ERR = 2,
        VERIFIER_FD_REQUEST = 3, /* a sealed memfd holding one VerifierRequest */
        VERIFIER_FD_ROOT = 4,    /* the marketplace's trusted_root.json, a sealed memfd */
        VERIFIER_FD_MANIFEST = 5,
        VERIFIER_FD_BINARY = 6,
        VERIFIER_FD_MANIFEST_BUNDLE = 7,
        VERIFIER_FD_BINARY_BUNDLE = 8,
        VERIFIER_FD_INDEX = 9, /* index.json and its bundle; /dev/null without an index */
        VERIFIER_FD_INDEX_BUNDLE = 10,
        _VERIFIER_FD_MAX,
};

typedef enum VerifierKind {
        VERIFIER_KIND_ROOT = 1,    /* does fd 4 parse as a Sigstore trusted root? */
        VERIFIER_KIND_RELEASE = 2, /* release_verify_fds() on fds 4-8 (+ the index on 9, 10) */
        VERIFIER_KIND_PROBE = 3,   /* tests: report the helper's own credentials and limits */
        VERIFIER_KIND_INDEX = 4,   /* index_verify() on fds 9, 10 alone: its version and expiry */
        _VERIFIER_KIND_MAX,
} VerifierKind;

#define VERIFIER_FLAG_INDEX UINT32_C(1)

/* What lockd asks. Every string is NUL-terminated inside its array; the rest is zero. */
typedef struct VerifierRequest {
        uint32_t magic;
        uint32_t version;
        uint32_t kind;
        uint32_t flags;
        char name[MARKETPLACE_NAME_MAX + 1];
        char issuer[MARKETPLACE_ISSUER_MAX + 1];
        char identity[MARKETPLACE_IDENTITY_MAX + 1];
} VerifierRequest;

/*
 * What the helper answers, exactly sizeof(VerifierReply) bytes, written at once (less than
 * PIPE_BUF, so atomic) and followed by EOF. code RELEASE_OK with error 0 is success; otherwise
 * error is the refusal's negative errno and code its ReleaseErrorCode. The digests are the
 * SHA-256 of the bytes the helper verified; lockd compares them with its own.
 */
typedef struct VerifierReply {
        uint32_t magic;
        uint32_t version;
        uint32_t kind;
        uint32_t code;
        int32_t error;
        uint32_t reserved;
        char message[256];
        uint8_t root_sha256[32];
        uint8_t manifest_sha256[32];
        uint8_t binary_sha256[32];
        uint8_t index_sha256[32];
        uint64_t index_version; /* the verified index's "version" and "expires", with an index */
        int64_t index_expires;
        char san[VERIFIER_SAN_MAX + 1];
        char source_ref[VERIFIER_REF_MAX + 1];
} VerifierReply;

_Static_assert(sizeof(VerifierReply) <= 4096, "the reply must fit one atomic pipe write");

/* What a verified release adds to what lockd reads itself: the signer, from the helper. */
typedef struct VerifiedRelease {
        char *san;
        char *source_ref;
} VerifiedRelease;

void verified_release_done(VerifiedRelease *v);

/*
 * The helper lockd runs. The default is decided at build time, never from the environment: the
 * build tree's lockd-verify when this process is the build tree's lockd (/proc/self/exe, which no
 * peer controls), the installed one (libexecdir/lockd/lockd-verify) otherwise. A helper is as
 * trusted as lockd's own binary, so it is found only where lockd itself was put.
 */
const char *verifier_helper_path(void);
/* Replaces the helper (tests; NULL restores the default). The path is copied. */
int verifier_set_helper_path(const char *path);
/* Replaces the timeout (tests; 0 restores VERIFIER_TIMEOUT_USEC). */
void verifier_set_timeout_usec(uint64_t usec);

/*
 * Has the helper check that root_fd (a sealed memfd of a trusted_root.json, whose SHA-256 lockd
 * computed as root_sha256) parses as a Sigstore trusted root. 0 yes; -EINVAL no (err says why);
 * -EPROTO the helper failed (crashed, timed out, answered malformed or for other bytes: err
 * RELEASE_E_VERIFIER); -ENOMEM; other errnos from spawning it.
 */
int verifier_check_root(int root_fd, const uint8_t root_sha256[32], ReleaseError *err);

/*
 * Has the helper verify a release under the marketplace m: sealed (every fd a sealed memfd from
 * release_snapshot_fds()) with both bundles, and with index_fds (both sealed memfds, or NULL)
 * the marketplace's index, as release_verify_fds(), index_verify() and index_check_release()
 * would in process. The helper's digests must equal manifest_sha256 and binary_sha256 (lockd's
 * own over the same memfds), its root digest m's, and its SAN must match m's pattern: a reply
 * that does not is the helper failing. The ref is the caller's to check against the manifest it
 * parsed itself (release_check_ref()). Returns 0 and the signer in *ret
 * (release it with verified_release_done()); or a negative errno with err filled and *ret
 * untouched: the release's refusal as release_verify_fds() would give it, -EPROTO with
 * RELEASE_E_VERIFIER when the helper failed, -ENOMEM.
 */
int verifier_verify_release(const MarketplaceEntry *m, const ReleaseFds *sealed,
                            const int index_fds[2], const uint8_t manifest_sha256[32],
                            const uint8_t binary_sha256[32], VerifiedRelease *ret,
                            ReleaseError *err);

/* What lockd learns of a verified index: the bytes' digest, the version and the expiry. */
typedef struct VerifiedIndex {
        uint8_t sha256[32];
        uint64_t version;
        int64_t expires;
} VerifiedIndex;

/*
 * Has the helper verify a marketplace's index alone (index_fds: index.json and its bundle, both
 * sealed memfds) under m, as index_verify() would in process: the bundle under the trusted
 * root, issuer and identity pattern, the strict parse, the marketplace's own name. The helper's
 * digest must be lockd's own over the same memfd. 0 and *ret; or a negative errno with err
 * filled (RELEASE_E_BUNDLE, RELEASE_E_IDENTITY, RELEASE_E_INDEX, RELEASE_E_TOO_LARGE; -EPROTO
 * with RELEASE_E_VERIFIER when the helper failed), *ret untouched.
 */
int verifier_verify_index(const MarketplaceEntry *m, const int index_fds[2], VerifiedIndex *ret,
                          ReleaseError *err);

/*
 * Tests: runs the helper's probe and returns its message ("uid=... caps=..."), one line, in
 * message (size bytes). 0 or a negative errno as verifier_check_root().
 */
int verifier_probe(char *message, size_t size, ReleaseError *err);

/*
 * The helper's whole life (lockd-verify's main): drops to nobody with no capability, no_new_privs,
 * non-dumpable, tight rlimits and a seccomp allow-list, then reads the request on fd 3, verifies
 * and writes one VerifierReply on fd 1. Returns the exit status: 0 when a reply was written.
 */
int verifier_helper_main(void);
