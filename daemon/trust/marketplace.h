/* Marketplaces: a name, an OIDC issuer, an identity pattern and a trusted root, and the one way a
 * file's Sigstore bundle is verified under them. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "marketplace-name.h"
#include "sigstore.h"

/* The caps of a marketplace's parts (the name's is MARKETPLACE_NAME_MAX, with its rule). */
#define MARKETPLACE_ISSUER_MAX   512
#define MARKETPLACE_IDENTITY_MAX 1024
#define MARKETPLACE_ROOT_MAX     ((size_t)1024 * 1024) /* trusted_root.json */

typedef struct Marketplace {
        char *name;
        char *issuer;           /* exact OIDC issuer of the signing certificates */
        char *identity_pattern; /* POSIX ERE matched against the whole SAN (identity_match()) */
        SigstoreTrustRoot *root;
} Marketplace;

/*
 * Verifies bundle_json (bundle_len bytes) for the len bytes at data under m: the bundle must
 * verify against m->root, the certificate's OIDC issuer must be m->issuer exactly and its SAN must
 * match m->identity_pattern as a whole (identity_match(), which also refuses unbalanced patterns).
 * Managed keys are never accepted. Returns 0 with *ret filled (release it with
 * sigstore_result_done()); or a negative errno from sigstore_verify() (-EBADMSG malformed,
 * -EKEYREJECTED a check failed, -ENOMEM, -EINVAL usage or an incomplete marketplace) with a
 * one-line reason in ret->reason and no other field of *ret set.
 */
int marketplace_verify_file(const Marketplace *m, const void *data, size_t len,
                            const char *bundle_json, size_t bundle_len, SigstoreResult *ret);

/* Frees the fields of m (not m itself) and leaves it zeroed. */
void marketplace_done(Marketplace *m);
