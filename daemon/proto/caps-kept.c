/* The capabilities the spawner keeps: a fact of the contract between the two processes, so that
 * the engine can name them in Status without linking the code that drops the rest. */
#include <stdlib.h>
#include <string.h>

#include "caps-kept.h"
#include "macro.h"

/*
 * The spawning path of daemon/sandbox/runner.c needs exactly these:
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
