/* The codec's SHA-256 helpers (codec.h), in a file of their own: a program that needs only the
 * UTF-8 check, base64 or hex (lockd's spawner) does not map libcrypto for them. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/sha.h>

#include "codec.h"
#include "macro.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
void sha256(const void *data, size_t n, uint8_t out[static SHA256_DIGEST_SIZE]) {
        SHA256_CTX ctx;

        SHA256_Init(&ctx);
        SHA256_Update(&ctx, data, n);
        SHA256_Final(out, &ctx);
}

int sha256_fd(int fd, uint8_t out[static SHA256_DIGEST_SIZE]) {
        _cleanup_free_ uint8_t *buf = malloc(SHA256_FD_CHUNK);
        struct stat st;
        uint64_t size, off = 0;
        SHA256_CTX ctx;

        if (!buf)
                return -ENOMEM;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode) || st.st_size < 0)
                return -EBADFD;
        size = (uint64_t)st.st_size;
        SHA256_Init(&ctx);
        while (off < size) {
                size_t want = size - off < SHA256_FD_CHUNK ? (size_t)(size - off) : SHA256_FD_CHUNK;
                ssize_t k = pread(fd, buf, want, (off_t)off);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return negative_errno();
                if (k == 0)
                        return -EIO; /* shrank while read: a sealed memfd cannot */
                SHA256_Update(&ctx, buf, (size_t)k);
                off += (uint64_t)k;
        }
        SHA256_Final(out, &ctx);
        return 0;
}
#pragma GCC diagnostic pop

void sha256_hex(const void *data, size_t n, char out[static SHA256_HEX_SIZE + 1]) {
        uint8_t d[SHA256_DIGEST_SIZE];

        sha256(data, n, d);
        hex_encode(d, sizeof(d), out);
}
