/* Tests for common/seal: round trips, every tampering refused alike, and interop by hand. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/kdf.h>

#include "check-run.h"
#include "macro.h"
#include "seal.h"
#include "secmem.h"

/* RFC 7748 §6.1: Alice's and Bob's X25519 keys and their shared secret. */
#define ALICE_PRIV "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"
#define ALICE_PUB  "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
#define BOB_PRIV   "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"
#define BOB_PUB    "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"
#define SHARED     "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"

/*
 * "alice@example.org" for placeholder "email" of ticket "t-1", sealed to Bob's key with Alice's
 * key as the ephemeral one, computed independently with Python's cryptography package from the
 * format written in seal.h.
 */
#define GOLDEN                                                                                     \
        "AYUg8AmJMKdUdIt93LQ+91oNvzoNJjga9OukqY6qm05qwRgrvmK9SFP8doI1aajP1fe7cOGVCWkr82kpB8ooXDKU"

/* Decodes the hex string s into out (exactly n bytes). */
static void unhex(const char *s, uint8_t *out, size_t n) {
        ck_assert_uint_eq(strlen(s), 2 * n);
        for (size_t i = 0; i < n; i++) {
                unsigned v;

                ck_assert_int_eq(sscanf(s + 2 * i, "%2x", &v), 1);
                out[i] = (uint8_t)v;
        }
}

/* The test's own X25519 through EVP, independent of seal.c. */
static void t_x25519(const uint8_t priv[32], const uint8_t pub[32], uint8_t out[32]) {
        EVP_PKEY *a = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, priv, 32);
        EVP_PKEY *b = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, pub, 32);
        EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(a, NULL);
        size_t n = 32;

        ck_assert_ptr_nonnull(ctx);
        ck_assert_int_eq(EVP_PKEY_derive_init(ctx), 1);
        ck_assert_int_eq(EVP_PKEY_derive_set_peer(ctx, b), 1);
        ck_assert_int_eq(EVP_PKEY_derive(ctx, out, &n), 1);
        ck_assert_uint_eq(n, 32);
        EVP_PKEY_CTX_free(ctx);
        EVP_PKEY_free(a);
        EVP_PKEY_free(b);
}

/* The test's own HKDF-SHA256, through the EVP_PKEY interface (seal.c uses EVP_KDF). */
static void t_hkdf(const uint8_t *ikm, size_t ikm_len, const uint8_t *salt, size_t salt_len,
                   const uint8_t *info, size_t info_len, uint8_t *out, size_t out_len) {
        EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
        size_t n = out_len;

        ck_assert_ptr_nonnull(ctx);
        ck_assert_int_eq(EVP_PKEY_derive_init(ctx), 1);
        ck_assert_int_eq(EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()), 1);
        ck_assert_int_eq(EVP_PKEY_CTX_set1_hkdf_salt(ctx, salt, (int)salt_len), 1);
        ck_assert_int_eq(EVP_PKEY_CTX_set1_hkdf_key(ctx, ikm, (int)ikm_len), 1);
        ck_assert_int_eq(EVP_PKEY_CTX_add1_hkdf_info(ctx, info, (int)info_len), 1);
        ck_assert_int_eq(EVP_PKEY_derive(ctx, out, &n), 1);
        ck_assert_uint_eq(n, out_len);
        EVP_PKEY_CTX_free(ctx);
}

/* The test's own ChaCha20-Poly1305 open; returns whether the tag matched. */
static int t_aead_open(const uint8_t key[32], const uint8_t nonce[12], const uint8_t *aad,
                       size_t aad_len, const uint8_t *ct, size_t len, const uint8_t tag[16],
                       uint8_t *out) {
        EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
        int n, ok;

        ck_assert_int_eq(EVP_DecryptInit_ex(ctx, EVP_chacha20_poly1305(), NULL, key, nonce), 1);
        ck_assert_int_eq(EVP_DecryptUpdate(ctx, NULL, &n, aad, (int)aad_len), 1);
        ck_assert_int_eq(EVP_DecryptUpdate(ctx, out, &n, ct, (int)len), 1);
        ck_assert_int_eq(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, (void *)tag), 1);
        ok = EVP_DecryptFinal_ex(ctx, out + n, &n) == 1;
        EVP_CIPHER_CTX_free(ctx);
        return ok;
}

