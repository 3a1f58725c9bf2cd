/* lockd-sign: a private Sigstore (a Fulcio-like CA, a Rekor-like log, a CT log and a timestamp
 * authority) that signs files into v0.3 bundles lockd verifies offline, and writes a
 * marketplace's index.json: how an operator publishes the releases of a marketplace of their own
 * (lockd-sign(1)). Built for the tests with LOCKD_SIGN_BREAKS, it also makes bundles that break
 * exactly one thing. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <openssl/ct.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ts.h>
#include <openssl/x509v3.h>

#include "codec.h"
#include "fd-util.h"
#include "index.h"
#include "manifest.h"
#include "release.h"
#include "sigstore-cert.h"
#include "sigstore-util.h"

#define OID_ISSUER_RAW  "1.3.6.1.4.1.57264.1.1"
#define OID_ISSUER_V2   "1.3.6.1.4.1.57264.1.8"
#define OID_SOURCE_REF  "1.3.6.1.4.1.57264.1.14"
#define OID_CT_POISON   "1.3.6.1.4.1.11129.2.4.3"
#define OID_TSA_POLICY  "1.3.6.1.4.1.57264.99.1"
#define CHECKPOINT_NAME "rekor.lockd.test"
#define CHECKPOINT_ORIG "rekor.lockd.test - 1"
#define TREE_SIZE       5
#define ENTRY_INDEX     2
#define DAY             (24 * 3600)

DEFINE_TRIVIAL_CLEANUP_FUNC(X509_EXTENSION *, X509_EXTENSION_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(ASN1_OBJECT *, ASN1_OBJECT_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(ASN1_OCTET_STRING *, ASN1_OCTET_STRING_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(SCT *, SCT_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(FILE *, fclose)
DEFINE_TRIVIAL_CLEANUP_FUNC(X509_ALGOR *, X509_ALGOR_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(TS_MSG_IMPRINT *, TS_MSG_IMPRINT_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(TS_REQ *, TS_REQ_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(TS_RESP *, TS_RESP_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(TS_RESP_CTX *, TS_RESP_CTX_free)
static inline void sct_list_freep(STACK_OF(SCT) * *p) {
        if (*p)
                SCT_LIST_free(*p);
}

/* The one thing a signing run breaks, if any. */
typedef enum Break {
        BREAK_NONE,
        BREAK_IDENTITY,
        BREAK_TAG,
        BREAK_EXPIRED,
        BREAK_SET,
        BREAK_PROOF,
        BREAK_DIGEST,
        BREAK_TSA,
} Break;

static const char *const break_names[] = {
        [BREAK_NONE] = "none",       [BREAK_IDENTITY] = "identity", [BREAK_TAG] = "tag",
        [BREAK_EXPIRED] = "expired", [BREAK_SET] = "set",           [BREAK_PROOF] = "proof",
        [BREAK_DIGEST] = "digest",   [BREAK_TSA] = "tsa",
};

/* The private Sigstore instance of a directory written by "init". */
typedef struct Instance {
        EVP_PKEY *ca_key, *rekor_key, *ctlog_key, *tsa_key;
        X509 *ca, *tsa;
} Instance;

static void instance_done(Instance *i) {
        EVP_PKEY_free(i->ca_key);
        EVP_PKEY_free(i->rekor_key);
        EVP_PKEY_free(i->ctlog_key);
        EVP_PKEY_free(i->tsa_key);
        X509_free(i->ca);
        X509_free(i->tsa);
}

static int fail(const char *what) {
        fprintf(stderr, "lockd-sign: %s\n", what);
        return -EINVAL;
}

static char *path_join(const char *dir, const char *name) {
        char *p = NULL;
        return asprintf(&p, "%s/%s", dir, name) < 0 ? NULL : p;
}

/* Reads a whole file of at most 64 MiB into *ret (NUL-terminated). */
static int read_file(const char *path, uint8_t **ret, size_t *ret_len) {
        _cleanup_(fclosep) FILE *f = fopen(path, "re");
        if (!f)
                return -errno;
        _cleanup_free_ uint8_t *buf = NULL;
        size_t n = 0, cap = 0;
        for (;;) {
                if (n + 65536 + 1 > cap) {
                        cap = (n + 65536 + 1) * 2;
                        if (cap > 64 * MiB)
                                return -EFBIG;
                        uint8_t *b = realloc(buf, cap);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                }
                size_t k = fread(buf + n, 1, 65536, f);
                n += k;
                if (k < 65536) {
                        if (ferror(f))
                                return -EIO;
                        break;
                }
        }
        buf[n] = 0;
        *ret = TAKE_PTR(buf);
        *ret_len = n;
        return 0;
}

/* Writes data to path through a temporary file and a rename, with the given mode. */
static int write_file(const char *path, const void *data, size_t len, mode_t mode) {
        _cleanup_free_ char *tmp = NULL;
        if (asprintf(&tmp, "%s.tmp", path) < 0)
                return -ENOMEM;
        /* Created with its final mode: a private key is never readable by others, not even
         * for a moment. */
        (void)unlink(tmp);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd < 0)
                return -errno;
        bool ok = loop_write(fd, data, len) >= 0 && fsync(fd) == 0;
        ok = close(fd) == 0 && ok;
        if (!ok || rename(tmp, path) < 0) {
                unlink(tmp);
                return -EIO;
        }
        return 0;
}

static EVP_PKEY *gen_key(void) {
        return EVP_EC_gen("P-256");
}

static int write_key(const char *dir, const char *name, EVP_PKEY *key) {
        _cleanup_free_ char *path = path_join(dir, name);
        _cleanup_(BIO_freep) BIO *bio = BIO_new(BIO_s_mem());
        if (!path || !bio || PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL) != 1)
                return -ENOMEM;
        char *data;
        long n = BIO_get_mem_data(bio, &data);
        return write_file(path, data, (size_t)n, 0600);
}

static EVP_PKEY *read_key(const char *dir, const char *name) {
        _cleanup_free_ char *path = path_join(dir, name);
        _cleanup_(fclosep) FILE *f = path ? fopen(path, "re") : NULL;
        return f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
}

/* DER SubjectPublicKeyInfo of key, base64; and its SHA-256 (the log id / key id) in id. */
static char *spki_b64(EVP_PKEY *key, uint8_t id[32]) {
        _cleanup_free_ uint8_t *der = NULL;
        int n = i2d_PUBKEY(key, &der);
        if (n <= 0)
                return NULL;
        if (id)
                sha256(der, (size_t)n, id);
        return base64_encode_alloc(der, (size_t)n);
}

/* ECDSA-SHA256 of msg with key, DER signature in *ret. */
static int sign_msg(EVP_PKEY *key, const void *msg, size_t len, uint8_t **ret, size_t *ret_len) {
        _cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        size_t n = 0;
        if (!ctx || EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) != 1 ||
            EVP_DigestSign(ctx, NULL, &n, msg, len) != 1)
                return -ENOMEM;
        _cleanup_free_ uint8_t *sig = malloc(n);
        if (!sig || EVP_DigestSign(ctx, sig, &n, msg, len) != 1)
                return -ENOMEM;
        *ret = TAKE_PTR(sig);
        *ret_len = n;
        return 0;
}

