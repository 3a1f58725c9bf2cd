/* Fulcio certificate checks: chain at a time, embedded SCTs, EKU and identity extensions. */
#include <string.h>
#include <time.h>
#include <openssl/ct.h>
#include <openssl/x509v3.h>

#include "codec.h"
#include "sigstore-cert.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(GENERAL_NAMES *, GENERAL_NAMES_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(ASN1_OBJECT *, ASN1_OBJECT_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(ASN1_UTF8STRING *, ASN1_UTF8STRING_free)
static inline void sct_list_freep(STACK_OF(SCT) * *p) {
        if (*p)
                SCT_LIST_free(*p);
}

/* Builds a store trusting the last certificate of chain, and a stack of the others. */
static int make_store(STACK_OF(X509) * chain, int64_t t, X509_STORE **store_ret,
                      STACK_OF(X509) * *untrusted_ret) {
        int n = sk_X509_num(chain);
        _cleanup_(X509_STORE_freep) X509_STORE *store = X509_STORE_new();
        _cleanup_(sk_X509_pop_freep) STACK_OF(X509) *untrusted = sk_X509_new_null();
        if (!store || !untrusted || n < 1)
                return -ENOMEM;
        if (X509_STORE_add_cert(store, sk_X509_value(chain, n - 1)) != 1)
                return -ENOMEM;
        for (int i = 0; i < n - 1; i++) {
                X509 *x = sk_X509_value(chain, i);
                if (!X509_up_ref(x))
                        return -ENOMEM;
                if (!sk_X509_push(untrusted, x)) {
                        X509_free(x);
                        return -ENOMEM;
                }
        }
        X509_VERIFY_PARAM *param = X509_STORE_get0_param(store);
        X509_VERIFY_PARAM_set_time(param, (time_t)t); /* sets X509_V_FLAG_USE_CHECK_TIME */
        X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_X509_STRICT);
        *store_ret = TAKE_PTR(store);
        *untrusted_ret = TAKE_PTR(untrusted);
        return 0;
}

int sigstore_cert_chain_verify(const SigstoreTrustRoot *root, X509 *leaf, int64_t t,
                               X509 **issuer_ret) {
        for (size_t i = 0; i < root->n_cas; i++) {
                const SigstoreAuthority *ca = &root->cas[i];
                if (!sigstore_in_validity(&ca->valid, t))
                        continue;
                _cleanup_(X509_STORE_freep) X509_STORE *store = NULL;
                _cleanup_(sk_X509_pop_freep) STACK_OF(X509) *untrusted = NULL;
                if (make_store(ca->chain, t, &store, &untrusted) < 0)
                        return -ENOMEM;
                _cleanup_(X509_STORE_CTX_freep) X509_STORE_CTX *ctx = X509_STORE_CTX_new();
                if (!ctx || X509_STORE_CTX_init(ctx, store, leaf, untrusted) != 1)
                        return -ENOMEM;
                if (X509_verify_cert(ctx) != 1)
                        continue;
                STACK_OF(X509) *chain = X509_STORE_CTX_get0_chain(ctx);
                if (sk_X509_num(chain) < 2)
                        continue;
                X509 *issuer = sk_X509_value(chain, 1);
                if (!X509_up_ref(issuer))
                        return -ENOMEM;
                *issuer_ret = issuer;
                return 0;
        }
        return -EKEYREJECTED;
}

static void put_be(uint8_t *p, uint64_t v, int n) {
        for (int i = n - 1; i >= 0; i--, v >>= 8)
                p[i] = (uint8_t)v;
}