/* Base64 of n bytes, as a new string. */
static char *b64(const uint8_t *p, size_t n) {
        char *s = malloc(4 * ((n + 2) / 3) + 1);

        ck_assert_ptr_nonnull(s);
        EVP_EncodeBlock((unsigned char *)s, p, (int)n);
        return s;
}

/* Decodes a sealed text (as the seal code wrote it) into blob; returns its length. */
static size_t unb64(const char *s, uint8_t *blob) {
        size_t len = strlen(s);
        int n = EVP_DecodeBlock(blob, (const unsigned char *)s, (int)len);

        ck_assert_int_gt(n, 0);
        /* EVP_DecodeBlock counts padding as zero bytes. */
        if (len >= 1 && s[len - 1] == '=')
                n--;
        if (len >= 2 && s[len - 2] == '=')
                n--;
        return (size_t)n;
}

/* Asserts that text does not open for (id, name) with k, with -EBADMSG. */
static void refused(const SealKey *k, const char *id, const char *name, const char *text) {
        SecBuf *v = NULL;

        ck_assert_int_eq(unseal_value(k, id, name, text, &v), -EBADMSG);
        ck_assert_ptr_null(v);
}

START_TEST(test_primitives_rfc) {
        uint8_t a[32], b[32], apub[32], bpub[32], want[32], got[32];

        /* RFC 7748 §6.1, both ways. */
        unhex(ALICE_PRIV, a, 32);
        unhex(BOB_PRIV, b, 32);
        unhex(ALICE_PUB, apub, 32);
        unhex(BOB_PUB, bpub, 32);
        unhex(SHARED, want, 32);
        t_x25519(a, bpub, got);
        ck_assert_mem_eq(got, want, 32);
        t_x25519(b, apub, got);
        ck_assert_mem_eq(got, want, 32);

        /* RFC 5869 A.1, HKDF-SHA256. */
        uint8_t ikm[22], salt[13], info[10], okm[42], okm_want[42];
        memset(ikm, 0x0b, sizeof(ikm));
        for (size_t i = 0; i < sizeof(salt); i++)
                salt[i] = (uint8_t)i;
        for (size_t i = 0; i < sizeof(info); i++)
                info[i] = (uint8_t)(0xf0 + i);
        unhex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b88718586"
              "5",
              okm_want, sizeof(okm_want));
        t_hkdf(ikm, sizeof(ikm), salt, sizeof(salt), info, sizeof(info), okm, sizeof(okm));
        ck_assert_mem_eq(okm, okm_want, sizeof(okm));

        /* RFC 8439 §2.8.2, AEAD_CHACHA20_POLY1305. */
        static const char pt[] = "Ladies and Gentlemen of the class of '99: If I could offer you "
                                 "only one tip for the future, sunscreen would be it.";
        uint8_t key[32], nonce[12], aad[12], ct[sizeof(pt) - 1], tag[16], out[sizeof(pt)];
        for (size_t i = 0; i < 32; i++)
                key[i] = (uint8_t)(0x80 + i);
        unhex("070000004041424344454647", nonce, 12);
        unhex("50515253c0c1c2c3c4c5c6c7", aad, 12);
        unhex("d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fa"
              "fb69da92728b1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4"
              "fad675945585808b4831d7bc3ff4def08e4b7a9de576d26586cec64b6116",
              ct, sizeof(ct));
        unhex("1ae10b594f09e26a7e902ecbd0600691", tag, 16);
        ck_assert(t_aead_open(key, nonce, aad, 12, ct, sizeof(ct), tag, out));
        ck_assert_mem_eq(out, pt, sizeof(pt) - 1);
        tag[0] ^= 1;
        ck_assert(!t_aead_open(key, nonce, aad, 12, ct, sizeof(ct), tag, out));
}
END_TEST

