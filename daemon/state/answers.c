/* The answers of questions bound to typed values, in memory under a keyed hash of the values. */
#include <errno.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "answers.h"
#include "macro.h"
#include "secmem.h"

#define KEY_SIZE 32
#define NO_ENTRY UINT32_MAX

typedef struct Entry {
        uint8_t id[ANSWERS_ID_SIZE];
        uint8_t digest[BUDGET_DIGEST_SIZE];
        BudgetEntry answer;
        uint32_t next; /* the next entry of the same bucket, or NO_ENTRY */
        bool used;
} Entry;

/*
 * entries is a ring in the order answers were stored: the next store takes slot `oldest`, which
 * was the oldest answer. buckets chains the entries by id (an HMAC output: its first bytes are as
 * good a hash as any), so a lookup walks a short chain, never the ring.
 */
struct AnswerCache {
        uint8_t *key; /* KEY_SIZE bytes of secure memory */
        EVP_MAC *mac;
        Entry entries[ANSWERS_MAX];
        uint32_t buckets[ANSWERS_MAX];
        uint32_t oldest;
};

_Static_assert((ANSWERS_MAX & (ANSWERS_MAX - 1)) == 0, "a power of two");

static uint32_t bucket_of(const uint8_t id[ANSWERS_ID_SIZE]) {
        uint32_t h;

        memcpy(&h, id, sizeof(h));
        return h & (ANSWERS_MAX - 1);
}

int answers_new(AnswerCache **ret) {
        AnswerCache *c;

        if (!ret)
                return -EINVAL;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        for (size_t i = 0; i < ANSWERS_MAX; i++)
                c->buckets[i] = NO_ENTRY;
        *ret = c;
        return 0;
}

/*
 * The key and the MAC, made at the first question bound to values (a human typed values by then,
 * so the secure memory and OpenSSL are in use already): an idle lockd pays for neither.
 */
static int ensure_key(AnswerCache *c) {
        void *key = NULL;
        int r;

        if (c->key)
                return 0;
        r = secmem_alloc(KEY_SIZE, &key);
        if (r < 0)
                return r;
        if (getrandom(key, KEY_SIZE, 0) != KEY_SIZE) {
                secmem_free(key);
                return -EIO;
        }
        c->mac = EVP_MAC_fetch(NULL, OSSL_MAC_NAME_HMAC, NULL);
        if (!c->mac) {
                secmem_free(key);
                return -ENOMEM;
        }
        c->key = key;
        return 0;
}

AnswerCache *answers_free(AnswerCache *c) {
        if (!c)
                return NULL;
        secmem_free(c->key);
        EVP_MAC_free(c->mac);
        explicit_bzero(c->entries, sizeof(c->entries));
        free(c);
        return NULL;
}

/* Feeds a NUL-terminated string and its NUL: fields end where they say, so none runs into the
 * next. */
static bool mac_string(EVP_MAC_CTX *ctx, const char *s) {
        return EVP_MAC_update(ctx, (const unsigned char *)s, strlen(s) + 1) == 1;
}