/* The log id / key id of key: SHA-256 of its DER SubjectPublicKeyInfo. */
static int key_id(EVP_PKEY *key, uint8_t id[32]) {
        _cleanup_free_ char *b64 = spki_b64(key, id);
        return b64 ? 0 : -ENOMEM;
}

static char *b64_der_cert(X509 *x) {
        _cleanup_free_ uint8_t *der = NULL;
        int n = i2d_X509(x, &der);
        return n > 0 ? base64_encode_alloc(der, (size_t)n) : NULL;
}

static void rfc3339(int64_t t, char out[32]) {
        time_t tt = (time_t)t;
        struct tm tm;
        gmtime_r(&tt, &tm);
        strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int set_random_serial(X509 *x) {
        uint8_t b[16];
        if (RAND_bytes(b, sizeof(b)) != 1)
                return -EIO;
        b[0] = (b[0] & 0x7f) | 0x40; /* positive, full length */
        BIGNUM *bn = BN_bin2bn(b, sizeof(b), NULL);
        ASN1_INTEGER *s = bn ? BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) : NULL;
        BN_free(bn);
        return s ? 0 : -ENOMEM;
}

/* Adds extension name=value in OpenSSL config syntax, with issuer/subject context from ctx. */
static int add_conf_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value) {
        _cleanup_(X509_EXTENSION_freep) X509_EXTENSION *e =
                X509V3_EXT_conf_nid(NULL, ctx, nid, value);
        return e && X509_add_ext(x, e, -1) == 1 ? 0 : -EINVAL;
}

/* Adds a private extension whose value is the given bytes (already DER, or raw). */
static int add_raw_ext(X509 *x, const char *oid, bool critical, const void *data, size_t len) {
        _cleanup_(ASN1_OBJECT_freep) ASN1_OBJECT *obj = OBJ_txt2obj(oid, 1);
        _cleanup_(ASN1_OCTET_STRING_freep) ASN1_OCTET_STRING *os = ASN1_OCTET_STRING_new();
        if (!obj || !os || ASN1_OCTET_STRING_set(os, data, (int)len) != 1)
                return -ENOMEM;
        _cleanup_(X509_EXTENSION_freep) X509_EXTENSION *e =
                X509_EXTENSION_create_by_OBJ(NULL, obj, critical, os);
        return e && X509_add_ext(x, e, -1) == 1 ? 0 : -ENOMEM;
}

/* Adds a private extension holding s as a DER UTF8String. */
static int add_utf8_ext(X509 *x, const char *oid, const char *s) {
        ASN1_UTF8STRING *u = ASN1_UTF8STRING_new();
        if (!u || ASN1_STRING_set(u, s, (int)strlen(s)) != 1) {
                ASN1_UTF8STRING_free(u);
                return -ENOMEM;
        }
        _cleanup_free_ uint8_t *der = NULL;
        int n = i2d_ASN1_UTF8STRING(u, &der);
        ASN1_UTF8STRING_free(u);
        if (n <= 0)
                return -ENOMEM;
        return add_raw_ext(x, oid, false, der, (size_t)n);
}

/* Creates the self-signed root of the Fulcio-like CA: valid from now-1d to now+10y. */
static X509 *make_ca(EVP_PKEY *key, int64_t now) {
        _cleanup_(X509_freep) X509 *x = X509_new();
        if (!x || X509_set_version(x, X509_VERSION_3) != 1 || set_random_serial(x) < 0)
                return NULL;
        X509_NAME *name = X509_get_subject_name(x);
        if (X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                                       (const unsigned char *)"lockd-test", -1, -1, 0) != 1 ||
            X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                       (const unsigned char *)"lockd-sign Fulcio-like CA", -1, -1,
                                       0) != 1 ||
            X509_set_issuer_name(x, name) != 1)
                return NULL;
        time_t t = (time_t)now;
        if (!X509_time_adj_ex(X509_getm_notBefore(x), 0, -DAY, &t) ||
            !X509_time_adj_ex(X509_getm_notAfter(x), 3652, 0, &t) || X509_set_pubkey(x, key) != 1)
                return NULL;
        X509V3_CTX ctx;
        X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
        if (add_conf_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE") < 0 ||
            add_conf_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
            add_conf_ext(x, &ctx, NID_subject_key_identifier, "hash") < 0 ||
            X509_sign(x, key, EVP_sha256()) <= 0)
                return NULL;
        return TAKE_PTR(x);
}

/* Issues the certificate of the timestamp authority under the CA: valid from now-1d to now+10y,
 * for timestamping only (the critical extended key usage RFC 3161 requires). */
static X509 *make_tsa_cert(const Instance *in, int64_t now) {
        _cleanup_(X509_freep) X509 *x = X509_new();
        if (!x || X509_set_version(x, X509_VERSION_3) != 1 || set_random_serial(x) < 0)
                return NULL;
        X509_NAME *name = X509_get_subject_name(x);
        if (X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                                       (const unsigned char *)"lockd-test", -1, -1, 0) != 1 ||
            X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                       (const unsigned char *)"lockd-sign TSA", -1, -1, 0) != 1 ||
            X509_set_issuer_name(x, X509_get_subject_name(in->ca)) != 1)
                return NULL;
        time_t t = (time_t)now;
        if (!X509_time_adj_ex(X509_getm_notBefore(x), 0, -DAY, &t) ||
            !X509_time_adj_ex(X509_getm_notAfter(x), 3652, 0, &t) ||
            X509_set_pubkey(x, in->tsa_key) != 1)
                return NULL;
        X509V3_CTX ctx;
        X509V3_set_ctx(&ctx, in->ca, x, NULL, NULL, 0);
        if (add_conf_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
            add_conf_ext(x, &ctx, NID_key_usage, "critical,digitalSignature") < 0 ||
            add_conf_ext(x, &ctx, NID_ext_key_usage, "critical,timeStamping") < 0 ||
            add_conf_ext(x, &ctx, NID_subject_key_identifier, "hash") < 0 ||
            add_conf_ext(x, &ctx, NID_authority_key_identifier, "keyid:always") < 0 ||
            X509_sign(x, in->ca_key, EVP_sha256()) <= 0)
                return NULL;
        return TAKE_PTR(x);
}

/* Writes x as PEM to DIR/name. */
static int write_cert(const char *dir, const char *name, X509 *x) {
        _cleanup_free_ char *path = path_join(dir, name);
        _cleanup_(BIO_freep) BIO *bio = BIO_new(BIO_s_mem());
        if (!path || !bio || PEM_write_bio_X509(bio, x) != 1)
                return -ENOMEM;
        char *pem;
        long n = BIO_get_mem_data(bio, &pem);
        return write_file(path, pem, (size_t)n, 0644);
}

static X509 *read_cert(const char *dir, const char *name) {
        _cleanup_free_ char *path = path_join(dir, name);
        _cleanup_(fclosep) FILE *f = path ? fopen(path, "re") : NULL;
        return f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
}

