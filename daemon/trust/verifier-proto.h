/* The contract between the engine and lockd-verify, its verification helper: the helper's fixed
 * fds, its limits, the one request the engine writes and the one reply the helper answers. The
 * engine's side is verifier.c, the helper's lockd-verify.c. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "marketplace.h"

/* The uid and gid the helper runs as when started by root: nobody. */
#define VERIFIER_UID ((uint32_t)65534)
#define VERIFIER_GID ((uint32_t)65534)

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
        VERIFIER_FD_REPLY = 1, /* a pipe to the engine: one VerifierReply, then EOF */
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

/* What the engine asks. Every string is NUL-terminated inside its array; the rest is zero. */
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
 * SHA-256 of the bytes the helper verified; the engine compares them with its own.
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

/* Copies s (NULL for "") into the fixed field dst of size bytes, zero-padded: 0, or -EINVAL when
 * it does not fit with its NUL. */
int verifier_field_set(char *dst, size_t size, const char *s);

/* Whether the fixed field s (size bytes) is NUL-terminated, zero after the NUL, and made of bytes
 * in [lo, 0x7e]. */
bool verifier_field_valid(const char *s, size_t size, char lo);