START_TEST(test_golden) {
        _cleanup_(seal_key_freep) SealKey *k = NULL;
        _cleanup_secbuf_ SecBuf *v = NULL;
        uint8_t a[32], b[32], bpub[32], pub[32];
        _cleanup_free_ char *text = NULL;

        unhex(ALICE_PRIV, a, 32);
        unhex(BOB_PRIV, b, 32);
        unhex(BOB_PUB, bpub, 32);
        ck_assert_int_eq(seal_key_new_from_private(b, &k), 0);
        seal_key_public(k, pub);
        ck_assert_mem_eq(pub, bpub, 32);

        ck_assert_int_eq(
                seal_value_with_ephemeral(a, pub, "t-1", "email", "alice@example.org", 17, &text),
                0);
        ck_assert_str_eq(text, GOLDEN);
        ck_assert_int_eq(unseal_value(k, "t-1", "email", GOLDEN, &v), 0);
        ck_assert_uint_eq(v->len, 17);
        ck_assert_str_eq((const char *)v->data, "alice@example.org");
}
END_TEST

/* Opens a sealed text step by step with the test's own primitives, from the format in seal.h. */
START_TEST(test_stepwise) {
        static const char id[] = "ticket-0123", name[] = "needle", value[] = "Grüße, 1 2 3";
        uint8_t b[32], bpub[32], apub[32], shared[32], shared_want[32], key[32], nonce[12] = {0};
        uint8_t blob[SEAL_BLOB_MAX], salt[64], info[64], ctx[64], out[SEAL_VALUE_MAX];
        _cleanup_(seal_key_freep) SealKey *k = NULL;
        _cleanup_free_ char *text = NULL;
        size_t n, ctx_len = 0, info_len;

        unhex(BOB_PRIV, b, 32);
        unhex(ALICE_PUB, apub, 32);
        unhex(SHARED, shared_want, 32);
        ck_assert_int_eq(seal_key_new_from_private(b, &k), 0);
        seal_key_public(k, bpub);

        /* A fresh ephemeral key: only the ticket's side is known here. */
        ck_assert_int_eq(seal_value(bpub, id, name, value, strlen(value), &text), 0);
        n = unb64(text, blob);
        ck_assert_uint_eq(n, 1 + 32 + strlen(value) + 16);
        ck_assert_uint_eq(blob[0], 1);
        ck_assert_mem_ne(blob + 1, apub, 32);
        t_x25519(b, blob + 1, shared);

        ctx[ctx_len++] = (uint8_t)strlen(id);
        memcpy(ctx + ctx_len, id, strlen(id));
        ctx_len += strlen(id);
        ctx[ctx_len++] = (uint8_t)strlen(name);
        memcpy(ctx + ctx_len, name, strlen(name));
        ctx_len += strlen(name);
        memcpy(salt, blob + 1, 32);
        memcpy(salt + 32, bpub, 32);
        memcpy(info, "lockd seal v1", 13);
        memcpy(info + 13, ctx, ctx_len);
        info_len = 13 + ctx_len;
        t_hkdf(shared, 32, salt, 64, info, info_len, key, 32);

        size_t len = n - 33 - 16;
        ck_assert(t_aead_open(key, nonce, ctx, ctx_len, blob + 33, len, blob + 33 + len, out));
        ck_assert_uint_eq(len, strlen(value));
        ck_assert_mem_eq(out, value, len);

        /* The same with Alice's key as the ephemeral one: the RFC's shared secret comes out. */
        uint8_t a[32];
        unhex(ALICE_PRIV, a, 32);
        text = mfree(text);
        ck_assert_int_eq(seal_value_with_ephemeral(a, bpub, id, name, value, 1, &text), 0);
        n = unb64(text, blob);
        ck_assert_mem_eq(blob + 1, apub, 32);
        t_x25519(b, blob + 1, shared);
        ck_assert_mem_eq(shared, shared_want, 32);
        memcpy(salt, apub, 32);
        t_hkdf(shared, 32, salt, 64, info, info_len, key, 32);
        ck_assert(t_aead_open(key, nonce, ctx, ctx_len, blob + 33, 1, blob + 34, out));
        ck_assert_uint_eq(out[0], (uint8_t)value[0]);
}
END_TEST