int answers_id(AnswerCache *c, const uint8_t digest[BUDGET_DIGEST_SIZE], const BudgetKey *key,
               const char *inputs, size_t inputs_len, uint8_t id[ANSWERS_ID_SIZE]) {
        OSSL_PARAM params[] = {
                OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
                OSSL_PARAM_construct_end(),
        };
        uint8_t out[ANSWERS_ID_SIZE];
        EVP_MAC_CTX *ctx;
        size_t out_len = 0;
        bool ok;
        int r;

        if (!c || !digest || !key || (!inputs && inputs_len > 0) || !id)
                return -EINVAL;
        r = ensure_key(c);
        if (r < 0)
                return r;
        ctx = EVP_MAC_CTX_new(c->mac);
        if (!ctx)
                return -ENOMEM;
        ok = EVP_MAC_init(ctx, c->key, KEY_SIZE, params) == 1 &&
             EVP_MAC_update(ctx, digest, BUDGET_DIGEST_SIZE) == 1 && mac_string(ctx, key->plugin) &&
             mac_string(ctx, key->version);
        for (size_t i = 0; ok && i < key->n_pairs; i++)
                ok = mac_string(ctx, key->pairs[i].input) &&
                     mac_string(ctx, key->pairs[i].placeholder);
        /* The values, as the plugin sees them on fd 6: the length first, then the bytes. */
        if (ok) {
                uint64_t n = inputs_len;

                ok = EVP_MAC_update(ctx, (const unsigned char *)&n, sizeof(n)) == 1 &&
                     (inputs_len == 0 ||
                      EVP_MAC_update(ctx, (const unsigned char *)inputs, inputs_len) == 1);
        }
        ok = ok && EVP_MAC_final(ctx, out, &out_len, sizeof(out)) == 1 && out_len == sizeof(out);
        EVP_MAC_CTX_free(ctx);
        if (!ok)
                return -EIO;
        memcpy(id, out, sizeof(out));
        return 0;
}

static Entry *find(const AnswerCache *c, const uint8_t id[ANSWERS_ID_SIZE]) {
        for (uint32_t i = c->buckets[bucket_of(id)]; i != NO_ENTRY; i = c->entries[i].next)
                if (memcmp(c->entries[i].id, id, ANSWERS_ID_SIZE) == 0)
                        return (Entry *)&c->entries[i];
        return NULL;
}

int answers_lookup(const AnswerCache *c, const uint8_t id[ANSWERS_ID_SIZE], BudgetEntry *ret) {
        const Entry *e;

        if (!c || !id || !ret)
                return -EINVAL;
        e = find(c, id);
        if (!e)
                return 0;
        *ret = e->answer;
        return 1;
}

/* Takes entry i out of its bucket's chain and empties it. */
static void unlink_entry(AnswerCache *c, uint32_t i) {
        Entry *e = &c->entries[i];
        uint32_t *p;

        if (!e->used)
                return;
        for (p = &c->buckets[bucket_of(e->id)]; *p != NO_ENTRY; p = &c->entries[*p].next)
                if (*p == i) {
                        *p = e->next;
                        break;
                }
        explicit_bzero(e, sizeof(*e));
        e->next = NO_ENTRY;
}

int answers_store(AnswerCache *c, const uint8_t id[ANSWERS_ID_SIZE],
                  const uint8_t digest[BUDGET_DIGEST_SIZE], const BudgetEntry *answer) {
        uint32_t i, b;
        Entry *e;

        if (!c || !id || !digest || !answer)
                return -EINVAL;
        e = find(c, id);
        if (e) {
                e->answer = *answer;
                return 0;
        }
        i = c->oldest;
        c->oldest = (c->oldest + 1) & (ANSWERS_MAX - 1);
        unlink_entry(c, i);
        e = &c->entries[i];
        memcpy(e->id, id, ANSWERS_ID_SIZE);
        memcpy(e->digest, digest, BUDGET_DIGEST_SIZE);
        e->answer = *answer;
        e->used = true;
        b = bucket_of(id);
        e->next = c->buckets[b];
        c->buckets[b] = i;
        return 0;
}

size_t answers_reset(AnswerCache *c, const uint8_t digest[BUDGET_DIGEST_SIZE]) {
        size_t n = 0;

        if (!c || !digest)
                return 0;
        for (uint32_t i = 0; i < ANSWERS_MAX; i++)
                if (c->entries[i].used &&
                    memcmp(c->entries[i].digest, digest, BUDGET_DIGEST_SIZE) == 0) {
                        unlink_entry(c, i);
                        n++;
                }
        return n;
}

void answers_clear(AnswerCache *c) {
        if (!c)
                return;
        for (uint32_t i = 0; i < ANSWERS_MAX; i++)
                unlink_entry(c, i);
}
