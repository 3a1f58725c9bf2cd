/* Verification of a Sigstore bundle: transparency log, timestamps, certificate, identity,
 * signature. */
#include <inttypes.h>
#include <string.h>
#include <time.h>
#include <openssl/pem.h>

#include "codec.h"
#include "sigstore-body.h"
#include "sigstore-cert.h"

#define REASON ret->reason, sizeof(ret->reason)
#define REJECT(...)                                                                                \
        ({                                                                                         \
                sigstore_fail(REASON, __VA_ARGS__);                                                \
                -EKEYREJECTED;                                                                     \
        })

static void bundle_donep(SigstoreBundle *b) {
        sigstore_bundle_done(b);
}

static const SigstoreLogKey *find_tlog(const SigstoreTrustRoot *root, const uint8_t id[32]) {
        for (size_t i = 0; i < root->n_tlogs; i++)
                if (memcmp(root->tlogs[i].log_id, id, 32) == 0)
                        return &root->tlogs[i];
        return NULL;
}

/* The SET: the log's signature over canonical JSON {body, integratedTime, logID, logIndex}. */
static int verify_set(const SigstoreTlogEntry *t, const SigstoreLogKey *log) {
        _cleanup_free_ char *b64 = base64_encode_alloc(t->body.data, t->body.len);
        if (!b64)
                return -ENOMEM;
        char hex[65];
        hex_encode(t->log_id, 32, hex);
        _cleanup_free_ char *msg = NULL;
        int n = asprintf(&msg,
                         "{\"body\":\"%s\",\"integratedTime\":%" PRId64
                         ",\"logID\":\"%s\",\"logIndex\":%" PRIu64 "}",
                         b64, t->integrated_time, hex, t->log_index);
        if (n < 0)
                return -ENOMEM;
        return sigstore_verify_log_sig(log, (const uint8_t *)msg, (size_t)n, t->set.data,
                                       t->set.len);
}

/* The checkpoint must be signed by the entry's log (signature line whose key hint is the first
 * four bytes of the log id; other lines, e.g. witnesses, are ignored) and commit to the proof's
 * tree size and root hash.
 *
 * The origin line is checked as the clients do. For Rekor v2 (tiles) logs, sigstore-go
 * (pkg/verify/tlog.go) passes the hostname of the trust root's baseUrl as the origin to
 * rekor-tiles' VerifyLogEntry, which opens the note with a verifier of that name (so the log's
 * signature line must carry that name) and requires the checkpoint origin to equal it; without a
 * baseUrl the entry is refused. For Rekor v1, neither sigstore-go (rekor's
 * VerifyCheckpointSignature) nor sigstore-python (SignedNote.verify) compares the origin
 * ("<hostname> - <tree id>") or the signature name with the log: the tree id is not in the trust
 * root, and the signature over the text already binds the origin to the log's key. We do the
 * same and do not check it for v1. */
static int verify_checkpoint(const SigstoreTlogEntry *t, const SigstoreLogKey *log, bool v2,
                             char *reason, size_t reason_size) {
        SigstoreCheckpoint c;
        int r = sigstore_checkpoint_parse(t->checkpoint, strlen(t->checkpoint), &c);
        if (r < 0) {
                sigstore_checkpoint_done(&c);
                sigstore_fail(reason, reason_size, "malformed checkpoint");
                return r;
        }
        if (v2 && (!log->host || strcmp(c.origin, log->host) != 0)) {
                sigstore_checkpoint_done(&c);
                sigstore_fail(reason, reason_size,
                              log->host ? "checkpoint origin is not the log's hostname"
                                        : "Rekor v2 log without baseUrl in the trust root");
                return -EKEYREJECTED;
        }
        bool signed_ok = false;
        for (size_t i = 0; i < c.n_sigs && !signed_ok; i++)
                if (memcmp(c.sigs[i].key_hint, log->log_id, 4) == 0 &&
                    (!v2 || strcmp(c.sigs[i].name, c.origin) == 0) &&
                    sigstore_verify_log_sig(log, (const uint8_t *)t->checkpoint, c.text_len,
                                            c.sigs[i].sig, c.sigs[i].sig_len) == 0)
                        signed_ok = true;
        bool match = c.size == t->proof_size && memcmp(c.root, t->proof_root, 32) == 0;
        sigstore_checkpoint_done(&c);
        if (!signed_ok) {
                sigstore_fail(reason, reason_size, "checkpoint not signed by the log");
                return -EKEYREJECTED;
        }
        if (!match) {
                sigstore_fail(reason, reason_size, "checkpoint does not match the inclusion proof");
                return -EKEYREJECTED;
        }
        return 0;
}

