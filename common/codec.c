/* The one UTF-8 check, base64, hex and SHA-256 of lockd (codec.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec.h"
#include "macro.h"

int utf8_decode(const void *buf, size_t n, uint32_t *ret_cp) {
        const uint8_t *s = buf;
        uint32_t cp;
        size_t len;

        if (n == 0)
                return UTF8_E_TRUNCATED;
        if (s[0] < 0x80) {
                *ret_cp = s[0];
                return 1;
        }
        /* 0xc0 and 0xc1 could only start an overlong form of ASCII; 0xf5 and up only a code
         * point past U+10FFFF. */
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                len = 2, cp = s[0] & 0x1f;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                len = 3, cp = s[0] & 0x0f;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                len = 4, cp = s[0] & 0x07;
        else
                return s[0] == 0xc0 || s[0] == 0xc1 ? UTF8_E_OVERLONG : UTF8_E_LEAD;
        for (size_t k = 1; k < len; k++) {
                if (k >= n)
                        return UTF8_E_TRUNCATED;
                if ((s[k] & 0xc0) != 0x80)
                        return UTF8_E_CONTINUATION;
                cp = cp << 6 | (s[k] & 0x3f);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000))
                return UTF8_E_OVERLONG;
        if (cp >= 0xd800 && cp <= 0xdfff)
                return UTF8_E_SURROGATE;
        if (cp > 0x10ffff)
                return UTF8_E_RANGE;
        *ret_cp = cp;
        return (int)len;
}

bool utf8_valid(const void *buf, size_t len) {
        const uint8_t *s = buf;

        for (size_t i = 0; i < len;) {
                uint32_t cp;
                int k = utf8_decode(s + i, len - i, &cp);

                if (k < 0)
                        return false;
                i += (size_t)k;
        }
        return true;
}

size_t utf8_encode(uint32_t cp, char out[static 4]) {
        if (cp < 0x80) {
                out[0] = (char)cp;
                return 1;
        }
        if (cp < 0x800) {
                out[0] = (char)(0xc0 | (cp >> 6));
                out[1] = (char)(0x80 | (cp & 0x3f));
                return 2;
        }
        if (cp >= 0xd800 && cp <= 0xdfff)
                return 0;
        if (cp < 0x10000) {
                out[0] = (char)(0xe0 | (cp >> 12));
                out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
                out[2] = (char)(0x80 | (cp & 0x3f));
                return 3;
        }
        if (cp > 0x10ffff)
                return 0;
        out[0] = (char)(0xf0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[3] = (char)(0x80 | (cp & 0x3f));
        return 4;
}

int unhexchar(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

void hex_encode(const void *data, size_t n, char *out) {
        static const char digits[] = "0123456789abcdef";
        const uint8_t *d = data;

        for (size_t i = 0; i < n; i++) {
                out[2 * i] = digits[d[i] >> 4];
                out[2 * i + 1] = digits[d[i] & 15];
        }
        out[2 * n] = '\0';
}

int hex_decode(const char *s, size_t len, uint8_t *out, size_t out_len) {
        if (!s || len != out_len * 2)
                return -EBADMSG;
        for (size_t i = 0; i < len; i++)
                if (unhexchar(s[i]) < 0)
                        return -EBADMSG;
        for (size_t i = 0; i < out_len; i++)
                out[i] = (uint8_t)(unhexchar(s[2 * i]) << 4 | unhexchar(s[2 * i + 1]));
        return 0;
}

bool hex_lower_valid(const char *s, size_t len) {
        for (size_t i = 0; i < len; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return s != NULL;
}

static const char base64_alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int base64_value(char c) {
        const char *p = c ? strchr(base64_alphabet, c) : NULL;

        return p ? (int)(p - base64_alphabet) : -1;
}

size_t base64_encoded_len(size_t n) {
        return (n + 2) / 3 * 4;
}

void base64_encode(const void *data, size_t n, char *out) {
        const uint8_t *d = data;
        char *p = out;

        for (size_t i = 0; i < n; i += 3) {
                uint32_t v = (uint32_t)d[i] << 16;

                if (i + 1 < n)
                        v |= (uint32_t)d[i + 1] << 8;
                if (i + 2 < n)
                        v |= d[i + 2];
                *p++ = base64_alphabet[(v >> 18) & 63];
                *p++ = base64_alphabet[(v >> 12) & 63];
                *p++ = i + 1 < n ? base64_alphabet[(v >> 6) & 63] : '=';
                *p++ = i + 2 < n ? base64_alphabet[v & 63] : '=';
        }
        *p = '\0';
}

char *base64_encode_alloc(const void *data, size_t n) {
        char *out = malloc(base64_encoded_len(n) + 1);

        if (out)
                base64_encode(data, n, out);
        return out;
}

int base64_decode(const char *s, size_t len, bool padding_required, uint8_t *out, size_t max,
                  size_t *ret_len) {
        size_t pad = 0, n = 0;
        uint32_t acc = 0;
        unsigned bits = 0;

        if (!s)
                return -EBADMSG;
        while (len > 0 && s[len - 1] == '=' && pad < 2) {
                len--;
                pad++;
        }
        if ((pad > 0 || padding_required) && (len + pad) % 4 != 0)
                return -EBADMSG;
        if (len % 4 == 1)
                return -EBADMSG;
        for (size_t i = 0; i < len; i++) {
                int v = base64_value(s[i]);

                if (v < 0)
                        return -EBADMSG;
                acc = (acc << 6) | (uint32_t)v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        if (n >= max)
                                return -ENOBUFS;
                        out[n++] = (uint8_t)(acc >> bits);
                }
        }
        /* The bits past the last byte must be zero: one text per byte string. */
        if (bits > 0 && (acc & ((1u << bits) - 1)) != 0)
                return -EBADMSG;
        *ret_len = n;
        return 0;
}
