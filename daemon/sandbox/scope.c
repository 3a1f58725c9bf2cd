/* Transient systemd scopes for plugin runs: StartTransientUnit over sd-bus, on an sd-event loop. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-bus.h>

#include "macro.h"
#include "scope.h"

#define SCOPE_UNIT_MAX      255
#define SCOPE_JOB_TIMEOUT   (30 * 1000000ULL) /* a start job that has not ended by then failed */
#define SCOPE_QUEUE_MAX     4096              /* requests from other threads not yet taken */
#define SCOPE_DESCRIPTION   "lockd plugin run"
#define SYSTEMD_DEST        "org.freedesktop.systemd1"
#define SYSTEMD_PATH        "/org/freedesktop/systemd1"
#define SYSTEMD_MANAGER     "org.freedesktop.systemd1.Manager"
#define PRIVATE_SOCKET_PATH "/systemd/private"

/* One StartTransientUnit in flight, from the call until its job was removed. */
typedef struct Request {
        struct Request *prev, *next;
        ScopeManager *manager;
        char unit[SCOPE_UNIT_MAX + 1];
        ScopeDoneFn done;
        void *userdata;
        sd_bus_slot *call_slot;
        sd_event_source *timer;
        char *job;    /* the job path of the reply; NULL until it came */
        char *sender; /* who sent the reply: JobRemoved must come from the same peer */
        /* A JobRemoved for our unit that came before the reply named the job. */
        char *early_job;
        char *early_sender;
        int early_result;
} Request;

/* A blocked scope_start_wait(): shared by its thread and the loop, freed by the last user. */
typedef struct Waiter {
        unsigned n_ref; /* under the manager's mutex */
        bool finished, abandoned;
        int error;
        pthread_cond_t cond;
} Waiter;

typedef enum CommandKind {
        COMMAND_START,
        COMMAND_KILL,
} CommandKind;

/* A request handed from another thread to the loop's. */
typedef struct Command {
        struct Command *next;
        CommandKind kind;
        char unit[SCOPE_UNIT_MAX + 1];
        pid_t pid;
        ScopeLimits limits;
        Waiter *waiter; /* COMMAND_START */
} Command;

#define RECONNECT_MIN_USEC (100ULL * 1000)
#define RECONNECT_MAX_USEC (5ULL * 1000 * 1000)

struct ScopeManager {
        sd_event *event;
        sd_bus *bus;
        char *bus_spec;                    /* what ScopeConfig.bus named, to connect again */
        sd_event_source *reconnect_source; /* armed while the bus is gone */
        uint64_t reconnect_usec;           /* the next pause before trying again */
        ScopeConnectionFn connection_hook;
        void *connection_userdata;
        pthread_t thread; /* the thread of event */
        char *slice;
        uint64_t cpu_quota_usec;
        sd_bus_slot *job_removed_slot, *disconnected_slot;
        sd_event_source *wakeup_source;
        int wakeup_fd;
        Request *requests;
        unsigned n_kills; /* KillUnit and StopUnit calls not answered yet (this connection's) */

        pthread_mutex_t lock; /* protects the queue, and every Waiter */
        Command *queue_head, **queue_tail;
        unsigned n_queued;
};

bool scope_unit_name_valid(const char *unit) {
        static const char suffix[] = ".scope";
        size_t len;

        if (!unit)
                return false;
        len = strnlen(unit, SCOPE_UNIT_MAX + 1);
        if (len > SCOPE_UNIT_MAX || len <= strlen(suffix) ||
            strcmp(unit + len - strlen(suffix), suffix) != 0)
                return false;
        /* The manager would also take '@' and '\\'; a run's unit needs neither. */
        for (size_t i = 0; i < len; i++) {
                char c = unit[i];

                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == ':' || c == '_' || c == '.' || c == '-'))
                        return false;
        }
        return unit[0] != '.' && unit[0] != '-';
}

static bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}

static int strdup_or_null(const char *s, char **ret) {
        char *c = NULL;

        if (s) {
                c = strdup(s);
                if (!c)
                        return -ENOMEM;
        }
        *ret = c;
        return 0;
}