START_TEST(test_round_trip) {
        static const size_t lens[] = {1, 2, 3, 4, 255, 1023, SEAL_VALUE_MAX};
        _cleanup_(seal_key_freep) SealKey *k = NULL;
        uint8_t pub[32], value[SEAL_VALUE_MAX + 1];

        for (size_t i = 0; i < sizeof(value); i++)
                value[i] = (uint8_t)(i * 7); /* NUL bytes included. */
        ck_assert_int_eq(seal_key_new(&k), 0);
        seal_key_public(k, pub);
        /* The private key is in secure memory. */
        ck_assert_uint_gt(secmem_mapped_bytes(), 0);

        for (size_t i = 0; i < ELEMENTSOF(lens); i++) {
                _cleanup_free_ char *t1 = NULL, *t2 = NULL;
                _cleanup_secbuf_ SecBuf *v = NULL;

                ck_assert_int_eq(seal_value(pub, "T", "x", value, lens[i], &t1), 0);
                ck_assert_uint_le(strlen(t1), SEAL_TEXT_MAX);
                ck_assert_int_eq(seal_value(pub, "T", "x", value, lens[i], &t2), 0);
                ck_assert_str_ne(t1, t2); /* A fresh ephemeral key each time. */
                ck_assert_int_eq(unseal_value(k, "T", "x", t1, &v), 0);
                ck_assert_uint_eq(v->len, lens[i]);
                ck_assert_mem_eq(v->data, value, lens[i]);
                ck_assert_uint_eq(v->data[v->len], 0);
                v = secbuf_free(v);
                ck_assert_int_eq(unseal_value(k, "T", "x", t2, &v), 0);
                ck_assert_mem_eq(v->data, value, lens[i]);
        }

        char *t = NULL;
        ck_assert_int_eq(seal_value(pub, "T", "x", value, 0, &t), -EINVAL);
        ck_assert_int_eq(seal_value(pub, "T", "x", value, SEAL_VALUE_MAX + 1, &t), -EINVAL);
        ck_assert_ptr_null(t);

        k = seal_key_free(k);
        ck_assert_uint_eq(secmem_mapped_bytes(), 0);
}
END_TEST

/* A blob of SEAL_VALUE_MAX + 1 bytes, sealed correctly but for its length, is refused too. */
START_TEST(test_oversized_blob) {
        _cleanup_(seal_key_freep) SealKey *k = NULL;
        uint8_t blob[SEAL_BLOB_MAX + 3] = {1};
        _cleanup_free_ char *text = NULL;

        ck_assert_int_eq(seal_key_new(&k), 0);
        seal_key_public(k, blob + 1);
        text = b64(blob, sizeof(blob));
        ck_assert_uint_gt(strlen(text), SEAL_TEXT_MAX);
        refused(k, "T", "x", text);
        text[SEAL_TEXT_MAX] = 0;
        refused(k, "T", "x", text);
}
END_TEST

START_TEST(test_wrong_context) {
        _cleanup_(seal_key_freep) SealKey *k = NULL, *other = NULL;
        _cleanup_free_ char *text = NULL, *t2 = NULL;
        _cleanup_secbuf_ SecBuf *v = NULL;
        uint8_t pub[32];

        ck_assert_int_eq(seal_key_new(&k), 0);
        ck_assert_int_eq(seal_key_new(&other), 0);
        seal_key_public(k, pub);
        ck_assert_int_eq(seal_value(pub, "t-1", "email", "a@b.c", 5, &text), 0);

        refused(k, "t-2", "email", text);
        refused(k, "t-1", "emails", text);
        refused(k, "t-1", "needle", text);
        refused(other, "t-1", "email", text);
        ck_assert_int_eq(unseal_value(k, "t-1", "email", text, &v), 0);

        /* The context is length-prefixed: moving a byte between id and name changes it. */
        ck_assert_int_eq(seal_value(pub, "t-1a", "b", "v", 1, &t2), 0);
        refused(k, "t-1", "ab", t2);
}
END_TEST

