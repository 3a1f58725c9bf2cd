/* Marketplaces: Sigstore verification of a file under a marketplace's issuer, identity pattern and
 * trusted root. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "identity.h"
#include "marketplace.h"

int marketplace_verify_file(const Marketplace *m, const void *data, size_t len,
                            const char *bundle_json, size_t bundle_len, SigstoreResult *ret) {
        SigstoreResult res = {};
        int r;

        if (!ret)
                return -EINVAL;
        if (!m || !m->root || !m->issuer || !m->identity_pattern || !bundle_json ||
            (!data && len > 0)) {
                *ret = (SigstoreResult){};
                snprintf(ret->reason, sizeof(ret->reason), "incomplete marketplace or arguments");
                return -EINVAL;
        }

        SigstoreArtifact artifact = {
                .data = data ? data : (const uint8_t *)"",
                .size = len,
        };
        /* No key_pem: a marketplace trusts Fulcio identities only. The verifier matches the
         * pattern itself (whole SAN); identity_match() below is the policy's own definition and
         * additionally refuses a ')' that closes no '(', which could change the anchoring. */
        SigstorePolicy policy = {
                .identity_regex = m->identity_pattern,
                .issuer = m->issuer,
        };

        r = sigstore_verify(m->root, bundle_json, bundle_len, &artifact, &policy, &res);
        if (r < 0) {
                char reason[sizeof(res.reason)];

                memcpy(reason, res.reason, sizeof(reason));
                sigstore_result_done(&res);
                *ret = (SigstoreResult){};
                memcpy(ret->reason, reason, sizeof(reason));
                return r;
        }

        if (!res.san || !identity_match(m->identity_pattern, res.san) || !res.issuer ||
            strcmp(res.issuer, m->issuer) != 0) {
                sigstore_result_done(&res);
                *ret = (SigstoreResult){};
                snprintf(ret->reason, sizeof(ret->reason),
                         "certificate identity does not match the marketplace's pattern");
                return -EKEYREJECTED;
        }

        *ret = res;
        return 0;
}

void marketplace_done(Marketplace *m) {
        if (!m)
                return;
        free(m->name);
        free(m->issuer);
        free(m->identity_pattern);
        sigstore_trust_root_free(m->root);
        *m = (Marketplace){};
}