int sigstore_sct_signed_data(X509 *pre, X509 *issuer, uint64_t timestamp_ms, const uint8_t *ext,
                             size_t ext_len, uint8_t **ret, size_t *ret_len) {
        _cleanup_free_ uint8_t *tbs = NULL;
        int tbs_len = i2d_re_X509_tbs(pre, &tbs);
        if (tbs_len <= 0 || tbs_len >= (1 << 24))
                return -EBADMSG;
        _cleanup_free_ uint8_t *spki = NULL;
        int spki_len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(issuer), &spki);
        if (spki_len <= 0)
                return -EBADMSG;
        if (ext_len >= (1 << 16))
                return -EBADMSG;
        size_t n = 1 + 1 + 8 + 2 + 32 + 3 + (size_t)tbs_len + 2 + ext_len;
        uint8_t *d = malloc(n), *p = d;
        if (!d)
                return -ENOMEM;
        *p++ = 0; /* v1 */
        *p++ = 0; /* certificate_timestamp */
        put_be(p, timestamp_ms, 8);
        p += 8;
        put_be(p, 1, 2); /* precert_entry */
        p += 2;
        sha256(spki, (size_t)spki_len, p);
        p += 32;
        put_be(p, (uint64_t)tbs_len, 3);
        p += 3;
        memcpy(p, tbs, (size_t)tbs_len);
        p += tbs_len;
        put_be(p, ext_len, 2);
        p += 2;
        if (ext_len)
                memcpy(p, ext, ext_len);
        *ret = d;
        *ret_len = n;
        return 0;
}

/* The signed data of one of leaf's embedded SCTs: the leaf's TBS without the SCT list extension. */
static int sct_signed_data(const SCT *sct, X509 *leaf, X509 *issuer, uint8_t **ret,
                           size_t *ret_len) {
        _cleanup_(X509_freep) X509 *pre = X509_dup(leaf);
        if (!pre)
                return -ENOMEM;
        int idx = X509_get_ext_by_NID(pre, NID_ct_precert_scts, -1);
        if (idx < 0)
                return -EBADMSG;
        X509_EXTENSION_free(X509_delete_ext(pre, idx));
        if (X509_get_ext_by_NID(pre, NID_ct_precert_scts, -1) >= 0)
                return -EBADMSG; /* two SCT list extensions */
        unsigned char *ext = NULL;
        size_t ext_len = SCT_get0_extensions(sct, &ext);
        return sigstore_sct_signed_data(pre, issuer, SCT_get_timestamp(sct), ext, ext_len, ret,
                                        ret_len);
}

/* Verifies the embedded SCTs: each one from a CT log of the trust root must verify and fall in the
 * log's validity, and at least one must. SCTs of unknown logs are ignored. */
int sigstore_cert_sct_verify(const SigstoreTrustRoot *root, X509 *leaf, X509 *issuer, char *reason,
                             size_t reason_size) {
        int crit = 0;
        _cleanup_(sct_list_freep) STACK_OF(SCT) *scts =
                X509_get_ext_d2i(leaf, NID_ct_precert_scts, &crit, NULL);
        if (!scts || sk_SCT_num(scts) == 0) {
                sigstore_fail(reason, reason_size, "certificate has no embedded SCT");
                return -EKEYREJECTED;
        }
        int64_t now = (int64_t)time(NULL);
        int verified = 0;
        for (int i = 0; i < sk_SCT_num(scts); i++) {
                SCT *sct = sk_SCT_value(scts, i);
                unsigned char *id = NULL, *sig = NULL;
                if (SCT_get_version(sct) != SCT_VERSION_V1 || SCT_get0_log_id(sct, &id) != 32) {
                        sigstore_fail(reason, reason_size, "SCT: unsupported version");
                        return -EKEYREJECTED;
                }
                const SigstoreLogKey *log = NULL;
                for (size_t j = 0; j < root->n_ctlogs; j++)
                        if (memcmp(root->ctlogs[j].log_id, id, 32) == 0)
                                log = &root->ctlogs[j];
                if (!log)
                        continue; /* another log's SCT: neither counts nor fails, as in the clients
                                   */
                int64_t ts = (int64_t)(SCT_get_timestamp(sct) / 1000);
                if (!sigstore_in_validity(&log->valid, ts) || ts > now) {
                        sigstore_fail(reason, reason_size,
                                      "SCT timestamp outside the CT log validity");
                        return -EKEYREJECTED;
                }
                _cleanup_free_ uint8_t *data = NULL;
                size_t data_len = 0;
                if (sct_signed_data(sct, leaf, issuer, &data, &data_len) < 0) {
                        sigstore_fail(reason, reason_size,
                                      "SCT: cannot rebuild the precertificate");
                        return -EKEYREJECTED;
                }
                size_t sig_len = SCT_get0_signature(sct, &sig);
                if (!log->usable) {
                        sigstore_fail(reason, reason_size,
                                      "CT log key has unknown or unsupported keyDetails");
                        return -EKEYREJECTED;
                }
                if (sigstore_verify_log_sig(log, data, data_len, sig, sig_len) < 0) {
                        sigstore_fail(reason, reason_size, "SCT signature does not verify");
                        return -EKEYREJECTED;
                }
                verified++;
        }
        if (verified == 0) {
                sigstore_fail(reason, reason_size, "no SCT from a CT log of the trust root");
                return -EKEYREJECTED;
        }
        return 0;
}

