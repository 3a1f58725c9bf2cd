/* Reading the policy file and its drop-ins, for the spawner and the engine alike. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "policy-file.h"

/* A drop-in's name: NAME.yaml, NAME of [A-Za-z0-9_.-] not starting with a dot (so that an
 * editor's or a package manager's leftovers, ".x.swp", "x.yaml.dpkg-old", "x.yaml~", are not
 * read), at most 128 bytes. */
static bool dropin_name_valid(const char *name) {
        size_t n = strlen(name);

        if (n <= strlen(".yaml") || n > 128 || name[0] == '.' ||
            strcmp(name + n - strlen(".yaml"), ".yaml") != 0)
                return false;
        return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") ==
               n;
}

typedef struct Sources {
        PolicySource v[1 + POLICY_DROPINS_MAX];
        char *names[1 + POLICY_DROPINS_MAX];
        char *bufs[1 + POLICY_DROPINS_MAX];
        size_t n;
} Sources;

static void sources_done(Sources *s) {
        for (size_t i = 0; i < s->n; i++) {
                free(s->names[i]);
                free(s->bufs[i]);
        }
}

/*
 * Adds the drop-ins of dir (PATH.d) in name order (strcmp: byte order, whatever the locale), each
 * a regular file read whole. A missing directory has none. Fails with why filled on a drop-in it
 * cannot read, one that is not a regular file, or more than POLICY_DROPINS_MAX of them.
 */
static int add_dropins(Sources *s, const char *dir, char *why, size_t why_len) {
        _cleanup_close_ int dfd = -1;
        char **names = NULL;
        size_t n = 0;
        int r;

        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 && errno == ENOENT)
                return 0;
        if (dfd < 0) {
                r = negative_errno();
                snprintf(why, why_len, "%s: %s", dir, strerror(-r));
                return r;
        }
        r = dir_names_sorted(dfd, dropin_name_valid, POLICY_DROPINS_MAX, &names, &n);
        if (r < 0) {
                snprintf(why, why_len, "%s: %s", dir,
                         r == -E2BIG ? "more than 64 drop-ins" : strerror(-r));
                return r;
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_close_ int fd = -1;
                struct stat st;
                size_t len = 0;
                char *buf = NULL, *name = NULL;

                if (asprintf(&name, "%s/%s", dir, names[i]) < 0) {
                        r = -ENOMEM;
                        snprintf(why, why_len, "%s: out of memory", dir);
                        break;
                }
                s->names[s->n] = name;
                fd = openat(dfd, names[i], O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
                if (fd < 0 || fstat(fd, &st) < 0)
                        r = negative_errno();
                else if (!S_ISREG(st.st_mode))
                        r = -EINVAL;
                else
                        r = read_full_fd(fd, POLICY_BYTES_MAX, &buf, &len);
                if (r < 0) {
                        snprintf(why, why_len, "%s: %s", name,
                                 r == -EFBIG    ? "larger than 256 KiB"
                                 : r == -EINVAL ? "not a regular file"
                                                : strerror(-r));
                        free(name);
                        s->names[s->n] = NULL;
                        break;
                }
                s->bufs[s->n] = buf;
                s->v[s->n] = (PolicySource){.name = name, .buf = buf, .len = len};
                s->n++;
        }
        strv_free_n(names, n);
        return r < 0 ? r : 0;
}

int policy_file_load(const char *path, Policy **ret, char *why, size_t why_len) {
        _cleanup_free_ char *dir = NULL;
        Sources s = {};
        PolicyDiag diag = {};
        size_t len = 0;
        char *buf = NULL;
        int r;

        if (!path)
                return policy_default(ret);
        r = read_full_file(path, POLICY_BYTES_MAX, &buf, &len);
        if (r < 0) {
                snprintf(why, why_len, "%s: %s", path,
                         r == -EFBIG ? "larger than 256 KiB" : strerror(-r));
                return r;
        }
        s.names[0] = strdup(path);
        s.bufs[0] = buf;
        s.n = 1;
        if (!s.names[0]) {
                sources_done(&s);
                return -ENOMEM;
        }
        s.v[0] = (PolicySource){.name = s.names[0], .buf = buf, .len = len};
        /* The drop-ins beside it: lockd.yaml.d/ for lockd.yaml, as configuration management
         * ships them (lockd.yaml(5), Drop-ins). */
        if (asprintf(&dir, "%s.d", path) < 0) {
                dir = NULL;
                sources_done(&s);
                return -ENOMEM;
        }
        r = add_dropins(&s, dir, why, why_len);
        if (r >= 0) {
                r = policy_parse_sources(s.v, s.n, ret, &diag);
                if (r < 0 && r != -ENOMEM)
                        snprintf(why, why_len, "%s:%u:%u: %s: %s",
                                 diag.source < s.n ? s.v[diag.source].name : path, diag.line,
                                 diag.column, policy_error_name(diag.code), diag.message);
                else if (r < 0)
                        snprintf(why, why_len, "%s: out of memory", path);
        }
        sources_done(&s);
        return r;
}