/* The timestampAuthorities[] element of the trusted root: the TSA certificate, then the CA. */
static json_t *tsa_json(const Instance *in, const char *start) {
        _cleanup_free_ char *tsa_b64 = b64_der_cert(in->tsa);
        _cleanup_free_ char *ca_b64 = b64_der_cert(in->ca);
        if (!tsa_b64 || !ca_b64)
                return NULL;
        return json_pack("{s:{s:s, s:s}, s:s, s:{s:[{s:s}, {s:s}]}, s:{s:s}}", "subject",
                         "organization", "lockd-test", "commonName", "lockd-sign TSA", "uri",
                         "https://tsa.lockd.test", "certChain", "certificates", "rawBytes", tsa_b64,
                         "rawBytes", ca_b64, "validFor", "start", start);
}

/* One tlogs[]/ctlogs[] element of the trusted root for key. */
static json_t *log_json(EVP_PKEY *key, const char *url, const char *start) {
        uint8_t id[32];
        _cleanup_free_ char *spki = spki_b64(key, id);
        _cleanup_free_ char *id_b64 = base64_encode_alloc(id, 32);
        if (!spki || !id_b64)
                return NULL;
        return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:s}}", "baseUrl", url,
                         "hashAlgorithm", "SHA2_256", "publicKey", "rawBytes", spki, "keyDetails",
                         "PKIX_ECDSA_P256_SHA_256", "validFor", "start", start, "logId", "keyId",
                         id_b64);
}

/* "init DIR": creates the CA, the TSA, log and CT log keys and DIR/trusted_root.json. */
static int cmd_init(const char *dir) {
        _cleanup_free_ char *ca_key = path_join(dir, "ca.key");

        /* The keys are the marketplace's: 0600 each, and never replaced by a second init. The
         * directory stays readable: its trusted_root.json is public (lockd's user reads it). */
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return fail("cannot create the directory");
        if (!ca_key)
                return fail("out of memory");
        if (access(ca_key, F_OK) == 0)
                return fail("the directory holds an instance already (its ca.key): not replaced");
        int64_t now = (int64_t)time(NULL);
        _cleanup_(instance_done) Instance in = {.ca_key = gen_key(),
                                                .rekor_key = gen_key(),
                                                .ctlog_key = gen_key(),
                                                .tsa_key = gen_key()};
        if (!in.ca_key || !in.rekor_key || !in.ctlog_key || !in.tsa_key)
                return fail("cannot generate keys");
        in.ca = make_ca(in.ca_key, now);
        if (!in.ca)
                return fail("cannot create the CA certificate");
        in.tsa = make_tsa_cert(&in, now);
        if (!in.tsa)
                return fail("cannot create the TSA certificate");
        if (write_key(dir, "ca.key", in.ca_key) < 0 ||
            write_key(dir, "rekor.key", in.rekor_key) < 0 ||
            write_key(dir, "ctlog.key", in.ctlog_key) < 0 ||
            write_key(dir, "tsa.key", in.tsa_key) < 0)
                return fail("cannot write the keys");
        if (write_cert(dir, "ca.pem", in.ca) < 0 || write_cert(dir, "tsa.pem", in.tsa) < 0)
                return fail("cannot write the certificates");

        char start[32];
        rfc3339(now - DAY, start);
        _cleanup_free_ char *ca_b64 = b64_der_cert(in.ca);
        json_t *tlog = log_json(in.rekor_key, "https://rekor.lockd.test", start);
        json_t *ctlog = log_json(in.ctlog_key, "https://ctfe.lockd.test", start);
        json_t *tsa = tsa_json(&in, start);
        _cleanup_(json_decrefp) json_t *root = json_pack(
                "{s:s, s:[o], s:[{s:{s:s, s:s}, s:s, s:{s:[{s:s}]}, s:{s:s}}], s:[o], s:[o]}",
                "mediaType", "application/vnd.dev.sigstore.trustedroot+json;version=0.1", "tlogs",
                tlog, "certificateAuthorities", "subject", "organization", "lockd-test",
                "commonName", "lockd-sign Fulcio-like CA", "uri", "https://fulcio.lockd.test",
                "certChain", "certificates", "rawBytes", ca_b64 ? ca_b64 : "", "validFor", "start",
                start, "ctlogs", ctlog, "timestampAuthorities", tsa);
        if (!root || !ca_b64)
                return fail("cannot build trusted_root.json");
        _cleanup_free_ char *text = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
        _cleanup_free_ char *root_path = path_join(dir, "trusted_root.json");
        if (!text || !root_path || write_file(root_path, text, strlen(text), 0644) < 0)
                return fail("cannot write trusted_root.json");
        printf("made a private Sigstore instance in %s (keys ca.key, rekor.key, ctlog.key, "
               "tsa.key: keep them private)\n"
               "wrote %s: give it to lockd with lockctl marketplace add --trusted-root\n",
               dir, root_path);
        return 0;
}

static int instance_load(const char *dir, Instance *in) {
        in->ca_key = read_key(dir, "ca.key");
        in->rekor_key = read_key(dir, "rekor.key");
        in->ctlog_key = read_key(dir, "ctlog.key");
        in->tsa_key = read_key(dir, "tsa.key");
        in->ca = read_cert(dir, "ca.pem");
        in->tsa = read_cert(dir, "tsa.pem");
        return in->ca_key && in->rekor_key && in->ctlog_key && in->tsa_key && in->ca && in->tsa
                       ? 0
                       : -ENOENT;
}

/* Signs an RFC 6962 precertificate SCT for pre (the precertificate, poison already removed) as
 * issued by issuer, logged by the CT log key. */
static SCT *make_sct(X509 *pre, X509 *issuer, EVP_PKEY *ctlog, uint64_t ts_ms) {
        _cleanup_free_ uint8_t *d = NULL, *sig = NULL;
        size_t n;
        if (sigstore_sct_signed_data(pre, issuer, ts_ms, NULL, 0, &d, &n) < 0)
                return NULL;
        size_t sig_len;
        uint8_t id[32];
        if (key_id(ctlog, id) < 0 || sign_msg(ctlog, d, n, &sig, &sig_len) < 0)
                return NULL;
        _cleanup_(SCT_freep) SCT *sct = SCT_new();
        if (!sct || SCT_set_version(sct, SCT_VERSION_V1) != 1 ||
            SCT_set_log_entry_type(sct, CT_LOG_ENTRY_TYPE_PRECERT) != 1 ||
            SCT_set1_log_id(sct, id, 32) != 1)
                return NULL;
        SCT_set_timestamp(sct, ts_ms);
        if (SCT_set_signature_nid(sct, NID_ecdsa_with_SHA256) != 1 ||
            SCT_set1_signature(sct, sig, sig_len) != 1)
                return NULL;
        return TAKE_PTR(sct);
}

/* Issues the Fulcio-like leaf for key: SAN URI san, both issuer extensions, source ref, and an
 * embedded SCT signed over the precertificate. */
