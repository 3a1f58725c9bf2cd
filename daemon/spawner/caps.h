/* lockd's own capabilities: cut to what spawning plugins needs once the sockets are bound. */
#pragma once

#include <stddef.h>
#include <sys/capability.h>

#include "caps-kept.h"

/*
 * Drops every capability but keep[] from the effective, permitted and inheritable sets and from
 * the bounding set, clears the ambient set, and reads the result back. Per-thread in Linux: call
 * it before any other thread exists (threads inherit it). 0 or a negative errno; on failure the
 * caller must not go on (a half-dropped set is not a state to serve from).
 */
int caps_drop_except(const cap_value_t *keep, size_t n);
