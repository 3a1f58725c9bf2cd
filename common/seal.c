/* Sealing input values to a ticket's one-use key: X25519, HKDF-SHA256, ChaCha20-Poly1305. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

#include "codec.h"
#include "seal.h"

#define SEAL_INFO_PREFIX "lockd seal v1"
#define SEAL_CONTEXT_MAX (1 + SEAL_TICKET_ID_MAX + 1 + SEAL_NAME_MAX)
#define SEAL_HEADER_SIZE (1 + SEAL_KEY_SIZE)

/*
 * The nonce is 12 zero bytes. Each AEAD key is used for exactly one message: it comes from a
 * fresh ephemeral X25519 key (whose public half is also in the HKDF salt), and the ticket id and
 * placeholder name are in the HKDF info. A (key, nonce) pair could only repeat if the ephemeral
 * key repeated, i.e. the RNG failed — and then a nonce derived by HKDF from the same inputs would
 * repeat as well, so deriving one buys nothing. age's X25519 recipients make the same choice.
 */
static const uint8_t seal_nonce[12] = {0};

struct SealKey {
        SecBuf *priv; /* NULL once destroyed. */
        uint8_t pub[SEAL_KEY_SIZE];
};

/*
 * The ticket id a sealed value is bound to, as the sealing format takes it: 1..SEAL_TICKET_ID_MAX
 * bytes of printable ASCII other than space. Only the format's own rule: lockd's ids are stricter
 * (ticket_id_valid(), tickets.h), and a value sealed to an id lockd never issued opens nowhere.
 */
static bool seal_ticket_id_valid(const char *id) {
        size_t n;

        if (!id)
                return false;
        n = strnlen(id, SEAL_TICKET_ID_MAX + 1);
        if (n == 0 || n > SEAL_TICKET_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (id[i] <= ' ' || id[i] > '~')
                        return false;
        return true;
}

bool seal_name_valid(const char *name) {
        size_t n;

        if (!name)
                return false;
        n = strnlen(name, SEAL_NAME_MAX + 1);
        if (n == 0 || n > SEAL_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
                      name[i] == '_'))
                        return false;
        return true;
}

/*
 * Writes the context len(id) || id || len(name) || name to out (SEAL_CONTEXT_MAX bytes) and
 * returns its length. Length prefixes, not a bare concatenation: ("ab", "c") and ("a", "bc")
 * must not give the same key or AAD. Both arguments were validated.
 */
static size_t context_build(const char *ticket_id, const char *name, uint8_t *out) {
        size_t a = strlen(ticket_id), b = strlen(name);

        out[0] = (uint8_t)a;
        memcpy(out + 1, ticket_id, a);
        out[1 + a] = (uint8_t)b;
        memcpy(out + 2 + a, name, b);
        return 2 + a + b;
}

/*
 * Computes the X25519 public key of priv into pub. OpenSSL's copy of priv is cleansed when the
 * EVP_PKEY is freed. 0 or -EIO.
 */
static int x25519_public(const uint8_t priv[SEAL_KEY_SIZE], uint8_t pub[SEAL_KEY_SIZE]) {
        EVP_PKEY *pkey;
        size_t n = SEAL_KEY_SIZE;
        int r = -EIO;

        pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, priv, SEAL_KEY_SIZE);
        if (pkey && EVP_PKEY_get_raw_public_key(pkey, pub, &n) == 1 && n == SEAL_KEY_SIZE)
                r = 0;
        EVP_PKEY_free(pkey);
        return r;
}

/*
 * Computes X25519(priv, peer) into shared. Fails (-EINVAL) when the result is all zeros, i.e.
 * peer is of small order and the "secret" would be known to everyone (OpenSSL refuses that too;
 * checked again here in constant time, whatever the library version does).
 */