static X509 *make_leaf(const Instance *in, EVP_PKEY *key, const char *san, const char *issuer,
                       const char *ref, int64_t not_before, int64_t not_after) {
        _cleanup_(X509_freep) X509 *x = X509_new();
        if (!x || X509_set_version(x, X509_VERSION_3) != 1 || set_random_serial(x) < 0 ||
            X509_set_issuer_name(x, X509_get_subject_name(in->ca)) != 1 ||
            !ASN1_TIME_set(X509_getm_notBefore(x), (time_t)not_before) ||
            !ASN1_TIME_set(X509_getm_notAfter(x), (time_t)not_after) ||
            X509_set_pubkey(x, key) != 1)
                return NULL;
        _cleanup_free_ char *san_conf = NULL;
        if (asprintf(&san_conf, "critical,URI:%s", san) < 0)
                return NULL;
        X509V3_CTX ctx;
        X509V3_set_ctx(&ctx, in->ca, x, NULL, NULL, 0);
        if (add_conf_ext(x, &ctx, NID_key_usage, "critical,digitalSignature") < 0 ||
            add_conf_ext(x, &ctx, NID_ext_key_usage, "codeSigning") < 0 ||
            add_conf_ext(x, &ctx, NID_subject_key_identifier, "hash") < 0 ||
            add_conf_ext(x, &ctx, NID_authority_key_identifier, "keyid:always") < 0 ||
            add_conf_ext(x, &ctx, NID_subject_alt_name, san_conf) < 0 ||
            add_raw_ext(x, OID_ISSUER_RAW, false, issuer, strlen(issuer)) < 0 ||
            add_utf8_ext(x, OID_ISSUER_V2, issuer) < 0 || add_utf8_ext(x, OID_SOURCE_REF, ref) < 0)
                return NULL;

        /* the precertificate: poison, signed, submitted; the SCT covers it without the poison */
        static const uint8_t der_null[] = {0x05, 0x00};
        if (add_raw_ext(x, OID_CT_POISON, true, der_null, sizeof(der_null)) < 0 ||
            X509_sign(x, in->ca_key, EVP_sha256()) <= 0)
                return NULL;
        _cleanup_(ASN1_OBJECT_freep) ASN1_OBJECT *poison = OBJ_txt2obj(OID_CT_POISON, 1);
        int idx = poison ? X509_get_ext_by_OBJ(x, poison, -1) : -1;
        if (idx < 0)
                return NULL;
        X509_EXTENSION_free(X509_delete_ext(x, idx));
        uint64_t ts_ms = (uint64_t)(time(NULL) - 1) * 1000;
        _cleanup_(sct_list_freep) STACK_OF(SCT) *scts = sk_SCT_new_null();
        SCT *sct = scts ? make_sct(x, in->ca, in->ctlog_key, ts_ms) : NULL;
        if (!sct || !sk_SCT_push(scts, sct)) {
                SCT_free(sct);
                return NULL;
        }
        if (X509_add1_ext_i2d(x, NID_ct_precert_scts, scts, 0, X509V3_ADD_APPEND) != 1 ||
            X509_sign(x, in->ca_key, EVP_sha256()) <= 0)
                return NULL;
        return TAKE_PTR(x);
}

static void node_hash(const uint8_t l[32], const uint8_t r[32], uint8_t out[32]) {
        uint8_t buf[65];
        buf[0] = 1;
        memcpy(buf + 1, l, 32);
        memcpy(buf + 33, r, 32);
        sha256(buf, sizeof(buf), out);
}

static size_t split_point(size_t n) {
        size_t k = 1;
        while (k * 2 < n)
                k *= 2;
        return k;
}

/* RFC 6962 Merkle tree hash of n >= 1 leaf hashes. */
static void tree_hash(const uint8_t (*leaves)[32], size_t n, uint8_t out[32]) {
        if (n == 1) {
                memcpy(out, leaves[0], 32);
                return;
        }
        size_t k = split_point(n);
        uint8_t l[32], r[32];
        tree_hash(leaves, k, l);
        tree_hash(leaves + k, n - k, r);
        node_hash(l, r, out);
}

/* RFC 6962 audit path of leaf m among n: appended to path[*n_path], bottom first. */
static void audit_path(size_t m, const uint8_t (*leaves)[32], size_t n, uint8_t (*path)[32],
                       size_t *n_path) {
        if (n == 1)
                return;
        size_t k = split_point(n);
        if (m < k) {
                audit_path(m, leaves, k, path, n_path);
                tree_hash(leaves + k, n - k, path[(*n_path)++]);
        } else {
                audit_path(m - k, leaves + k, n - k, path, n_path);
                tree_hash(leaves, k, path[(*n_path)++]);
        }
}

/* The signed note of a checkpoint for (size, root), signed by the log key. */
static char *make_checkpoint(EVP_PKEY *log, const uint8_t log_id[32], uint64_t size,
                             const uint8_t root[32]) {
        _cleanup_free_ char *root_b64 = base64_encode_alloc(root, 32), *text = NULL;
        if (!root_b64 ||
            asprintf(&text, "%s\n%" PRIu64 "\n%s\n", CHECKPOINT_ORIG, size, root_b64) < 0)
                return NULL;
        _cleanup_free_ uint8_t *sig = NULL, *raw = NULL;
        size_t sig_len;
        if (sign_msg(log, text, strlen(text), &sig, &sig_len) < 0)
                return NULL;
        raw = malloc(4 + sig_len);
        if (!raw)
                return NULL;
        memcpy(raw, log_id, 4);
        memcpy(raw + 4, sig, sig_len);
        _cleanup_free_ char *raw_b64 = base64_encode_alloc(raw, 4 + sig_len);
        char *note = NULL;
        if (!raw_b64 ||
            asprintf(&note, "%s\n\xe2\x80\x94 %s %s\n", text, CHECKPOINT_NAME, raw_b64) < 0)
                return NULL;
        return note;
}

static char *cert_pem_b64(X509 *x) {
        _cleanup_(BIO_freep) BIO *bio = BIO_new(BIO_s_mem());
        char *pem;
        if (!bio || PEM_write_bio_X509(bio, x) != 1)
                return NULL;
        long n = BIO_get_mem_data(bio, &pem);
        return base64_encode_alloc((const uint8_t *)pem, (size_t)n);
}

static char *str_concat(const char *a, const char *b) {
        char *r = NULL;
        return asprintf(&r, "%s%s", a, b) < 0 ? NULL : r;
}

/* Builds the tlog entry (hashedrekord 0.0.1 body, SET, inclusion proof, checkpoint) of a signature
 * sig by leaf over an artifact of the given SHA-256. */
