/* OOM-kill detection for one run's memory cgroup: cgroup v1 memory.oom_control, or v2
 * memory.events. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "oom-watch.h"
#include "fd-util.h"
#include "macro.h"
#include "scope.h"

#define CGROUP_ROOT     "/sys/fs/cgroup"
#define PROC_CGROUP_MAX (64 * KiB)
#define CGROUP_FILE_MAX (8 * KiB)

/*
 * What was measured on this machine's hybrid layout (kernel 6.18, cgroup v1 memory controller,
 * a private `systemd --user` manager; tests/integration/test-scope.c test_oom and
 * test_oom_after_removal exercise each case):
 *
 * - memory.oom_control reads "oom_kill_disable 0\nunder_oom 0\noom_kill N\n"; N counts the OOM
 *   kills in that cgroup alone (v1 does not propagate it to the parent); a new cgroup has 0.
 * - An eventfd registered on memory.oom_control through cgroup.event_control is signalled once
 *   when the OOM killer acts in the cgroup, before the task dies: read right after the reap, the
 *   counter was 1 and oom_kill 1.
 * - The manager removes a scope's cgroup as soon as its last task exited, which can come before
 *   we reap the child: a read of the open memory.oom_control then fails with ENODEV. The removal
 *   signals the eventfd once more, but late: the kernel does it from a work item after the
 *   cgroup went offline. Right after the unit was gone the counter still read 1 (OOM) or 0 (no
 *   OOM); 100 ms later 2 and 1. So on ENODEV we wait (at most OOM_REMOVAL_WAIT_MS) for the
 *   removal's signal: a total of 2 or more means an OOM came first, 1 that it did not.
 *
 * On cgroup v2, memory.events holds "oom_kill N" for the cgroup and its children; once the
 * cgroup is gone the parent's memory.events (opened and read at the start) holds the same kills,
 * counted since we looked, possibly along with a sibling's: the outcome is a plugin_error either
 * way and only its cause could be wrong.
 */
#define OOM_REMOVAL_WAIT_MS 1000

struct OomWatch {
        bool v2;
        int fired;      /* -1 not known yet; the eventfd's signals can be read only once */
        int control_fd; /* v1 memory.oom_control, v2 memory.events */
        int event_fd;   /* v1: the eventfd registered on it */
        int parent_fd;  /* v2: the parent's memory.events */
        int peak_fd;    /* v1 memory.max_usage_in_bytes, v2 memory.peak; -1 without */
        uint64_t base, parent_base;
};

/* Reads "key N" out of the cgroup file open at fd (pread from 0). 0, -ENODEV gone, -errno. */
static int read_counter(int fd, const char *key, uint64_t *ret) {
        char buf[CGROUP_FILE_MAX];
        ssize_t n;
        size_t klen = strlen(key);

        n = pread(fd, buf, sizeof(buf) - 1, 0);
        if (n < 0)
                return negative_errno();
        buf[n] = 0;
        for (char *line = buf; line && *line;) {
                char *nl = strchr(line, '\n');

                if (nl)
                        *nl = 0;
                if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
                        char *end;
                        unsigned long long v;

                        errno = 0;
                        v = strtoull(line + klen + 1, &end, 10);
                        if (errno != 0 || end == line + klen + 1 || *end != 0)
                                return -EBADMSG;
                        *ret = v;
                        return 0;
                }
                line = nl ? nl + 1 : NULL;
        }
        return -ENOENT;
}

/* Reads the one number a cgroup file holds (pread from 0). 0, -ENODEV gone, -errno. */
static int read_number(int fd, uint64_t *ret) {
        char buf[64];
        unsigned long long v;
        char *end;
        ssize_t n;

        n = pread(fd, buf, sizeof(buf) - 1, 0);
        if (n < 0)
                return negative_errno();
        buf[n] = 0;
        errno = 0;
        v = strtoull(buf, &end, 10);
        if (errno != 0 || end == buf || (*end != '\n' && *end != 0))
                return -EBADMSG;
        *ret = v;
        return 0;
}

