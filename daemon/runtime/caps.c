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

/*
 * The spawning path of daemon/runtime/runner.c needs exactly these:
 *   CAP_SETUID, CAP_SETGID  the child's setgroups()/setresgid()/setresuid() to the run's
 *                           ephemeral uid;
 *   CAP_SETPCAP             the child's PR_CAPBSET_DROP of the whole bounding set;
 *   CAP_KILL                SIGKILL through the pidfd of a plugin that now runs as another uid
 *                           (timeouts, SIGTERM with runs in flight).
 * Everything else (the state directory and the sockets are root's own; cgroup files of lockd's
 * scopes are root's) works as uid 0 without capabilities.
 */
const cap_value_t caps_kept[] = {CAP_SETUID, CAP_SETGID, CAP_SETPCAP, CAP_KILL};
const size_t caps_n_kept = ELEMENTSOF(caps_kept);

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

char **caps_names(const cap_value_t *keep, size_t n) {
        char **v = calloc(n + 1, sizeof(char *));

        if (!v)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                char *name = cap_to_name(keep[i]);
                v[i] = name ? strdup(name) : NULL;
                cap_free(name);
                if (!v[i]) {
                        strv_free(v);
                        return NULL;
                }
        }
        return v;
}

void strv_free(char **v) {
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}
