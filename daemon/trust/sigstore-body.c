/* "Log body vs bundle": the canonicalized Rekor entry must describe this very bundle. */
#include <string.h>
#include <openssl/pem.h>

#include "codec.h"
#include "sigstore-body.h"

static json_t *path(json_t *o, const char *const *keys) {
        for (; *keys && o; keys++)
                o = json_object_get(o, *keys);
        return o;
}
#define PATH(o, ...) path(o, (const char *const[]){__VA_ARGS__, NULL})

static bool b64_equals(json_t *v, const uint8_t *data, size_t len) {
        SigstoreBytes b = {};
        if (!json_is_string(v) ||
            sigstore_b64_decode(json_string_value(v), json_string_length(v), &b) < 0)
                return false;
        bool eq = b.len == len && memcmp(b.data, data, len) == 0;
        free(b.data);
        return eq;
}

static bool hex_equals(json_t *v, const uint8_t digest[32]) {
        uint8_t d[32];
        return json_is_string(v) &&
               hex_decode(json_string_value(v), strlen(json_string_value(v)), d, 32) >= 0 &&
               memcmp(d, digest, 32) == 0;
}

/* A base64 PEM (certificate or public key) as Rekor v1 stores the verifier: equal to the signer? */
static bool pem_b64_matches(json_t *v, const SigstoreSigner *s) {
        SigstoreBytes pem = {};
        if (!json_is_string(v) ||
            sigstore_b64_decode(json_string_value(v), json_string_length(v), &pem) < 0)
                return false;
        _cleanup_(BIO_freep) BIO *bio = BIO_new_mem_buf(pem.data, (int)pem.len);
        bool eq = false;
        if (bio && s->cert) {
                _cleanup_(X509_freep) X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
                eq = x && X509_cmp(x, s->cert) == 0;
        } else if (bio) {
                _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
                eq = k && EVP_PKEY_eq(k, s->key) == 1;
        }
        free(pem.data);
        return eq;
}

/* A Rekor v2 verifier object {x509Certificate: {rawBytes}} or {publicKey: {rawBytes}}. */
static bool verifier_v2_matches(json_t *v, const SigstoreSigner *s) {
        SigstoreBytes der = {};
        bool eq = false;
        if (s->cert) {
                json_t *raw = PATH(v, "x509Certificate", "rawBytes");
                if (!json_is_string(raw) ||
                    sigstore_b64_decode(json_string_value(raw), json_string_length(raw), &der) < 0)
                        return false;
                const unsigned char *p = der.data;
                _cleanup_(X509_freep) X509 *x = d2i_X509(NULL, &p, (long)der.len);
                eq = x && p == der.data + der.len && X509_cmp(x, s->cert) == 0;
        } else {
                json_t *raw = PATH(v, "publicKey", "rawBytes");
                if (!json_is_string(raw) ||
                    sigstore_b64_decode(json_string_value(raw), json_string_length(raw), &der) < 0)
                        return false;
                _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = sigstore_pkey_from_der(der.data, der.len);
                eq = k && EVP_PKEY_eq(k, s->key) == 1;
        }
        free(der.data);
        return eq;
}

