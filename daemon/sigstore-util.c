/* Codecs, times and signature helpers shared by the parts of the Sigstore verifier. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <openssl/ec.h>
#include <openssl/sha.h>

#include "macro.h"
#include "sigstore-util.h"

static int b64_value(char c) {
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

/* Decodes standard base64; padding is optional but must be complete when present, and the unused
 * low bits of the last symbol must be zero. */
int sigstore_b64_decode(const char *s, size_t len, SigstoreBytes *ret) {
        size_t pad = 0;
        while (len > 0 && s[len - 1] == '=' && pad < 2) {
                len--;
                pad++;
        }
        if (pad > 0 && (len + pad) % 4 != 0)
                return -EBADMSG;
        if (len % 4 == 1)
                return -EBADMSG;
        _cleanup_free_ uint8_t *out = malloc(len / 4 * 3 + 3);
        if (!out)
                return -ENOMEM;
        size_t n = 0;
        uint32_t acc = 0;
        unsigned bits = 0;
        for (size_t i = 0; i < len; i++) {
                int v = b64_value(s[i]);
                if (v < 0)
                        return -EBADMSG;
                acc = (acc << 6) | (uint32_t)v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[n++] = (uint8_t)(acc >> bits);
                }
        }
        if (bits > 0 && (acc & ((1u << bits) - 1)) != 0)
                return -EBADMSG;
        ret->data = TAKE_PTR(out);
        ret->len = n;
        return 0;
}

char *sigstore_b64_encode(const uint8_t *data, size_t len) {
        static const char tab[] =
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        char *out = malloc((len + 2) / 3 * 4 + 1), *p = out;
        if (!out)
                return NULL;
        for (size_t i = 0; i < len; i += 3) {
                uint32_t v = (uint32_t)data[i] << 16;
                if (i + 1 < len)
                        v |= (uint32_t)data[i + 1] << 8;
                if (i + 2 < len)
                        v |= data[i + 2];
                *p++ = tab[(v >> 18) & 63];
                *p++ = tab[(v >> 12) & 63];
                *p++ = i + 1 < len ? tab[(v >> 6) & 63] : '=';
                *p++ = i + 2 < len ? tab[v & 63] : '=';
        }
        *p = 0;
        return out;
}

/* Decodes exactly out_len bytes of hex (either case) from s, which must be 2*out_len long. */
int sigstore_hex_decode(const char *s, uint8_t *out, size_t out_len) {
        if (strlen(s) != out_len * 2)
                return -EBADMSG;
        for (size_t i = 0; i < out_len * 2; i++) {
                char c = s[i];
                int v = c >= '0' && c <= '9'   ? c - '0'
                        : c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                               : -1;
                if (v < 0)
                        return -EBADMSG;
                if (i % 2 == 0)
                        out[i / 2] = (uint8_t)(v << 4);
                else
                        out[i / 2] |= (uint8_t)v;
        }
        return 0;
}

void sigstore_hex_encode(const uint8_t *data, size_t len, char *out) {
        for (size_t i = 0; i < len; i++)
                sprintf(out + 2 * i, "%02x", data[i]);
        out[2 * len] = 0;
}

/* Parses "YYYY-MM-DDTHH:MM:SS[.frac]Z"; the fraction is dropped (times compare in whole seconds).
 */
int sigstore_parse_rfc3339(const char *s, int64_t *ret) {
        struct tm tm = {};
        int n = 0;
        if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6 ||
            n != 19)
                return -EBADMSG;
        const char *p = s + n;
        if (*p == '.') {
                p++;
                if (*p < '0' || *p > '9')
                        return -EBADMSG;
                while (*p >= '0' && *p <= '9')
                        p++;
        }
        if (strcmp(p, "Z") != 0)
                return -EBADMSG;
        if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
            tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
                return -EBADMSG;
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        time_t t = timegm(&tm);
        if (t == (time_t)-1)
                return -EBADMSG;
        *ret = (int64_t)t;
        return 0;
}

int sigstore_json_uint64(json_t *v, uint64_t *ret) {
        if (json_is_integer(v)) {
                json_int_t i = json_integer_value(v);
                if (i < 0)
                        return -EBADMSG;
                *ret = (uint64_t)i;
                return 0;
        }
        if (!json_is_string(v))
                return -EBADMSG;
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (n == 0 || n > 19)
                return -EBADMSG;
        uint64_t r = 0;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -EBADMSG;
                r = r * 10 + (uint64_t)(s[i] - '0');
        }
        if (r > INT64_MAX)
                return -EBADMSG;
        *ret = r;
        return 0;
}

