/* Human-typed input values: the check of a value against the input it is bound to. */
#pragma once

#include <stddef.h>

#include "manifest.h"

/*
 * Checks value (len bytes) against in: 1..max_bytes bytes, and of its kind — text: valid UTF-8
 * without control characters; email: one '@' between a non-empty local part and a dotted
 * domain, printable ASCII without spaces; digits: ASCII 0-9 only. 0 or -EINVAL. Pure: the value
 * is never copied, logged or echoed.
 */
int input_value_check(const ManifestInput *in, const char *value, size_t len);

/* Whether buf holds valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF). */
int utf8_valid(const char *buf, size_t len);
