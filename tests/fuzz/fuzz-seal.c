/* libFuzzer target: unseal_value on arbitrary text, and on arbitrary blobs, never crashes. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "seal.h"
#include "secmem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* RFC 7748's Bob: the corpus's valid-text is "alice@example.org" sealed to this key. */
static const uint8_t ticket_priv[SEAL_KEY_SIZE] = {
        0x5d, 0xab, 0x08, 0x7e, 0x62, 0x4a, 0x8a, 0x4b, 0x79, 0xe1, 0x7f,
        0x8b, 0x83, 0x80, 0x0e, 0xe6, 0x6f, 0x3b, 0xb1, 0x29, 0x26, 0x18,
        0xb6, 0xfd, 0x1c, 0x2f, 0x8b, 0x27, 0xff, 0x88, 0xe0, 0xeb,
};

/*
 * Unseals text for ticket "t-1", placeholder "email". Only -EBADMSG and -ENOMEM are failures it
 * may report, and the only value that can ever open is the one really sealed to this key: any
 * other success is a forgery, which aborts like a crash.
 */
static void try_unseal(const SealKey *k, const char *text) {
        SecBuf *v = NULL;
        int r;

        r = unseal_value(k, "t-1", "email", text, &v);
        if (r == 0) {
                if (!v || v->len != 17 || memcmp(v->data, "alice@example.org", 18) != 0)
                        abort();
                secbuf_free(v);
        } else if ((r != -EBADMSG && r != -ENOMEM) || v)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static SealKey *k;
        char *text;

        if (!k && seal_key_new_from_private(ticket_priv, &k) < 0)
                abort();

        /* The bytes as text (an exact-size copy, so ASan sees any read past its NUL). */
        text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = 0;
        try_unseal(k, text);
        free(text);

        /* The bytes as a blob, base64-encoded, to reach past the text layer. */
        if (size <= SEAL_BLOB_MAX + 3) {
                text = malloc(4 * ((size + 2) / 3) + 1);
                if (!text)
                        return 0;
                EVP_EncodeBlock((unsigned char *)text, data, (int)size);
                try_unseal(k, text);
                free(text);
        }
        return 0;
}
