/* The cgroup directories of a run's scope, made readable by root only before the plugin starts,
 * so that no other uid reads a run's counters (ARCHITECTURE.md, what an agent can learn). */
#pragma once

#include <sys/types.h>

typedef struct CgroupMounts CgroupMounts;

/* The cgroup file systems mounted in this mount namespace (/proc/self/mountinfo), read once. 0 and
 * a new set in *ret, or a negative errno. */
int cgroup_mounts_load(CgroupMounts **ret);
CgroupMounts *cgroup_mounts_free(CgroupMounts *m);
static inline void cgroup_mounts_freep(CgroupMounts **m) {
        if (*m)
                cgroup_mounts_free(*m);
}

/*
 * For every hierarchy in which pid's cgroup is a directory named unit (its own scope), sets that
 * directory's mode to 0700 so that no other uid can list it or open a file in it; and where
 * slice (lockd's own, may be NULL) is a directory on pid's cgroup path, that one too, which
 * covers the hierarchies where the manager made no directory for the scope itself. A cgroup of
 * any other name is never touched. Returns the number of directories changed (0 when pid is in
 * no such cgroup, e.g. without scopes), or a negative errno when one could not be changed: the
 * caller must not let the run start then.
 */
int cgroup_hide(const CgroupMounts *m, pid_t pid, const char *unit, const char *slice);
