/* Sealing human-typed input values to a ticket's one-use X25519 key. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "secmem.h"

/*
 * lockd makes a fresh key pair per ticket and hands its public half to the console (GetTicket);
 * lockctl seals each value the human types to it; lockd opens the values and then destroys the
 * key. A sealed value is the base64 (standard alphabet, padded, nothing else) of
 *
 *   version (1 byte, SEAL_VERSION) || ephemeral X25519 public key (32) || ciphertext || tag (16)
 *
 * with shared = X25519(ephemeral private, ticket public),
 *      context = len(ticket id) (1 byte) || ticket id || len(name) (1 byte) || name,
 *      key = HKDF-SHA256(ikm = shared, salt = ephemeral public || ticket public,
 *                        info = "lockd seal v1" || context), 32 bytes,
 *      ciphertext || tag = ChaCha20-Poly1305(key, nonce = 12 zero bytes, aad = context, value).
 * The ticket id and the placeholder name are bound twice (key and AAD): a sealed value opens only
 * for the ticket and the placeholder it was typed for.
 */

#define SEAL_VERSION  1
#define SEAL_KEY_SIZE 32
#define SEAL_TAG_SIZE 16
/* Values are 1..SEAL_VALUE_MAX bytes: the contract's max_bytes bound for any input. */
#define SEAL_VALUE_MAX 1024
/* A ticket id is 1..SEAL_TICKET_ID_MAX bytes of printable ASCII other than space. */
#define SEAL_TICKET_ID_MAX 128
/* A placeholder name is [a-z0-9_]{1,SEAL_NAME_MAX}. */
#define SEAL_NAME_MAX 32
#define SEAL_BLOB_MAX (1 + SEAL_KEY_SIZE + SEAL_VALUE_MAX + SEAL_TAG_SIZE)
/* The longest base64 text of a sealed value, without its NUL. */
#define SEAL_TEXT_MAX (4 * ((SEAL_BLOB_MAX + 2) / 3))

typedef struct SealKey SealKey;

/* Whether name is a placeholder name, [a-z0-9_]{1,SEAL_NAME_MAX}: the contract's rule for input
 * names, and the one rule lockd, lockctl, sessions and budgets check names by. */
bool seal_name_valid(const char *name);

/*
 * Makes a ticket's key pair: the private half in secure memory. Returns 0 or a negative errno
 * (-ENOMEM, -EIO when OpenSSL fails); *ret untouched on failure.
 */
int seal_key_new(SealKey **ret);

/* Copies the public half (the ticket's public key for GetTicket) to out; it outlives destroy. */
void seal_key_public(const SealKey *k, uint8_t out[SEAL_KEY_SIZE]);

/* Wipes the private half for good: every unseal_value() with k fails from now on. */
void seal_key_destroy(SealKey *k);

/* Destroys and frees k; NULL is a no-op. Returns NULL. */
SealKey *seal_key_free(SealKey *k);
DEFINE_TRIVIAL_CLEANUP_FUNC(SealKey *, seal_key_free)

/*
 * Seals len bytes (1..SEAL_VALUE_MAX) of value for placeholder name of ticket ticket_id, to the
 * ticket's public key, with a fresh ephemeral key. On success *ret_text is a new NUL-terminated
 * base64 string (free()). Returns 0, -EINVAL (a bad length, id, name, or a ticket key X25519
 * refuses: one of small order) or another negative errno (-ENOMEM, -EIO when OpenSSL fails);
 * *ret_text untouched on failure.
 */
int seal_value(const uint8_t ticket_pub[SEAL_KEY_SIZE], const char *ticket_id, const char *name,
               const void *value, size_t len, char **ret_text);

/*
 * Opens a sealed value for placeholder name of ticket ticket_id with the ticket's key k. On
 * success *ret holds the value in secure memory (1..SEAL_VALUE_MAX bytes, NUL after them).
 * Returns 0; -EINVAL for a bad ticket id or name (the caller's mistake, checked before text is
 * read); -EBADMSG for everything else about text and k alike — bad base64, a wrong length or
 * version, a wrong key, ticket or name, any changed bit, a destroyed key — so nothing about why
 * is revealed; -ENOMEM when secure memory is exhausted. *ret untouched on failure.
 */
int unseal_value(const SealKey *k, const char *ticket_id, const char *name, const char *text,
                 SecBuf **ret);

/*
 * Test hooks: seal_value() with the ephemeral private key given instead of a fresh one, and a
 * ticket key made from a given private key. A fixed ephemeral key sealing two values of the same
 * ticket and name reuses an AEAD key and nonce: never outside tests.
 */
int seal_value_with_ephemeral(const uint8_t eph_priv[SEAL_KEY_SIZE],
                              const uint8_t ticket_pub[SEAL_KEY_SIZE], const char *ticket_id,
                              const char *name, const void *value, size_t len, char **ret_text);
int seal_key_new_from_private(const uint8_t priv[SEAL_KEY_SIZE], SealKey **ret);