/* Re-encodes blob[0..n) with bit `bit` flipped (or not, for bit < 0) and checks the refusal. */
static void refused_blob(const SealKey *k, const uint8_t *blob, size_t n, ssize_t bit) {
        uint8_t copy[SEAL_BLOB_MAX + 8];
        _cleanup_free_ char *s = NULL;

        memcpy(copy, blob, n);
        if (bit >= 0)
                copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        s = b64(copy, n);
        refused(k, "t", "n", s);
}

START_TEST(test_tampering) {
        _cleanup_(seal_key_freep) SealKey *k = NULL;
        _cleanup_secbuf_ SecBuf *v = NULL;
        _cleanup_free_ char *text = NULL;
        uint8_t pub[32], blob[SEAL_BLOB_MAX + 8];
        size_t n;

        ck_assert_int_eq(seal_key_new(&k), 0);
        seal_key_public(k, pub);
        ck_assert_int_eq(seal_value(pub, "t", "n", "secret", 6, &text), 0);
        n = unb64(text, blob);
        ck_assert_uint_eq(n, 1 + 32 + 6 + 16);

        /* Untouched, re-encoded: it opens (so the refusals below are the tampering's). */
        {
                _cleanup_free_ char *s = b64(blob, n);
                ck_assert_int_eq(unseal_value(k, "t", "n", s, &v), 0);
        }
        /* Every single bit flipped: version, ephemeral key, ciphertext, tag. */
        for (size_t bit = 0; bit < 8 * n; bit++)
                refused_blob(k, blob, n, (ssize_t)bit);
        /* Every truncation, down to nothing. */
        for (size_t len = 1; len < n; len++)
                refused_blob(k, blob, len, -1);
        refused(k, "t", "n", "");
        /* Extended by 1..8 bytes. */
        memset(blob + n, 0, 8);
        for (size_t extra = 1; extra <= 8; extra++)
                refused_blob(k, blob, n + extra, -1);
        /* Other version bytes. */
        for (unsigned version = 0; version < 256; version++) {
                if (version == SEAL_VERSION)
                        continue;
                blob[0] = (uint8_t)version;
                refused_blob(k, blob, n, -1);
        }
}
END_TEST