/* Ends a request: unlinks it, cancels its call and timer, then calls done (which may free more). */
static void request_finish(Request *q, int error) {
        ScopeManager *m = q->manager;
        ScopeDoneFn done = q->done;
        void *userdata = q->userdata;

        if (q->prev)
                q->prev->next = q->next;
        else
                m->requests = q->next;
        if (q->next)
                q->next->prev = q->prev;
        sd_bus_slot_unref(q->call_slot);
        sd_event_source_disable_unref(q->timer);
        free(q->job);
        free(q->sender);
        free(q->early_job);
        free(q->early_sender);
        free(q);
        done(error, userdata);
}

static int job_result_to_error(const char *result) {
        /* "done" is the only success; "canceled", "timeout", "failed", "dependency", "skipped"...
         */
        return strcmp(result, "done") == 0 ? 0 : -EIO;
}

static int on_start_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Request *q = userdata;
        const char *job;
        int r;

        q->call_slot = sd_bus_slot_unref(q->call_slot);
        if (sd_bus_message_is_method_error(reply, NULL)) {
                /* A connection that closes answers every call in flight with a NoReply error of
                 * its own making (ETIMEDOUT): the cause is the drop, and the run's says so. */
                if (sd_bus_message_is_method_error(reply, SD_BUS_ERROR_NO_REPLY) &&
                    sd_bus_is_open(sd_bus_message_get_bus(reply)) <= 0)
                        r = ECONNRESET;
                else
                        r = sd_bus_message_get_errno(reply);
                request_finish(q, r > 0 ? -r : -EIO);
                return 0;
        }
        r = sd_bus_message_read(reply, "o", &job);
        if (r < 0) {
                request_finish(q, -EBADMSG);
                return 0;
        }
        r = strdup_or_null(job, &q->job);
        if (r >= 0)
                r = strdup_or_null(sd_bus_message_get_sender(reply), &q->sender);
        if (r < 0) {
                request_finish(q, r);
                return 0;
        }
        /* The job may have ended before its reply reached us (JobRemoved is sent first). */
        if (q->early_job && strcmp(q->early_job, q->job) == 0 &&
            streq_ptr(q->early_sender, q->sender))
                request_finish(q, q->early_result);
        return 0;
}

/*
 * JobRemoved(u id, o job, s unit, s result). Security: on a shared bus any peer may emit a signal
 * with this path and interface, and a forged "done" would let a plugin run outside its limits. The
 * match asks the broker for systemd's name, and a job only counts when the signal came from the
 * very peer that answered StartTransientUnit with that job path (on a direct connection to the
 * manager there is no sender at all, and no one else on the socket).
 */
static int on_job_removed(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        ScopeManager *m = userdata;
        const char *job, *unit, *result, *sender = sd_bus_message_get_sender(msg);
        uint32_t id;

        if (sd_bus_message_read(msg, "uoss", &id, &job, &unit, &result) < 0)
                return 0;
        for (Request *q = m->requests, *next; q; q = next) {
                next = q->next;
                if (q->job) {
                        if (strcmp(q->job, job) == 0 && streq_ptr(q->sender, sender)) {
                                request_finish(q, job_result_to_error(result));
                                return 0;
                        }
                } else if (strcmp(q->unit, unit) == 0) {
                        /* Remembered by job path until the reply says whether it is ours. */
                        char *j = strdup(job), *s = NULL;

                        if (!j || strdup_or_null(sender, &s) < 0) {
                                free(j);
                                continue; /* the request times out rather than guess */
                        }
                        free(q->early_job);
                        free(q->early_sender);
                        q->early_job = j;
                        q->early_sender = s;
                        q->early_result = job_result_to_error(result);
                }
        }
        return 0;
}

/* The manager went away: no JobRemoved will ever come, so every request fails now. */
static int on_reconnect(sd_event_source *s, uint64_t usec, void *userdata);

