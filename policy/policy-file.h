/* Reading the policy file: the spawner and the engine load the same file the same way. */
#pragma once

#include <stddef.h>

#include "policy.h"

/*
 * Loads the policy at path (NULL: the compiled-in default). 0 with *ret, or a negative errno
 * with why holding "PATH:LINE:COLUMN: CODE: message" (or what else went wrong) and *ret untouched.
 */
int policy_file_load(const char *path, Policy **ret, char *why, size_t why_len);