START_TEST(test_bad_base64) {
        _cleanup_(seal_key_freep) SealKey *k = NULL;
        _cleanup_secbuf_ SecBuf *v = NULL;
        uint8_t pub[32];
        char *t[3], buf[SEAL_TEXT_MAX + 8];

        ck_assert_int_eq(seal_key_new(&k), 0);
        seal_key_public(k, pub);
        /* Blobs of 55, 56 and 57 bytes: "==", "=" and no padding. */
        for (size_t i = 0; i < 3; i++) {
                ck_assert_int_eq(seal_value(pub, "t", "n", "1234567", 6 + i, &t[i]), 0);
                ck_assert_int_eq(unseal_value(k, "t", "n", t[i], &v), 0);
                v = secbuf_free(v);
        }
        ck_assert(strstr(t[0], "==") && !strstr(t[1], "==") && strchr(t[1], '=') &&
                  !strchr(t[2], '='));

        for (size_t i = 0; i < 3; i++) {
                size_t len = strlen(t[i]);

                /* Whitespace anywhere, a trailing newline. */
                for (size_t pos = 0; pos <= len; pos += 7) {
                        snprintf(buf, sizeof(buf), "%.*s %s", (int)pos, t[i], t[i] + pos);
                        refused(k, "t", "n", buf);
                        snprintf(buf, sizeof(buf), "%.*s\n%s", (int)pos, t[i], t[i] + pos);
                        refused(k, "t", "n", buf);
                }
                /* Padding dropped or added. */
                snprintf(buf, sizeof(buf), "%.*s", (int)(len - 1), t[i]);
                refused(k, "t", "n", buf);
                snprintf(buf, sizeof(buf), "%s=", t[i]);
                refused(k, "t", "n", buf);
                snprintf(buf, sizeof(buf), "%s====", t[i]);
                refused(k, "t", "n", buf);
                /* '=' in the middle, the URL-safe alphabet, a NUL cutting it short. */
                snprintf(buf, sizeof(buf), "%s", t[i]);
                buf[8] = '=';
                refused(k, "t", "n", buf);
                snprintf(buf, sizeof(buf), "%s", t[i]);
                for (char *c = buf; *c; c++)
                        if (*c == '+' || *c == '/')
                                *c = *c == '+' ? '-' : '_';
                if (strcmp(buf, t[i]) != 0)
                        refused(k, "t", "n", buf);
                snprintf(buf, sizeof(buf), "%s", t[i]);
                buf[len - 5] = 0;
                refused(k, "t", "n", buf);
        }

        /* Unused bits set: the same bytes, in a second spelling. */
        for (size_t i = 0; i < 2; i++) {
                size_t len = strlen(t[i]), pos = i == 0 ? len - 3 : len - 2;
                static const char alphabet[] =
                        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

                snprintf(buf, sizeof(buf), "%s", t[i]);
                buf[pos] = alphabet[(strchr(alphabet, buf[pos]) - alphabet) | 1];
                refused(k, "t", "n", buf);
        }
        for (size_t i = 0; i < 3; i++)
                free(t[i]);

        /* Too long to be a sealed value at all. */
        memset(buf, 'A', SEAL_TEXT_MAX + 4);
        buf[SEAL_TEXT_MAX + 4] = 0;
        refused(k, "t", "n", buf);
}
END_TEST

START_TEST(test_destroyed_key) {
        _cleanup_(seal_key_freep) SealKey *k = NULL;
        _cleanup_secbuf_ SecBuf *v = NULL;
        _cleanup_free_ char *text = NULL;
        uint8_t pub[32], pub2[32];

        ck_assert_int_eq(seal_key_new(&k), 0);
        seal_key_public(k, pub);
        ck_assert_int_eq(seal_value(pub, "t", "n", "v", 1, &text), 0);
        ck_assert_int_eq(unseal_value(k, "t", "n", text, &v), 0);
        v = secbuf_free(v);
        ck_assert_uint_gt(secmem_mapped_bytes(), 0);

        seal_key_destroy(k);
        ck_assert_uint_eq(secmem_mapped_bytes(), 0); /* The private key was wiped and freed. */
        refused(k, "t", "n", text);
        seal_key_destroy(k);
        refused(k, "t", "n", text);
        seal_key_public(k, pub2);
        ck_assert_mem_eq(pub, pub2, 32);
}
END_TEST

