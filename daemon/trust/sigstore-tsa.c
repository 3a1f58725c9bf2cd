/* RFC 3161 signed timestamps: CMS signature by a trusted TSA over the hash of the signature. */
#include <string.h>
#include <time.h>
#include <openssl/err.h>
#include <openssl/ts.h>

#include "sigstore-cert.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(TS_RESP *, TS_RESP_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(TS_VERIFY_CTX *, TS_VERIFY_CTX_free)

static int gentime(TS_RESP *resp, int64_t *ret) {
        TS_TST_INFO *info = TS_RESP_get_tst_info(resp);
        const ASN1_GENERALIZEDTIME *g = info ? TS_TST_INFO_get_time(info) : NULL;
        struct tm tm;
        if (!g || ASN1_TIME_to_tm(g, &tm) != 1)
                return -EBADMSG;
        *ret = (int64_t)timegm(&tm);
        return 0;
}

/* Verifies one response against one TSA: chain at genTime, CMS signature, ESS signing-certificate,
 * message imprint of sig. */
static int verify_with(const SigstoreAuthority *tsa, TS_RESP *resp, int64_t t, const uint8_t *sig,
                       size_t sig_len) {
        if (!sigstore_in_validity(&tsa->valid, t))
                return -EKEYREJECTED;
        int n = sk_X509_num(tsa->chain);
        _cleanup_(TS_VERIFY_CTX_freep) TS_VERIFY_CTX *ctx = TS_VERIFY_CTX_new();
        X509_STORE *store = X509_STORE_new();
        STACK_OF(X509) *certs = sk_X509_new_null();
        BIO *data = BIO_new_mem_buf(sig, (int)sig_len);
        if (!ctx || !store || !certs || !data) {
                X509_STORE_free(store);
                sk_X509_free(certs);
                BIO_free(data);
                return -ENOMEM;
        }
        /* the context owns all three from here */
        TS_VERIFY_CTX_set_store(ctx, store);
        TS_VERIFY_CTS_set_certs(ctx, certs);
        TS_VERIFY_CTX_set_data(ctx, data);
        if (X509_STORE_add_cert(store, sk_X509_value(tsa->chain, n - 1)) != 1)
                return -ENOMEM;
        X509_VERIFY_PARAM_set_time(X509_STORE_get0_param(store), (time_t)t);
        for (int i = 0; i < n - 1; i++) {
                X509 *x = sk_X509_value(tsa->chain, i);
                if (!X509_up_ref(x))
                        return -ENOMEM;
                if (!sk_X509_push(certs, x)) {
                        X509_free(x);
                        return -ENOMEM;
                }
        }
        TS_VERIFY_CTX_set_flags(ctx, TS_VFY_VERSION | TS_VFY_SIGNATURE | TS_VFY_DATA);
        if (TS_RESP_verify_response(ctx, resp) != 1)
                return -EKEYREJECTED;
        return 0;
}

int sigstore_tsa_verify(const SigstoreTrustRoot *root, const uint8_t *der, size_t len,
                        const uint8_t *sig, size_t sig_len, int64_t *ret, char *reason,
                        size_t reason_size) {
        const unsigned char *p = der;
        _cleanup_(TS_RESP_freep) TS_RESP *resp = d2i_TS_RESP(NULL, &p, (long)len);
        int64_t t;
        if (!resp || p != der + len || gentime(resp, &t) < 0) {
                sigstore_fail(reason, reason_size, "malformed RFC 3161 timestamp");
                return -EBADMSG;
        }
        if (t > (int64_t)time(NULL)) {
                sigstore_fail(reason, reason_size, "RFC 3161 timestamp in the future");
                return -EKEYREJECTED;
        }
        for (size_t i = 0; i < root->n_tsas; i++)
                if (verify_with(&root->tsas[i], resp, t, sig, sig_len) == 0) {
                        *ret = t;
                        return 0;
                }
        ERR_clear_error();
        sigstore_fail(reason, reason_size, "RFC 3161 timestamp not verified by a trusted TSA");
        return -EKEYREJECTED;
}
