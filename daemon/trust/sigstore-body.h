/* Consistency of a Rekor entry body with the bundle that carries it. */
#pragma once

#include <inttypes.h>

#include "sigstore-util.h"

/* Who signed: the Fulcio leaf certificate (cert set) or a managed key (cert NULL). */
typedef struct SigstoreSigner {
        X509 *cert;
        EVP_PKEY *key;
} SigstoreSigner;

int sigstore_body_check(const SigstoreTlogEntry *t, const SigstoreBundle *b,
                        const SigstoreSigner *s, const uint8_t expected_digest[32], char *reason,
                        size_t reason_size);
