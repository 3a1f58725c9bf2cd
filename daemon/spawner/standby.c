/* Scopes made ahead: per limit class, children waiting in scopes of their own, made and recycled
 * on the loop, taken by the run workers. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fd-util.h"
#include "log.h"
#include "macro.h"
#include "standby.h"

/* Room above the contract's 512 extra threads before the pids controller steps in; the rlimit
 * (EAGAIN at exactly 512) is what a plugin meets first. */
#define SCOPE_TASKS_MAX 544
/* RuntimeMaxUSec= behind lockd's own wall-clock timeout. */
#define SCOPE_RUNTIME_SLACK_USEC ((uint64_t)10 * 1000000)
/* How often the loop looks for children past their age, and the wait after a failed scope. */
#define STANDBY_TICK_USEC  ((uint64_t)5 * 1000000)
#define STANDBY_RETRY_USEC ((uint64_t)1 * 1000000)

typedef struct Entry Entry;
typedef struct Class Class;

/* One child: pending (its scope's job not done yet) or ready (on its class's list). */
struct Entry {
        Entry *pending_next; /* on the standby's list while the scope is being made */
        Standby *standby;    /* NULL once the standby went: the scope's answer only frees it */
        Class *class;
        RunChild *child;
        char unit[64];
        OomWatch *oom;
        uint64_t ready_usec;
        Entry *next;
};

struct Class {
        StandbyClass key;
        unsigned target;  /* children to keep ready: 1 .. per_class_max, 0 once idle */
        unsigned pending; /* children whose scope is being made */
        Entry *ready;     /* oldest first */
        uint64_t last_take;
        uint64_t retry_after; /* a scope failed: no new child before this */
};

struct Standby {
        sd_event *event;
        ScopeManager *scope;
        const CgroupMounts *cgroups;
        char *slice;
        unsigned per_class_max;
        void (*unit_name)(char *buf, size_t size, void *userdata);
        void *userdata;

        pthread_mutex_t lock;   /* classes and their ready lists: workers take from them */
        pthread_cond_t changed; /* a child got ready, a scope failed, or the standby closed */
        Class classes[STANDBY_CLASSES_MAX];
        unsigned n_classes;
        Entry *pending; /* loop's thread only */
        bool closed;    /* flushed: no child is made or kept any more (loop's thread) */

        int wake_fd; /* a worker took a child or found none: refill */
        sd_event_source *wake_source, *tick;
};

ScopeLimits standby_class_limits(const StandbyClass *c, bool ahead) {
        return (ScopeLimits){
                .memory_max = c->memory_max,
                .tasks_max = SCOPE_TASKS_MAX,
                .runtime_max_usec = c->timeout_usec + SCOPE_RUNTIME_SLACK_USEC +
                                    (ahead ? STANDBY_MAX_AGE_USEC : 0),
        };
}

static Entry *entry_free(Entry *e) {
        if (!e)
                return NULL;
        e->child = run_child_free(e->child); /* killed, if it still waited */
        e->oom = oom_watch_free(e->oom);
        free(e);
        return NULL;
}

/* The class of key, made when absent (the least recently taken idle one makes room); NULL when
 * every slot holds children. Lock held. */
static Class *class_get(Standby *s, const StandbyClass *key, bool make) {
        Class *victim = NULL;

        for (unsigned i = 0; i < s->n_classes; i++)
                if (memcmp(&s->classes[i].key, key, sizeof(*key)) == 0)
                        return &s->classes[i];
        if (!make)
                return NULL;
        if (s->n_classes < STANDBY_CLASSES_MAX)
                victim = &s->classes[s->n_classes++];
        else
                for (unsigned i = 0; i < s->n_classes; i++) {
                        Class *c = &s->classes[i];
                        if (!c->ready && c->pending == 0 &&
                            (!victim || c->last_take < victim->last_take))
                                victim = c;
                }
        if (!victim)
                return NULL;
        *victim = (Class){.key = *key};
        return victim;
}

static void wake(Standby *s) {
        uint64_t one = 1;

        (void)!write(s->wake_fd, &one, sizeof(one));
}