static int on_disconnected(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        ScopeManager *m = userdata;

        /* Runs whose scopes were being made fail closed (spawn:scope). The manager went away
         * (a daemon-reexec, a restart): lockd connects again, from the loop, not from inside
         * this bus's own callback. */
        while (m->requests)
                request_finish(m->requests, -ECONNRESET);
        if (m->connection_hook)
                m->connection_hook(SCOPE_CONNECTION_LOST, 0, m->connection_userdata);
        if (!m->reconnect_source &&
            sd_event_add_time_relative(m->event, &m->reconnect_source, CLOCK_MONOTONIC,
                                       RECONNECT_MIN_USEC, 10 * 1000, on_reconnect, m) >= 0)
                (void)sd_event_source_set_enabled(m->reconnect_source, SD_EVENT_ONESHOT);
        else if (m->reconnect_source) {
                (void)sd_event_source_set_time_relative(m->reconnect_source, m->reconnect_usec);
                (void)sd_event_source_set_enabled(m->reconnect_source, SD_EVENT_ONESHOT);
        }
        return 0;
}

static int on_request_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        request_finish(userdata, -ETIMEDOUT);
        return 0;
}

static int append_property_u64(sd_bus_message *msg, const char *name, uint64_t value) {
        return sd_bus_message_append(msg, "(sv)", name, "t", value);
}

/*
 * The transient unit's properties: ARCHITECTURE.md's limits (scopes) and its own garbage
 * collection. PIDs= is a number (systemd 252 has no PIDFDs=): safe because the caller's pid is its
 * own child, not yet reaped, so the number cannot name another process until the run is over.
 */
static int append_properties(ScopeManager *m, sd_bus_message *msg, pid_t pid,
                             const ScopeLimits *lim) {
        int r;

        r = sd_bus_message_open_container(msg, 'a', "(sv)");
        if (r < 0)
                return r;
        r = sd_bus_message_append(msg, "(sv)(sv)(sv)", "Description", "s", SCOPE_DESCRIPTION,
                                  "PIDs", "au", 1, (uint32_t)pid, "CollectMode", "s",
                                  "inactive-or-failed");
        if (r >= 0 && m->slice)
                r = sd_bus_message_append(msg, "(sv)", "Slice", "s", m->slice);
        if (r >= 0 && lim->memory_max > 0)
                r = append_property_u64(msg, "MemoryMax", lim->memory_max);
        if (r >= 0 && lim->tasks_max > 0)
                r = append_property_u64(msg, "TasksMax", lim->tasks_max);
        if (r >= 0 && lim->runtime_max_usec > 0)
                r = append_property_u64(msg, "RuntimeMaxUSec", lim->runtime_max_usec);
        if (r >= 0 && m->cpu_quota_usec > 0)
                r = append_property_u64(msg, "CPUQuotaPerSecUSec", m->cpu_quota_usec);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(msg);
        if (r < 0)
                return r;
        /* No auxiliary units. */
        return sd_bus_message_append(msg, "a(sa(sv))", 0);
}

int scope_start_async(ScopeManager *m, const char *unit, pid_t pid, const ScopeLimits *lim,
                      ScopeDoneFn done, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        Request *q;
        int r;

        if (!m || !lim || !done || pid <= 1 || !scope_unit_name_valid(unit))
                return -EINVAL;

        r = sd_bus_message_new_method_call(m->bus, &msg, SYSTEMD_DEST, SYSTEMD_PATH,
                                           SYSTEMD_MANAGER, "StartTransientUnit");
        if (r < 0)
                return r;
        r = sd_bus_message_append(msg, "ss", unit, "fail");
        if (r < 0)
                return r;
        r = append_properties(m, msg, pid, lim);
        if (r < 0)
                return r;

        q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        q->manager = m;
        strcpy(q->unit, unit); /* length checked by scope_unit_name_valid() */
        q->done = done;
        q->userdata = userdata;
        r = sd_event_add_time_relative(m->event, &q->timer, CLOCK_MONOTONIC, SCOPE_JOB_TIMEOUT, 0,
                                       on_request_timeout, q);
        if (r >= 0)
                r = sd_bus_call_async(m->bus, &q->call_slot, msg, on_start_reply, q, 0);
        if (r < 0) {
                sd_event_source_disable_unref(q->timer);
                free(q);
                return r;
        }
        q->next = m->requests;
        if (q->next)
                q->next->prev = q;
        m->requests = q;
        return 0;
}

