/* The run pool: worker threads that each run one plugin at a time, on a child made ahead in its
 * scope (standby.h, run_child_start()) or on one made now whose scope the loop's ScopeManager
 * creates (runner_run()), and hand the results back to the loop through an eventfd. */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "oom-watch.h"
#include "macro.h"
#include "cgroup.h"
#include "runpool.h"
#include "standby.h"
#include "uidpool.h"

#ifndef __NR_pidfd_send_signal
#define __NR_pidfd_send_signal 424
#endif

/* The scope's memory backstop above RLIMIT_DATA: the fixed 8 MiB stack and kernel memory. */
#define SCOPE_MEMORY_SLACK ((uint64_t)40 * 1024 * 1024)

/* The runs waiting for one fairness key, in arrival order. */
typedef struct KeyQueue {
        uint64_t key;
        RunRequest *head, *tail;
        struct KeyQueue *next; /* ring of keys with work */
} KeyQueue;

/* What a worker is doing now, so run_pool_kill_all() can reach its child. */
typedef struct Worker {
        RunPool *pool;
        pthread_t thread;
        bool started;
        pthread_cond_t wake; /* its own: work was queued, or handed to it alone */
        bool idle;           /* waits on wake and nobody signalled it yet (lock held) */
        RunRequest *handed;  /* given by run_pool_submit(): taken before any queued run */
        RunRequest *req;     /* in flight, or being handed to it (set before handed), or NULL */
        int pidfd;           /* a dup of the child's pidfd while it lives, else -1 */
        OomWatch *oom;
        bool launched; /* launched() ran for the run in flight */

        /* The run's params (they outlive a release made on the loop's thread), its uid. */
        bool has_params, has_uid;
        uid_t uid;
        RunFds fds;
        RunParams rp;
        /* A child from the standby, released or to be: run_child_finish() is the worker's. */
        bool released;
        StandbyChild ready;
        uint64_t waited;
        int adopt_r, release_r;
} Worker;

struct RunPool {
        sd_event *event;
        sd_event_source *done_source;
        int done_fd; /* eventfd: results are waiting in done_head */
        ScopeManager *scope;
        RunPoolConfig cfg;

        pthread_mutex_t lock;
        KeyQueue
                *ring; /* the key served last (its successor is next); only keys with queued runs */
        unsigned n_queued, n_active;
        unsigned n_undelivered; /* in done_head, not handed to their callbacks yet */
        bool stopping;
        RunRequest *done_head, *done_tail;
        UidPool uids;
        Worker *workers;
        CgroupMounts *cgroups; /* with scopes: where each run's cgroup directories are */
        char *slice;
        Standby *standby;  /* with scopes and cfg.standby_max: children made ahead */
        uint64_t unit_seq; /* the scopes' names; atomic */
};

/* "lockd-run-<n>.scope": n counts from this boot's clock in microseconds at the start, so no
 * name repeats one a lockd before us used in this boot. Any thread. */
static void unit_name(char *buf, size_t size, void *userdata) {
        RunPool *p = userdata;

        snprintf(buf, size, "lockd-run-%" PRIu64 ".scope",
                 __atomic_add_fetch(&p->unit_seq, 1, __ATOMIC_RELAXED));
}

/* The limit class of a plugin's limits: what its scope's limits follow. */
static StandbyClass class_of_limits(const SandboxLimits *l) {
        return (StandbyClass){
                .memory_max = l->memory_bytes + SCOPE_MEMORY_SLACK,
                .timeout_usec = l->timeout_s * 1000000ULL,
        };
}

static StandbyClass class_of(const Sandbox *sb) {
        return class_of_limits(&sb->spec.limits);
}

void run_pool_warm(RunPool *p, const SandboxLimits *limits) {
        StandbyClass c;

        if (!p || !p->standby || !limits)
                return;
        c = class_of_limits(limits);
        standby_warm(p->standby, &c);
}

