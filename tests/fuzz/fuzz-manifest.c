/* libFuzzer target: manifest_parse on arbitrary bytes must never crash, leak or overread. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Manifest *m = NULL;
        ManifestDiag d;
        char *copy;
        int r;

        /* An exact-size copy, so ASan catches any read past the end of the buffer. */
        copy = malloc(size ? size : 1);
        if (!copy)
                return 0;
        if (size)
                memcpy(copy, data, size);

        r = manifest_parse(copy, size, &m, &d);
        if (r == 0) {
                if (!m || !m->name || !m->accepts || m->accepts[m->n_accepts] != NULL)
                        abort();
                manifest_free(m);
        } else if (r == -EINVAL) {
                if (m || !manifest_error_name(d.code) || d.code == MANIFEST_OK ||
                    memchr(d.message, '\0', sizeof(d.message)) == NULL)
                        abort();
        } else if (r != -ENOMEM)
                abort();

        free(copy);
        return 0;
}