/*
 * Opens the cgroup's peak file (dir is its directory's path): a fresh run's scope starts at what
 * its waiting child charged before the plugin (tens of KiB of kernel objects, measured in the
 * scope test), so the peak is the plugin's own. Best effort: -1 without.
 */
static int open_peak(const char *dir, const char *name) {
        char path[PATH_MAX];

        if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
                return -1;
        return open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
}

/*
 * Finds pid's memory cgroup in /proc/<pid>/cgroup: the v1 "memory" line, else the v2 "0::" line
 * on a v2-only layout. The path is relative to its hierarchy's mount, "" for the root.
 */
static int memory_cgroup_of(pid_t pid, bool *ret_v2, char **ret_path) {
        _cleanup_free_ char *buf = NULL, *v2 = NULL;
        char path[64];
        size_t len;
        int r;

        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
        r = read_full_file(path, PROC_CGROUP_MAX, &buf, &len);
        if (r < 0)
                return r;
        for (char *line = buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                char *controllers, *cg;

                nl = strchr(line, '\n');
                if (nl)
                        *nl = 0;
                controllers = strchr(line, ':');
                if (!controllers)
                        return -EBADMSG;
                cg = strchr(++controllers, ':');
                if (!cg)
                        return -EBADMSG;
                *cg++ = 0;
                if (cg[0] != '/' || strstr(cg, "/../") || strstr(cg, "/./"))
                        return -EBADMSG;
                if (strcmp(line, "0:") == 0 && controllers[0] == 0) {
                        free(v2);
                        v2 = strdup(cg);
                        if (!v2)
                                return -ENOMEM;
                        continue;
                }
                for (char *tok = controllers, *comma; tok; tok = comma ? comma + 1 : NULL) {
                        comma = strchr(tok, ',');
                        if (comma)
                                *comma = 0;
                        if (strcmp(tok, "memory") == 0) {
                                char *p = strdup(cg);

                                if (!p)
                                        return -ENOMEM;
                                *ret_v2 = false;
                                *ret_path = p;
                                return 0;
                        }
                }
        }
        if (!v2 || access(CGROUP_ROOT "/cgroup.controllers", F_OK) < 0)
                return -ENOENT; /* no v1 memory controller, and v2 is not the only hierarchy */
        *ret_v2 = true;
        *ret_path = TAKE_PTR(v2);
        return 0;
}

static int open_v1(OomWatch *w, const char *cg) {
        _cleanup_close_ int efd = -1, ctl = -1, ec = -1;
        char path[PATH_MAX], reg[64];
        int r;

        if ((size_t)snprintf(path, sizeof(path), CGROUP_ROOT "/memory%s/memory.oom_control", cg) >=
            sizeof(path))
                return -ENAMETOOLONG;
        ctl = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (ctl < 0)
                return errno == ENOENT ? -ENOENT : negative_errno();
        snprintf(path, sizeof(path), CGROUP_ROOT "/memory%s/cgroup.event_control", cg);
        ec = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (ec < 0)
                return negative_errno();
        efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (efd < 0)
                return negative_errno();
        snprintf(reg, sizeof(reg), "%d %d", efd, ctl);
        r = loop_write(ec, reg, strlen(reg));
        if (r < 0)
                return r;
        r = read_counter(ctl, "oom_kill", &w->base);
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), CGROUP_ROOT "/memory%s", cg);
        w->peak_fd = open_peak(path, "memory.max_usage_in_bytes");
        w->control_fd = TAKE_FD(ctl);
        w->event_fd = TAKE_FD(efd);
        return 0;
}