/* Takes the next run, round-robin across keys. Called with the lock held and n_queued > 0. */
static RunRequest *dequeue(RunPool *p) {
        KeyQueue *q = p->ring->next; /* ring points at the last served: serve its successor */
        RunRequest *req = q->head;

        q->head = req->next;
        req->next = NULL;
        if (!q->head) {
                /* The key has nothing left: unlink it from the ring. */
                if (q == p->ring)
                        p->ring = NULL;
                else
                        p->ring->next = q->next;
                free(q);
        } else
                p->ring = q;
        p->n_queued--;
        return req;
}

/* Appends req to its key's queue, adding the key to the ring. Lock held. */
static int enqueue(RunPool *p, RunRequest *req) {
        KeyQueue *q = NULL;

        if (p->ring) {
                KeyQueue *i = p->ring;
                do {
                        if (i->key == req->fairness_key) {
                                q = i;
                                break;
                        }
                        i = i->next;
                } while (i != p->ring);
        }
        if (!q) {
                q = calloc(1, sizeof(*q));
                if (!q)
                        return -ENOMEM;
                q->key = req->fairness_key;
                /* A new key joins the end of the line: it becomes the "last served" one, so every
                 * key already waiting is served before it. */
                if (p->ring) {
                        q->next = p->ring->next;
                        p->ring->next = q;
                } else
                        q->next = q;
                p->ring = q;
        }
        req->next = NULL;
        if (q->head)
                q->tail->next = req;
        else
                q->head = req;
        q->tail = req;
        p->n_queued++;
        return 0;
}

/* Hands req to the loop: it goes on the done list and the eventfd wakes the loop. Lock held. */
static void done_append(RunPool *p, RunRequest *req) {
        uint64_t one = 1;

        req->next = NULL;
        if (p->done_tail)
                p->done_tail->next = req;
        else
                p->done_head = req;
        p->done_tail = req;
        p->n_undelivered++;
        /* Cannot fail short of a counter at 2^64-2: a full one still reads as readable. */
        (void)!write(p->done_fd, &one, sizeof(one));
}

/* The worker's run has a child now (pidfd): recorded so that a kill reaches it; scoped when it
 * is in its scope already. -ECANCELED when the run was stopped meanwhile. */
