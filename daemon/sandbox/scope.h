/* Transient systemd scopes for plugin runs (ARCHITECTURE.md, scopes): created asynchronously over
 * sd-bus on the daemon's event loop, with the run's limits, and killed with the run on timeout. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

typedef struct ScopeManager ScopeManager;

typedef struct ScopeConfig {
        /* "system" (the system bus), "user" (the calling user's manager: its private socket
         * $XDG_RUNTIME_DIR/systemd/private, else the user bus), or a D-Bus address such as
         * "unix:path=/run/user/1000/systemd/private". */
        const char *bus;
        const char *slice;       /* "lockd-plugins.slice" */
        uint64_t cpu_quota_usec; /* CPUQuotaPerSecUSec; 0 = none */
} ScopeConfig;

typedef struct ScopeLimits {
        uint64_t memory_max;       /* MemoryMax= bytes */
        uint64_t tasks_max;        /* TasksMax= */
        uint64_t runtime_max_usec; /* RuntimeMaxUSec=, the backstop behind lockd's own timeout */
} ScopeLimits;

/*
 * Connects to the manager named by cfg (copied), listens for its JobRemoved signals, attaches to
 * e. 0 or a negative errno (-ECONNREFUSED, -ENOENT: no manager there). Must be used from e's
 * thread, except scope_start_wait() and scope_kill().
 */
int scope_manager_new(sd_event *e, const ScopeConfig *cfg, ScopeManager **ret);
ScopeManager *scope_manager_free(ScopeManager *m);
static inline void scope_manager_freep(ScopeManager **m) {
        if (*m)
                scope_manager_free(*m);
}

/* "lockd-run-<a>-<b>.scope" style names: only [A-Za-z0-9:_.\-], at most 255 bytes. */
bool scope_unit_name_valid(const char *unit);

/*
 * Asks the manager for a transient scope named unit holding pid, in the configured slice, with
 * lim, CollectMode=inactive-or-failed, and calls done(error, userdata) on e's thread once the
 * start job finished: 0 when the scope is running with pid in it, a negative errno otherwise
 * (-EIO a failed job, the D-Bus error's errno). Many may be in flight. 0 or a negative errno
 * (then done is never called).
 */
typedef void (*ScopeDoneFn)(int error, void *userdata);
int scope_start_async(ScopeManager *m, const char *unit, pid_t pid, const ScopeLimits *lim,
                      ScopeDoneFn done, void *userdata);

/*
 * The same from any other thread: hands the request to e's thread and blocks until the job
 * finished or timeout_usec passed (-ETIMEDOUT). 0 when pid is in the running scope.
 */
int scope_start_wait(ScopeManager *m, const char *unit, pid_t pid, const ScopeLimits *lim,
                     uint64_t timeout_usec);

/* Kills every process of the unit with SIGKILL and stops it; from any thread, not waiting. */
int scope_kill(ScopeManager *m, const char *unit);

/*
 * Kills and stops every unit the manager knows whose name matches pattern ("lockd-run-*.scope"):
 * runs left by a lockd that died without its SIGTERM path. Synchronous; call it on e's thread
 * before any run starts. 0 with *ret_n the number of units killed, or a negative errno.
 */
int scope_kill_stale(ScopeManager *m, const char *pattern, unsigned *ret_n);

/*
 * Opens spec as ScopeConfig.bus names it ("system", "user", or a D-Bus address; a manager's
 * private socket is a direct connection). 0 or a negative errno. For lockctl agent run too, which
 * starts agents in the manager lockd uses.
 */
int scope_bus_open(const char *spec, sd_bus **ret);

/* What happened to the connection to the manager: it dropped (runs being set up failed
 * closed), a new connection failed (error; tried again later, up to every 5 s), it is back. */
typedef enum ScopeConnection {
        SCOPE_CONNECTION_LOST,
        SCOPE_CONNECTION_RETRY,
        SCOPE_CONNECTION_BACK,
} ScopeConnection;
typedef void (*ScopeConnectionFn)(ScopeConnection what, int error, void *userdata);

/* Tells fn (on the loop) what happens to the connection, for the log. NULL: nothing. */
void scope_manager_set_connection_hook(ScopeManager *m, ScopeConnectionFn fn, void *userdata);

/* The bus to the manager (borrowed), for other questions lockd asks it on the same loop. The
 * manager may go away (a daemon-reexec): the connection is then made again, and this returns
 * the new one; a question on the old one fails. */
sd_bus *scope_manager_bus(ScopeManager *m);

/*
 * Whether the manager has answered everything sent or queued to it: no start waits for its job,
 * no command waits for the loop, no KillUnit or StopUnit for its reply. A lockd on its way out
 * serves the bus until this holds (ARCHITECTURE.md, "The way out"), so that every scope it started
 * is known and stopped. Loop's thread.
 */
bool scope_manager_idle(ScopeManager *m);
