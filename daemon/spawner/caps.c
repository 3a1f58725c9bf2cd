/* lockd's own capabilities: everything but what spawning plugins needs is dropped after start. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "caps.h"
#include "macro.h"

static inline void cap_freep(cap_t *c) {
        if (*c)
                cap_free(*c);
}

static bool kept(const cap_value_t *keep, size_t n, cap_value_t c) {
        for (size_t i = 0; i < n; i++)
                if (keep[i] == c)
                        return true;
        return false;
}

int caps_drop_except(const cap_value_t *keep, size_t n) {
        _cleanup_(cap_freep) cap_t want = NULL, got = NULL;
        cap_value_t last = (cap_value_t)cap_max_bits() - 1;
        char *a = NULL, *b = NULL;
        bool same;

        /* The bounding set first, while CAP_SETPCAP is certainly still ours. */
        for (cap_value_t c = 0; c <= last; c++) {
                if (kept(keep, n, c))
                        continue;
                if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1 &&
                    prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0)
                        return negative_errno();
        }
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return negative_errno();

        want = cap_init();
        if (!want)
                return -ENOMEM;
        if (n > 0 && (cap_set_flag(want, CAP_EFFECTIVE, (int)n, keep, CAP_SET) < 0 ||
                      cap_set_flag(want, CAP_PERMITTED, (int)n, keep, CAP_SET) < 0))
                return negative_errno();
        if (cap_set_proc(want) < 0)
                return negative_errno();

        /* Trust but verify: what the kernel holds now is exactly what we asked for. */
        got = cap_get_proc();
        if (!got)
                return negative_errno();
        a = cap_to_text(want, NULL);
        b = cap_to_text(got, NULL);
        same = a && b && strcmp(a, b) == 0;
        cap_free(a);
        cap_free(b);
        return same ? 0 : -EPERM;
}