static json_t *make_tlog_entry(const Instance *in, X509 *leaf, const uint8_t digest[32],
                               const uint8_t *sig, size_t sig_len, Break brk) {
        char hex[65];
        hex_encode(digest, 32, hex);
        _cleanup_free_ char *sig_b64 = base64_encode_alloc(sig, sig_len);
        _cleanup_free_ char *pem_b64 = cert_pem_b64(leaf);
        if (!sig_b64 || !pem_b64)
                return NULL;
        _cleanup_(json_decrefp) json_t *body = json_pack(
                "{s:s, s:s, s:{s:{s:{s:s, s:s}}, s:{s:s, s:{s:s}}}}", "apiVersion", "0.0.1", "kind",
                "hashedrekord", "spec", "data", "hash", "algorithm", "sha256", "value", hex,
                "signature", "content", sig_b64, "publicKey", "content", pem_b64);
        _cleanup_free_ char *body_text =
                body ? json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        if (!body_text)
                return NULL;
        size_t body_len = strlen(body_text);
        _cleanup_free_ char *body_b64 = base64_encode_alloc((const uint8_t *)body_text, body_len);

        uint8_t log_id[32];
        if (key_id(in->rekor_key, log_id) < 0)
                return NULL;
        _cleanup_free_ char *log_id_b64 = base64_encode_alloc(log_id, 32);
        if (!body_b64 || !log_id_b64)
                return NULL;
        int64_t integrated = (int64_t)time(NULL) - 1;
        uint64_t index = ENTRY_INDEX;

        /* the SET over canonical JSON {body, integratedTime, logID, logIndex} */
        char log_hex[65];
        hex_encode(log_id, 32, log_hex);
        _cleanup_free_ char *set_msg = NULL;
        int n = asprintf(&set_msg,
                         "{\"body\":\"%s\",\"integratedTime\":%" PRId64
                         ",\"logID\":\"%s\",\"logIndex\":%" PRIu64 "}",
                         body_b64, integrated, log_hex, index);
        _cleanup_free_ uint8_t *set = NULL;
        size_t set_len;
        if (n < 0 || sign_msg(in->rekor_key, set_msg, (size_t)n, &set, &set_len) < 0)
                return NULL;
        if (brk == BREAK_SET)
                set[set_len / 2] ^= 0x01;
        _cleanup_free_ char *set_b64 = base64_encode_alloc(set, set_len);

        /* a small tree: the entry among other leaves, its audit path and a signed checkpoint */
        uint8_t leaves[TREE_SIZE][32], path[16][32], root[32];
        size_t n_path = 0;
        for (size_t i = 0; i < TREE_SIZE; i++)
                if (RAND_bytes(leaves[i], 32) != 1)
                        return NULL;
        sigstore_merkle_leaf_hash((const uint8_t *)body_text, body_len, leaves[index]);
        tree_hash((const uint8_t(*)[32])leaves, TREE_SIZE, root);
        audit_path(index, (const uint8_t(*)[32])leaves, TREE_SIZE, path, &n_path);
        if (brk == BREAK_PROOF)
                path[0][7] ^= 0x01;
        _cleanup_free_ char *checkpoint = make_checkpoint(in->rekor_key, log_id, TREE_SIZE, root);
        _cleanup_free_ char *root_b64 = base64_encode_alloc(root, 32);
        if (!set_b64 || !checkpoint || !root_b64)
                return NULL;
        json_t *hashes = json_array();
        if (!hashes)
                return NULL;
        for (size_t i = 0; i < n_path; i++) {
                _cleanup_free_ char *h = base64_encode_alloc(path[i], 32);
                if (!h || json_array_append_new(hashes, json_string(h)) < 0) {
                        json_decref(hashes);
                        return NULL;
                }
        }
        char index_s[24], size_s[24], time_s[24];
        snprintf(index_s, sizeof(index_s), "%" PRIu64, index);
        snprintf(size_s, sizeof(size_s), "%d", TREE_SIZE);
        snprintf(time_s, sizeof(time_s), "%" PRId64, integrated);
        return json_pack("{s:s, s:{s:s}, s:{s:s, s:s}, s:s, s:{s:s}, s:{s:s, s:s, s:s, s:o, "
                         "s:{s:s}}, s:s}",
                         "logIndex", index_s, "logId", "keyId", log_id_b64, "kindVersion", "kind",
                         "hashedrekord", "version", "0.0.1", "integratedTime", time_s,
                         "inclusionPromise", "signedEntryTimestamp", set_b64, "inclusionProof",
                         "logIndex", index_s, "rootHash", root_b64, "treeSize", size_s, "hashes",
                         hashes, "checkpoint", "envelope", checkpoint, "canonicalizedBody",
                         body_b64);
}

/* An RFC 3161 TimeStampResp of the TSA over sig (message imprint: SHA-256 of the signature bytes,
 * as Sigstore does), DER in base64. With BREAK_TSA the imprint is of other bytes. */
static char *make_timestamp(const Instance *in, const uint8_t *sig, size_t sig_len, Break brk) {
        uint8_t imprint[32];
        sha256(sig, sig_len, imprint);
        if (brk == BREAK_TSA)
                imprint[0] ^= 0x01;

        /* the request, as a client sends it: SHA-256 imprint, certificate requested */
        _cleanup_(TS_REQ_freep) TS_REQ *req = TS_REQ_new();
        _cleanup_(TS_MSG_IMPRINT_freep) TS_MSG_IMPRINT *mi = TS_MSG_IMPRINT_new();
        _cleanup_(X509_ALGOR_freep) X509_ALGOR *alg = X509_ALGOR_new();
        if (!req || !mi || !alg || TS_REQ_set_version(req, 1) != 1 ||
            X509_ALGOR_set0(alg, OBJ_nid2obj(NID_sha256), V_ASN1_NULL, NULL) != 1 ||
            TS_MSG_IMPRINT_set_algo(mi, alg) != 1 ||
            TS_MSG_IMPRINT_set_msg(mi, imprint, sizeof(imprint)) != 1 ||
            TS_REQ_set_msg_imprint(req, mi) != 1 || TS_REQ_set_cert_req(req, 1) != 1)
                return NULL;
        _cleanup_free_ uint8_t *req_der = NULL;
        int n = i2d_TS_REQ(req, &req_der);
        _cleanup_(BIO_freep) BIO *req_bio = n > 0 ? BIO_new_mem_buf(req_der, n) : NULL;

        /* the response: signed with SHA-256, ESS signing certificate v2 (SHA-256 cert id) */
        _cleanup_(ASN1_OBJECT_freep) ASN1_OBJECT *policy = OBJ_txt2obj(OID_TSA_POLICY, 1);
        _cleanup_(TS_RESP_CTX_freep) TS_RESP_CTX *ctx = TS_RESP_CTX_new();
        if (!req_bio || !policy || !ctx || TS_RESP_CTX_set_signer_cert(ctx, in->tsa) != 1 ||
            TS_RESP_CTX_set_signer_key(ctx, in->tsa_key) != 1 ||
            TS_RESP_CTX_set_signer_digest(ctx, EVP_sha256()) != 1 ||
            TS_RESP_CTX_set_ess_cert_id_digest(ctx, EVP_sha256()) != 1 ||
            TS_RESP_CTX_set_def_policy(ctx, policy) != 1 ||
            TS_RESP_CTX_add_md(ctx, EVP_sha256()) != 1)
                return NULL;
        _cleanup_(TS_RESP_freep) TS_RESP *resp = TS_RESP_create_response(ctx, req_bio);
        if (!resp || ASN1_INTEGER_get(TS_STATUS_INFO_get0_status(TS_RESP_get_status_info(resp))) !=
                             TS_STATUS_GRANTED)
                return NULL;
        _cleanup_free_ uint8_t *der = NULL;
        int m = i2d_TS_RESP(resp, &der);
        return m > 0 ? base64_encode_alloc(der, (size_t)m) : NULL;
}