/* Verifies one tlog entry; appends its integrated time to times[] when the SET vouches for it. */
static int verify_tlog_entry(const SigstoreTrustRoot *root, const SigstoreBundle *b,
                             const SigstoreTlogEntry *t, const SigstoreSigner *s,
                             const uint8_t expected_digest[32], int64_t *times, size_t *n_times,
                             bool *needs_timestamp, SigstoreResult *ret) {
        const SigstoreLogKey *log = find_tlog(root, t->log_id);
        if (!log)
                return REJECT("tlog entry from a log not in the trust root");
        if (!log->usable)
                return REJECT("tlog key has unknown or unsupported keyDetails");
        int r = sigstore_body_check(t, b, s, expected_digest, REASON);
        if (r < 0)
                return r;
        bool v2 = t->kind == SIGSTORE_HASHEDREKORD_002 || t->kind == SIGSTORE_DSSE_002;
        if (t->have_integrated_time && t->integrated_time > (int64_t)time(NULL))
                return REJECT("integrated time is in the future");
        if (t->set.len > 0) {
                if (v2 || !t->have_integrated_time)
                        return REJECT("inclusion promise without integrated time");
                if (!sigstore_in_validity(&log->valid, t->integrated_time))
                        return REJECT("tlog key not valid at the integrated time");
                if (verify_set(t, log) < 0)
                        return REJECT("signed entry timestamp does not verify");
                times[(*n_times)++] = t->integrated_time;
        } else
                *needs_timestamp = true;
        if (t->have_proof) {
                if (t->proof_index != t->log_index && v2)
                        return REJECT("inclusion proof index differs from the entry's");
                uint8_t leaf[32];
                sigstore_merkle_leaf_hash(t->body.data, t->body.len, leaf);
                if (sigstore_merkle_verify(t->proof_index, t->proof_size, leaf,
                                           (const uint8_t(*)[32])t->proof_hashes, t->n_proof_hashes,
                                           t->proof_root) < 0)
                        return REJECT("inclusion proof does not verify");
                if (!t->checkpoint)
                        return REJECT("inclusion proof without checkpoint");
                r = verify_checkpoint(t, log, v2, REASON);
                if (r < 0)
                        return r;
        } else if (t->set.len == 0)
                return REJECT("tlog entry with neither inclusion promise nor proof");
        return 0;
}

/* The in-toto statement must name the artifact among its subjects by SHA-256. */
static int check_statement(const SigstoreBundle *b, const uint8_t digest[32], SigstoreResult *ret) {
        if (strcmp(b->payload_type, "application/vnd.in-toto+json") != 0)
                return REJECT("unsupported DSSE payload type");
        json_error_t err;
        _cleanup_(json_decrefp) json_t *st = json_loadb(
                (const char *)b->payload.data, b->payload.len, JSON_REJECT_DUPLICATES, &err);
        const char *type = json_string_value(json_object_get(st, "_type"));
        if (!json_is_object(st) || !type ||
            (strcmp(type, "https://in-toto.io/Statement/v1") != 0 &&
             strcmp(type, "https://in-toto.io/Statement/v0.1") != 0))
                return REJECT("DSSE payload is not an in-toto statement");
        json_t *subjects = json_object_get(st, "subject");
        char hex[65];
        hex_encode(digest, 32, hex);
        for (size_t i = 0; i < json_array_size(subjects); i++) {
                const char *d = json_string_value(json_object_get(
                        json_object_get(json_array_get(subjects, i), "digest"), "sha256"));
                if (d && strcasecmp(d, hex) == 0)
                        return 0;
        }
        return REJECT("artifact is not a subject of the in-toto statement");
}

