/* Scopes made ahead (ARCHITECTURE.md, scopes made ahead): per limit class, a few children that
 * already wait in a scope of their own, so that a run only hands one its fds and sandbox. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "cgroup.h"
#include "oom-watch.h"
#include "runner.h"
#include "scope.h"

typedef struct Standby Standby;

/* How long a child may wait for a run; then it is recycled (and RuntimeMaxUSec= covers this
 * plus the plugin's timeout). */
#define STANDBY_MAX_AGE_USEC ((uint64_t)120 * 1000000)
/* A class nobody ran for this long keeps no child any more. */
#define STANDBY_CLASS_IDLE_USEC ((uint64_t)3600 * 1000000)
/* Limit classes kept at once; a run of another class makes its scope on demand. */
#define STANDBY_CLASSES_MAX 32

/* A limit class: the scope's MemoryMax= and the plugin's timeout (TasksMax= and the CPU quota
 * are the same for every run). */
typedef struct StandbyClass {
        uint64_t memory_max;
        uint64_t timeout_usec;
} StandbyClass;

/* One child taken for a run: in its running scope unit, its cgroup hidden, its OOM watch open
 * (NULL without a memory controller). The taker owns all of it. */
typedef struct StandbyChild {
        RunChild *child;
        char unit[64];
        OomWatch *oom;
} StandbyChild;

/*
 * The children of at most per_class_max per class, made on e's thread (their death signal is
 * bound to it) in scopes of the given slice. unit_name(buf, size, userdata) names each scope.
 * 0 or a negative errno.
 */
int standby_new(sd_event *e, ScopeManager *scope, const CgroupMounts *cgroups, const char *slice,
                unsigned per_class_max, void (*unit_name)(char *buf, size_t size, void *userdata),
                void *userdata, Standby **ret);

/*
 * From any thread: takes a waiting child of class c into *ret (0), with how long it waited for
 * one in *ret_waited_usec; or -EAGAIN when none is ready (the caller makes its scope on demand).
 * When none is ready but one of the class has its scope being made, it waits for that one, up to
 * wait_usec. Either way the class's demand is noted; a class found empty is refilled at once,
 * after a 0 once the caller says standby_wake() (when the run of the child it took ended: the
 * refill's clone and scope request would compete with it for a CPU).
 */
int standby_take(Standby *s, const StandbyClass *c, uint64_t wait_usec, StandbyChild *ret,
                 uint64_t *ret_waited_usec);

/* From any thread: a child of class c that is ready now into *ret (0), or -EAGAIN at once. Unlike
 * standby_take() it neither waits nor counts a miss as demand. */
int standby_try_take(Standby *s, const StandbyClass *c, StandbyChild *ret);

/* From any thread: the loop refills what standby_take() took. */
void standby_wake(Standby *s);

/* Loop's thread: keeps at least one child ready for class c from now on (an installed plugin's,
 * ARCHITECTURE.md); it counts as a use. A full class table drops the hint. */
void standby_warm(Standby *s, const StandbyClass *c);

/* Kills every waiting child and stops its scope, for good: no child is made from here on, and one
 * whose scope is still being made is killed and its scope stopped once the manager answers
 * (loop's thread). */
void standby_flush(Standby *s);

/* Whether no child waits for its scope's job any more (loop's thread). */
bool standby_idle(const Standby *s);

/* Loop's thread: standby_flush(), then frees. */
Standby *standby_free(Standby *s);
static inline void standby_freep(Standby **s) {
        if (*s)
                standby_free(*s);
}

/* The scope limits of a class, for a child that may wait up to STANDBY_MAX_AGE_USEC first when
 * ahead is true. */
ScopeLimits standby_class_limits(const StandbyClass *c, bool ahead);
