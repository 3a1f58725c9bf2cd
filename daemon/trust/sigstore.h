/* Offline verification of Sigstore bundles against a trusted_root.json: the public API. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Inputs larger than this are refused before they are parsed. */
#define SIGSTORE_JSON_MAX (1024 * 1024)

typedef struct SigstoreTrustRoot SigstoreTrustRoot;

/* The signed thing: its bytes, or only its SHA-256 digest. */
typedef struct SigstoreArtifact {
        const uint8_t *data; /* NULL when only the digest is known */
        size_t size;
        bool have_digest;
        uint8_t sha256[32];
} SigstoreArtifact;

/* Who must have signed: a Fulcio identity (exact SAN + OIDC issuer), or a managed public key. */
typedef struct SigstorePolicy {
        const char *identity;       /* exact SAN (URI, email or otherName) */
        const char *identity_regex; /* or: POSIX ERE matched against the whole SAN */
        const char *issuer;         /* exact OIDC issuer */
        const char *key_pem;        /* managed key: SubjectPublicKeyInfo PEM; no certificate */
} SigstorePolicy;

typedef struct SigstoreResult {
        int64_t verified_time; /* earliest verified time (integrated time or RFC 3161 genTime) */
        char *san;             /* NULL for managed keys */
        char *issuer;
        char *source_ref; /* Fulcio 1.3.6.1.4.1.57264.1.14 SourceRepositoryRef, if present */
        char reason[256]; /* one line, set on failure */
} SigstoreResult;

int sigstore_trust_root_load(const char *json, size_t len, SigstoreTrustRoot **ret);
SigstoreTrustRoot *sigstore_trust_root_free(SigstoreTrustRoot *root);

/* Verifies bundle_json for artifact under policy. Returns 0 when accepted; a negative errno
 * otherwise (-EBADMSG malformed input, -EKEYREJECTED a check failed, -ENOMEM, -EINVAL usage),
 * with a one-line reason in ret->reason. ret must be released with sigstore_result_done(). */
int sigstore_verify(const SigstoreTrustRoot *root, const char *bundle_json, size_t len,
                    const SigstoreArtifact *artifact, const SigstorePolicy *policy,
                    SigstoreResult *ret);
void sigstore_result_done(SigstoreResult *r);

/* Returns true if the POSIX extended regex pattern matches the whole of san (never a substring). */
bool sigstore_identity_match(const char *pattern_regex, const char *san);

/* RFC 6962 inclusion proof: recomputes the root from leaf_hash and the audit path, compares. */
int sigstore_merkle_verify(uint64_t index, uint64_t tree_size, const uint8_t leaf_hash[32],
                           const uint8_t (*path)[32], size_t n_path, const uint8_t root[32]);
void sigstore_merkle_leaf_hash(const uint8_t *data, size_t len, uint8_t out[32]);

/* A parsed signed note (checkpoint). */
typedef struct SigstoreNoteSig {
        char *name;
        uint8_t key_hint[4];
        uint8_t *sig;
        size_t sig_len;
} SigstoreNoteSig;

typedef struct SigstoreCheckpoint {
        char *origin;
        uint64_t size;
        uint8_t root[32];
        size_t text_len; /* bytes of the signed text, up to and including the last text newline */
        SigstoreNoteSig *sigs;
        size_t n_sigs;
} SigstoreCheckpoint;

int sigstore_checkpoint_parse(const char *note, size_t len, SigstoreCheckpoint *ret);
void sigstore_checkpoint_done(SigstoreCheckpoint *c);
