/* The cgroup directories of a run's scope, readable by root only. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "fd-util.h"
#include "macro.h"

#define MOUNTS_MAX 32
#define FILE_MAX   ((size_t)1 << 20)

typedef struct Mount {
        char *point;   /* where it is mounted */
        char *root;    /* the cgroup path of the mount's root ("/" usually) */
        char *options; /* the super block options: the controllers, "name=systemd" */
        bool v2;
} Mount;

struct CgroupMounts {
        Mount mounts[MOUNTS_MAX];
        size_t n;
};

CgroupMounts *cgroup_mounts_free(CgroupMounts *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n; i++) {
                free(m->mounts[i].point);
                free(m->mounts[i].root);
                free(m->mounts[i].options);
        }
        free(m);
        return NULL;
}

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s) {
        char *w = s;

        for (char *r = s; *r;)
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
                    r[3] >= '0' && r[3] <= '7') {
                        *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
                        r += 4;
                } else
                        *w++ = *r++;
        *w = 0;
}

int cgroup_mounts_load(CgroupMounts **ret) {
        _cleanup_(cgroup_mounts_freep) CgroupMounts *m = NULL;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        r = read_full_file("/proc/self/mountinfo", FILE_MAX, &text, &len);
        if (r < 0)
                return r;
        for (char *line = text, *next; line && *line; line = next) {
                char *f[12] = {}, *save = NULL, *sep, *fstype, *source, *options;
                size_t n = 0;

                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                /* ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER */
                sep = strstr(line, " - ");
                if (!sep)
                        continue;
                *sep = 0;
                for (char *t = strtok_r(line, " ", &save); t && n < 5;
                     t = strtok_r(NULL, " ", &save))
                        f[n++] = t;
                fstype = strtok_r(sep + 3, " ", &save);
                source = fstype ? strtok_r(NULL, " ", &save) : NULL;
                options = source ? strtok_r(NULL, " ", &save) : NULL;
                if (n < 5 || !options ||
                    (strcmp(fstype, "cgroup") != 0 && strcmp(fstype, "cgroup2") != 0))
                        continue;
                if (m->n >= MOUNTS_MAX)
                        return -E2BIG;
                unescape(f[3]);
                unescape(f[4]);
                m->mounts[m->n] = (Mount){.point = strdup(f[4]),
                                          .root = strdup(f[3]),
                                          .options = strdup(options),
                                          .v2 = strcmp(fstype, "cgroup2") == 0};
                if (!m->mounts[m->n].point || !m->mounts[m->n].root || !m->mounts[m->n].options) {
                        m->n++;
                        return -ENOMEM;
                }
                m->n++;
        }
        *ret = TAKE_PTR(m);
        return 0;
}

/* Whether the comma-separated list has the item. */
static bool has_item(const char *list, const char *item, size_t len) {
        for (const char *p = list; p && *p;) {
                const char *end = strchr(p, ',');
                size_t n = end ? (size_t)(end - p) : strlen(p);

                if (n == len && strncmp(p, item, len) == 0)
                        return true;
                p = end ? end + 1 : NULL;
        }
        return false;
}

/* The mount of the hierarchy a /proc/PID/cgroup line names: its controllers (or name=...), or ""
 * for the unified (v2) one. */
static const Mount *mount_of(const CgroupMounts *m, const char *controllers) {
        for (size_t i = 0; i < m->n; i++) {
                const Mount *mt = &m->mounts[i];
                bool all = true;

                if (controllers[0] == 0) {
                        if (mt->v2)
                                return mt;
                        continue;
                }
                if (mt->v2)
                        continue;
                for (const char *p = controllers; *p && all;) {
                        const char *end = strchr(p, ',');
                        size_t n = end ? (size_t)(end - p) : strlen(p);

                        all = has_item(mt->options, p, n);
                        p = end ? end + 1 : p + n;
                }
                if (all)
                        return mt;
        }
        return NULL;
}

/* The part of cg up to and including its component named name ("/a/NAME/b" gives "/a/NAME"), as
 * a length, or 0 when no component is name. */
static size_t component_end(const char *cg, const char *name) {
        size_t nlen = strlen(name);

        for (const char *p = cg; (p = strstr(p, name)); p++)
                if (p > cg && p[-1] == '/' && (p[nlen] == '/' || p[nlen] == 0))
                        return (size_t)(p - cg) + nlen;
        return 0;
}

/* Sets mode 0700 on the directory of mount mt for the cgroup path cg[0..len). 1 changed, 0 not
 * there, or a negative errno. */
static int hide_dir(const Mount *mt, const char *cg, size_t len) {
        _cleanup_free_ char *dir = NULL;
        size_t rootlen = strcmp(mt->root, "/") == 0 ? 0 : strlen(mt->root);

        if (rootlen > 0 && (strncmp(cg, mt->root, rootlen) != 0 || cg[rootlen] != '/'))
                return 0; /* outside what this mount shows */
        if (len <= rootlen)
                return 0; /* the mount's root itself is never ours */
        if (asprintf(&dir, "%s%.*s", mt->point, (int)(len - rootlen), cg + rootlen) < 0)
                return -ENOMEM;
        if (chmod(dir, 0700) < 0)
                return errno == ENOENT ? 0 : -errno;
        return 1;
}

int cgroup_hide(const CgroupMounts *m, pid_t pid, const char *unit, const char *slice) {
        _cleanup_free_ char *text = NULL;
        char path[64];
        size_t len = 0, ulen;
        int r, changed = 0;

        if (!m || pid <= 0 || !unit || !unit[0])
                return -EINVAL;
        ulen = strlen(unit);
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
        r = read_full_file(path, FILE_MAX, &text, &len);
        if (r < 0)
                return r;
        for (char *line = text, *next; line && *line; line = next) {
                char *c1, *c2, *cg;
                const Mount *mt;
                size_t n, end;

                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                c1 = strchr(line, ':');
                c2 = c1 ? strchr(c1 + 1, ':') : NULL;
                if (!c2)
                        continue;
                *c2 = 0;
                cg = c2 + 1;
                n = strlen(cg);
                mt = mount_of(m, c1 + 1);
                if (!mt)
                        continue;
                /* The scope's own directory, "/.../<unit>". */
                if (n > ulen && cg[n - ulen - 1] == '/' && strcmp(cg + n - ulen, unit) == 0) {
                        r = hide_dir(mt, cg, n);
                        if (r < 0)
                                return r;
                        changed += r;
                }
                /* lockd's slice above it: covers a hierarchy without a directory of the scope. */
                end = slice && slice[0] ? component_end(cg, slice) : 0;
                if (end > 0) {
                        r = hide_dir(mt, cg, end);
                        if (r < 0)
                                return r;
                        changed += r;
                }
        }
        return changed;
}