/* Signs one file into FILE.sigstore.json, breaking brk. */
static int sign_file(const Instance *in, const char *file, const char *identity, const char *issuer,
                     const char *ref, Break brk) {
        _cleanup_free_ uint8_t *data = NULL;
        size_t len = 0;
        int r = read_file(file, &data, &len);
        if (r < 0) {
                fprintf(stderr, "lockd-sign: cannot read %s: %s\n", file,
                        r == -EFBIG ? "larger than 64 MiB" : strerror(-r));
                return r;
        }
        uint8_t digest[32];
        sha256(data, len, digest);

        int64_t now = (int64_t)time(NULL);
        _cleanup_free_ char *bad_identity = str_concat(identity, "-evil");
        _cleanup_free_ char *bad_ref = str_concat(ref, "-evil");
        if (!bad_identity || !bad_ref)
                return -ENOMEM;
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = gen_key();
        _cleanup_(X509_freep) X509 *leaf =
                key ? make_leaf(in, key, brk == BREAK_IDENTITY ? bad_identity : identity, issuer,
                                brk == BREAK_TAG ? bad_ref : ref,
                                brk == BREAK_EXPIRED ? now - 2 * 3600 : now - 60,
                                brk == BREAK_EXPIRED ? now - 3600 : now + 600)
                    : NULL;
        if (!leaf)
                return fail("cannot issue the certificate");

        _cleanup_free_ uint8_t *sig = NULL;
        size_t sig_len;
        if (sign_msg(key, data, len, &sig, &sig_len) < 0)
                return fail("cannot sign");
        json_t *entry = make_tlog_entry(in, leaf, digest, sig, sig_len, brk);
        if (!entry)
                return fail("cannot build the tlog entry");

        uint8_t shown[32];
        memcpy(shown, digest, 32);
        if (brk == BREAK_DIGEST) {
                static const char other[] = "some other content\n";
                sha256((const uint8_t *)other, sizeof(other) - 1, shown);
        }
        _cleanup_free_ char *cert_b64 = b64_der_cert(leaf);
        _cleanup_free_ char *digest_b64 = base64_encode_alloc(shown, 32);
        _cleanup_free_ char *sig_b64 = base64_encode_alloc(sig, sig_len);
        _cleanup_free_ char *ts_b64 = make_timestamp(in, sig, sig_len, brk);
        if (!cert_b64 || !digest_b64 || !sig_b64 || !ts_b64) {
                json_decref(entry);
                return -ENOMEM;
        }
        _cleanup_(json_decrefp) json_t *bundle =
                json_pack("{s:s, s:{s:{s:s}, s:[o], s:{s:[{s:s}]}}, s:{s:{s:s, s:s}, s:s}}",
                          "mediaType", "application/vnd.dev.sigstore.bundle.v0.3+json",
                          "verificationMaterial", "certificate", "rawBytes", cert_b64,
                          "tlogEntries", entry, "timestampVerificationData", "rfc3161Timestamps",
                          "signedTimestamp", ts_b64, "messageSignature", "messageDigest",
                          "algorithm", "SHA2_256", "digest", digest_b64, "signature", sig_b64);
        _cleanup_free_ char *text =
                bundle ? json_dumps(bundle, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
        _cleanup_free_ char *out = str_concat(file, ".sigstore.json");
        if (!text || !out)
                return fail("out of memory");
        r = write_file(out, text, strlen(text), 0644);
        if (r < 0) {
                fprintf(stderr, "lockd-sign: cannot write %s: %s\n", out, strerror(-r));
                return r;
        }
        printf("signed %s: wrote %s\n", file, out);
        return 0;
}

static int usage(FILE *to, int status) {
        fprintf(to,
                "usage: lockd-sign init DIR\n"
                "       lockd-sign sign DIR --identity URI --issuer URL --ref REF "
#ifdef LOCKD_SIGN_BREAKS
                "[--break identity|tag|expired|set|proof|digest|tsa] "
#endif
                "FILE...\n"
                "       lockd-sign index DIR --name MARKETPLACE [--expires 30d|TIME]\n"
                "                  [--signer SIGNER --identity URI --issuer URL --ref REF]\n"
                "\n"
                "init makes a private Sigstore instance in DIR (its keys 0600) and its\n"
                "DIR/trusted_root.json, for lockctl marketplace add --trusted-root. sign writes\n"
                "FILE.sigstore.json for each FILE, signed for the workflow identity URI at REF\n"
                "(for a release, REF must be refs/tags/NAME/vVERSION of its plugin.toml).\n"
                "index writes DIR/index.json from DIR/releases/NAME/VERSION/, its version one\n"
                "above the one there, and with --signer signs it. See lockd-sign(1).\n");
        return status;
}

/*
 * The manifest a release file belongs to: FILE itself when it is a plugin.toml, the plugin.toml
 * beside it when FILE is a release's plugin; NULL for other files (an index is signed for any
 * ref). A new string, or NULL.
 */
static char *release_manifest_of(const char *file) {
        const char *slash = strrchr(file, '/');
        const char *base = slash ? slash + 1 : file;
        size_t dir_len = slash ? (size_t)(slash - file + 1) : 0;
        char *m = NULL;

        if (strcmp(base, RELEASE_MANIFEST_FILE) == 0)
                return strdup(file);
        if (strcmp(base, RELEASE_BINARY_FILE) != 0)
                return NULL;
        if (asprintf(&m, "%.*s%s", (int)dir_len, file, RELEASE_MANIFEST_FILE) < 0)
                return NULL;
        if (access(m, F_OK) < 0) {
                free(m);
                return NULL;
        }
        return m;
}

/*
 * lockd installs a release only when its certificates' ref is refs/tags/<name>/v<version> of
 * its own manifest: a release signed with another ref is refused there (RELEASE_E_TAG), long
 * after the signing. Checked here first, so the mistake shows where it is made. -EINVAL after
 * printing why, or 0. The tests' signer (LOCKD_SIGN_BREAKS) signs such mismatches on purpose,
 * and only warns.
 */
static int check_ref(const char *file, const char *ref) {
        _cleanup_free_ char *manifest_path = release_manifest_of(file), *want = NULL;
        _cleanup_free_ uint8_t *text = NULL;
        _cleanup_(manifest_freep) Manifest *m = NULL;
        ManifestDiag diag = {};
        size_t len;
        int r;

        if (!manifest_path)
                return 0;
        r = read_file(manifest_path, &text, &len);
        if (r < 0) {
                fprintf(stderr, "lockd-sign: cannot read %s: %s\n", manifest_path, strerror(-r));
                return r;
        }
        if (manifest_parse((const char *)text, len, &m, &diag) < 0) {
                fprintf(stderr,
                        "lockd-sign: %s: not a valid manifest (%s, %u:%u): lockd would "
                        "refuse the release\n",
                        manifest_path, diag.message, diag.line, diag.column);
                return -EINVAL;
        }
        if (asprintf(&want, "refs/tags/%s/v%s", m->name, m->version) < 0)
                return -ENOMEM;
        if (strcmp(want, ref) == 0)
                return 0;
        fprintf(stderr,
                "lockd-sign: %s --ref %s does not match %s (name %s, version %s): lockd wants "
                "--ref %s, and refuses the release otherwise (RELEASE_E_TAG)\n",
#ifdef LOCKD_SIGN_BREAKS
                "warning:",
#else
                "error:",
#endif
                ref, manifest_path, m->name, m->version, want);
#ifdef LOCKD_SIGN_BREAKS
        return 0;
#else
        return -EINVAL;
#endif
}

static int cmd_sign(int argc, char **argv) {
        static const struct option opts[] = {
                {"identity", required_argument, NULL, 'i'},
                {"issuer", required_argument, NULL, 's'},
                {"ref", required_argument, NULL, 'r'},
#ifdef LOCKD_SIGN_BREAKS
                {"break", required_argument, NULL, 'b'},
#endif
                {"help", no_argument, NULL, 'h'},
                {},
        };
        const char *identity = NULL, *issuer = NULL, *ref = NULL;
        Break brk = BREAK_NONE;
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                switch (c) {
                case 'i':
                        identity = optarg;
                        break;
                case 's':
                        issuer = optarg;
                        break;
                case 'r':
                        ref = optarg;
                        break;
                case 'b': {
                        size_t k;
                        for (k = 1; k < ELEMENTSOF(break_names); k++)
                                if (strcmp(optarg, break_names[k]) == 0)
                                        break;
                        if (k == ELEMENTSOF(break_names))
                                return usage(stderr, 2);
                        brk = (Break)k;
                        break;
                }
                case 'h':
                        return usage(stdout, 0);
                default:
                        return usage(stderr, 2);
                }
        }
        /* getopt permuted the operands to the end: DIR, then the files */
        if (!identity || !issuer || !ref || argc - optind < 2)
                return usage(stderr, 2);
        _cleanup_(instance_done) Instance in = {};
        if (instance_load(argv[optind], &in) < 0) {
                fail("cannot load the instance (run init first)");
                return 1;
        }
        /* Every file is checked before any is signed: a refusal leaves no half-signed release. */
        for (int i = optind + 1; i < argc; i++) {
                if (access(argv[i], R_OK) < 0) {
                        fprintf(stderr, "lockd-sign: cannot read %s: %s\n", argv[i],
                                strerror(errno));
                        return 1;
                }
                if (check_ref(argv[i], ref) < 0)
                        return 1;
        }
        for (int i = optind + 1; i < argc; i++)
                if (sign_file(&in, argv[i], identity, issuer, ref, brk) < 0)
                        return 1;
        return 0;
}

