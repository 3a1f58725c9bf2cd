/* The watch of a run's memory cgroup: did the kernel kill a task there, and how much memory did
 * the cgroup use at most. */
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
/*
 * The cgroup's peak memory use in bytes (v1 memory.max_usage_in_bytes, v2 memory.peak), read now:
 * call right after the run's child died. 0 with *ret; -ENODEV when the manager removed the cgroup
 * first, -ENOENT when the kernel has no such file, another negative errno; *ret untouched then.
 */
int oom_watch_peak(OomWatch *w, uint64_t *ret);
OomWatch *oom_watch_free(OomWatch *w);
static inline void oom_watch_freep(OomWatch **w) {
        if (*w)
                oom_watch_free(*w);
}
