/* Strict parsing of a Sigstore bundle (v0.1 to v0.3) from JSON into a SigstoreBundle. */
#include <string.h>

#include "sigstore-util.h"

#define FAIL(...)                                                                                  \
        ({                                                                                         \
                sigstore_fail(reason, reason_size, __VA_ARGS__);                                   \
                -EBADMSG;                                                                          \
        })

#define MAX_TLOG_ENTRIES 32
#define MAX_PROOF_HASHES 64
#define MAX_TIMESTAMPS   32
#define MAX_CHAIN        10

static const char *str_field(json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);
        return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Decodes the base64 string at o[key] into ret; a missing field or a non-string is an error. */
static int b64_field(json_t *o, const char *key, SigstoreBytes *ret) {
        json_t *v = json_object_get(o, key);
        if (!json_is_string(v))
                return -EBADMSG;
        return sigstore_b64_decode(json_string_value(v), json_string_length(v), ret);
}

static X509 *cert_from_json(json_t *o) {
        SigstoreBytes der = {};
        if (!json_is_object(o) || b64_field(o, "rawBytes", &der) < 0)
                return NULL;
        const unsigned char *p = der.data;
        X509 *x = d2i_X509(NULL, &p, (long)der.len);
        if (x && p != der.data + der.len) {
                X509_free(x);
                x = NULL;
        }
        free(der.data);
        return x;
}

static int parse_media_type(const char *mt, int *minor) {
        static const struct {
                const char *name;
                int minor;
        } types[] = {
                {"application/vnd.dev.sigstore.bundle+json;version=0.1", 1},
                {"application/vnd.dev.sigstore.bundle+json;version=0.2", 2},
                {"application/vnd.dev.sigstore.bundle+json;version=0.3", 3},
                {"application/vnd.dev.sigstore.bundle.v0.3+json", 3},
        };
        for (size_t i = 0; i < ELEMENTSOF(types); i++)
                if (strcmp(mt, types[i].name) == 0) {
                        *minor = types[i].minor;
                        return 0;
                }
        return -EBADMSG;
}

/* A tlog entry's kindVersion (kv) into t->kind: one of the five kinds the body checks know. 0, or
 * -EBADMSG with the reason. */
static int parse_tlog_kind(json_t *kv, SigstoreTlogEntry *t, char *reason, size_t reason_size) {
        const char *kind = str_field(kv, "kind"), *ver = str_field(kv, "version");
        if (!kind || !ver)
                return FAIL("tlog entry: bad kindVersion");
        if (strcmp(kind, "hashedrekord") == 0 && strcmp(ver, "0.0.1") == 0)
                t->kind = SIGSTORE_HASHEDREKORD_001;
        else if (strcmp(kind, "hashedrekord") == 0 && strcmp(ver, "0.0.2") == 0)
                t->kind = SIGSTORE_HASHEDREKORD_002;
        else if (strcmp(kind, "dsse") == 0 && strcmp(ver, "0.0.1") == 0)
                t->kind = SIGSTORE_DSSE_001;
        else if (strcmp(kind, "dsse") == 0 && strcmp(ver, "0.0.2") == 0)
                t->kind = SIGSTORE_DSSE_002;
        else if (strcmp(kind, "intoto") == 0 && strcmp(ver, "0.0.2") == 0)
                t->kind = SIGSTORE_INTOTO_002;
        else
                return FAIL("tlog entry: unsupported kind %.32s %.16s", kind, ver);
        return 0;
}

/* A tlog entry's inclusionProof (proof, present) into t: log index and tree size, a 32-byte root
 * hash, at most MAX_PROOF_HASHES 32-byte hashes, and the checkpoint's envelope when given; then
 * t->have_proof. 0, -EBADMSG with the reason, or -ENOMEM. */
static int parse_inclusion_proof(json_t *proof, SigstoreTlogEntry *t, char *reason,
                                 size_t reason_size) {
        SigstoreBytes root = {};
        if (!json_is_object(proof) ||
            sigstore_json_uint64(json_object_get(proof, "logIndex"), &t->proof_index) < 0 ||
            sigstore_json_uint64(json_object_get(proof, "treeSize"), &t->proof_size) < 0)
                return FAIL("inclusion proof: bad index or tree size");
        if (b64_field(proof, "rootHash", &root) < 0 || root.len != 32) {
                free(root.data);
                return FAIL("inclusion proof: bad rootHash");
        }
        memcpy(t->proof_root, root.data, 32);
        free(root.data);
        json_t *hashes = json_object_get(proof, "hashes");
        if (hashes && !json_is_array(hashes))
                return FAIL("inclusion proof: hashes is not an array");
        size_t n = json_array_size(hashes);
        if (n > MAX_PROOF_HASHES)
                return FAIL("inclusion proof: too many hashes");
        t->proof_hashes = calloc(n ? n : 1, 32);
        if (!t->proof_hashes)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_t *h = json_array_get(hashes, i);
                SigstoreBytes b = {};
                if (!json_is_string(h) ||
                    sigstore_b64_decode(json_string_value(h), json_string_length(h), &b) < 0 ||
                    b.len != 32) {
                        free(b.data);
                        return FAIL("inclusion proof: bad hash");
                }
                memcpy(t->proof_hashes[i], b.data, 32);
                free(b.data);
        }
        t->n_proof_hashes = n;
        json_t *cp = json_object_get(proof, "checkpoint");
        if (cp) {
                const char *env = str_field(cp, "envelope");
                if (!env)
                        return FAIL("inclusion proof: bad checkpoint");
                t->checkpoint = strdup(env);
                if (!t->checkpoint)
                        return -ENOMEM;
        }
        t->have_proof = true;
        return 0;
}