/* The releases of an index: name, version and the two digests, sorted by name then version. */
typedef struct IndexEntry {
        char name[256];
        char version[64];
        char manifest_sha256[65], binary_sha256[65];
} IndexEntry;

static int entry_cmp(const void *a, const void *b) {
        const IndexEntry *x = a, *y = b;
        int c = strcmp(x->name, y->name);

        return c != 0 ? c : index_version_compare(x->version, y->version);
}

/* "30d", "12h", "90m", "3600s": seconds; or an RFC 3339 UTC time: seconds from now to it. */
static int parse_expires(const char *s, int64_t now, int64_t *ret) {
        char *end = NULL;
        long long n;
        int64_t t;

        if (index_parse_time(s, &t) == 0) {
                *ret = t;
                return 0;
        }
        errno = 0;
        n = strtoll(s, &end, 10);
        if (errno != 0 || end == s || n < 1 || n > 3650LL * DAY || !end[0] || end[1])
                return -EINVAL;
        switch (end[0]) {
        case 'd':
                n *= DAY;
                break;
        case 'h':
                n *= 3600;
                break;
        case 'm':
                n *= 60;
                break;
        case 's':
                break;
        default:
                return -EINVAL;
        }
        if (n > 3650LL * DAY)
                return -EINVAL;
        *ret = now + n;
        return 0;
}

/*
 * Reads DIR/releases/<name>/<version>/ into *ret (a new array of *ret_n): each release's
 * plugin.toml must parse and name that very name and version, and its plugin must exist;
 * directories starting with '.' are skipped. 0, or -EINVAL after printing why.
 */