static int x25519_shared(const uint8_t priv[SEAL_KEY_SIZE], const uint8_t peer[SEAL_KEY_SIZE],
                         uint8_t shared[SEAL_KEY_SIZE]) {
        static const uint8_t zero[SEAL_KEY_SIZE] = {0};
        EVP_PKEY *pkey = NULL, *ppeer = NULL;
        EVP_PKEY_CTX *ctx = NULL;
        size_t n = SEAL_KEY_SIZE;
        int r = -EINVAL;

        pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, priv, SEAL_KEY_SIZE);
        ppeer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, peer, SEAL_KEY_SIZE);
        if (!pkey || !ppeer)
                goto out;
        ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
        if (!ctx || EVP_PKEY_derive_init(ctx) != 1 || EVP_PKEY_derive_set_peer(ctx, ppeer) != 1 ||
            EVP_PKEY_derive(ctx, shared, &n) != 1 || n != SEAL_KEY_SIZE)
                goto out;
        if (CRYPTO_memcmp(shared, zero, SEAL_KEY_SIZE) == 0)
                goto out;
        r = 0;
out:
        if (r < 0)
                OPENSSL_cleanse(shared, SEAL_KEY_SIZE);
        EVP_PKEY_CTX_free(ctx);
        EVP_PKEY_free(ppeer);
        EVP_PKEY_free(pkey);
        return r;
}

/* key = HKDF-SHA256(shared, eph_pub || ticket_pub, "lockd seal v1" || context); 0 or -EIO. */
static int seal_derive_key(const uint8_t shared[SEAL_KEY_SIZE],
                           const uint8_t eph_pub[SEAL_KEY_SIZE],
                           const uint8_t ticket_pub[SEAL_KEY_SIZE], const uint8_t *context,
                           size_t context_len, uint8_t key[SEAL_KEY_SIZE]) {
        uint8_t salt[2 * SEAL_KEY_SIZE];
        uint8_t info[sizeof(SEAL_INFO_PREFIX) - 1 + SEAL_CONTEXT_MAX];
        size_t prefix = sizeof(SEAL_INFO_PREFIX) - 1;
        EVP_KDF *kdf;
        EVP_KDF_CTX *kctx = NULL;
        OSSL_PARAM params[5];
        int r = -EIO;

        memcpy(salt, eph_pub, SEAL_KEY_SIZE);
        memcpy(salt + SEAL_KEY_SIZE, ticket_pub, SEAL_KEY_SIZE);
        memcpy(info, SEAL_INFO_PREFIX, prefix);
        memcpy(info + prefix, context, context_len);

        kdf = EVP_KDF_fetch(NULL, OSSL_KDF_NAME_HKDF, NULL);
        if (kdf)
                kctx = EVP_KDF_CTX_new(kdf);
        EVP_KDF_free(kdf);
        if (!kctx)
                return -EIO;
        params[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0);
        params[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)shared,
                                                      SEAL_KEY_SIZE);
        params[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, salt, sizeof(salt));
        params[3] =
                OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, prefix + context_len);
        params[4] = OSSL_PARAM_construct_end();
        if (EVP_KDF_derive(kctx, key, SEAL_KEY_SIZE, params) == 1)
                r = 0;
        EVP_KDF_CTX_free(kctx);
        return r;
}

/*
 * ChaCha20-Poly1305 with the zero nonce: encrypts (open false) len bytes of in into out and
 * writes the tag, or decrypts and checks the tag (open true). 0, or -EBADMSG when the tag does
 * not match (out is wiped then), or -EIO.
 */