/* A KillUnit's or StopUnit's answer (an error too: a unit gone already needs nothing more). */
static int on_kill_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        ScopeManager *m = userdata;

        if (m->n_kills > 0)
                m->n_kills--;
        return 0;
}

/* Sends KillUnit(unit, "all", SIGKILL) and StopUnit(unit, "replace"); their answers are counted
 * down in n_kills, so that scope_manager_idle() can tell when the manager has both. */
static int kill_now(ScopeManager *m, const char *unit) {
        int r;

        if (!m->bus)
                return -ENOTCONN;
        r = sd_bus_call_method_async(m->bus, NULL, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                     "KillUnit", on_kill_reply, m, "ssi", unit, "all", SIGKILL);
        if (r < 0)
                return r;
        m->n_kills++;
        r = sd_bus_call_method_async(m->bus, NULL, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                     "StopUnit", on_kill_reply, m, "ss", unit, "replace");
        if (r < 0)
                return r;
        m->n_kills++;
        return 0;
}

int scope_kill_stale(ScopeManager *m, const char *pattern, unsigned *ret_n) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *req = NULL, *reply = NULL;
        const char *name;
        unsigned n = 0;
        int r;

        if (!m || !pattern)
                return -EINVAL;
        r = sd_bus_message_new_method_call(m->bus, &req, SYSTEMD_DEST, SYSTEMD_PATH,
                                           SYSTEMD_MANAGER, "ListUnitsByPatterns");
        if (r < 0)
                return r;
        r = sd_bus_message_append_strv(req, (char *[]){NULL});
        if (r >= 0)
                r = sd_bus_message_append_strv(req, (char *[]){(char *)pattern, NULL});
        if (r < 0)
                return r;
        r = sd_bus_call(m->bus, req, 30 * 1000000ULL, &error, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "(ssssssouso)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, "(ssssssouso)", &name, NULL, NULL, NULL, NULL, NULL,
                                        NULL, NULL, NULL, NULL)) > 0) {
                /* Only our own kind of unit, whatever the manager's globbing matched. */
                if (!scope_unit_name_valid(name))
                        continue;
                r = kill_now(m, name);
                if (r < 0)
                        return r;
                n++;
        }
        if (r < 0)
                return r;
        /* The kills are queued; a flush sends them before lockd goes on. */
        r = sd_bus_flush(m->bus);
        if (r < 0)
                return r;
        if (ret_n)
                *ret_n = n;
        return 0;
}

/* Drops one reference to w; the caller holds m->lock. */
static void waiter_unref_locked(Waiter *w) {
        if (--w->n_ref > 0)
                return;
        pthread_cond_destroy(&w->cond);
        free(w);
}

static void waiter_finish(ScopeManager *m, Waiter *w, int error) {
        pthread_mutex_lock(&m->lock);
        w->finished = true;
        w->error = error;
        pthread_cond_signal(&w->cond);
        waiter_unref_locked(w);
        pthread_mutex_unlock(&m->lock);
}

typedef struct WaiterDone {
        ScopeManager *manager;
        Waiter *waiter;
} WaiterDone;

static void on_waiter_done(int error, void *userdata) {
        WaiterDone *d = userdata;

        waiter_finish(d->manager, d->waiter, error);
        free(d);
}

/* Runs one command from another thread on the loop's thread. */
static void command_run(ScopeManager *m, Command *c) {
        WaiterDone *d;
        bool abandoned;
        int r;

        if (c->kind == COMMAND_KILL) {
                (void)kill_now(m, c->unit);
                return;
        }
        pthread_mutex_lock(&m->lock);
        abandoned = c->waiter->abandoned;
        pthread_mutex_unlock(&m->lock);
        if (abandoned) {
                /* The caller gave up already: its child ends without ever needing the scope. */
                waiter_finish(m, c->waiter, -ETIMEDOUT);
                return;
        }
        d = malloc(sizeof(*d));
        if (!d) {
                waiter_finish(m, c->waiter, -ENOMEM);
                return;
        }
        *d = (WaiterDone){.manager = m, .waiter = c->waiter};
        r = scope_start_async(m, c->unit, c->pid, &c->limits, on_waiter_done, d);
        if (r < 0) {
                free(d);
                waiter_finish(m, c->waiter, r);
        }
}