/*
 * Hands a child taken off its ready list to *ret (true), or drops it (false): one that died while
 * it waited (its scope killed, say), or one past its age (its scope's RuntimeMaxUSec= counts), is
 * of no use. The refill is the caller's standby_wake(), once the child's run ended: a clone and a
 * scope request now would compete with it.
 */
static bool entry_hand(Standby *s, Entry *e, StandbyChild *ret) {
        if (run_child_waiting(e->child) &&
            clock_monotonic_usec() - e->ready_usec < STANDBY_MAX_AGE_USEC) {
                *ret = (StandbyChild){.child = TAKE_PTR(e->child), .oom = TAKE_PTR(e->oom)};
                memcpy(ret->unit, e->unit, sizeof(ret->unit));
                entry_free(e);
                return true;
        }
        (void)scope_kill(s->scope, e->unit);
        entry_free(e);
        return false;
}

int standby_take(Standby *s, const StandbyClass *key, uint64_t wait_usec, StandbyChild *ret,
                 uint64_t *ret_waited_usec) {
        uint64_t begin = clock_monotonic_usec(), deadline = begin + wait_usec;
        bool first = true, waited = false;

        if (!s || !key || !ret || !ret_waited_usec)
                return -EINVAL;
        for (;;) {
                Entry *e = NULL;
                Class *c;

                /* The class is looked up again each time: a worker may have reused a slot. */
                pthread_mutex_lock(&s->lock);
                for (;;) {
                        c = class_get(s, key, true);
                        if (!c)
                                break;
                        c->last_take = clock_monotonic_usec();
                        if (c->ready) {
                                e = c->ready;
                                c->ready = e->next;
                                break;
                        }
                        if (first) {
                                /* Demand met an empty class: keep one more ready from now on,
                                 * and start making it now. */
                                if (c->target < s->per_class_max)
                                        c->target++;
                                first = false;
                                wake(s);
                        }
                        /*
                         * A child of the class whose scope the manager is making is taken when
                         * it is ready: it was asked for before, so it comes before a scope asked
                         * for now would, and the manager makes one scope instead of two (under a
                         * burst it is the manager that runs late). Without one, or past the wait,
                         * the caller makes its scope on demand.
                         */
                        if (c->pending == 0 || s->closed || clock_monotonic_usec() >= deadline)
                                break;
                        struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000),
                                              .tv_nsec = (long)(deadline % 1000000) * 1000};
                        (void)pthread_cond_timedwait(&s->changed, &s->lock, &ts);
                        waited = true;
                }
                pthread_mutex_unlock(&s->lock);
                if (!e)
                        return -EAGAIN;
                if (entry_hand(s, e, ret)) {
                        /* A child that was ready cost no wait. */
                        *ret_waited_usec = waited ? clock_monotonic_usec() - begin : 0;
                        return 0;
                }
        }
}

int standby_try_take(Standby *s, const StandbyClass *key, StandbyChild *ret) {
        if (!s || !key || !ret)
                return -EINVAL;
        for (;;) {
                Entry *e = NULL;
                Class *c;

                pthread_mutex_lock(&s->lock);
                c = class_get(s, key, false);
                if (c && c->ready) {
                        e = c->ready;
                        c->ready = e->next;
                        c->last_take = clock_monotonic_usec();
                }
                pthread_mutex_unlock(&s->lock);
                /* None ready: the caller's standby_take() later counts the demand, not this. */
                if (!e)
                        return -EAGAIN;
                if (entry_hand(s, e, ret))
                        return 0;
        }
}

void standby_wake(Standby *s) {
        if (s)
                wake(s);
}

static void refill(Standby *s);

void standby_warm(Standby *s, const StandbyClass *key) {
        Class *c;

        if (!s || !key || s->closed)
                return;
        pthread_mutex_lock(&s->lock);
        c = class_get(s, key, true);
        if (c) {
                c->last_take = clock_monotonic_usec();
                if (c->target == 0)
                        c->target = 1;
        }
        pthread_mutex_unlock(&s->lock);
        refill(s);
}

static void pending_unlink(Standby *s, Entry *e) {
        for (Entry **p = &s->pending; *p; p = &(*p)->pending_next)
                if (*p == e) {
                        *p = e->pending_next;
                        return;
                }
}

