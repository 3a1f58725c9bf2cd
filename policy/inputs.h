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

/*
 * The canonical JSON of fd 6 (the contract's Runtime row): one object mapping every input m
 * declares to its value, keys sorted, compact, non-ASCII escaped. values[k] (NUL-terminated) is
 * the value of m->inputs[k]. 0 with a new string in *ret; -ENOENT with *ret_bad = k when values[k]
 * is missing, -EINVAL with *ret_bad = k when it does not fit input_value_check(), in declaration
 * order; -ENOMEM. A value goes nowhere but into *ret.
 */
int inputs_canonical_json(const Manifest *m, const char *const values[MANIFEST_INPUTS_MAX],
                          char **ret, size_t *ret_bad);