static int seal_aead(bool open, const uint8_t key[SEAL_KEY_SIZE], const uint8_t *aad,
                     size_t aad_len, const uint8_t *in, size_t len, uint8_t *out,
                     uint8_t tag[SEAL_TAG_SIZE]) {
        EVP_CIPHER_CTX *ctx;
        int n, enc = open ? 0 : 1, r = -EIO;

        ctx = EVP_CIPHER_CTX_new();
        if (!ctx)
                return -EIO;
        if (EVP_CipherInit_ex(ctx, EVP_chacha20_poly1305(), NULL, NULL, NULL, enc) != 1 ||
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, sizeof(seal_nonce), NULL) != 1 ||
            EVP_CipherInit_ex(ctx, NULL, NULL, key, seal_nonce, enc) != 1 ||
            EVP_CipherUpdate(ctx, NULL, &n, aad, (int)aad_len) != 1 ||
            EVP_CipherUpdate(ctx, out, &n, in, (int)len) != 1 || (size_t)n != len)
                goto out;
        if (open) {
                if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, SEAL_TAG_SIZE, tag) != 1)
                        goto out;
                /* The tag check (constant time, inside OpenSSL); out holds unauthenticated
                 * plaintext until it passes and is wiped if it does not. */
                if (EVP_CipherFinal_ex(ctx, out + len, &n) != 1 || n != 0) {
                        r = -EBADMSG;
                        goto out;
                }
        } else if (EVP_CipherFinal_ex(ctx, out + len, &n) != 1 || n != 0 ||
                   EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, SEAL_TAG_SIZE, tag) != 1)
                goto out;
        r = 0;
out:
        if (r < 0)
                OPENSSL_cleanse(out, len);
        EVP_CIPHER_CTX_free(ctx);
        return r;
}

int seal_key_new_from_private(const uint8_t priv[SEAL_KEY_SIZE], SealKey **ret) {
        SealKey *k;
        int r;

        if (!priv || !ret)
                return -EINVAL;
        k = calloc(1, sizeof(SealKey));
        if (!k)
                return -ENOMEM;
        r = secbuf_new_copy(priv, SEAL_KEY_SIZE, &k->priv);
        if (r < 0) {
                free(k);
                return r;
        }
        r = x25519_public(k->priv->data, k->pub);
        if (r < 0) {
                ERR_clear_error();
                seal_key_free(k);
                return r;
        }
        *ret = k;
        return 0;
}

int seal_key_new(SealKey **ret) {
        _cleanup_secbuf_ SecBuf *priv = NULL;
        int r;

        if (!ret)
                return -EINVAL;
        r = secbuf_new(SEAL_KEY_SIZE, &priv);
        if (r < 0)
                return r;
        if (RAND_priv_bytes(priv->data, SEAL_KEY_SIZE) != 1) {
                ERR_clear_error();
                return -EIO;
        }
        return seal_key_new_from_private(priv->data, ret);
}

void seal_key_public(const SealKey *k, uint8_t out[SEAL_KEY_SIZE]) {
        memcpy(out, k->pub, SEAL_KEY_SIZE);
}

void seal_key_destroy(SealKey *k) {
        if (k)
                k->priv = secbuf_free(k->priv);
}

SealKey *seal_key_free(SealKey *k) {
        if (!k)
                return NULL;
        seal_key_destroy(k);
        free(k);
        return NULL;
}

/*
 * The sealing side runs in lockctl, the human's own process, which already holds the value:
 * the shared secret and the AEAD key stay on the stack and are wiped before returning, so
 * sealing needs no locked memory there.
 */
int seal_value_with_ephemeral(const uint8_t eph_priv[SEAL_KEY_SIZE],
                              const uint8_t ticket_pub[SEAL_KEY_SIZE], const char *ticket_id,
                              const char *name, const void *value, size_t len, char **ret_text) {
        uint8_t context[SEAL_CONTEXT_MAX], shared[SEAL_KEY_SIZE], key[SEAL_KEY_SIZE];
        uint8_t blob[SEAL_BLOB_MAX];
        size_t context_len, blob_len;
        char *text;
        int r;

        if (!eph_priv || !ticket_pub || !value || !ret_text || len == 0 || len > SEAL_VALUE_MAX ||
            !seal_ticket_id_valid(ticket_id) || !seal_name_valid(name))
                return -EINVAL;
        context_len = context_build(ticket_id, name, context);

        blob[0] = SEAL_VERSION;
        r = x25519_public(eph_priv, blob + 1);
        if (r < 0)
                goto out;
        r = x25519_shared(eph_priv, ticket_pub, shared);
        if (r < 0)
                goto out;
        r = seal_derive_key(shared, blob + 1, ticket_pub, context, context_len, key);
        if (r < 0)
                goto out;
        r = seal_aead(false, key, context, context_len, value, len, blob + SEAL_HEADER_SIZE,
                      blob + SEAL_HEADER_SIZE + len);
        if (r < 0)
                goto out;

        blob_len = SEAL_HEADER_SIZE + len + SEAL_TAG_SIZE;
        text = base64_encode_alloc(blob, blob_len);
        if (!text) {
                r = -ENOMEM;
                goto out;
        }
        *ret_text = text;
out:
        if (r < 0)
                ERR_clear_error();
        OPENSSL_cleanse(shared, sizeof(shared));
        OPENSSL_cleanse(key, sizeof(key));
        return r;
}

