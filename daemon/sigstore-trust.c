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
        for (size_t i = 0; i < t->n_tlogs; i++)
                EVP_PKEY_free(t->tlogs[i].key);
        for (size_t i = 0; i < t->n_ctlogs; i++)
                EVP_PKEY_free(t->ctlogs[i].key);
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