/*
 * The low-level SHA-256 functions on purpose: in OpenSSL 3, SHA256() and every EVP digest first
 * initialise the library context and its default provider, which makes lockd touch 2 MiB more of
 * libcrypto's pages (measured: 1.4 → 3.4 MiB resident) for a digest that needs none of it. The
 * hashing code is the same; deprecated in 3.0, present in every 3.x.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
void sigstore_sha256(const uint8_t *data, size_t len, uint8_t out[32]) {
        SHA256_CTX ctx;

        SHA256_Init(&ctx);
        SHA256_Update(&ctx, data, len);
        SHA256_Final(out, &ctx);
}

int sigstore_sha256_fd(int fd, uint8_t out[32]) {
        _cleanup_free_ uint8_t *buf = malloc(SHA256_FD_CHUNK);
        struct stat st;
        uint64_t size, off = 0;
        SHA256_CTX ctx;

        if (!buf)
                return -ENOMEM;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode) || st.st_size < 0)
                return -EBADFD;
        size = (uint64_t)st.st_size;
        SHA256_Init(&ctx);
        while (off < size) {
                size_t want = size - off < SHA256_FD_CHUNK ? (size_t)(size - off) : SHA256_FD_CHUNK;
                ssize_t n = pread(fd, buf, want, (off_t)off);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        return -EIO; /* shrank while read: a sealed memfd cannot */
                SHA256_Update(&ctx, buf, (size_t)n);
                off += (uint64_t)n;
        }
        SHA256_Final(out, &ctx);
        return 0;
}
#pragma GCC diagnostic pop

/* The digest a Sigstore ECDSA key signs with: chosen by curve, as in the key details of the spec.
 */
static const EVP_MD *key_md(EVP_PKEY *key) {
        if (EVP_PKEY_is_a(key, "EC")) {
                int bits = EVP_PKEY_get_bits(key);
                return bits > 384 ? EVP_sha512() : bits > 256 ? EVP_sha384() : EVP_sha256();
        }
        return EVP_sha256();
}

int sigstore_verify_sig(EVP_PKEY *key, const uint8_t *msg, size_t msg_len, const uint8_t *sig,
                        size_t sig_len) {
        _cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        if (!ctx)
                return -ENOMEM;
        bool raw = EVP_PKEY_is_a(key, "ED25519");
        if (EVP_DigestVerifyInit(ctx, NULL, raw ? NULL : key_md(key), NULL, key) != 1)
                return -EKEYREJECTED;
        if (EVP_DigestVerify(ctx, sig, sig_len, msg, msg_len) != 1)
                return -EKEYREJECTED;
        return 0;
}

int sigstore_verify_log_sig(const SigstoreLogKey *log, const uint8_t *msg, size_t msg_len,
                            const uint8_t *sig, size_t sig_len) {
        if (!log->usable)
                return -EKEYREJECTED;
        _cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        if (!ctx)
                return -ENOMEM;
        if (EVP_DigestVerifyInit(ctx, NULL, log->md, NULL, log->key) != 1)
                return -EKEYREJECTED;
        if (EVP_DigestVerify(ctx, sig, sig_len, msg, msg_len) != 1)
                return -EKEYREJECTED;
        return 0;
}

int sigstore_verify_sig_prehashed(EVP_PKEY *key, const uint8_t digest[32], const uint8_t *sig,
                                  size_t sig_len) {
        if (!EVP_PKEY_is_a(key, "EC") && !EVP_PKEY_is_a(key, "RSA"))
                return -EKEYREJECTED; /* Ed25519 cannot verify a prehashed message */
        _cleanup_(EVP_PKEY_CTX_freep) EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(key, NULL);
        if (!ctx)
                return -ENOMEM;
        if (EVP_PKEY_verify_init(ctx) != 1 || EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) != 1)
                return -EKEYREJECTED;
        if (EVP_PKEY_verify(ctx, sig, sig_len, digest, 32) != 1)
                return -EKEYREJECTED;
        return 0;
}

EVP_PKEY *sigstore_pkey_from_der(const uint8_t *der, size_t len) {
        const unsigned char *p = der;
        EVP_PKEY *k = d2i_PUBKEY(NULL, &p, (long)len);
        if (k && p != der + len) {
                EVP_PKEY_free(k);
                return NULL;
        }
        if (!k) {
                /* PKCS#1 RSAPublicKey, as some trust roots carry for RSA CT logs */
                p = der;
                k = d2i_PublicKey(EVP_PKEY_RSA, NULL, &p, (long)len);
        }
        return k;
}

void sigstore_fail(char *reason, size_t size, const char *fmt, ...) {
        if (!reason || size == 0 || reason[0])
                return; /* keep the first, most specific reason */
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, size, fmt, ap);
        va_end(ap);
        for (char *p = reason; *p; p++)
                if (*p == '\n' || *p == '\r')
                        *p = ' ';
}
