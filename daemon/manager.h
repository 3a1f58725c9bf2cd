/* The daemon's state: the event loop, the policy, the sockets, the plugin catalog, the scopes and
 * the runs. One Manager per lockd process; everything but the run workers lives on its loop. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "varlink.h"

typedef struct Policy Policy;
typedef struct Roles Roles;
typedef struct Catalog Catalog;
typedef struct Marketplaces Marketplaces;
typedef struct ScopeManager ScopeManager;
typedef struct RunPool RunPool;

typedef struct Manager {
        sd_event *event;
        Policy *policy;       /* the policy in force (replaced whole on a good reload) */
        char *policy_path;    /* NULL: the compiled-in default */
        Roles *roles;         /* policy's role lists resolved to ids */
        int state_fd;         /* the state directory (O_DIRECTORY|O_PATH-less, for openat) */
        int runtime_fd;       /* the runtime directory */
        Catalog *catalog;     /* installed plugins, loaded and ready to run */
        Marketplaces *marketplaces;
        ScopeManager *scope;  /* NULL with scope.backend none */
        RunPool *runs;
        VarlinkServer *varlink;
        uint64_t start_usec;  /* CLOCK_MONOTONIC */
        uint64_t runs_total;
        int landlock_abi;
        char **capabilities_kept; /* NULL-terminated names, for Status */
        bool stopping;
} Manager;

/* Role bits, used as Varlink role masks. */
#define ROLE_MASK_AGENT   (1u << 0)
#define ROLE_MASK_CONSOLE (1u << 1)