START_TEST(test_usage_errors) {
        static const char *bad_ids[] = {"", "a b", "t\n", "t\x7f", "t\xc3\xa9", NULL};
        static const char *bad_names[] = {"",       "Email",    "e-mail",
                                          "e mail", "${email}", "abcdefghijklmnopqrstuvwxyz0123456",
                                          NULL};
        _cleanup_(seal_key_freep) SealKey *k = NULL;
        _cleanup_free_ char *text = NULL;
        char long_id[SEAL_TICKET_ID_MAX + 2];
        SecBuf *v = NULL;
        char *t = NULL;
        uint8_t pub[32];

        ck_assert_int_eq(seal_key_new(&k), 0);
        seal_key_public(k, pub);
        ck_assert_int_eq(seal_value(pub, "t", "n", "v", 1, &text), 0);

        memset(long_id, 'i', sizeof(long_id) - 1);
        long_id[sizeof(long_id) - 1] = 0;
        ck_assert_int_eq(seal_value(pub, long_id, "n", "v", 1, &t), -EINVAL);
        ck_assert_int_eq(unseal_value(k, long_id, "n", text, &v), -EINVAL);
        long_id[SEAL_TICKET_ID_MAX] = 0;
        ck_assert_int_eq(seal_value(pub, long_id, "n", "v", 1, &t), 0);
        t = mfree(t);
        ck_assert_int_eq(seal_value(pub, "t", "abcdefghijklmnopqrstuvwxyz012345", "v", 1, &t), 0);
        t = mfree(t);

        for (size_t i = 0; bad_ids[i]; i++) {
                ck_assert_int_eq(seal_value(pub, bad_ids[i], "n", "v", 1, &t), -EINVAL);
                ck_assert_int_eq(unseal_value(k, bad_ids[i], "n", text, &v), -EINVAL);
        }
        for (size_t i = 0; bad_names[i]; i++) {
                ck_assert_int_eq(seal_value(pub, "t", bad_names[i], "v", 1, &t), -EINVAL);
                ck_assert_int_eq(unseal_value(k, "t", bad_names[i], text, &v), -EINVAL);
        }
        ck_assert_int_eq(seal_value(NULL, "t", "n", "v", 1, &t), -EINVAL);
        ck_assert_int_eq(seal_value(pub, NULL, "n", "v", 1, &t), -EINVAL);
        ck_assert_int_eq(seal_value(pub, "t", NULL, "v", 1, &t), -EINVAL);
        ck_assert_int_eq(seal_value(pub, "t", "n", NULL, 1, &t), -EINVAL);
        ck_assert_int_eq(seal_value(pub, "t", "n", "v", 1, NULL), -EINVAL);
        ck_assert_int_eq(unseal_value(NULL, "t", "n", text, &v), -EINVAL);
        ck_assert_int_eq(unseal_value(k, "t", "n", NULL, &v), -EINVAL);
        ck_assert_int_eq(unseal_value(k, "t", "n", text, NULL), -EINVAL);
        ck_assert_ptr_null(t);
        ck_assert_ptr_null(v);
}
END_TEST

/* A ticket key or an ephemeral key of small order would make the shared secret public. */
START_TEST(test_small_order) {
        _cleanup_(seal_key_freep) SealKey *k = NULL;
        uint8_t zero[32] = {0}, one[32] = {1}, blob[1 + 32 + 1 + 16] = {1};
        _cleanup_free_ char *text = NULL;
        char *t = NULL;

        ck_assert_int_eq(seal_value(zero, "t", "n", "v", 1, &t), -EINVAL);
        ck_assert_int_eq(seal_value(one, "t", "n", "v", 1, &t), -EINVAL);
        ck_assert_ptr_null(t);

        ck_assert_int_eq(seal_key_new(&k), 0);
        text = b64(blob, sizeof(blob));
        refused(k, "t", "n", text);
        text = mfree(text);
        blob[1] = 1;
        text = b64(blob, sizeof(blob));
        refused(k, "t", "n", text);
}
END_TEST

static Suite *seal_suite(void) {
        Suite *s = suite_create("seal");
        const CaseOptions interop_case = {.tags = "interop"};

        suite_add_case(s, &interop_case, test_primitives_rfc);
        suite_add_case(s, &interop_case, test_golden);
        suite_add_case(s, &interop_case, test_stepwise);

        const CaseOptions seal_case = {.tags = "seal"};

        suite_add_case(s, &seal_case, test_round_trip);
        suite_add_case(s, &seal_case, test_oversized_blob);
        suite_add_case(s, &seal_case, test_wrong_context);
        suite_add_case(s, &seal_case, test_tampering);
        suite_add_case(s, &seal_case, test_bad_base64);
        suite_add_case(s, &seal_case, test_destroyed_key);
        suite_add_case(s, &seal_case, test_usage_errors);
        suite_add_case(s, &seal_case, test_small_order);
        return s;
}

int main(void) {
        return check_run(seal_suite());
}
