/* Loading a Sigstore trusted_root.json: CAs, timestamp authorities, Rekor and CT log keys. */
#include <string.h>

#include "sigstore-util.h"

#define MAX_ENTRIES 64

/* Parses {"start": ..., "end": ...}: start is required (a missing bound is not "unbounded"),
 * end is optional and inclusive. */
static int parse_validity(json_t *v, SigstoreValidity *ret) {
        if (!json_is_object(v))
                return -EBADMSG;
        json_t *s = json_object_get(v, "start"), *e = json_object_get(v, "end");
        if (!json_is_string(s) || sigstore_parse_rfc3339(json_string_value(s), &ret->start) < 0)
                return -EBADMSG;
        ret->end = INT64_MAX;
        if (e && !json_is_null(e) &&
            (!json_is_string(e) || sigstore_parse_rfc3339(json_string_value(e), &ret->end) < 0))
                return -EBADMSG;
        if (ret->end < ret->start)
                return -EBADMSG;
        return 0;
}

static int b64_field(json_t *o, const char *key, SigstoreBytes *ret) {
        json_t *v = json_object_get(o, key);
        if (!json_is_string(v))
                return -EBADMSG;
        return sigstore_b64_decode(json_string_value(v), json_string_length(v), ret);
}

/* The PublicKeyDetails of the Sigstore protobuf-specs (sigstore_common.proto) that a log key may
 * declare: the key type, the exact size (0: any RSA size of at least 2048 bits, for the deprecated
 * names) and the digest of its signatures. RSA-PSS and prehashed Ed25519 are not supported here:
 * like values missing from this table, they leave the key unusable. */
static const struct {
        const char *name;
        const char *type;
        int bits;
        const char *md;
} key_details[] = {
        {"PKIX_ECDSA_P256_SHA_256", "EC", 256, "SHA256"},
        {"PKIX_ECDSA_P256_HMAC_SHA_256", "EC", 256, "SHA256"}, /* deprecated alias */
        {"PKIX_ECDSA_P384_SHA_384", "EC", 384, "SHA384"},
        {"PKIX_ECDSA_P521_SHA_512", "EC", 521, "SHA512"},
        {"PKIX_ED25519", "ED25519", 0, NULL},
        {"PKIX_RSA_PKCS1V15_2048_SHA256", "RSA", 2048, "SHA256"},
        {"PKIX_RSA_PKCS1V15_3072_SHA256", "RSA", 3072, "SHA256"},
        {"PKIX_RSA_PKCS1V15_4096_SHA256", "RSA", 4096, "SHA256"},
        {"PKCS1_RSA_PKCS1V5", "RSA", 0, "SHA256"}, /* deprecated, used by staging CT logs */
        {"PKIX_RSA_PKCS1V5", "RSA", 0, "SHA256"},  /* deprecated */
};

/* Checks the key against its declared keyDetails. A known value that does not describe the key
 * makes the whole trust root invalid (-EBADMSG); an unknown or missing value only marks the key
 * unusable, so entries that need it are refused while the rest of the root stays usable. */
static int parse_key_details(json_t *pk, SigstoreLogKey *l) {
        const char *d = json_string_value(json_object_get(pk, "keyDetails"));
        l->usable = false;
        l->md = NULL;
        if (!d)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(key_details); i++) {
                if (strcmp(d, key_details[i].name) != 0)
                        continue;
                int bits = EVP_PKEY_get_bits(l->key);
                if (!EVP_PKEY_is_a(l->key, key_details[i].type))
                        return -EBADMSG;
                if (key_details[i].bits > 0 ? bits != key_details[i].bits
                                            : bits < 2048 && EVP_PKEY_is_a(l->key, "RSA"))
                        return -EBADMSG;
                if (key_details[i].md) {
                        l->md = EVP_get_digestbyname(key_details[i].md);
                        if (!l->md)
                                return 0;
                }
                l->usable = true;
                return 0;
        }
        return 0;
}

/* Stores the hostname of baseUrl ("https://host[:port][/path]"), the origin a Rekor v2 log
 * writes in its checkpoints. A missing or unparsable baseUrl leaves it NULL. */
static int parse_host(json_t *o, SigstoreLogKey *l) {
        const char *u = json_string_value(json_object_get(o, "baseUrl"));
        if (!u)
                return 0;
        const char *p = strstr(u, "://");
        if (!p)
                return 0;
        p += 3;
        size_t n = strcspn(p, ":/?#");
        if (n == 0 || memchr(p, '@', n))
                return 0;
        l->host = strndup(p, n);
        return l->host ? 0 : -ENOMEM;
}

