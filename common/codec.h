/* The codecs of lockd, one of each (ARCHITECTURE.md, Layout): the UTF-8 check, base64, hex and
 * SHA-256. Every parser, store and log line uses these; none keeps a copy of its own. Pure but
 * for sha256_fd(), which reads the fd it is given. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32
#define SHA256_HEX_SIZE    64 /* without the NUL */

/* Why a UTF-8 sequence is refused: utf8_decode()'s negative returns. */
typedef enum Utf8Error {
        UTF8_E_LEAD = -1,         /* a byte that cannot start a sequence (0x80..0xc1, 0xf5..) */
        UTF8_E_TRUNCATED = -2,    /* the bytes end inside the sequence */
        UTF8_E_CONTINUATION = -3, /* a byte inside it that is not 10xxxxxx */
        UTF8_E_OVERLONG = -4,     /* a code point encoded in more bytes than it needs */
        UTF8_E_SURROGATE = -5,    /* U+D800..U+DFFF */
        UTF8_E_RANGE = -6,        /* past U+10FFFF */
} Utf8Error;

/*
 * Decodes the strict UTF-8 sequence at s (n > 0 bytes available): its length (1 to 4) with the
 * code point in *ret_cp, or a Utf8Error. NUL and controls decode like any character: which code
 * points a caller refuses is its own rule.
 */
int utf8_decode(const void *s, size_t n, uint32_t *ret_cp);
/* Whether len bytes are strict UTF-8 throughout. */
bool utf8_valid(const void *s, size_t len);
/* Encodes cp into out: its length (1 to 4), or 0 for a surrogate or a value past U+10FFFF. */
size_t utf8_encode(uint32_t cp, char out[static 4]);

/* The value of a hex digit (either case), or -1. */
int unhexchar(char c);
/* Lowercase hex of n bytes into out: 2n characters and a NUL. */
void hex_encode(const void *data, size_t n, char *out);
/* Exactly out_len bytes from len characters of hex (either case; len must be 2 * out_len):
 * 0 or -EBADMSG, out untouched on failure. */
int hex_decode(const char *s, size_t len, uint8_t *out, size_t out_len);
/* Whether len characters are lowercase hex digits (the form lockd writes). */
bool hex_lower_valid(const char *s, size_t len);

/* The length of the padded standard base64 of n bytes, without the NUL. */
size_t base64_encoded_len(size_t n);
/* Standard base64, padded, into out (base64_encoded_len(n) + 1 bytes, NUL-terminated). */
void base64_encode(const void *data, size_t n, char *out);
/* The same in a new string (free()), or NULL. */
char *base64_encode_alloc(const void *data, size_t n);
/*
 * Decodes len characters of strict standard base64: no whitespace, the unused low bits of the
 * last symbol zero, '=' only at the end and only to a multiple of 4; with padding_required, the
 * text must be padded. At most max bytes into out; the count in *ret_len. 0, -EBADMSG (not such
 * base64) or -ENOBUFS (more than max bytes), out's content unspecified on failure.
 */
int base64_decode(const char *s, size_t len, bool padding_required, uint8_t *out, size_t max,
                  size_t *ret_len);
/* The most bytes len characters of base64 decode to. */
static inline size_t base64_decoded_max(size_t len) {
        return len / 4 * 3 + 3;
}

/*
 * SHA-256 of n bytes. The low-level functions on purpose: in OpenSSL 3, SHA256() and every EVP
 * digest first initialise the library context and its default provider, which makes lockd touch
 * 2 MiB more of libcrypto's pages (measured: 1.4 → 3.4 MiB resident) for a digest that needs none
 * of it.
 */
void sha256(const void *data, size_t n, uint8_t out[static SHA256_DIGEST_SIZE]);
#define SHA256_FD_CHUNK ((size_t)64 * 1024)
/*
 * The SHA-256 of everything in the regular file or memfd fd (from offset 0, through pread() in
 * chunks, so neither a mapping nor the heap ever holds it whole). 0, -EBADFD not a regular file,
 * -EIO it shrank while read, or another negative errno.
 */
int sha256_fd(int fd, uint8_t out[static SHA256_DIGEST_SIZE]);
/* SHA-256 of n bytes as lowercase hex (SHA256_HEX_SIZE characters and a NUL). */
void sha256_hex(const void *data, size_t n, char out[static SHA256_HEX_SIZE + 1]);