int seal_value(const uint8_t ticket_pub[SEAL_KEY_SIZE], const char *ticket_id, const char *name,
               const void *value, size_t len, char **ret_text) {
        uint8_t eph[SEAL_KEY_SIZE];
        int r;

        if (RAND_priv_bytes(eph, sizeof(eph)) != 1) {
                ERR_clear_error();
                return -EIO;
        }
        r = seal_value_with_ephemeral(eph, ticket_pub, ticket_id, name, value, len, ret_text);
        OPENSSL_cleanse(eph, sizeof(eph));
        return r;
}

/*
 * Every failure about the text or the key is -EBADMSG, whatever its cause: the caller learns
 * that the value did not open, never why. The early refusals (length, base64, version) depend
 * only on public bytes the sender chose, so their timing tells the sender nothing new; the tag
 * check itself is constant time.
 */
int unseal_value(const SealKey *k, const char *ticket_id, const char *name, const char *text,
                 SecBuf **ret) {
        uint8_t context[SEAL_CONTEXT_MAX], blob[SEAL_BLOB_MAX];
        _cleanup_(secmem_freep) void *scratch = NULL;
        _cleanup_secbuf_ SecBuf *value = NULL;
        uint8_t *shared, *key;
        size_t context_len, text_len, len;
        size_t n;
        int r;

        if (!k || !text || !ret || !seal_ticket_id_valid(ticket_id) || !seal_name_valid(name))
                return -EINVAL;
        context_len = context_build(ticket_id, name, context);

        text_len = strnlen(text, SEAL_TEXT_MAX + 1);
        if (text_len > SEAL_TEXT_MAX)
                return -EBADMSG;
        /* Strict base64, padded (one text per sealed value); more than a blob holds is not a
         * sealed value either. */
        if (text_len == 0 || base64_decode(text, text_len, true, blob, sizeof(blob), &n) < 0)
                return -EBADMSG;
        if ((size_t)n < SEAL_HEADER_SIZE + 1 + SEAL_TAG_SIZE || blob[0] != SEAL_VERSION)
                return -EBADMSG;
        if (!k->priv)
                return -EBADMSG;
        len = (size_t)n - SEAL_HEADER_SIZE - SEAL_TAG_SIZE;

        /* The shared secret and the AEAD key live in secure memory, like the value. */
        r = secmem_alloc(2 * SEAL_KEY_SIZE, &scratch);
        if (r < 0)
                return r;
        shared = scratch;
        key = shared + SEAL_KEY_SIZE;
        r = secbuf_new(len, &value);
        if (r < 0)
                return r;

        if (x25519_shared(k->priv->data, blob + 1, shared) < 0 ||
            seal_derive_key(shared, blob + 1, k->pub, context, context_len, key) < 0 ||
            seal_aead(true, key, context, context_len, blob + SEAL_HEADER_SIZE, len, value->data,
                      blob + SEAL_HEADER_SIZE + len) < 0) {
                ERR_clear_error();
                return -EBADMSG;
        }
        *ret = TAKE_PTR(value);
        return 0;
}