static int adopt(Worker *w, int pidfd, bool scoped) {
        RunPool *p = w->pool;
        int fd, r;

        fd = fcntl(pidfd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return negative_errno();
        pthread_mutex_lock(&p->lock);
        w->pidfd = fd;
        r = p->stopping || w->req->cancelled ? -ECANCELED : 0;
        if (r >= 0)
                w->req->scoped = scoped;
        pthread_mutex_unlock(&p->lock);
        return r;
}

/* Called in the worker once the child exists and waits: record it, then move it into its scope. */
static int start_hook(pid_t pid, int pidfd, void *userdata) {
        Worker *w = userdata;
        RunPool *p = w->pool;
        RunRequest *req = w->req;
        StandbyClass class = class_of(req->sandbox);
        ScopeLimits lim = standby_class_limits(&class, false);
        int r;

        r = adopt(w, pidfd, false);
        if (r < 0)
                goto refuse;
        if (!p->scope)
                return 0;

        /* Fail closed: a run whose scope cannot be created never starts (spawn:scope). */
        r = scope_start_wait(p->scope, req->unit, pid, &lim, p->cfg.scope_timeout_usec);
        if (r < 0) {
                /* A wait that timed out or was cancelled may still have its unit made: stopped
                 * by name, since the child dies unrun and may die before the manager moved it
                 * (such a scope never empties: it would stay until RuntimeMaxUSec=). */
                if (r != -EINVAL)
                        (void)scope_kill(p->scope, req->unit);
                goto refuse;
        }
        /* Under the lock: run_pool_kill_all() reads it from the loop's thread. A kill_all that
         * came during the wait did not know the unit yet: it is stopped here. */
        pthread_mutex_lock(&p->lock);
        req->scoped = true;
        r = p->stopping || req->cancelled ? -ECANCELED : 0;
        pthread_mutex_unlock(&p->lock);
        if (r < 0) {
                (void)scope_kill(p->scope, req->unit);
                goto refuse;
        }
        /*
         * The scope's counters (peak memory, CPU time, pids) tell something of the file: no uid
         * but root reads them, from before the plugin's first instruction. A directory that
         * cannot be hidden fails the run (spawn:scope), never shows it.
         */
        r = cgroup_hide(p->cgroups, pid, req->unit, p->slice);
        if (r < 0)
                goto refuse;
        /* Best effort: without a memory cgroup an OOM reads as signal:SIGKILL. */
        (void)oom_watch_new(pid, &w->oom);
        return 0;

refuse:
        /* runner_run() kills the child at once: it never gets its release. */
        return r;
}

/* The child taken from the standby is out of our hands: its class is refilled, once the run
 * ended (worker_main()). */
static void launched(void *userdata) {
        Worker *w = userdata;

        w->launched = true;
}

static bool oom_check(void *userdata) {
        Worker *w = userdata;

        return w->oom && oom_watch_fired(w->oom);
}

static int peak_check(void *userdata, uint64_t *ret) {
        Worker *w = userdata;

        return w->oom ? oom_watch_peak(w->oom, ret) : -ENOENT;
}

/* The run's params in w, and its uid from the pool: they must outlive the release, which the loop's
 * thread may make (run_pool_submit()). 0 or a negative errno (no uid left). */
static int params_init(Worker *w, RunRequest *req) {
        RunPool *p = w->pool;
        int r;

        if (p->cfg.drop_to_uid) {
                pthread_mutex_lock(&p->lock);
                r = uid_pool_acquire(&p->uids, &w->uid);
                pthread_mutex_unlock(&p->lock);
                if (r < 0)
                        return r;
                w->has_uid = true;
        } else
                w->uid = 0;
        w->fds = (RunFds){
                .inputs_fd = req->inputs_fd,
                .stdout_fd = req->stdout_fd,
                .stderr_fd = req->stderr_fd,
                .detail_fd = req->detail_fd,
                .exit = &req->exit,
        };
        req->uid = w->uid;
        w->rp = (RunParams){
                .input_fd = req->input_fd,
                .inputs_json = req->inputs_json,
                .inputs_len = req->inputs_len,
                .drop_to_uid = p->cfg.drop_to_uid,
                .uid = w->uid,
                .gid = (gid_t)w->uid,
                .start_hook = start_hook,
                .start_hook_userdata = w,
                .oom_check = oom_check,
                .oom_check_userdata = w,
                .peak_check = peak_check,
                .fds = req->external ? &w->fds : NULL,
        };
        w->has_params = true;
        return 0;
}

/*
 * The release of the child in w->ready, taken from the standby (ready, or waited for while the
 * manager finished its scope): the run hands it its fds. The refill comes once the run ended,
 * and the engine hears of the run once, by its EXITED, so that neither the engine's wakeup nor
 * the refill's clone and the manager's scope work compete with the child and the plugin for a
 * CPU.
 * On the loop's thread when run_pool_submit() found a worker idle, else on the worker's.
 */
static void standby_release(Worker *w, RunRequest *req, uint64_t waited) {
        memcpy(req->unit, w->ready.unit, sizeof(w->ready.unit));
        w->oom = TAKE_PTR(w->ready.oom);
        w->waited = waited;
        w->released = true;
        w->rp.launched = launched;
        w->rp.launched_userdata = w;
        w->adopt_r = adopt(w, run_child_pidfd(w->ready.child), true);
        w->release_r = w->adopt_r < 0 ? 0 : run_child_release(w->ready.child, req->sandbox, &w->rp);
}

/*
 * The rest of a run on a child from the standby, on the worker's thread: the wait for its execve
 * and its end; EXITED is sent by this thread after the reap. 0 or a negative errno
 * (run_child_release()'s or run_child_finish()'s).
 */
static int standby_finish(Worker *w, RunRequest *req) {
        RunPool *p = w->pool;
        int r;

        if (w->adopt_r < 0) {
                standby_wake(p->standby);
                /* Stopped before its release: nothing of the plugin ran. */
                req->result = (RunResult){.outcome = RUN_PLUGIN_ERROR,
                                          .cause = RUN_CAUSE_SPAWN,
                                          .spawn_stage = SPAWN_STAGE_SCOPE,
                                          .spawn_errno = -w->adopt_r};
                r = 0;
        } else {
                r = w->release_r;
                if (r >= 0)
                        r = run_child_finish(w->ready.child, req->sandbox, &w->rp, &req->result);
                /* A child whose scope was still being made was waited for: that wait is the
                 * run's, reported as such (runner_run() does the same). */
                req->result.setup_usec += w->waited;
                req->result.scope_wait_usec = w->waited;
                /* Refused before the release (bad params, no pipe): the child was taken all the
                 * same, so its class is refilled. */
                if (!w->launched)
                        launched(w);
        }
        if (p->scope && req->scoped && r >= 0 && req->result.cause == RUN_CAUSE_SPAWN)
                /* Its child died unrun: the unit goes with it. */
                (void)scope_kill(p->scope, req->unit);
        return r;
}

static void run_one(Worker *w, RunRequest *req) {
        RunPool *p = w->pool;
        StandbyClass class = class_of(req->sandbox);
        uint64_t waited = 0;
        int r;

        pthread_mutex_lock(&p->lock);
        /* A child released already runs: a cancel reached it by its pidfd (adopt()). */
        r = req->cancelled && !w->released ? -ECANCELED : 0;
        pthread_mutex_unlock(&p->lock);
        if (r >= 0 && !w->has_params)
                r = params_init(w, req);
        if (r < 0) {
                req->error = r;
                goto done;
        }

        if (w->released)
                r = standby_finish(w, req);
        else if (p->standby && standby_take(p->standby, &class, p->cfg.scope_timeout_usec,
                                            &w->ready, &waited) >= 0) {
                standby_release(w, req, waited);
                r = standby_finish(w, req);
        } else {
                /* None ready (or no scopes): the child's scope is made now, in start_hook(). */
                if (p->scope)
                        unit_name(req->unit, sizeof(req->unit), p);
                r = runner_run(req->sandbox, &w->rp, &req->result);
        }
        if (r < 0)
                req->error = r;
        else if (req->scoped && req->result.cause == RUN_CAUSE_TIMEOUT)
                /* The plugin is dead already; the unit goes too, whatever it still holds. */
                (void)scope_kill(p->scope, req->unit);

done:
        pthread_mutex_lock(&p->lock);
        /*
         * Stopped before the plugin ran (start_hook() refused, or the child died of our SIGKILL
         * before its release): nothing of the plugin ran, so it is no plugin failure either.
         */
        if (r >= 0 && (p->stopping || req->cancelled) && req->result.cause == RUN_CAUSE_SPAWN)
                req->error = -ECANCELED;
        pthread_mutex_unlock(&p->lock);
}

/*
 * What the worker's run held, let go once its EXITED went out (worker_main()): the output pipes'
 * write ends, the child (its stack's munmap() costs a TLB shootdown across the CPUs), the pidfd,
 * the OOM watch's cgroup files, the uid. None of it changes the result, and a kill that comes
 * meanwhile still finds a pidfd, of a process that is gone.
 */
static void run_cleanup(Worker *w, RunRequest *req) {
        RunPool *p = w->pool;

        /*
         * The plugin's exit left our write ends the only ones: the engine's readers see EOF now,
         * right behind EXITED (it waits for both), instead of being woken by each pipe's end
         * while the plugin exits on their CPU.
         */
        req->stdout_fd = safe_close(req->stdout_fd);
        req->stderr_fd = safe_close(req->stderr_fd);
        req->detail_fd = safe_close(req->detail_fd);
        w->ready.child = run_child_free(w->ready.child);
        pthread_mutex_lock(&p->lock);
        w->pidfd = safe_close(w->pidfd);
        w->oom = oom_watch_free(w->oom);
        if (w->has_uid)
                uid_pool_release(&p->uids, w->uid);
        w->has_uid = w->has_params = w->released = false;
        pthread_mutex_unlock(&p->lock);
}

/* The next run for w, with the lock held: one handed to it, else the next queued one, else NULL
 * once the pool stops. Waits for either. */
static RunRequest *next_run(Worker *w) {
        RunPool *p = w->pool;

        for (;;) {
                if (w->handed)
                        return TAKE_PTR(w->handed); /* counted active and in w->req already */
                /* A req of its own already: run_pool_submit() is handing it over. */
                if (!w->req && p->n_queued > 0 && !p->stopping) {
                        RunRequest *req = dequeue(p);
                        w->req = req;
                        w->launched = false;
                        p->n_active++;
                        return req;
                }
                if (p->stopping && !w->req)
                        return NULL;
                w->idle = true;
                pthread_cond_wait(&w->wake, &p->lock);
                w->idle = false;
        }
}

static void *worker_main(void *userdata) {
        Worker *w = userdata;
        RunPool *p = w->pool;

        for (;;) {
                RunRequest *req;

                pthread_mutex_lock(&p->lock);
                req = next_run(w);
                pthread_mutex_unlock(&p->lock);
                if (!req)
                        return NULL;

                run_one(w, req);
                /* Before the loop hears of it, and before anything is let go: whoever waits for
                 * the result may hear at once. */
                if (req->ended)
                        req->ended(req, req->userdata);
                run_cleanup(w, req);
                /* Its child came from the standby: the loop refills it now, after the answer is
                 * on its way (in sporadic use the manager's work for the next scope would
                 * otherwise run beside the plugin; a burst raises the number kept ready). */
                if (w->launched)
                        standby_wake(p->standby);

                pthread_mutex_lock(&p->lock);
                w->req = NULL;
                p->n_active--;
                done_append(p, req);
                pthread_mutex_unlock(&p->lock);
        }
}

/* An idle worker, signalled: it is no longer idle for anyone else. Lock held; NULL if none. */
static Worker *idle_worker(RunPool *p) {
        for (unsigned i = 0; i < p->cfg.workers; i++) {
                Worker *w = &p->workers[i];

                /* A spurious wakeup may leave idle set on one being handed a run: not that one. */
                if (w->idle && !w->req)
                        return w;
        }
        return NULL;
}

/* Hands finished runs to their callbacks, on the loop's thread. */
static void deliver(RunPool *p) {
        RunRequest *list;

        pthread_mutex_lock(&p->lock);
        list = p->done_head;
        p->done_head = p->done_tail = NULL;
        pthread_mutex_unlock(&p->lock);
        while (list) {
                RunRequest *req = list;
                list = req->next;
                req->next = NULL;
                /* Counted until its callback runs, so the last callback sees an idle pool. */
                pthread_mutex_lock(&p->lock);
                p->n_undelivered--;
                pthread_mutex_unlock(&p->lock);
                req->done(req, req->userdata);
        }
}

static int on_done(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        RunPool *p = userdata;
        uint64_t n;

        (void)!read(fd, &n, sizeof(n));
        deliver(p);
        return 0;
}

int run_pool_new(sd_event *e, const RunPoolConfig *cfg, ScopeManager *scope, RunPool **ret) {
        RunPool *p;
        int r;

        if (!e || !cfg || !ret || cfg->workers == 0 || cfg->workers > 1024)
                return -EINVAL;
        /* Each worker holds one uid while it runs: fewer uids than workers would fail runs. */
        if (cfg->drop_to_uid &&
            (cfg->uid_last < cfg->uid_first || cfg->uid_last - cfg->uid_first < cfg->workers - 1))
                return -EINVAL;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->cfg = *cfg;
        p->cfg.slice = NULL;
        p->scope = scope;
        p->event = sd_event_ref(e);
        p->done_fd = -1;
        pthread_mutex_init(&p->lock, NULL);

        if (cfg->drop_to_uid) {
                r = uid_pool_init(&p->uids, cfg->uid_first, cfg->uid_last);
                if (r < 0)
                        goto fail;
        }
        if (scope) {
                r = cgroup_mounts_load(&p->cgroups);
                if (r < 0)
                        goto fail;
                if (cfg->slice) {
                        p->slice = strdup(cfg->slice);
                        if (!p->slice) {
                                r = -ENOMEM;
                                goto fail;
                        }
                }
                p->unit_seq = clock_boottime_usec();
                if (cfg->standby_max > 0) {
                        r = standby_new(e, scope, p->cgroups, p->slice, cfg->standby_max, unit_name,
                                        p, &p->standby);
                        if (r < 0)
                                goto fail;
                }
        }
        p->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (p->done_fd < 0) {
                r = negative_errno();
                goto fail;
        }
        r = sd_event_add_io(e, &p->done_source, p->done_fd, EPOLLIN, on_done, p);
        if (r < 0)
                goto fail;
        p->workers = calloc(cfg->workers, sizeof(Worker));
        if (!p->workers) {
                r = -ENOMEM;
                goto fail;
        }
        /* All of them first: run_pool_free() on failure looks at every worker's pidfd. */
        for (unsigned i = 0; i < cfg->workers; i++) {
                p->workers[i].pool = p;
                p->workers[i].pidfd = -1;
                pthread_cond_init(&p->workers[i].wake, NULL);
        }
        for (unsigned i = 0; i < cfg->workers; i++) {
                Worker *w = &p->workers[i];
                sigset_t all, saved;

                /* Workers never take signals: the loop's signalfd must see them all. */
                sigfillset(&all);
                pthread_sigmask(SIG_SETMASK, &all, &saved);
                r = -pthread_create(&w->thread, NULL, worker_main, w);
                pthread_sigmask(SIG_SETMASK, &saved, NULL);
                if (r < 0)
                        goto fail;
                w->started = true;
        }
        *ret = p;
        return 0;
fail:
        run_pool_free(p);
        return r;
}

void run_pool_kill_all(RunPool *p) {
        if (!p)
                return;
        /* No run comes any more: the children made ahead go too. */
        standby_flush(p->standby);
        pthread_mutex_lock(&p->lock);
        p->stopping = true;
        /* The queued runs never start; their callbacks run on the loop like any other's. */
        while (p->n_queued > 0) {
                RunRequest *req = dequeue(p);
                req->error = -ECANCELED;
                done_append(p, req);
        }
        for (unsigned i = 0; i < p->cfg.workers && p->workers; i++) {
                Worker *w = &p->workers[i];

                if (w->pidfd >= 0)
                        (void)syscall(__NR_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
                if (w->req && w->req->scoped)
                        (void)scope_kill(p->scope, w->req->unit);
        }
        for (unsigned i = 0; i < p->cfg.workers && p->workers; i++)
                pthread_cond_signal(&p->workers[i].wake);
        pthread_mutex_unlock(&p->lock);
}

bool run_pool_idle(RunPool *p) {
        bool idle;

        if (!p)
                return true;
        pthread_mutex_lock(&p->lock);
        idle = p->n_queued == 0 && p->n_active == 0 && p->n_undelivered == 0;
        pthread_mutex_unlock(&p->lock);
        return idle && standby_idle(p->standby);
}

void run_pool_kill(RunPool *p, uint64_t id) {
        if (!p || id == 0)
                return;
        pthread_mutex_lock(&p->lock);
        /* Queued: marked, and its worker ends it unrun when it comes up. */
        if (p->ring) {
                KeyQueue *q = p->ring;
                do {
                        for (RunRequest *r = q->head; r; r = r->next)
                                if (r->id == id)
                                        r->cancelled = true;
                        q = q->next;
                } while (q != p->ring);
        }
        for (unsigned i = 0; i < p->cfg.workers && p->workers; i++) {
                Worker *w = &p->workers[i];

                if (!w->req || w->req->id != id)
                        continue;
                w->req->cancelled = true;
                if (w->pidfd >= 0)
                        (void)syscall(__NR_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
                if (w->req->scoped)
                        (void)scope_kill(p->scope, w->req->unit);
        }
        pthread_mutex_unlock(&p->lock);
}

RunPool *run_pool_free(RunPool *p) {
        if (!p)
                return NULL;
        run_pool_kill_all(p);
        for (unsigned i = 0; p->workers && i < p->cfg.workers; i++)
                if (p->workers[i].started)
                        pthread_join(p->workers[i].thread, NULL);
        deliver(p);
        p->standby = standby_free(p->standby);
        for (unsigned i = 0; p->workers && i < p->cfg.workers; i++)
                pthread_cond_destroy(&p->workers[i].wake);
        free(p->workers);
        sd_event_source_disable_unref(p->done_source);
        safe_close(p->done_fd);
        if (p->cfg.drop_to_uid)
                uid_pool_done(&p->uids);
        cgroup_mounts_free(p->cgroups);
        free(p->slice);
        pthread_mutex_destroy(&p->lock);
        sd_event_unref(p->event);
        free(p);
        return NULL;
}

/*
 * With a worker idle and nothing queued, the run is that worker's at once, and a child of its class
 * that is ready gets its release here, on the loop's thread, before the worker even wakes: no
 * thread's wakeup (one that sleeps on an idle CPU costs far more than the release) stands between
 * the RUN and the child's way into the sandbox. The worker then waits for the execve and the end.
 */
static void hand(RunPool *p, Worker *w, RunRequest *req) {
        StandbyClass class = class_of(req->sandbox);

        if (params_init(w, req) >= 0 && standby_try_take(p->standby, &class, &w->ready) >= 0)
                standby_release(w, req, 0);
        pthread_mutex_lock(&p->lock);
        w->handed = req;
        pthread_mutex_unlock(&p->lock);
        /* After the unlock, so that the worker, woken, does not block on the lock first. */
        pthread_cond_signal(&w->wake);
}

int run_pool_submit(RunPool *p, RunRequest *req) {
        Worker *w = NULL, *wake = NULL;
        int r;

        if (!p || !req || !req->sandbox || !req->done || req->input_fd < 0)
                return -EINVAL;
        pthread_mutex_lock(&p->lock);
        if (p->stopping)
                r = -ESHUTDOWN;
        else if (p->n_queued >= p->cfg.queue_max)
                r = -EAGAIN;
        else if (p->n_queued == 0 && p->standby && (w = idle_worker(p))) {
                /* Nobody waits before it: handing it over keeps the keys' round-robin. */
                w->idle = false;
                w->req = req;
                w->launched = false;
                p->n_active++;
                r = 0;
        } else {
                r = enqueue(p, req);
                if (r == 0 && (wake = idle_worker(p)))
                        wake->idle = false;
        }
        pthread_mutex_unlock(&p->lock);
        if (wake)
                pthread_cond_signal(&wake->wake);
        if (w)
                hand(p, w, req);
        return r;
}

unsigned run_pool_n_active(const RunPool *p) {
        unsigned n;

        if (!p)
                return 0;
        pthread_mutex_lock((pthread_mutex_t *)&p->lock);
        n = p->n_active + p->n_undelivered;
        pthread_mutex_unlock((pthread_mutex_t *)&p->lock);
        return n;
}

unsigned run_pool_n_queued(const RunPool *p) {
        unsigned n;

        if (!p)
                return 0;
        pthread_mutex_lock((pthread_mutex_t *)&p->lock);
        n = p->n_queued;
        pthread_mutex_unlock((pthread_mutex_t *)&p->lock);
        return n;
}
