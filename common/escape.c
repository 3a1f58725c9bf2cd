/* Escaping of untrusted bytes (a plugin's detail) for a terminal. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "escape.h"

char *escape_bytes(const void *src, size_t len) {
        const uint8_t *s = src;
        char *out, *o;

        if (len > (SIZE_MAX - 1) / 4)
                return NULL;
        out = malloc(len * 4 + 1);
        if (!out)
                return NULL;
        o = out;
        for (size_t i = 0; i < len; i++) {
                uint8_t c = s[i];

                if (c == '\\') {
                        *o++ = '\\';
                        *o++ = '\\';
                } else if (c == '\n') {
                        *o++ = '\\';
                        *o++ = 'n';
                } else if (c == '\t') {
                        *o++ = '\\';
                        *o++ = 't';
                } else if (c >= 0x20 && c < 0x7f) {
                        *o++ = (char)c;
                } else {
                        snprintf(o, 5, "\\x%02x", c);
                        o += 4;
                }
        }
        *o = 0;
        return out;
}
