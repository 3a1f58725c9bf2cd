/* Times, proto3 JSON numbers and signature helpers shared by the parts of the Sigstore verifier
 * (the codecs are codec.h's). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <openssl/ec.h>
#include <openssl/sha.h>

#include "codec.h"
#include "macro.h"
#include "sigstore-util.h"

/* Decodes standard base64 into a new buffer (codec.h's base64_decode(): padding optional but
 * complete when present, the unused low bits of the last symbol zero). */
int sigstore_b64_decode(const char *s, size_t len, SigstoreBytes *ret) {
        _cleanup_free_ uint8_t *out = malloc(base64_decoded_max(len));
        size_t n;
        int r;

        if (!out)
                return -ENOMEM;
        r = base64_decode(s, len, false, out, base64_decoded_max(len), &n);
        if (r < 0)
                return -EBADMSG;
        ret->data = TAKE_PTR(out);
        ret->len = n;
        return 0;
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