static const char *str(json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

static bool is(json_t *v, const char *s) {
        return json_is_string(v) && strcmp(json_string_value(v), s) == 0;
}

/* Checks the body fields common to every kind and returns spec. */
static json_t *body_spec(json_t *body, const char *kind, const char *version) {
        if (!json_is_object(body) || !is(json_object_get(body, "kind"), kind) ||
            !is(json_object_get(body, "apiVersion"), version))
                return NULL;
        json_t *spec = json_object_get(body, "spec");
        return json_is_object(spec) ? spec : NULL;
}

/*
 * The body checks of each kind of entry below: each compares the decoded body with the bundle b
 * signed by s (digest: the artifact digest for hashedrekord, the SHA-256 of the DSSE payload for
 * the others) and returns NULL when consistent, or the part that differs ("kind", "digest",
 * "payload hash", "payload type", "signature", "certificate or key"), checked in that order.
 */

static const char *check_hashedrekord_001(json_t *body, const SigstoreBundle *b,
                                          const SigstoreSigner *s, const uint8_t digest[32]) {
        json_t *spec = body_spec(body, "hashedrekord", "0.0.1");

        if (!spec || b->is_dsse)
                return "kind";
        if (!is(PATH(spec, "data", "hash", "algorithm"), "sha256") ||
            !hex_equals(PATH(spec, "data", "hash", "value"), digest))
                return "digest";
        if (!b64_equals(PATH(spec, "signature", "content"), b->signature.data, b->signature.len))
                return "signature";
        if (!pem_b64_matches(PATH(spec, "signature", "publicKey", "content"), s))
                return "certificate or key";
        return NULL;
}

static const char *check_hashedrekord_002(json_t *body, const SigstoreBundle *b,
                                          const SigstoreSigner *s, const uint8_t digest[32]) {
        json_t *h = PATH(body, "spec", "hashedRekordV002");
        json_t *spec = body_spec(body, "hashedrekord", "0.0.2");

        if (!spec || !json_is_object(h))
                return "kind";
        if (!is(PATH(h, "data", "algorithm"), "SHA2_256") ||
            !b64_equals(PATH(h, "data", "digest"), digest, 32))
                return "digest";
        if (!b64_equals(PATH(h, "signature", "content"), b->signature.data, b->signature.len))
                return "signature";
        if (!verifier_v2_matches(PATH(h, "signature", "verifier"), s))
                return "certificate or key";
        return NULL;
}

static const char *check_dsse_001(json_t *body, const SigstoreBundle *b, const SigstoreSigner *s,
                                  const uint8_t payload_hash[32]) {
        /* The payload hash binds the entry to the envelope's payload, and the signature and
         * verifier are compared below. envelopeHash is not checked: Rekor computes it over its
         * own RFC 8785 serialization of the envelope as submitted (for the conformance bundles,
         * sha256 of {"payload":…,"payloadType":…,"signatures":[{"sig":…}]}), which depends on
         * fields such as keyid that the bundle need not carry the same way. The client source
         * read for this check (sigstore-go pkg/tlog/entry.go) takes only the signature and
         * verifier from a dsse 0.0.1 body, after schema validation, and no client code found
         * recomputes envelopeHash. */
        json_t *spec = body_spec(body, "dsse", "0.0.1");
        json_t *sigs = json_object_get(spec, "signatures");

        if (!spec || !b->is_dsse)
                return "kind";
        if (!is(PATH(spec, "payloadHash", "algorithm"), "sha256") ||
            !hex_equals(PATH(spec, "payloadHash", "value"), payload_hash))
                return "payload hash";
        if (!json_is_array(sigs) || json_array_size(sigs) != 1 ||
            !b64_equals(PATH(json_array_get(sigs, 0), "signature"), b->signature.data,
                        b->signature.len))
                return "signature";
        if (!pem_b64_matches(PATH(json_array_get(sigs, 0), "verifier"), s))
                return "certificate or key";
        return NULL;
}

static const char *check_dsse_002(json_t *body, const SigstoreBundle *b, const SigstoreSigner *s,
                                  const uint8_t payload_hash[32]) {
        json_t *d = PATH(body, "spec", "dsseV002");
        json_t *sigs = json_object_get(d, "signatures");
        json_t *spec = body_spec(body, "dsse", "0.0.2");

        if (!spec || !json_is_object(d) || !b->is_dsse)
                return "kind";
        if (!is(PATH(d, "payloadHash", "algorithm"), "SHA2_256") ||
            !b64_equals(PATH(d, "payloadHash", "digest"), payload_hash, 32))
                return "payload hash";
        if (!json_is_array(sigs) || json_array_size(sigs) != 1 ||
            !b64_equals(PATH(json_array_get(sigs, 0), "content"), b->signature.data,
                        b->signature.len))
                return "signature";
        if (!verifier_v2_matches(PATH(json_array_get(sigs, 0), "verifier"), s))
                return "certificate or key";
        return NULL;
}

/* Whether sig, an intoto 0.0.2 signature (base64-encoded twice), decodes to b's signature. */
static bool intoto_signature_matches(json_t *sig, const SigstoreBundle *b) {
        SigstoreBytes once = {};
        bool ok = json_is_string(sig) &&
                  sigstore_b64_decode(json_string_value(sig), json_string_length(sig), &once) >= 0;

        if (ok) {
                SigstoreBytes twice = {};
                ok = sigstore_b64_decode((const char *)once.data, once.len, &twice) >= 0 &&
                     twice.len == b->signature.len &&
                     memcmp(twice.data, b->signature.data, twice.len) == 0;
                free(twice.data);
        }
        free(once.data);
        return ok;
}

static const char *check_intoto_002(json_t *body, const SigstoreBundle *b, const SigstoreSigner *s,
                                    const uint8_t payload_hash[32]) {
        json_t *spec = body_spec(body, "intoto", "0.0.2");
        json_t *env = PATH(spec, "content", "envelope");
        json_t *sigs = json_object_get(env, "signatures");

        if (!spec || !json_is_object(env) || !b->is_dsse)
                return "kind";
        if (!is(PATH(spec, "content", "payloadHash", "algorithm"), "sha256") ||
            !hex_equals(PATH(spec, "content", "payloadHash", "value"), payload_hash))
                return "payload hash";
        if (str(env, "payloadType") && strcmp(str(env, "payloadType"), b->payload_type) != 0)
                return "payload type";
        if (!json_is_array(sigs) || json_array_size(sigs) != 1)
                return "signature";
        if (!intoto_signature_matches(PATH(json_array_get(sigs, 0), "sig"), b))
                return "signature";
        if (!pem_b64_matches(PATH(json_array_get(sigs, 0), "publicKey"), s))
                return "certificate or key";
        return NULL;
}

/* Compares the decoded canonicalized body of entry t with the bundle b signed by s.
 * expected_digest is the artifact digest (messageSignature) or SHA-256 of the DSSE PAE.
 * Returns 0 when consistent, -EKEYREJECTED with reason otherwise. */
int sigstore_body_check(const SigstoreTlogEntry *t, const SigstoreBundle *b,
                        const SigstoreSigner *s, const uint8_t expected_digest[32], char *reason,
                        size_t reason_size) {
        json_error_t err;
        _cleanup_(json_decrefp) json_t *body =
                json_loadb((const char *)t->body.data, t->body.len, JSON_REJECT_DUPLICATES, &err);
        if (!body) {
                sigstore_fail(reason, reason_size, "tlog body is not valid JSON");
                return -EBADMSG;
        }
        const char *what = NULL;
        uint8_t payload_hash[32];
        if (b->is_dsse)
                sha256(b->payload.data, b->payload.len, payload_hash);

        switch (t->kind) {
        case SIGSTORE_HASHEDREKORD_001:
                what = check_hashedrekord_001(body, b, s, expected_digest);
                break;
        case SIGSTORE_HASHEDREKORD_002:
                what = check_hashedrekord_002(body, b, s, expected_digest);
                break;
        case SIGSTORE_DSSE_001:
                what = check_dsse_001(body, b, s, payload_hash);
                break;
        case SIGSTORE_DSSE_002:
                what = check_dsse_002(body, b, s, payload_hash);
                break;
        case SIGSTORE_INTOTO_002:
                what = check_intoto_002(body, b, s, payload_hash);
                break;
        }
        if (what) {
                sigstore_fail(reason, reason_size,
                              "tlog entry %" PRIu64 " does not match the bundle: %s", t->log_index,
                              what);
                return -EKEYREJECTED;
        }
        return 0;
}
