/* The engine's state: one Manager per lockd-engine process, which every part of the engine reads
 * (the api/ methods take it as userdata). manager.c brings it up and down (manager.h); each
 * field's object lives in a file of its own. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "ratelimit.h"
#include "restart.h"
#include "runs.h"
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
typedef struct Commit Commit;

typedef struct Manager {
        sd_event *event;
        Policy *policy;    /* the policy in force (replaced whole on a good reload) */
        char *policy_path; /* NULL: the compiled-in default */
        Roles *roles;      /* policy's role lists resolved to ids */
        int state_fd;      /* the state directory (O_DIRECTORY|O_PATH-less, for openat) */
        int spawner_fd;    /* the channel to the spawner until the link takes it */
        Catalog *catalog;  /* installed plugins, loaded and ready to run */
        Marketplaces *marketplaces;
        SpawnerLink *spawner;        /* the root process: runs and confinement checks */
        Audit *audit;                /* the hash-chained audit log in the state directory */
        Handles *handles;            /* granted files, kept in the handle store */
        HandleStore *handle_store;   /* handles/ in the state directory */
        BudgetStore *budget;         /* per-content budgets and answers, under the state dir */
        AnswerCache *answers;        /* answers bound to typed values: memory only, by value */
        Tickets *tickets;            /* agents' plans, in memory only */
        TicketWatch *ticket_watches; /* Wait and WatchTickets calls following tickets */
        Commit *commit;              /* the group commit and its writer threads */
        Sessions *sessions;          /* the humans' typed values, in locked memory only */
        AskQueue *ask;               /* approved steps waiting for room in the run pool */
        VarlinkServer *varlink;
        uint64_t start_usec;  /* CLOCK_MONOTONIC */
        uint64_t status_usec; /* the last STATUS= after a run (manager.c) */
        Runs runs;            /* run ids, and the count of runs ended (runs.h) */
        int landlock_abi;
        char **capabilities_kept; /* NULL-terminated names, for Status */
        int listen_fds[2];        /* agent, console: the server's, kept to tell them apart */
        RateLimit refusals;       /* log lines about refused peers, per uid */
        RateLimit drops;       /* log lines about connections lockd closed for a cause, per uid */
        sd_event_source *trim; /* malloc_trim() a second after a connection ends */
        RestartTickets restart_tickets; /* open when the last lockd stopped: ended as expired */
        bool stopping;
} Manager;

/* Whether the policy in force lets unsigned plugins be installed (allow_unsigned: true). In
 * engine.c alone, so that a test of the plugin methods can put a switch of its own in its place. */
bool manager_allow_unsigned(const Manager *m);
