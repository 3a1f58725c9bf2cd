/* One plugin run as the two processes pass it around: what the engine asks (the plugin's image,
 * the file, the inputs), and what comes back (the result, or how the plugin ended). The engine's
 * spawner link and the spawner's run pool both queue these (ARCHITECTURE.md, two processes). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "classify.h"
#include "plugin-image.h"

struct Sandbox;

typedef struct RunRequest RunRequest;

/* Called on the loop's thread once the run ended (or never started: req->error < 0). */
typedef void (*RunDoneFn)(RunRequest *req, void *userdata);

struct RunRequest {
        /* Set by the caller. */
        const PluginImage *image;      /* the engine's: what it sends; kept alive until done runs */
        const struct Sandbox *sandbox; /* the spawner's: built from the image; kept alive too */
        int input_fd;                  /* becomes fd 3; owned by the request, closed with it */
        char *inputs_json;             /* owned; NULL without inputs */
        size_t inputs_len;
        uint64_t fairness_key; /* runs are taken round-robin across keys (an agent's uid) */
        char unit[128];        /* the scope's unit name, set by the pool */
        RunDoneFn done;
        void *userdata;
        /*
         * Optional: called on the worker's thread as soon as a run it took ended (or never
         * started), before done is queued for the loop; it must touch nothing the loop owns
         * without a lock. Runs the pool cancels while still queued get done only.
         */
        void (*ended)(RunRequest *req, void *userdata);

        /* Set by the pool. */
        int error;   /* 0: result is valid; < 0: no plugin ran (-ECANCELED: the pool stopped) */
        bool scoped; /* it ran inside its scope */
        uid_t uid;   /* the ephemeral uid it runs as (0 without drop_to_uid) */
        RunResult result; /* spawn:scope when the scope could not be created: fail closed */

        /*
         * Set by the spawner for a run whose output the engine reads (runner.h, RunFds): then
         * the fds below are the child's, owned by the request (-1 when absent), and the pool
         * fills exit instead of classifying.
         */
        bool external;
        uint64_t id; /* the engine's run id: what run_pool_kill() names */
        int inputs_fd, stdout_fd, stderr_fd, detail_fd;
        RunExit exit;

        RunRequest *next;
        bool cancelled; /* run_pool_kill() came first: it never starts */
};

RunRequest *run_request_new(void);
RunRequest *run_request_free(RunRequest *req);
static inline void run_request_freep(RunRequest **r) {
        if (*r)
                run_request_free(*r);
}
