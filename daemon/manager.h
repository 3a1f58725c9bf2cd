/* The daemon's state: the event loop, the policy, the sockets, the plugin catalog, the scopes and
 * the runs. One Manager per lockd process; everything but the run workers lives on its loop. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "ratelimit.h"
#include "restart.h"
#include "varlink.h"

typedef struct Policy Policy;
typedef struct Roles Roles;
typedef struct Catalog Catalog;
typedef struct Marketplaces Marketplaces;
typedef struct SpawnerLink SpawnerLink;
typedef struct RunRequest RunRequest;
typedef struct Audit Audit;
typedef struct Handles Handles;
typedef struct Tickets Tickets;
typedef struct TicketWatch TicketWatch;
typedef struct BudgetStore BudgetStore;
typedef struct Sessions Sessions;
typedef struct AskQueue AskQueue;
typedef struct AnswerCache AnswerCache;
typedef struct HandleStore HandleStore;

typedef struct Manager {
        sd_event *event;
        Policy *policy;    /* the policy in force (replaced whole on a good reload) */
        char *policy_path; /* NULL: the compiled-in default */
        Roles *roles;      /* policy's role lists resolved to ids */
        int state_fd;      /* the state directory (O_DIRECTORY|O_PATH-less, for openat) */
        int spawner_fd;    /* the channel to the spawner until the link takes it */
        Catalog *catalog;  /* installed plugins, loaded and ready to run */
        Marketplaces *marketplaces;
        SpawnerLink *spawner;          /* the root process: runs and confinement checks */
        Audit *audit;                  /* the hash-chained audit log in the state directory */
        Handles *handles;              /* granted files, kept in the handle store */
        HandleStore *handle_store;     /* handles/ in the state directory */
        BudgetStore *budget;           /* per-content budgets and answers, under the state dir */
        AnswerCache *answers;          /* answers bound to typed values: memory only, by value */
        Tickets *tickets;              /* agents' plans, in memory only */
        TicketWatch *ticket_watches;   /* Wait and WatchTickets calls following tickets */
        struct Commit *commit;         /* the group commit and its writer threads */
        Sessions *sessions;            /* the humans' typed values, in locked memory only */
        AskQueue *ask;                 /* approved steps waiting for room in the run pool */
        VarlinkServer *varlink;
        uint64_t start_usec;  /* CLOCK_MONOTONIC */
        uint64_t status_usec; /* the last STATUS= after a run (notify_status()) */
        uint64_t runs_total;
        int landlock_abi;
        char **capabilities_kept; /* NULL-terminated names, for Status */
        int listen_fds[2]; /* agent, console: owned by the Varlink server, kept to tell them apart
                            */
        uint64_t run_seq;  /* the last run id (manager_run_name()) */
        RateLimit refusals; /* log lines about refused peers, per uid */
        RateLimit drops;    /* log lines about connections lockd closed for a cause, per uid */
        sd_event_source *trim;          /* malloc_trim() a second after a connection ends */
        RestartTickets restart_tickets; /* open when the last lockd stopped: ended as expired */
        bool stopping;
} Manager;

/* CLOCK_MONOTONIC in microseconds. */
uint64_t now_monotonic_usec(void);

/*
 * Reads and parses the policy at path (NULL: the compiled-in default). 0 or a negative errno
 * with a one-line reason ("path:line:col: E_POLICY_...: message") in why.
 */
int manager_load_policy(const char *path, Policy **ret, char *why, size_t why_len);

/* Gives freed heap memory back to the kernel a second from now, once for a burst. */
void manager_trim_soon(Manager *m);

/* Loads the policy; nothing else yet. Logs why it failed. */
int manager_new(const char *policy_path, Manager **ret);
/* Brings everything up in order and tells systemd READY=1. Logs why it failed. */
int manager_start(Manager *m);
/* Runs the loop until a stop finished. */
int manager_loop(Manager *m);
/* SIGHUP: a new policy replaces the old only when it parses and its roles resolve. */
int manager_reload(Manager *m);
/* SIGTERM: closes the sockets, kills the runs in flight, leaves the loop once they ended. */
void manager_stop(Manager *m);

/*
 * Names the next run: its id, which the spawner's replies carry (the scope's name is the
 * spawner's, and comes with STARTED). The numbers start at the boot-time clock's milliseconds
 * when lockd starts and grow by one per run: they tell nothing of the ticket.
 */
void manager_run_name(Manager *m, RunRequest *req);

/* The policy's scope.bus as scope_bus_open() takes it: "system", "user" or the address. */
const char *scope_bus_spec(const Policy *p);

/* Called by whoever consumed a finished run's result, on the loop. */
void manager_run_finished(Manager *m);
Manager *manager_free(Manager *m);
static inline void manager_freep(Manager **m) {
        if (*m)
                manager_free(*m);
}

/* Role bits, used as Varlink role masks. */
#define ROLE_MASK_AGENT   (1u << 0)
#define ROLE_MASK_CONSOLE (1u << 1)