static int open_v2(OomWatch *w, const char *cg) {
        _cleanup_close_ int ctl = -1, parent = -1;
        char path[PATH_MAX];
        char *slash;
        int r;

        if ((size_t)snprintf(path, sizeof(path), CGROUP_ROOT "%s/memory.events", cg) >=
            sizeof(path))
                return -ENAMETOOLONG;
        ctl = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (ctl < 0)
                return errno == ENOENT ? -ENOENT : negative_errno();
        r = read_counter(ctl, "oom_kill", &w->base);
        if (r < 0)
                return r;
        /* The parent: ".../x/memory.events" → ".../memory.events"; none above the root. */
        snprintf(path, sizeof(path), CGROUP_ROOT "%s", cg);
        slash = strrchr(path, '/');
        if (slash && slash > path + strlen(CGROUP_ROOT)) {
                strcpy(slash, "/memory.events");
                parent = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (parent >= 0 && read_counter(parent, "oom_kill", &w->parent_base) < 0)
                        parent = safe_close(parent);
        }
        snprintf(path, sizeof(path), CGROUP_ROOT "%s", cg);
        w->peak_fd = open_peak(path, "memory.peak");
        w->v2 = true;
        w->control_fd = TAKE_FD(ctl);
        w->parent_fd = TAKE_FD(parent);
        return 0;
}

int oom_watch_new(pid_t pid, OomWatch **ret) {
        _cleanup_(oom_watch_freep) OomWatch *w = NULL;
        _cleanup_free_ char *cg = NULL;
        bool v2 = false;
        int r;

        if (pid <= 0 || !ret)
                return -EINVAL;
        r = memory_cgroup_of(pid, &v2, &cg);
        if (r < 0)
                return r;
        if (strcmp(cg, "/") == 0)
                return -ENOENT; /* the root has no limit to be killed by */
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->control_fd = w->event_fd = w->parent_fd = w->peak_fd = -1;
        w->fired = -1;
        r = v2 ? open_v2(w, cg) : open_v1(w, cg);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(w);
        return 0;
}

/* Adds up the eventfd's signals until they reach want or timeout_ms passed; returns the sum. */
static uint64_t eventfd_total(int fd, uint64_t want, int timeout_ms) {
        struct timespec start, now;
        uint64_t total = 0, v;

        clock_gettime(CLOCK_MONOTONIC, &start);
        for (;;) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                int elapsed, r;

                if (read(fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
                        total += v;
                if (total >= want)
                        return total;
                clock_gettime(CLOCK_MONOTONIC, &now);
                elapsed = (int)((now.tv_sec - start.tv_sec) * 1000 +
                                (now.tv_nsec - start.tv_nsec) / 1000000);
                if (elapsed >= timeout_ms)
                        return total;
                r = poll(&p, 1, timeout_ms - elapsed);
                if (r < 0 && errno != EINTR)
                        return total;
        }
}

bool oom_watch_fired(OomWatch *w) {
        uint64_t n;
        int r;

        if (!w)
                return false;
        if (w->fired >= 0)
                return w->fired;
        r = read_counter(w->control_fd, "oom_kill", &n);
        if (r == 0)
                return n > w->base;
        if (r != -ENODEV)
                return false;
        if (w->v2)
                return w->parent_fd >= 0 && read_counter(w->parent_fd, "oom_kill", &n) == 0 &&
                       n > w->parent_base;
        /* The cgroup is gone: its removal signals the eventfd once, an OOM at least once more. */
        w->fired = eventfd_total(w->event_fd, 2, OOM_REMOVAL_WAIT_MS) >= 2;
        return w->fired;
}

int oom_watch_peak(OomWatch *w, uint64_t *ret) {
        uint64_t v;
        int r;

        if (!w || !ret)
                return -EINVAL;
        if (w->peak_fd < 0)
                return -ENOENT;
        r = read_number(w->peak_fd, &v);
        if (r < 0)
                return r;
        *ret = v;
        return 0;
}

OomWatch *oom_watch_free(OomWatch *w) {
        if (!w)
                return NULL;
        safe_close(w->peak_fd);
        safe_close(w->control_fd);
        safe_close(w->event_fd);
        safe_close(w->parent_fd);
        free(w);
        return NULL;
}
