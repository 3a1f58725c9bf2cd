/* Transparency log proofs: RFC 6962 Merkle inclusion and signed-note checkpoints. */
#include <string.h>

#include "sigstore-util.h"

#define CHECKPOINT_MAX_SIGS 16

/* SHA-256 over a one-byte domain prefix (0 leaf, 1 node) followed by up to two parts. */
static void prefixed_hash(uint8_t prefix, const uint8_t *a, size_t a_len, const uint8_t *b,
                          size_t b_len, uint8_t out[32]) {
        _cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *c = EVP_MD_CTX_new();
        if (!c || EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1 ||
            EVP_DigestUpdate(c, &prefix, 1) != 1 || EVP_DigestUpdate(c, a, a_len) != 1 ||
            (b_len > 0 && EVP_DigestUpdate(c, b, b_len) != 1) ||
            EVP_DigestFinal_ex(c, out, NULL) != 1)
                memset(out, 0, 32); /* allocation failure: a hash that matches no root */
}

void sigstore_merkle_leaf_hash(const uint8_t *data, size_t len, uint8_t out[32]) {
        prefixed_hash(0, data, len, NULL, 0, out);
}

static void node_hash(const uint8_t l[32], const uint8_t r[32], uint8_t out[32]) {
        uint8_t tmp[32];
        prefixed_hash(1, l, 32, r, 32, tmp);
        memcpy(out, tmp, 32);
}

/* Recomputes the root from the leaf and its audit path (RFC 9162 2.1.3.2) and compares it with
 * root. Returns 0 on a match, -EKEYREJECTED otherwise (including a path of the wrong length). */
int sigstore_merkle_verify(uint64_t index, uint64_t tree_size, const uint8_t leaf_hash[32],
                           const uint8_t (*path)[32], size_t n_path, const uint8_t root[32]) {
        if (index >= tree_size)
                return -EKEYREJECTED;
        uint64_t fn = index, sn = tree_size - 1;
        uint8_t r[32];
        memcpy(r, leaf_hash, 32);
        for (size_t i = 0; i < n_path; i++) {
                if (sn == 0)
                        return -EKEYREJECTED;
                if ((fn & 1) || fn == sn) {
                        node_hash(path[i], r, r);
                        if (!(fn & 1))
                                while (fn != 0 && !(fn & 1)) {
                                        fn >>= 1;
                                        sn >>= 1;
                                }
                } else
                        node_hash(r, path[i], r);
                fn >>= 1;
                sn >>= 1;
        }
        if (sn != 0 || memcmp(r, root, 32) != 0)
                return -EKEYREJECTED;
        return 0;
}

static char *strndup_line(const char *s, size_t n) {
        if (memchr(s, 0, n))
                return NULL;
        return strndup(s, n);
}

/* Parses a checkpoint in signed-note form: "origin\nsize\nroot-b64\n[extension lines\n]\n" then
 * one or more "— name base64(keyhint[4] || signature)\n" lines. Returns 0 or -EBADMSG. */
int sigstore_checkpoint_parse(const char *note, size_t len, SigstoreCheckpoint *c) {
        static const char dash[] = "\xe2\x80\x94 "; /* U+2014 EM DASH, space */
        *c = (SigstoreCheckpoint){};
        if (len > 64 * KiB || memchr(note, 0, len))
                return -EBADMSG;
        const char *sep = memmem(note, len, "\n\n", 2);
        if (!sep)
                return -EBADMSG;
        c->text_len = (size_t)(sep - note) + 1;

        /* the text: origin, size, root hash, optional extension lines */
        const char *p = note, *end = note + c->text_len;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl || nl == p)
                return -EBADMSG;
        c->origin = strndup_line(p, (size_t)(nl - p));
        if (!c->origin)
                return -EBADMSG;
        p = nl + 1;
        nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl || nl == p || nl - p > 20)
                return -EBADMSG;
        uint64_t size = 0;
        for (const char *q = p; q < nl; q++) {
                if (*q < '0' || *q > '9' || (q == p && *q == '0' && nl - p > 1))
                        return -EBADMSG;
                if (size > (UINT64_MAX - 9) / 10)
                        return -EBADMSG;
                size = size * 10 + (uint64_t)(*q - '0');
        }
        c->size = size;
        p = nl + 1;
        nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
                return -EBADMSG;
        SigstoreBytes root = {};
        if (sigstore_b64_decode(p, (size_t)(nl - p), &root) < 0 || root.len != 32) {
                free(root.data);
                return -EBADMSG;
        }
        memcpy(c->root, root.data, 32);
        free(root.data);

        /* the signatures */
        p = sep + 2;
        const char *nend = note + len;
        if (p >= nend)
                return -EBADMSG; /* no signature at all */
        c->sigs = calloc(CHECKPOINT_MAX_SIGS, sizeof(SigstoreNoteSig));
        if (!c->sigs)
                return -ENOMEM;
        while (p < nend) {
                nl = memchr(p, '\n', (size_t)(nend - p));
                if (!nl)
                        return -EBADMSG; /* every signature line ends with a newline */
                size_t ll = (size_t)(nl - p);
                if (ll < sizeof(dash) - 1 || memcmp(p, dash, sizeof(dash) - 1) != 0)
                        return -EBADMSG;
                const char *name = p + sizeof(dash) - 1;
                const char *sp = memchr(name, ' ', (size_t)(nl - name));
                if (!sp || sp == name)
                        return -EBADMSG;
                if (c->n_sigs >= CHECKPOINT_MAX_SIGS)
                        return -EBADMSG;
                SigstoreNoteSig *s = &c->sigs[c->n_sigs];
                SigstoreBytes raw = {};
                if (sigstore_b64_decode(sp + 1, (size_t)(nl - sp - 1), &raw) < 0 || raw.len < 5) {
                        free(raw.data);
                        return -EBADMSG;
                }
                s->name = strndup_line(name, (size_t)(sp - name));
                if (!s->name) {
                        free(raw.data);
                        return -EBADMSG;
                }
                memcpy(s->key_hint, raw.data, 4);
                s->sig_len = raw.len - 4;
                s->sig = malloc(s->sig_len);
                if (!s->sig) {
                        free(raw.data);
                        free(s->name);
                        return -ENOMEM;
                }
                memcpy(s->sig, raw.data + 4, s->sig_len);
                free(raw.data);
                c->n_sigs++;
                p = nl + 1;
        }
        return c->n_sigs > 0 ? 0 : -EBADMSG;
}

void sigstore_checkpoint_done(SigstoreCheckpoint *c) {
        free(c->origin);
        for (size_t i = 0; i < c->n_sigs; i++) {
                free(c->sigs[i].name);
                free(c->sigs[i].sig);
        }
        free(c->sigs);
        *c = (SigstoreCheckpoint){};
}