/* Parses one tlogEntries[] element of a bundle of version 0.minor into t, in the order of its
 * fields below. 0, -EBADMSG with the reason, or -ENOMEM. */
static int parse_tlog_entry(json_t *e, int minor, SigstoreTlogEntry *t, char *reason,
                            size_t reason_size) {
        int r;

        if (!json_is_object(e))
                return FAIL("tlog entry is not an object");
        if (sigstore_json_uint64(json_object_get(e, "logIndex"), &t->log_index) < 0)
                return FAIL("tlog entry: bad logIndex");
        SigstoreBytes id = {};
        json_t *logid = json_object_get(e, "logId");
        if (!json_is_object(logid) || b64_field(logid, "keyId", &id) < 0 || id.len != 32) {
                free(id.data);
                return FAIL("tlog entry: bad logId");
        }
        memcpy(t->log_id, id.data, 32);
        free(id.data);

        r = parse_tlog_kind(json_object_get(e, "kindVersion"), t, reason, reason_size);
        if (r < 0)
                return r;

        json_t *it = json_object_get(e, "integratedTime");
        if (it) {
                uint64_t v;
                if (sigstore_json_uint64(it, &v) < 0)
                        return FAIL("tlog entry: bad integratedTime");
                /* proto3 JSON omits zero: 0 means "none" (Rekor v2) */
                t->have_integrated_time = v != 0;
                t->integrated_time = (int64_t)v;
        }

        json_t *body = json_object_get(e, "canonicalizedBody");
        if (!json_is_string(body) || b64_field(e, "canonicalizedBody", &t->body) < 0)
                return FAIL("tlog entry: bad canonicalizedBody");
        t->body_b64 = strdup(json_string_value(body));
        if (!t->body_b64)
                return -ENOMEM;

        json_t *promise = json_object_get(e, "inclusionPromise");
        if (promise && (!json_is_object(promise) ||
                        b64_field(promise, "signedEntryTimestamp", &t->set) < 0 || t->set.len == 0))
                return FAIL("tlog entry: bad inclusionPromise");

        json_t *proof = json_object_get(e, "inclusionProof");
        if (proof) {
                r = parse_inclusion_proof(proof, t, reason, reason_size);
                if (r < 0)
                        return r;
        }

        if (minor == 1 && t->set.len == 0)
                return FAIL("v0.1 bundle: tlog entry without inclusion promise");
        if (minor >= 2 && (!t->have_proof || !t->checkpoint))
                return FAIL("v0.%d bundle: tlog entry without inclusion proof and checkpoint",
                            minor);
        return 0;
}

static int parse_material(json_t *vm, SigstoreBundle *b, char *reason, size_t reason_size) {
        if (!json_is_object(vm))
                return FAIL("verificationMaterial missing");
        json_t *chain = json_object_get(vm, "x509CertificateChain");
        json_t *cert = json_object_get(vm, "certificate");
        json_t *pk = json_object_get(vm, "publicKey");
        if (!!chain + !!cert + !!pk != 1)
                return FAIL(
                        "verificationMaterial needs exactly one of certificate, chain, publicKey");
        if (chain) {
                if (b->version_minor >= 3)
                        return FAIL("v0.3 bundle must carry a single certificate, not a chain");
                json_t *certs = json_object_get(chain, "certificates");
                size_t n = json_array_size(certs);
                if (!json_is_array(certs) || n == 0 || n > MAX_CHAIN)
                        return FAIL("x509CertificateChain: bad certificates");
                b->chain = sk_X509_new_null();
                if (!b->chain)
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++) {
                        X509 *x = cert_from_json(json_array_get(certs, i));
                        if (!x)
                                return FAIL("x509CertificateChain: bad certificate %zu", i);
                        if (i == 0)
                                b->leaf = x;
                        else if (!sk_X509_push(b->chain, x)) {
                                X509_free(x);
                                return -ENOMEM;
                        }
                }
        } else if (cert) {
                if (b->version_minor < 3)
                        return FAIL("certificate field needs a v0.3 bundle");
                b->leaf = cert_from_json(cert);
                if (!b->leaf)
                        return FAIL("certificate: bad rawBytes");
        } else {
                if (!json_is_object(pk))
                        return FAIL("publicKey: not an object");
                b->public_key_hint = true;
        }

        json_t *tlog = json_object_get(vm, "tlogEntries");
        size_t n = json_array_size(tlog);
        if (!json_is_array(tlog) || n == 0)
                return FAIL("no tlog entries");
        if (n > MAX_TLOG_ENTRIES)
                return FAIL("too many tlog entries");
        b->tlog = calloc(n, sizeof(SigstoreTlogEntry));
        if (!b->tlog)
                return -ENOMEM;
        b->n_tlog = n;
        for (size_t i = 0; i < n; i++) {
                int r = parse_tlog_entry(json_array_get(tlog, i), b->version_minor, &b->tlog[i],
                                         reason, reason_size);
                if (r < 0)
                        return r;
        }

        json_t *tvd = json_object_get(vm, "timestampVerificationData");
        if (tvd) {
                json_t *ts = json_object_get(tvd, "rfc3161Timestamps");
                if (!json_is_object(tvd) || (ts && !json_is_array(ts)))
                        return FAIL("timestampVerificationData: bad shape");
                size_t m = json_array_size(ts);
                if (m > MAX_TIMESTAMPS)
                        return FAIL("too many timestamps");
                b->timestamps = calloc(m ? m : 1, sizeof(SigstoreBytes));
                if (!b->timestamps)
                        return -ENOMEM;
                for (size_t i = 0; i < m; i++) {
                        if (b64_field(json_array_get(ts, i), "signedTimestamp", &b->timestamps[i]) <
                            0)
                                return FAIL("rfc3161 timestamp %zu: bad signedTimestamp", i);
                        b->n_timestamps++;
                }
        }
        return 0;
}

