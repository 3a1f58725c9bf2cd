/* Escaping of untrusted bytes (a plugin's detail) for a terminal. */
#pragma once

#include <stddef.h>

/*
 * Writes src (len bytes) into a new NUL-terminated string where printable ASCII but the backslash
 * stays as it is and every other byte becomes \n, \t, \\ or \xNN, so nothing a plugin writes can
 * drive the terminal. Returns NULL on out of memory.
 */
char *escape_bytes(const void *src, size_t len);
