/* libFuzzer target: index_parse on arbitrary bytes must never crash, leak or overread, and what
 * it accepts must hold what its contract promises (a version in range, an expiry that formats
 * back, valid names and versions, each name and version once). */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        MarketplaceIndex *idx = NULL;
        ReleaseError err = {};
        char when[INDEX_TIME_SIZE];
        int64_t back;
        char *copy;
        int r;

        /* An exact-size copy, so ASan catches any read past the end of the buffer. */
        copy = malloc(size ? size : 1);
        if (!copy)
                return 0;
        if (size)
                memcpy(copy, data, size);

        r = index_parse(copy, size, &idx, &err);
        if (r == 0) {
                if (!idx || !idx->name || idx->version < 1 || idx->version > INDEX_VERSION_MAX ||
                    index_format_time(idx->expires, when) < 0 ||
                    index_parse_time(when, &back) < 0 || back != idx->expires)
                        abort();
                for (size_t i = 0; i < idx->n_releases; i++) {
                        const IndexRelease *e = &idx->releases[i];

                        if (!manifest_name_valid(e->name) || !manifest_version_valid(e->version) ||
                            index_find(idx, e->name, e->version) != e)
                                abort();
                }
                index_free(idx);
        } else if (r == -EINVAL || r == -EFBIG) {
                if (idx || err.code == RELEASE_OK ||
                    memchr(err.message, 0, sizeof(err.message)) == NULL)
                        abort();
        } else if (r != -ENOMEM)
                abort();

        free(copy);
        return 0;
}