/* The manager's answer for a child's scope, on the loop. */
static void on_scope_done(int error, void *userdata) {
        Entry *e = userdata;
        Standby *s = e->standby;
        pid_t pid = run_child_pid(e->child);
        char unit[sizeof(e->unit)];
        int r = error;

        if (!s) {
                /* The standby went meanwhile and killed the child: its unit empties and goes. */
                entry_free(e);
                return;
        }
        pending_unlink(s, e);
        /* Flushed while its scope was being made: the child dies and its unit is stopped by name
         * (a child killed before the manager moved it leaves a scope that never empties). */
        if (r >= 0 && s->closed)
                r = -ECANCELED;
        /*
         * The scope's counters (peak memory, CPU time, pids) tell something of the file: no uid
         * but root reads them, from before the plugin's first instruction. A directory that
         * cannot be hidden, or a child that died meanwhile, is never used.
         */
        if (r >= 0)
                r = cgroup_hide(s->cgroups, pid, e->unit, s->slice);
        if (r >= 0 && !run_child_waiting(e->child))
                r = -ESRCH;
        if (r >= 0)
                /* Best effort: without a memory cgroup an OOM reads as signal:SIGKILL. */
                (void)oom_watch_new(pid, &e->oom);

        /* Its name for the line below: once on the ready list the entry is a worker's to take. */
        memcpy(unit, e->unit, sizeof(unit));
        pthread_mutex_lock(&s->lock);
        e->class->pending--;
        if (r >= 0) {
                Entry **tail = &e->class->ready;

                while (*tail)
                        tail = &(*tail)->next;
                e->ready_usec = clock_monotonic_usec();
                e->next = NULL;
                *tail = e;
                e = NULL;
        } else
                e->class->retry_after = clock_monotonic_usec() + STANDBY_RETRY_USEC;
        /* A worker may wait for this child (standby_take()): ready, or none to wait for. */
        pthread_cond_broadcast(&s->changed);
        pthread_mutex_unlock(&s->lock);
        /* After the unlock: a run asked for after this line takes the child without a wait
         * (test-spawner waits for it: the manager shows the scope before this side knows). */
        if (r >= 0)
                log_debug(NULL, "a child made ahead waits in %s", unit);
        if (e) {
                if (error >= 0)
                        (void)scope_kill(s->scope, e->unit);
                entry_free(e);
        }
        refill(s);
}

/* Makes one child of class c, whose pending count already holds it, and asks for its scope.
 * Loop's thread; lock not held. */
static int make_child(Standby *s, Class *c) {
        ScopeLimits lim = standby_class_limits(&c->key, true);
        Entry *e;
        int r = -ENOMEM;

        e = calloc(1, sizeof(*e));
        if (e) {
                e->standby = s;
                e->class = c;
                s->unit_name(e->unit, sizeof(e->unit), s->userdata);
                r = run_child_new(&e->child);
        }
        if (r >= 0)
                r = scope_start_async(s->scope, e->unit, run_child_pid(e->child), &lim,
                                      on_scope_done, e);
        if (r < 0) {
                entry_free(e);
                pthread_mutex_lock(&s->lock);
                c->pending--;
                c->retry_after = clock_monotonic_usec() + STANDBY_RETRY_USEC;
                pthread_cond_broadcast(&s->changed);
                pthread_mutex_unlock(&s->lock);
                return r;
        }
        e->pending_next = s->pending;
        s->pending = e;
        return 0;
}

/* Recycles children past their age, drops idle classes, and makes what each class lacks. */
static void refill(Standby *s) {
        uint64_t now = clock_monotonic_usec();
        Entry *old = NULL;

        pthread_mutex_lock(&s->lock);
        for (unsigned i = 0; i < s->n_classes; i++) {
                Class *c = &s->classes[i];

                if (c->target > 0 && now - c->last_take > STANDBY_CLASS_IDLE_USEC)
                        c->target = 0;
                while (c->ready && now - c->ready->ready_usec >= STANDBY_MAX_AGE_USEC) {
                        Entry *e = c->ready;

                        c->ready = e->next;
                        e->next = old;
                        old = e;
                        /* Unused for its whole age: one fewer is enough (never below one). */
                        if (c->target > 1)
                                c->target--;
                }
        }
        pthread_mutex_unlock(&s->lock);
        while (old) {
                Entry *e = old;

                old = e->next;
                (void)scope_kill(s->scope, e->unit);
                entry_free(e);
        }

        for (;;) {
                Class *pick = NULL;

                /* One class that lacks a child, its place reserved (pending) under the lock, so
                 * that no worker reuses its slot meanwhile. */
                pthread_mutex_lock(&s->lock);
                for (unsigned i = 0; i < s->n_classes && !pick; i++) {
                        Class *c = &s->classes[i];
                        unsigned have = c->pending;

                        for (Entry *e = c->ready; e; e = e->next)
                                have++;
                        if (have < c->target && now >= c->retry_after)
                                pick = c;
                }
                if (pick) {
                        pick->pending++;
                }
                pthread_mutex_unlock(&s->lock);
                if (!pick || make_child(s, pick) < 0)
                        return;
        }
}