static int scan_releases(const char *dir, IndexEntry **ret, size_t *ret_n) {
        _cleanup_free_ char *top = NULL;
        _cleanup_free_ IndexEntry *v = NULL;
        size_t n = 0;
        DIR *d, *vd;
        struct dirent *de, *ve;

        if (asprintf(&top, "%s/releases", dir) < 0)
                return -ENOMEM;
        d = opendir(top);
        if (!d) {
                fprintf(stderr, "lockd-sign: cannot read %s: %s\n", top, strerror(errno));
                return -EINVAL;
        }
        while ((de = readdir(d))) {
                _cleanup_free_ char *ndir = NULL;

                if (de->d_name[0] == '.')
                        continue;
                if (!manifest_name_valid(de->d_name)) {
                        fprintf(stderr, "lockd-sign: %s/%s: not a plugin name\n", top, de->d_name);
                        closedir(d);
                        return -EINVAL;
                }
                if (asprintf(&ndir, "%s/%s", top, de->d_name) < 0 || !(vd = opendir(ndir))) {
                        fprintf(stderr, "lockd-sign: cannot read %s/%s\n", top, de->d_name);
                        closedir(d);
                        return -EINVAL;
                }
                while ((ve = readdir(vd))) {
                        _cleanup_free_ char *mpath = NULL, *bpath = NULL;
                        _cleanup_free_ uint8_t *mtext = NULL, *btext = NULL;
                        _cleanup_(manifest_freep) Manifest *m = NULL;
                        ManifestDiag diag = {};
                        uint8_t digest[32];
                        size_t mlen, blen;
                        IndexEntry *grown;
                        int r;

                        if (ve->d_name[0] == '.')
                                continue;
                        if (asprintf(&mpath, "%s/%s/%s", ndir, ve->d_name, RELEASE_MANIFEST_FILE) <
                                    0 ||
                            asprintf(&bpath, "%s/%s/%s", ndir, ve->d_name, RELEASE_BINARY_FILE) <
                                    0) {
                                closedir(vd);
                                closedir(d);
                                return -ENOMEM;
                        }
                        r = read_file(mpath, &mtext, &mlen);
                        if (r >= 0)
                                r = read_file(bpath, &btext, &blen);
                        if (r < 0) {
                                fprintf(stderr, "lockd-sign: cannot read %s: %s\n",
                                        mtext ? bpath : mpath, strerror(-r));
                                closedir(vd);
                                closedir(d);
                                return -EINVAL;
                        }
                        if (manifest_parse((const char *)mtext, mlen, &m, &diag) < 0 ||
                            strcmp(m->name, de->d_name) != 0 ||
                            strcmp(m->version, ve->d_name) != 0) {
                                fprintf(stderr, "lockd-sign: %s: %s\n", mpath,
                                        m ? "names another plugin or version than its directory"
                                          : diag.message);
                                closedir(vd);
                                closedir(d);
                                return -EINVAL;
                        }
                        grown = n < INDEX_RELEASES_MAX ? reallocarray(v, n + 1, sizeof(*v)) : NULL;
                        if (!grown) {
                                closedir(vd);
                                closedir(d);
                                return fail("out of memory, or more releases than an index "
                                            "lists");
                        }
                        v = grown;
                        memset(&v[n], 0, sizeof(v[n]));
                        snprintf(v[n].name, sizeof(v[n].name), "%s", m->name);
                        snprintf(v[n].version, sizeof(v[n].version), "%s", m->version);
                        sha256(mtext, mlen, digest);
                        hex_encode(digest, 32, v[n].manifest_sha256);
                        sha256(btext, blen, digest);
                        hex_encode(digest, 32, v[n].binary_sha256);
                        n++;
                }
                closedir(vd);
        }
        closedir(d);
        if (n > 0)
                qsort(v, n, sizeof(*v), entry_cmp);
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

/*
 * The version the index at path gets: one above the index it replaces, 1 when there is none. 0
 * with *ret, or the status cmd_index() returns after saying why.
 */
static int index_version(const char *path, uint64_t *ret) {
        _cleanup_free_ char *old = NULL;
        _cleanup_(index_freep) MarketplaceIndex *prev = NULL;
        ReleaseError err = {};
        size_t old_len;
        int r;

        /* The version only ever rises: lockd refuses an index older than one it verified, so
         * an index written with a lower version would never be installed from again. */
        r = read_file(path, (uint8_t **)&old, &old_len);
        if (r == -ENOENT) {
                *ret = 1;
                return 0;
        }
        if (r < 0) {
                fprintf(stderr, "lockd-sign: cannot read %s: %s\n", path, strerror(-r));
                return 1;
        }
        if (index_parse(old, old_len, &prev, &err) < 0) {
                fprintf(stderr,
                        "lockd-sign: %s exists and does not parse (%s): its "
                        "version is unknown, so it is not replaced (remove it to "
                        "start again at version 1, which lockd refuses where it "
                        "verified a newer one)\n",
                        path, err.message);
                return 1;
        }
        if (prev->version >= INDEX_VERSION_MAX)
                return fail("the index's version is at its maximum");
        *ret = prev->version + 1;
        return 0;
}

/* index.json's text: the marketplace name, version, expiry and the n releases; NULL when out of
 * memory. */
static char *index_text(const char *name, uint64_t version, const char *expires_text,
                        const IndexEntry *entries, size_t n) {
        _cleanup_(json_decrefp) json_t *root = NULL, *releases = NULL;

        releases = json_array();
        if (!releases)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (json_array_append_new(releases,
                                          json_pack("{s:s, s:s, s:s, s:s}", "name", entries[i].name,
                                                    "version", entries[i].version,
                                                    "manifest_sha256", entries[i].manifest_sha256,
                                                    "binary_sha256", entries[i].binary_sha256)) < 0)
                        return NULL;
        root = json_pack("{s:s, s:I, s:s, s:O}", "name", name, "version", (json_int_t)version,
                         "expires", expires_text, "releases", releases);
        return root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
}

/*
 * index DIR --name M [--expires 30d|TIME] [--signer S --identity URI --issuer URL --ref REF]:
 * writes DIR/index.json listing every release under DIR/releases/ with its digests, its version
 * one above the DIR/index.json it replaces (1 for the first), expiring after the given time
 * (30 days by default), and with --signer signs it into DIR/index.json.sigstore.json.
 */
static int cmd_index(int argc, char **argv) {
        static const struct option opts[] = {
                {"name", required_argument, NULL, 'n'},
                {"expires", required_argument, NULL, 'e'},
                {"signer", required_argument, NULL, 'S'},
                {"identity", required_argument, NULL, 'i'},
                {"issuer", required_argument, NULL, 's'},
                {"ref", required_argument, NULL, 'r'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        const char *name = NULL, *expires_arg = "30d", *signer = NULL, *identity = NULL,
                   *issuer = NULL, *ref = NULL, *dir;
        _cleanup_free_ char *path = NULL, *text = NULL;
        _cleanup_free_ IndexEntry *entries = NULL;
        int64_t now = (int64_t)time(NULL), expires;
        char expires_text[INDEX_TIME_SIZE];
        uint64_t version = 1;
        size_t n = 0;
        int c, r;

        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                switch (c) {
                case 'n':
                        name = optarg;
                        break;
                case 'e':
                        expires_arg = optarg;
                        break;
                case 'S':
                        signer = optarg;
                        break;
                case 'i':
                        identity = optarg;
                        break;
                case 's':
                        issuer = optarg;
                        break;
                case 'r':
                        ref = optarg;
                        break;
                case 'h':
                        return usage(stdout, 0);
                default:
                        return usage(stderr, 2);
                }
        }
        if (!name || argc - optind != 1 || (signer && (!identity || !issuer || !ref)) ||
            (!signer && (identity || issuer || ref)))
                return usage(stderr, 2);
        dir = argv[optind];
        if (!marketplace_name_valid(name)) {
                fprintf(stderr,
                        "lockd-sign: --name %s is not a marketplace name "
                        "([a-z0-9][a-z0-9-]{0,63})\n",
                        name);
                return 2;
        }
        if (parse_expires(expires_arg, now, &expires) < 0 ||
            index_format_time(expires, expires_text) < 0) {
                fprintf(stderr,
                        "lockd-sign: --expires %s is neither a duration (30d, 12h, 90m, "
                        "3600s) nor a time as YYYY-MM-DDTHH:MM:SSZ\n",
                        expires_arg);
                return 2;
        }
        if (asprintf(&path, "%s/%s", dir, INDEX_FILE) < 0)
                return 1;

        r = index_version(path, &version);
        if (r != 0)
                return r;
        r = scan_releases(dir, &entries, &n);
        if (r < 0)
                return 1;
        text = index_text(name, version, expires_text, entries, n);
        if (!text)
                return 1;
        r = write_file(path, text, strlen(text), 0644);
        if (r < 0) {
                fprintf(stderr, "lockd-sign: cannot write %s: %s\n", path, strerror(-r));
                return 1;
        }
        printf("wrote %s: marketplace %s, version %" PRIu64 ", %zu release%s, expires %s\n", path,
               name, version, n, n == 1 ? "" : "s", expires_text);
        if (signer) {
                _cleanup_(instance_done) Instance in = {};

                if (instance_load(signer, &in) < 0) {
                        fail("cannot load the instance (run init first)");
                        return 1;
                }
                if (sign_file(&in, path, identity, issuer, ref, BREAK_NONE) < 0)
                        return 1;
        }
        return 0;
}

int main(int argc, char **argv) {
        if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))
                return usage(stdout, 0);
        if (argc == 3 && strcmp(argv[1], "init") == 0)
                return cmd_init(argv[2]) < 0 ? 1 : 0;
        if (argc >= 3 && strcmp(argv[1], "index") == 0)
                return cmd_index(argc - 1, argv + 1);
        if (argc < 3 || strcmp(argv[1], "sign") != 0)
                return usage(stderr, 2);
        return cmd_sign(argc - 1, argv + 1);
}
