/* The compiled-in copy of Sigstore's production public-good trusted root. */
#pragma once

#include <stddef.h>

/* Returns the JSON (NUL-terminated) and its length without the NUL. */
const char *trusted_root_default(size_t *ret_len);