/* Takes the whole queue under the lock, then runs it without holding the lock. */
static int on_wakeup(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ScopeManager *m = userdata;
        uint64_t counter;
        Command *c;

        /* Resets the eventfd. A failed read (EAGAIN: another wakeup took it) changes nothing: the
         * queue is taken below either way. */
        ssize_t k = read(m->wakeup_fd, &counter, sizeof(counter));
        (void)k;
        pthread_mutex_lock(&m->lock);
        c = m->queue_head;
        m->queue_head = NULL;
        m->queue_tail = &m->queue_head;
        m->n_queued = 0;
        pthread_mutex_unlock(&m->lock);
        while (c) {
                Command *next = c->next;

                command_run(m, c);
                free(c);
                c = next;
        }
        return 0;
}

/* Queues c for the loop's thread and wakes it; takes c. */
static int command_post(ScopeManager *m, Command *c) {
        static const uint64_t one = 1;

        pthread_mutex_lock(&m->lock);
        if (m->n_queued >= SCOPE_QUEUE_MAX) {
                pthread_mutex_unlock(&m->lock);
                free(c);
                return -EBUSY;
        }
        *m->queue_tail = c;
        m->queue_tail = &c->next;
        m->n_queued++;
        pthread_mutex_unlock(&m->lock);
        /* An eventfd write only fails when the counter would overflow: the loop is woken anyway. */
        if (write(m->wakeup_fd, &one, sizeof(one)) < 0)
                return 0;
        return 0;
}

int scope_start_wait(ScopeManager *m, const char *unit, pid_t pid, const ScopeLimits *lim,
                     uint64_t timeout_usec) {
        pthread_condattr_t attr;
        struct timespec deadline;
        Command *c;
        Waiter *w;
        int r;

        if (!m || !lim || pid <= 1 || !scope_unit_name_valid(unit))
                return -EINVAL;
        if (pthread_equal(pthread_self(), m->thread))
                return -EDEADLK; /* the loop cannot run while its own thread waits for it */

        c = calloc(1, sizeof(*c));
        w = calloc(1, sizeof(*w));
        if (!c || !w) {
                free(c);
                free(w);
                return -ENOMEM;
        }
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        r = pthread_cond_init(&w->cond, &attr);
        pthread_condattr_destroy(&attr);
        if (r != 0) {
                free(c);
                free(w);
                return -r;
        }
        w->n_ref = 2; /* ours and the loop's */
        c->kind = COMMAND_START;
        strcpy(c->unit, unit);
        c->pid = pid;
        c->limits = *lim;
        c->waiter = w;

        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += (time_t)(timeout_usec / 1000000);
        deadline.tv_nsec += (long)(timeout_usec % 1000000) * 1000;
        if (deadline.tv_nsec >= 1000000000L) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000L;
        }

        r = command_post(m, c);
        if (r < 0) {
                pthread_cond_destroy(&w->cond);
                free(w);
                return r;
        }
        pthread_mutex_lock(&m->lock);
        while (!w->finished) {
                int k = pthread_cond_timedwait(&w->cond, &m->lock, &deadline);

                if (k == ETIMEDOUT && !w->finished) {
                        w->abandoned = true;
                        break;
                }
        }
        r = w->finished ? w->error : -ETIMEDOUT;
        waiter_unref_locked(w);
        pthread_mutex_unlock(&m->lock);
        return r;
}

int scope_kill(ScopeManager *m, const char *unit) {
        Command *c;

        if (!m || !scope_unit_name_valid(unit))
                return -EINVAL;
        if (pthread_equal(pthread_self(), m->thread))
                return kill_now(m, unit);
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->kind = COMMAND_KILL;
        strcpy(c->unit, unit);
        return command_post(m, c);
}

void scope_manager_set_connection_hook(ScopeManager *m, ScopeConnectionFn fn, void *userdata) {
        if (!m)
                return;
        m->connection_hook = fn;
        m->connection_userdata = userdata;
}

sd_bus *scope_manager_bus(ScopeManager *m) {
        return m ? m->bus : NULL;
}