/* DSSE pre-authentication encoding: "DSSEv1 <len> <type> <len> <payload>". */
static int dsse_pae(const SigstoreBundle *b, uint8_t **ret, size_t *ret_len) {
        size_t tl = strlen(b->payload_type);
        size_t n = 64 + tl + b->payload.len;
        uint8_t *p = malloc(n);
        if (!p)
                return -ENOMEM;
        int h = snprintf((char *)p, n, "DSSEv1 %zu %s %zu ", tl, b->payload_type, b->payload.len);
        if (h < 0 || (size_t)h + b->payload.len > n) {
                free(p);
                return -ENOMEM;
        }
        memcpy(p + h, b->payload.data, b->payload.len);
        *ret = p;
        *ret_len = (size_t)h + b->payload.len;
        return 0;
}

static int check_identity(X509 *leaf, const SigstorePolicy *policy, SigstoreResult *ret) {
        if (!sigstore_cert_code_signing(leaf))
                return REJECT("certificate lacks the code-signing extended key usage");
        ret->san = sigstore_cert_san(leaf);
        ret->issuer = sigstore_cert_ext_string(leaf, "1.3.6.1.4.1.57264.1.8", false);
        if (!ret->issuer)
                ret->issuer = sigstore_cert_ext_string(leaf, "1.3.6.1.4.1.57264.1.1", true);
        ret->source_ref = sigstore_cert_ext_string(leaf, "1.3.6.1.4.1.57264.1.14", false);
        if (!ret->san)
                return REJECT("certificate has no usable subject alternative name");
        if (!ret->issuer)
                return REJECT("certificate has no OIDC issuer extension");
        if (policy->identity && strcmp(policy->identity, ret->san) != 0)
                return REJECT("certificate identity %.100s does not match", ret->san);
        if (policy->identity_regex && !sigstore_identity_match(policy->identity_regex, ret->san))
                return REJECT("certificate identity %.100s does not match the pattern", ret->san);
        if (!policy->identity && !policy->identity_regex)
                return REJECT("no identity given");
        if (!policy->issuer || strcmp(policy->issuer, ret->issuer) != 0)
                return REJECT("certificate OIDC issuer %.80s is not the expected issuer %.80s",
                              ret->issuer, policy->issuer ? policy->issuer : "(none)");
        return 0;
}

/* The key that signed b: policy's managed key (then b must carry no certificate; *managed holds
 * the parsed key for the caller to free) or b's leaf certificate's. 0 with *s filled, or
 * -EKEYREJECTED with the reason in ret. */
static int find_signer(const SigstoreBundle *b, const SigstorePolicy *policy, SigstoreSigner *s,
                       EVP_PKEY **managed, SigstoreResult *ret) {
        if (policy->key_pem) {
                if (b->leaf)
                        return REJECT("bundle carries a certificate but a managed key was given");
                _cleanup_(BIO_freep) BIO *bio = BIO_new_mem_buf(policy->key_pem, -1);
                *managed = bio ? PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL) : NULL;
                if (!*managed)
                        return REJECT("cannot parse the public key");
                s->key = *managed;
        } else {
                if (!b->leaf)
                        return REJECT("bundle has no certificate");
                s->cert = b->leaf;
                s->key = X509_get0_pubkey(b->leaf);
                if (!s->key)
                        return REJECT("certificate has an unusable public key");
        }
        return 0;
}

