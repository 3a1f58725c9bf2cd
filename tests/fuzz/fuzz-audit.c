/* libFuzzer target: audit_verify_buffer() on arbitrary bytes must never crash, leak or overread,
 * and its verdict must be consistent: a failure at line L means the first L - 1 lines verify on
 * their own, to the same head. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_hex(const char *s) {
        if (strlen(s) != AUDIT_HASH_HEX || strspn(s, "0123456789abcdef") != AUDIT_HASH_HEX)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *buf = (const char *)data;
        AuditVerifyResult res, prefix;
        size_t lines = 0, off = 0;
        int r;

        for (size_t i = 0; i < size; i++)
                lines += buf[i] == '\n';
        if (size > 0 && buf[size - 1] != '\n')
                lines++;

        r = audit_verify_buffer(buf, size, &res);
        if (r == -ENOMEM)
                return 0;
        check_hex(res.head);
        check_hex(res.first_prev);
        if (!memchr(res.message, 0, sizeof(res.message)))
                abort();
        if (r == 0) {
                if (res.error != AUDIT_VERIFY_OK || res.line != 0 || res.n_records != lines)
                        abort();
                if (res.n_records > 0 && res.last_seq - res.first_seq + 1 != res.n_records)
                        abort();
                if (res.n_records == 0 && strspn(res.head, "0") != AUDIT_HASH_HEX)
                        abort();
                return 0;
        }
        if (r != -EBADMSG || res.error <= AUDIT_VERIFY_OK || res.error >= _AUDIT_VERIFY_MAX ||
            !audit_verify_error_to_string(res.error) || res.message[0] == 0 || res.line < 1 ||
            res.line > lines || res.n_records != res.line - 1)
                abort();

        /* The lines before the failure verify alone, to the same state. */
        for (size_t l = 1; l < res.line; l++) {
                const char *nl = memchr(buf + off, '\n', size - off);
                if (!nl)
                        abort();
                off = (size_t)(nl - buf) + 1;
        }
        r = audit_verify_buffer(buf, off, &prefix);
        if (r == -ENOMEM)
                return 0;
        if (r != 0 || prefix.n_records != res.n_records || strcmp(prefix.head, res.head) != 0 ||
            prefix.last_seq != res.last_seq)
                abort();
        return 0;
}
