/* Reading the policy file, for the spawner and the engine alike. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fd-util.h"
#include "macro.h"
#include "policy-file.h"

int policy_file_load(const char *path, Policy **ret, char *why, size_t why_len) {
        _cleanup_free_ char *buf = NULL;
        PolicyDiag diag = {};
        size_t len = 0;
        int r;

        if (!path)
                return policy_default(ret);
        r = read_full_file(path, POLICY_BYTES_MAX, &buf, &len);
        if (r < 0) {
                snprintf(why, why_len, "%s: %s", path,
                         r == -EFBIG ? "larger than 256 KiB" : strerror(-r));
                return r;
        }
        r = policy_parse(buf, len, ret, &diag);
        if (r < 0 && r != -ENOMEM)
                snprintf(why, why_len, "%s:%u:%u: %s: %s", path, diag.line, diag.column,
                         policy_error_name(diag.code), diag.message);
        else if (r < 0)
                snprintf(why, why_len, "%s: out of memory", path);
        return r;
}