bool scope_manager_idle(ScopeManager *m) {
        bool queued;

        if (!m)
                return true;
        pthread_mutex_lock(&m->lock);
        queued = m->queue_head != NULL;
        pthread_mutex_unlock(&m->lock);
        return !queued && !m->requests && m->n_kills == 0;
}

/* A direct connection to a manager's private socket at address (no broker, no Hello). */
static int bus_open_address(const char *address, bool bus_client, sd_bus **ret) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        r = sd_bus_new(&bus);
        if (r < 0)
                return r;
        r = sd_bus_set_address(bus, address);
        if (r < 0)
                return r;
        r = sd_bus_set_bus_client(bus, bus_client);
        if (r < 0)
                return r;
        r = sd_bus_start(bus);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(bus);
        return 0;
}

/*
 * "system", "user" (the private socket under $XDG_RUNTIME_DIR as `systemctl --user` uses it as
 * root, else the user's bus), or an address: one ending in the manager's private socket is a
 * direct connection, any other a broker's bus.
 */
int scope_bus_open(const char *spec, sd_bus **ret) {
        if (strcmp(spec, "system") == 0)
                return sd_bus_open_system(ret);
        if (strcmp(spec, "user") == 0) {
                const char *runtime = getenv("XDG_RUNTIME_DIR");
                _cleanup_free_ char *address = NULL;
                struct stat st;

                if (runtime && runtime[0] == '/' &&
                    asprintf(&address, "unix:path=%s" PRIVATE_SOCKET_PATH, runtime) >= 0 &&
                    stat(address + strlen("unix:path="), &st) == 0 && S_ISSOCK(st.st_mode))
                        return bus_open_address(address, false, ret);
                return sd_bus_open_user(ret);
        }
        if (strncmp(spec, "unix:", 5) != 0 && strncmp(spec, "unixexec:", 9) != 0)
                return -EINVAL;
        size_t len = strlen(spec), tail = strlen(PRIVATE_SOCKET_PATH);
        bool direct = len > tail && strcmp(spec + len - tail, PRIVATE_SOCKET_PATH) == 0;
        return bus_open_address(spec, !direct, ret);
}

static int on_disconnected(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);

/* Connects to the manager and listens for what the scopes need (not yet attached to the loop). */
static int bus_connect(ScopeManager *m) {
        const char *sender;
        int r;

        r = scope_bus_open(m->bus_spec, &m->bus);
        if (r < 0)
                return r;
        /* A broker delivers only what the match names; on a direct socket only the manager talks.
         */
        sender = sd_bus_is_bus_client(m->bus) > 0 ? SYSTEMD_DEST : NULL;
        r = sd_bus_match_signal(m->bus, &m->job_removed_slot, sender, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                "JobRemoved", on_job_removed, m);
        if (r < 0)
                return r;
        r = sd_bus_match_signal(m->bus, &m->disconnected_slot, NULL, "/org/freedesktop/DBus/Local",
                                "org.freedesktop.DBus.Local", "Disconnected", on_disconnected, m);
        if (r < 0)
                return r;
        /*
         * No Subscribe(): the manager sends a job's JobRemoved to whoever asked for the job (it
         * tracks the sender of StartTransientUnit), and to a direct connection in any case. A
         * subscriber makes it build and send a change signal for every state change of every unit
         * as well: through a broker, that cost the manager 0.18-0.31 ms and the broker 0.17-0.20
         * ms more per scope, for signals lockd never reads (ARCHITECTURE.md, Scopes). A ping
         * still tells now, not at the first run, whether the manager answers at all.
         */
        return sd_bus_call_method(m->bus, SYSTEMD_DEST, SYSTEMD_PATH, "org.freedesktop.DBus.Peer",
                                  "Ping", NULL, NULL, NULL);
}

