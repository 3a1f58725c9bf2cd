/*
 * Sigstore's production public-good trusted root, compiled in from data/trusted_root.json: the
 * default of verify-bundle when the installed copy (which an administrator may replace) is absent.
 */
#include <stddef.h>

#include "trusted-root-default.h"
#include "trusted-root-data.h"

const char *trusted_root_default(size_t *ret_len) {
        *ret_len = sizeof(trusted_root_data) - 1;
        return trusted_root_data;
}
