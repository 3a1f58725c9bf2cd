/* The OOM watch of a run's memory cgroup: did the kernel kill a task there. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

typedef struct OomWatch OomWatch;

/*
 * Watches the memory cgroup that pid is in now (its scope's) for an OOM kill: cgroup v1
 * memory.oom_control through cgroup.event_control, or v2 memory.events. 0, -ENOENT no memory
 * controller for pid, or another negative errno.
 */
int oom_watch_new(pid_t pid, OomWatch **ret);
/* Whether the kernel OOM-killed a task in that cgroup; call right after the run's child died. */
bool oom_watch_fired(OomWatch *w);
OomWatch *oom_watch_free(OomWatch *w);
static inline void oom_watch_freep(OomWatch **w) {
        if (*w)
                oom_watch_free(*w);
}