static int on_wake(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        uint64_t n;

        (void)!read(fd, &n, sizeof(n));
        refill(userdata);
        return 0;
}

static int on_tick(sd_event_source *src, uint64_t usec, void *userdata) {
        refill(userdata);
        (void)sd_event_source_set_time_relative(src, STANDBY_TICK_USEC);
        return 0;
}

int standby_new(sd_event *e, ScopeManager *scope, const CgroupMounts *cgroups, const char *slice,
                unsigned per_class_max, void (*unit_name)(char *buf, size_t size, void *userdata),
                void *userdata, Standby **ret) {
        _cleanup_(standby_freep) Standby *s = NULL;
        int r;

        if (!e || !scope || !cgroups || !unit_name || per_class_max == 0 || !ret)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        pthread_mutex_init(&s->lock, NULL);
        {
                pthread_condattr_t attr;

                pthread_condattr_init(&attr);
                pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
                r = -pthread_cond_init(&s->changed, &attr);
                pthread_condattr_destroy(&attr);
                if (r < 0) {
                        pthread_mutex_destroy(&s->lock);
                        free(TAKE_PTR(s));
                        return r;
                }
        }
        s->wake_fd = -1;
        s->event = sd_event_ref(e);
        s->scope = scope;
        s->cgroups = cgroups;
        s->per_class_max = per_class_max;
        s->unit_name = unit_name;
        s->userdata = userdata;
        if (slice && !(s->slice = strdup(slice)))
                return -ENOMEM;
        s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->wake_fd < 0)
                return negative_errno();
        r = sd_event_add_io(e, &s->wake_source, s->wake_fd, EPOLLIN, on_wake, s);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(e, &s->tick, CLOCK_MONOTONIC, STANDBY_TICK_USEC, 0, on_tick,
                                       s);
        if (r < 0)
                return r;
        r = sd_event_source_set_enabled(s->tick, SD_EVENT_ON);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

void standby_flush(Standby *s) {
        Entry *list = NULL;

        if (!s)
                return;
        pthread_mutex_lock(&s->lock);
        for (unsigned i = 0; i < s->n_classes; i++) {
                Class *c = &s->classes[i];

                while (c->ready) {
                        Entry *e = c->ready;
                        c->ready = e->next;
                        e->next = list;
                        list = e;
                }
                c->target = 0;
        }
        s->closed = true;
        pthread_cond_broadcast(&s->changed); /* no worker waits for a child any more */
        pthread_mutex_unlock(&s->lock);
        while (list) {
                Entry *e = list;

                list = e->next;
                (void)scope_kill(s->scope, e->unit);
                entry_free(e);
        }
}

bool standby_idle(const Standby *s) {
        return !s || !s->pending;
}

Standby *standby_free(Standby *s) {
        if (!s)
                return NULL;
        standby_flush(s);
        /* Children whose scope is still being made die now; on_scope_done() frees each entry
         * (the scope manager answers every request, at the latest when it is freed). */
        for (Entry *e = s->pending; e; e = e->pending_next) {
                e->standby = NULL;
                e->child = run_child_free(e->child);
        }
        s->pending = NULL;
        s->wake_source = sd_event_source_disable_unref(s->wake_source);
        s->tick = sd_event_source_disable_unref(s->tick);
        safe_close(s->wake_fd);
        free(s->slice);
        pthread_cond_destroy(&s->changed);
        pthread_mutex_destroy(&s->lock);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}