bool sigstore_cert_code_signing(X509 *leaf) {
        uint32_t flags = X509_get_extension_flags(leaf);
        if (!(flags & EXFLAG_XKUSAGE) || !(X509_get_extended_key_usage(leaf) & XKU_CODE_SIGN))
                return false;
        if ((flags & EXFLAG_KUSAGE) && !(X509_get_key_usage(leaf) & KU_DIGITAL_SIGNATURE))
                return false;
        return true;
}

static char *asn1_string_dup(const ASN1_STRING *s) {
        int n = ASN1_STRING_length(s);
        const unsigned char *d = ASN1_STRING_get0_data(s);
        if (n <= 0 || memchr(d, 0, (size_t)n))
                return NULL;
        return strndup((const char *)d, (size_t)n);
}

char *sigstore_cert_san(X509 *leaf) {
        _cleanup_(GENERAL_NAMES_freep) GENERAL_NAMES *names =
                X509_get_ext_d2i(leaf, NID_subject_alt_name, NULL, NULL);
        _cleanup_(ASN1_OBJECT_freep) ASN1_OBJECT *fulcio = OBJ_txt2obj("1.3.6.1.4.1.57264.1.7", 1);
        for (int i = 0; i < sk_GENERAL_NAME_num(names); i++) {
                GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
                if (g->type == GEN_URI)
                        return asn1_string_dup(g->d.uniformResourceIdentifier);
                if (g->type == GEN_EMAIL)
                        return asn1_string_dup(g->d.rfc822Name);
                if (g->type == GEN_OTHERNAME && fulcio &&
                    OBJ_cmp(g->d.otherName->type_id, fulcio) == 0 &&
                    g->d.otherName->value->type == V_ASN1_UTF8STRING)
                        return asn1_string_dup(g->d.otherName->value->value.utf8string);
        }
        return NULL;
}

char *sigstore_cert_ext_string(X509 *leaf, const char *oid, bool raw) {
        _cleanup_(ASN1_OBJECT_freep) ASN1_OBJECT *obj = OBJ_txt2obj(oid, 1);
        if (!obj)
                return NULL;
        int idx = X509_get_ext_by_OBJ(leaf, obj, -1);
        if (idx < 0)
                return NULL;
        ASN1_OCTET_STRING *data = X509_EXTENSION_get_data(X509_get_ext(leaf, idx));
        if (raw)
                return asn1_string_dup(data);
        const unsigned char *p = ASN1_STRING_get0_data(data);
        long len = ASN1_STRING_length(data);
        _cleanup_(ASN1_UTF8STRING_freep) ASN1_UTF8STRING *s = d2i_ASN1_UTF8STRING(NULL, &p, len);
        if (!s || p != ASN1_STRING_get0_data(data) + len)
                return NULL;
        return asn1_string_dup(s);
}