/* The artifact's SHA-256 in digest: of its bytes (which must agree with its digest when both are
 * given), or the digest given alone. 0, or -EINVAL with the reason in ret. */
static int artifact_digest(const SigstoreArtifact *artifact, uint8_t digest[32],
                           SigstoreResult *ret) {
        if (artifact->data) {
                sha256(artifact->data, artifact->size, digest);
                if (artifact->have_digest && memcmp(digest, artifact->sha256, 32) != 0) {
                        sigstore_fail(REASON, "artifact bytes and digest disagree");
                        return -EINVAL;
                }
        } else if (artifact->have_digest)
                memcpy(digest, artifact->sha256, 32);
        else {
                sigstore_fail(REASON, "no artifact given");
                return -EINVAL;
        }
        return 0;
}

/* The signature of b by s over the artifact (its bytes, or digest, its SHA-256): a DSSE envelope
 * whose in-toto statement names the artifact, or a message signature. 0 and in expected the
 * digest the log must have recorded; -EKEYREJECTED with the reason in ret; -ENOMEM. */
static int verify_artifact_signature(const SigstoreBundle *b, const SigstoreSigner *s,
                                     const SigstoreArtifact *artifact, const uint8_t digest[32],
                                     uint8_t expected[32], SigstoreResult *ret) {
        int r;

        if (b->is_dsse) {
                _cleanup_free_ uint8_t *pae = NULL;
                size_t pae_len;
                if (dsse_pae(b, &pae, &pae_len) < 0)
                        return -ENOMEM;
                if (sigstore_verify_sig(s->key, pae, pae_len, b->signature.data, b->signature.len) <
                    0)
                        return REJECT("DSSE signature does not verify");
                r = check_statement(b, digest, ret);
                if (r < 0)
                        return r;
                sha256(pae, pae_len, expected);
                return 0;
        }
        if (b->have_digest && memcmp(b->digest, digest, 32) != 0)
                return REJECT("message digest in the bundle does not match the artifact");
        if (EVP_PKEY_is_a(s->key, "ED25519")) {
                if (!artifact->data)
                        return REJECT("an Ed25519 signature needs the artifact, not its digest");
                r = sigstore_verify_sig(s->key, artifact->data, artifact->size, b->signature.data,
                                        b->signature.len);
        } else
                r = sigstore_verify_sig_prehashed(s->key, digest, b->signature.data,
                                                  b->signature.len);
        if (r < 0)
                return REJECT("signature over the artifact does not verify");
        memcpy(expected, digest, 32);
        return 0;
}

/*
 * The verified times of b (signed by s, expected the digest its log entries must hold): each
 * transparency log entry's (verify_tlog_entry()), then each RFC 3161 timestamp's, into times
 * (room for n_tlog + n_timestamps) and their number into *n_times. An entry without an integrated
 * time needs a timestamp, at least one time is needed, and the log key of an entry vouched for by
 * timestamps alone must be valid at each of them. 0, or a negative errno with the reason in ret.
 */
static int verify_times(const SigstoreTrustRoot *root, const SigstoreBundle *b,
                        const SigstoreSigner *s, const uint8_t expected[32], int64_t *times,
                        size_t *n_times, SigstoreResult *ret) {
        size_t n = 0, n_tsa_times = 0, first_tsa;
        bool needs_timestamp = false;
        int r;

        for (size_t i = 0; i < b->n_tlog; i++) {
                r = verify_tlog_entry(root, b, &b->tlog[i], s, expected, times, &n,
                                      &needs_timestamp, ret);
                if (r < 0)
                        return r;
        }
        first_tsa = n;
        for (size_t i = 0; i < b->n_timestamps; i++) {
                r = sigstore_tsa_verify(root, b->timestamps[i].data, b->timestamps[i].len,
                                        b->signature.data, b->signature.len, &times[n], REASON);
                if (r < 0)
                        return r;
                n++;
                n_tsa_times++;
        }
        if (needs_timestamp && n_tsa_times == 0)
                return REJECT("tlog entry without integrated time needs an RFC 3161 timestamp");
        if (n == 0)
                return REJECT("no verified time");
        /* entries vouched for only by a timestamp: their log key must be valid at that time */
        for (size_t i = 0; i < b->n_tlog; i++) {
                const SigstoreLogKey *log = find_tlog(root, b->tlog[i].log_id);
                if (b->tlog[i].set.len > 0)
                        continue;
                for (size_t j = first_tsa; j < n; j++)
                        if (!sigstore_in_validity(&log->valid, times[j]))
                                return REJECT("tlog key not valid at the timestamp");
        }
        *n_times = n;
        return 0;
}

