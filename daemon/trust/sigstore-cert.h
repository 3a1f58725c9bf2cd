/* Fulcio certificate checks: chain at a time, embedded SCTs, EKU, identity extensions. */
#pragma once

#include "sigstore-util.h"

/* Verifies leaf against the trust root's CAs at time t; on success *issuer_ret is the cert that
 * issued leaf (a new reference). Returns 0 or -EKEYREJECTED. */
int sigstore_cert_chain_verify(const SigstoreTrustRoot *root, X509 *leaf, int64_t t,
                               X509 **issuer_ret);
/* Verifies the embedded SCTs against the trust root's CT logs: at least one, none bad. */
int sigstore_cert_sct_verify(const SigstoreTrustRoot *root, X509 *leaf, X509 *issuer, char *reason,
                             size_t reason_size);
/* The RFC 6962 3.2 digitally-signed struct of a precertificate SCT made at timestamp_ms with the
 * extensions ext: pre's TBS (the leaf without its SCT list, or the precertificate without its
 * poison) bound to the SHA-256 of issuer's key. What a CT log signs and a verifier checks; 0 with a
 * new buffer in *ret, -EBADMSG (a field past its length prefix), -ENOMEM. */
int sigstore_sct_signed_data(X509 *pre, X509 *issuer, uint64_t timestamp_ms, const uint8_t *ext,
                             size_t ext_len, uint8_t **ret, size_t *ret_len);
bool sigstore_cert_code_signing(X509 *leaf);
/* The first SAN (URI, email or Fulcio otherName) as a new string, or NULL. */
char *sigstore_cert_san(X509 *leaf);
/* A Fulcio extension holding a DER UTF8String (raw=false) or raw bytes (raw=true). */
char *sigstore_cert_ext_string(X509 *leaf, const char *oid, bool raw);
/* Verifies the RFC 3161 timestamp response der over sig against the trust root's TSAs; returns the
 * genTime in *ret. */
int sigstore_tsa_verify(const SigstoreTrustRoot *root, const uint8_t *der, size_t len,
                        const uint8_t *sig, size_t sig_len, int64_t *ret, char *reason,
                        size_t reason_size);