static int parse_log(json_t *o, SigstoreLogKey *l) {
        if (!json_is_object(o))
                return -EBADMSG;
        json_t *pk = json_object_get(o, "publicKey");
        SigstoreBytes der = {}, id = {};
        if (!json_is_object(pk) || b64_field(pk, "rawBytes", &der) < 0)
                return -EBADMSG;
        l->key = sigstore_pkey_from_der(der.data, der.len);
        free(der.data);
        if (!l->key)
                return -EBADMSG;
        int r = parse_key_details(pk, l);
        if (r < 0)
                return r;
        r = parse_host(o, l);
        if (r < 0)
                return r;
        if (parse_validity(json_object_get(pk, "validFor"), &l->valid) < 0)
                return -EBADMSG;
        if (b64_field(json_object_get(o, "logId"), "keyId", &id) < 0 || id.len != 32) {
                free(id.data);
                return -EBADMSG;
        }
        memcpy(l->log_id, id.data, 32);
        free(id.data);
        const char *alg = json_string_value(json_object_get(o, "hashAlgorithm"));
        if (alg && strcmp(alg, "SHA2_256") != 0)
                return -EBADMSG;
        return 0;
}

static int parse_authority(json_t *o, SigstoreAuthority *a) {
        if (!json_is_object(o))
                return -EBADMSG;
        json_t *certs = json_object_get(json_object_get(o, "certChain"), "certificates");
        size_t n = json_array_size(certs);
        if (!json_is_array(certs) || n == 0 || n > 10)
                return -EBADMSG;
        a->chain = sk_X509_new_null();
        if (!a->chain)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                SigstoreBytes der = {};
                if (b64_field(json_array_get(certs, i), "rawBytes", &der) < 0)
                        return -EBADMSG;
                const unsigned char *p = der.data;
                X509 *x = d2i_X509(NULL, &p, (long)der.len);
                bool trailing = x && p != der.data + der.len;
                free(der.data);
                if (!x || trailing || !sk_X509_push(a->chain, x)) {
                        X509_free(x);
                        return -EBADMSG;
                }
        }
        return parse_validity(json_object_get(o, "validFor"), &a->valid);
}

static int parse_array(json_t *root, const char *key, bool required, size_t elem, void **ret,
                       size_t *n_ret, int (*parse)(json_t *, void *)) {
        json_t *a = json_object_get(root, key);
        if (!a)
                return required ? -EBADMSG : 0;
        size_t n = json_array_size(a);
        if (!json_is_array(a) || n > MAX_ENTRIES)
                return -EBADMSG;
        *ret = calloc(n ? n : 1, elem);
        if (!*ret)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                (*n_ret)++;
                int r = parse(json_array_get(a, i), (uint8_t *)*ret + i * elem);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_log_v(json_t *o, void *p) {
        return parse_log(o, p);
}

static int parse_authority_v(json_t *o, void *p) {
        return parse_authority(o, p);
}

/* Parses a trusted_root.json (v0.1 media type) of at most SIGSTORE_JSON_MAX bytes. Every key and
 * authority needs a validity with a start. Returns 0, -EFBIG (over the cap), -EBADMSG or -ENOMEM.
 */
int sigstore_trust_root_load(const char *json, size_t len, SigstoreTrustRoot **ret) {
        if (len > SIGSTORE_JSON_MAX)
                return -EFBIG;
        json_error_t err;
        _cleanup_(json_decrefp) json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &err);
        if (!json_is_object(root))
                return -EBADMSG;
        const char *mt = json_string_value(json_object_get(root, "mediaType"));
        if (!mt || strcmp(mt, "application/vnd.dev.sigstore.trustedroot+json;version=0.1") != 0)
                return -EBADMSG;
        SigstoreTrustRoot *t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        int r = parse_array(root, "tlogs", true, sizeof(SigstoreLogKey), (void **)&t->tlogs,
                            &t->n_tlogs, parse_log_v);
        if (r >= 0)
                r = parse_array(root, "ctlogs", false, sizeof(SigstoreLogKey), (void **)&t->ctlogs,
                                &t->n_ctlogs, parse_log_v);
        if (r >= 0)
                r = parse_array(root, "certificateAuthorities", false, sizeof(SigstoreAuthority),
                                (void **)&t->cas, &t->n_cas, parse_authority_v);
        if (r >= 0)
                r = parse_array(root, "timestampAuthorities", false, sizeof(SigstoreAuthority),
                                (void **)&t->tsas, &t->n_tsas, parse_authority_v);
        if (r < 0) {
                sigstore_trust_root_free(t);
                return r;
        }
        *ret = t;
        return 0;
}

SigstoreTrustRoot *sigstore_trust_root_free(SigstoreTrustRoot *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_tlogs; i++) {
                EVP_PKEY_free(t->tlogs[i].key);
                free(t->tlogs[i].host);
        }
        for (size_t i = 0; i < t->n_ctlogs; i++) {
                EVP_PKEY_free(t->ctlogs[i].key);
                free(t->ctlogs[i].host);
        }
        for (size_t i = 0; i < t->n_cas; i++)
                sk_X509_pop_free(t->cas[i].chain, X509_free);
        for (size_t i = 0; i < t->n_tsas; i++)
                sk_X509_pop_free(t->tsas[i].chain, X509_free);
        free(t->tlogs);
        free(t->ctlogs);
        free(t->cas);
        free(t->tsas);
        free(t);
        return NULL;
}