/* The signing certificate cert: its chain valid at each of the n_times verified times, its SCTs,
 * then the identity policy (check_identity(), which fills ret's san, issuer and ref). 0, or a
 * negative errno with the reason in ret. */
static int verify_certificate(const SigstoreTrustRoot *root, X509 *cert, const int64_t *times,
                              size_t n_times, const SigstorePolicy *policy, SigstoreResult *ret) {
        _cleanup_(X509_freep) X509 *issuer = NULL;
        int r;

        for (size_t i = 0; i < n_times; i++) {
                X509_free(issuer);
                issuer = NULL;
                if (sigstore_cert_chain_verify(root, cert, times[i], &issuer) < 0)
                        return REJECT("certificate chain not valid at the verified time %" PRId64,
                                      times[i]);
        }
        r = sigstore_cert_sct_verify(root, cert, issuer, REASON);
        if (r < 0)
                return r;
        return check_identity(cert, policy, ret);
}

/* See sigstore.h. Order of checks: bundle shape, signer, artifact signature and content, tlog
 * entries (body, SET, proof, checkpoint), RFC 3161 timestamps, certificate at every verified time
 * (chain, SCTs), identity policy. */
int sigstore_verify(const SigstoreTrustRoot *root, const char *bundle_json, size_t len,
                    const SigstoreArtifact *artifact, const SigstorePolicy *policy,
                    SigstoreResult *ret) {
        *ret = (SigstoreResult){};
        if (!root || !bundle_json || !artifact || !policy)
                return -EINVAL;
        _cleanup_(bundle_donep) SigstoreBundle b = {};
        int r = sigstore_bundle_parse(bundle_json, len, &b, REASON);
        if (r < 0)
                return r;

        _cleanup_(EVP_PKEY_freep) EVP_PKEY *managed = NULL;
        SigstoreSigner s = {};
        r = find_signer(&b, policy, &s, &managed, ret);
        if (r < 0)
                return r;
        uint8_t digest[32], expected[32];
        r = artifact_digest(artifact, digest, ret);
        if (r < 0)
                return r;
        r = verify_artifact_signature(&b, &s, artifact, digest, expected, ret);
        if (r < 0)
                return r;

        /* transparency log entries and timestamps: the verified times */
        _cleanup_free_ int64_t *times = calloc(b.n_tlog + b.n_timestamps + 1, sizeof(int64_t));
        if (!times)
                return -ENOMEM;
        size_t n_times = 0;
        r = verify_times(root, &b, &s, expected, times, &n_times, ret);
        if (r < 0)
                return r;
        if (s.cert) {
                r = verify_certificate(root, s.cert, times, n_times, policy, ret);
                if (r < 0)
                        return r;
        }

        ret->verified_time = times[0];
        for (size_t i = 1; i < n_times; i++)
                if (times[i] < ret->verified_time)
                        ret->verified_time = times[i];
        return 0;
}

void sigstore_result_done(SigstoreResult *r) {
        free(r->san);
        free(r->issuer);
        free(r->source_ref);
        r->san = r->issuer = r->source_ref = NULL;
}