static int parse_content(json_t *root, SigstoreBundle *b, char *reason, size_t reason_size) {
        json_t *ms = json_object_get(root, "messageSignature");
        json_t *dsse = json_object_get(root, "dsseEnvelope");
        if (!!ms + !!dsse != 1)
                return FAIL("bundle needs exactly one of messageSignature, dsseEnvelope");
        if (ms) {
                if (!json_is_object(ms) || b64_field(ms, "signature", &b->signature) < 0 ||
                    b->signature.len == 0)
                        return FAIL("messageSignature: bad signature");
                json_t *md = json_object_get(ms, "messageDigest");
                if (md) {
                        SigstoreBytes d = {};
                        const char *alg = str_field(md, "algorithm");
                        if (!alg || strcmp(alg, "SHA2_256") != 0)
                                return FAIL("messageDigest: unsupported algorithm");
                        if (b64_field(md, "digest", &d) < 0 || d.len != 32) {
                                free(d.data);
                                return FAIL("messageDigest: bad digest");
                        }
                        memcpy(b->digest, d.data, 32);
                        free(d.data);
                        b->have_digest = true;
                }
                return 0;
        }
        b->is_dsse = true;
        const char *pt = str_field(dsse, "payloadType");
        if (!pt)
                return FAIL("dsseEnvelope: bad payloadType");
        b->payload_type = strdup(pt);
        if (!b->payload_type)
                return -ENOMEM;
        if (b64_field(dsse, "payload", &b->payload) < 0)
                return FAIL("dsseEnvelope: bad payload");
        json_t *sigs = json_object_get(dsse, "signatures");
        if (!json_is_array(sigs) || json_array_size(sigs) != 1)
                return FAIL("dsseEnvelope: exactly one signature required");
        if (b64_field(json_array_get(sigs, 0), "sig", &b->signature) < 0 || b->signature.len == 0)
                return FAIL("dsseEnvelope: bad sig");
        return 0;
}

/* Parses bundle JSON of at most SIGSTORE_JSON_MAX bytes. On failure fills reason and returns
 * -EBADMSG (or -ENOMEM); the caller calls sigstore_bundle_done() in every case. */
int sigstore_bundle_parse(const char *json, size_t len, SigstoreBundle *b, char *reason,
                          size_t reason_size) {
        if (len > SIGSTORE_JSON_MAX)
                return FAIL("bundle larger than %zu bytes", (size_t)SIGSTORE_JSON_MAX);
        json_error_t err;
        _cleanup_(json_decrefp) json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &err);
        if (!root)
                return FAIL("bundle is not valid JSON: %s (line %d)", err.text, err.line);
        if (!json_is_object(root))
                return FAIL("bundle is not a JSON object");
        const char *mt = str_field(root, "mediaType");
        if (!mt || parse_media_type(mt, &b->version_minor) < 0)
                return FAIL("unsupported bundle media type");
        int r = parse_material(json_object_get(root, "verificationMaterial"), b, reason,
                               reason_size);
        if (r < 0)
                return r;
        return parse_content(root, b, reason, reason_size);
}

void sigstore_bundle_done(SigstoreBundle *b) {
        X509_free(b->leaf);
        sk_X509_pop_free(b->chain, X509_free);
        for (size_t i = 0; i < b->n_tlog; i++) {
                SigstoreTlogEntry *t = &b->tlog[i];
                free(t->body.data);
                free(t->body_b64);
                free(t->set.data);
                free(t->proof_hashes);
                free(t->checkpoint);
        }
        free(b->tlog);
        for (size_t i = 0; i < b->n_timestamps; i++)
                free(b->timestamps[i].data);
        free(b->timestamps);
        free(b->signature.data);
        free(b->payload_type);
        free(b->payload.data);
        *b = (SigstoreBundle){};
}
