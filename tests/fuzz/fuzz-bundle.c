/* libFuzzer target: bundle, trust root and checkpoint parsing of arbitrary bytes must never crash,
 * leak or overread. */
#include <stdlib.h>
#include <string.h>

#include "sigstore-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* An exact-size copy, so ASan catches any read past the end of the buffer. */
        char *copy = malloc(size ? size : 1);
        if (!copy)
                return 0;
        if (size)
                memcpy(copy, data, size);

        SigstoreBundle b = {};
        char reason[256] = "";
        int r = sigstore_bundle_parse(copy, size, &b, reason, sizeof(reason));
        if (r < 0 && !reason[0] && r != -ENOMEM)
                abort(); /* every refusal says why */
        sigstore_bundle_done(&b);

        SigstoreTrustRoot *root = NULL;
        if (sigstore_trust_root_load(copy, size, &root) == 0)
                sigstore_trust_root_free(root);

        SigstoreCheckpoint c;
        if (sigstore_checkpoint_parse(copy, size, &c) == 0 && (c.n_sigs == 0 || c.text_len > size))
                abort();
        sigstore_checkpoint_done(&c);
        free(copy);
        return 0;
}
