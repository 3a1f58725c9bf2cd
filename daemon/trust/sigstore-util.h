/* Internal helpers of the Sigstore verifier: cleanup for OpenSSL and jansson types, codecs, times.
 */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "macro.h"
#include "sigstore.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(X509 *, X509_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_PKEY *, EVP_PKEY_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_MD_CTX *, EVP_MD_CTX_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_PKEY_CTX *, EVP_PKEY_CTX_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(X509_STORE *, X509_STORE_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(X509_STORE_CTX *, X509_STORE_CTX_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(BIO *, BIO_free)
static inline void sk_X509_pop_freep(STACK_OF(X509) * *p) {
        if (*p)
                sk_X509_pop_free(*p, X509_free);
}

/* A time window [start, end]; end INT64_MAX when open. */
typedef struct SigstoreValidity {
        int64_t start;
        int64_t end;
} SigstoreValidity;

typedef struct SigstoreBytes {
        uint8_t *data;
        size_t len;
} SigstoreBytes;

/* A key of the trust root: a Rekor or CT log. */
typedef struct SigstoreLogKey {
        uint8_t log_id[32];
        EVP_PKEY *key;
        SigstoreValidity valid;
        /* From publicKey.keyDetails: whether the declared type is one we support, and the digest
         * its signatures are made with (NULL for Ed25519). An unusable key verifies nothing. */
        bool usable;
        const EVP_MD *md;
        char *host; /* hostname of baseUrl, NULL when absent: the Rekor v2 checkpoint origin */
} SigstoreLogKey;

/* A certificate authority (Fulcio) or timestamp authority: chain leaf first, root last. */
typedef struct SigstoreAuthority {
        STACK_OF(X509) * chain;
        SigstoreValidity valid;
} SigstoreAuthority;

struct SigstoreTrustRoot {
        SigstoreLogKey *tlogs, *ctlogs;
        size_t n_tlogs, n_ctlogs;
        SigstoreAuthority *cas, *tsas;
        size_t n_cas, n_tsas;
};

typedef enum SigstoreBodyKind {
        SIGSTORE_HASHEDREKORD_001,
        SIGSTORE_DSSE_001,
        SIGSTORE_INTOTO_002,
        SIGSTORE_HASHEDREKORD_002,
        SIGSTORE_DSSE_002,
} SigstoreBodyKind;

typedef struct SigstoreTlogEntry {
        uint64_t log_index;
        uint8_t log_id[32];
        SigstoreBodyKind kind;
        bool have_integrated_time;
        int64_t integrated_time;
        SigstoreBytes body; /* canonicalizedBody, decoded */
        char *body_b64;     /* as in the bundle, for the SET */
        SigstoreBytes set;  /* signedEntryTimestamp; len 0 when absent */
        bool have_proof;
        uint64_t proof_index, proof_size;
        uint8_t proof_root[32];
        uint8_t (*proof_hashes)[32];
        size_t n_proof_hashes;
        char *checkpoint; /* NULL when absent */
} SigstoreTlogEntry;

typedef struct SigstoreBundle {
        int version_minor;      /* 1, 2 or 3 */
        X509 *leaf;             /* NULL for managed keys */
        STACK_OF(X509) * chain; /* certificates after the leaf, v0.1/v0.2 only */
        bool public_key_hint;
        SigstoreTlogEntry *tlog;
        size_t n_tlog;
        SigstoreBytes *timestamps; /* RFC 3161 signed timestamp responses, DER */
        size_t n_timestamps;
        bool is_dsse;
        /* messageSignature */
        bool have_digest;
        uint8_t digest[32];
        /* signature (messageSignature.signature, or the single DSSE signature) */
        SigstoreBytes signature;
        /* DSSE */
        char *payload_type;
        SigstoreBytes payload;
} SigstoreBundle;

int sigstore_bundle_parse(const char *json, size_t len, SigstoreBundle *ret, char *reason,
                          size_t reason_size);
void sigstore_bundle_done(SigstoreBundle *b);

/* Standard base64 into a new buffer (codec.h's base64_decode(), padding optional); 0, -EBADMSG or
 * -ENOMEM. The codecs themselves are in codec.h. */
int sigstore_b64_decode(const char *s, size_t len, SigstoreBytes *ret);
/* RFC 3339 UTC ("2021-01-12T11:53:27Z", optional fraction): seconds since the epoch, or -EBADMSG.
 */
int sigstore_parse_rfc3339(const char *s, int64_t *ret);
/* A proto3 JSON int64: a decimal string or a JSON integer, non-negative. */
int sigstore_json_uint64(json_t *v, uint64_t *ret);
/* Verifies sig over msg with key: ECDSA/RSA over SHA-256 (or SHA-384/512 for P-384/P-521), Ed25519
 * plain. */
int sigstore_verify_sig(EVP_PKEY *key, const uint8_t *msg, size_t msg_len, const uint8_t *sig,
                        size_t sig_len);
/* Verifies sig over msg with a trust root log key, using the digest its keyDetails declare.
 * Refuses a key whose keyDetails are unknown or unsupported. */
int sigstore_verify_log_sig(const SigstoreLogKey *log, const uint8_t *msg, size_t msg_len,
                            const uint8_t *sig, size_t sig_len);
/* Same, for an ECDSA/RSA key and an already computed SHA-256 digest. */
int sigstore_verify_sig_prehashed(EVP_PKEY *key, const uint8_t digest[32], const uint8_t *sig,
                                  size_t sig_len);
EVP_PKEY *sigstore_pkey_from_der(const uint8_t *der, size_t len);
void sigstore_fail(char *reason, size_t size, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static inline bool sigstore_in_validity(const SigstoreValidity *v, int64_t t) {
        return t >= v->start && t <= v->end;
}