int scope_manager_new(sd_event *e, const ScopeConfig *cfg, ScopeManager **ret) {
        _cleanup_(scope_manager_freep) ScopeManager *m = NULL;
        int r;

        if (!e || !cfg || !cfg->bus || !ret)
                return -EINVAL;
        if (cfg->slice &&
            !(strlen(cfg->slice) > 6 && strcmp(cfg->slice + strlen(cfg->slice) - 6, ".slice") == 0))
                return -EINVAL;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->wakeup_fd = -1;
        m->queue_tail = &m->queue_head;
        pthread_mutex_init(&m->lock, NULL);
        m->event = sd_event_ref(e);
        m->thread = pthread_self();
        m->cpu_quota_usec = cfg->cpu_quota_usec;
        m->reconnect_usec = RECONNECT_MIN_USEC;
        if (cfg->slice && cfg->slice[0]) {
                m->slice = strdup(cfg->slice);
                if (!m->slice)
                        return -ENOMEM;
        }

        m->bus_spec = strdup(cfg->bus);
        if (!m->bus_spec)
                return -ENOMEM;
        r = bus_connect(m);
        if (r < 0)
                return r;

        m->wakeup_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (m->wakeup_fd < 0)
                return negative_errno();
        r = sd_event_add_io(e, &m->wakeup_source, m->wakeup_fd, EPOLLIN, on_wakeup, m);
        if (r < 0)
                return r;
        r = sd_bus_attach_event(m->bus, e, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

/* Drops the bus and what hangs on it (its slots). */
static void bus_drop(ScopeManager *m) {
        m->job_removed_slot = sd_bus_slot_unref(m->job_removed_slot);
        m->disconnected_slot = sd_bus_slot_unref(m->disconnected_slot);
        if (m->bus) {
                sd_bus_detach_event(m->bus);
                m->bus = sd_bus_flush_close_unref(m->bus);
        }
        /* Their answers cannot come any more: nothing to wait for. */
        m->n_kills = 0;
}

/* A new connection to the manager after the old one dropped: tried again with a growing pause
 * (up to RECONNECT_MAX_USEC) until it works. Runs meanwhile fail closed (spawn:scope). */
static int on_reconnect(sd_event_source *s, uint64_t usec, void *userdata) {
        ScopeManager *m = userdata;
        int r;

        bus_drop(m);
        r = bus_connect(m);
        if (r >= 0)
                r = sd_bus_attach_event(m->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0) {
                bus_drop(m);
                m->reconnect_usec = m->reconnect_usec * 2 > RECONNECT_MAX_USEC
                                            ? RECONNECT_MAX_USEC
                                            : m->reconnect_usec * 2;
                (void)sd_event_source_set_time_relative(m->reconnect_source, m->reconnect_usec);
                (void)sd_event_source_set_enabled(m->reconnect_source, SD_EVENT_ONESHOT);
                if (m->connection_hook)
                        m->connection_hook(SCOPE_CONNECTION_RETRY, r, m->connection_userdata);
                return 0;
        }
        m->reconnect_usec = RECONNECT_MIN_USEC;
        if (m->connection_hook)
                m->connection_hook(SCOPE_CONNECTION_BACK, 0, m->connection_userdata);
        return 0;
}

/*
 * Every request still in flight ends with -ECANCELED (its done is called now), every queued
 * scope_start_wait() returns -ECANCELED, and queued kills are still sent before the connection
 * is flushed and closed. No other thread may start a new call once this began.
 */
ScopeManager *scope_manager_free(ScopeManager *m) {
        if (!m)
                return NULL;
        while (m->requests)
                request_finish(m->requests, -ECANCELED);
        for (Command *c = m->queue_head, *next; c; c = next) {
                next = c->next;
                if (c->kind == COMMAND_START)
                        waiter_finish(m, c->waiter, -ECANCELED);
                else
                        (void)kill_now(m, c->unit); /* sent by the flush below */
                free(c);
        }
        sd_bus_slot_unref(m->job_removed_slot);
        sd_bus_slot_unref(m->disconnected_slot);
        sd_event_source_disable_unref(m->reconnect_source);
        free(m->bus_spec);
        sd_event_source_disable_unref(m->wakeup_source);
        safe_close(m->wakeup_fd);
        if (m->bus) {
                sd_bus_detach_event(m->bus);
                sd_bus_flush_close_unref(m->bus);
        }
        sd_event_unref(m->event);
        free(m->slice);
        pthread_mutex_destroy(&m->lock);
        free(m);
        return NULL;
}
