/* The spawner: the root side of lockd. It serves the engine's closed table of fixed-size requests
 * (spawner-proto.h) on their SOCK_SEQPACKET pair: it builds each plugin's sandbox itself, runs it
 * in its scope under an ephemeral uid, and answers with fixed structs (ARCHITECTURE.md). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "runpool.h"
#include "scope.h"

typedef struct Spawner Spawner;

typedef struct SpawnerConfig {
        RunPoolConfig pool; /* workers, queue, uid range, scope wait, slice */
        int landlock_abi;
} SpawnerConfig;

/*
 * Serves the engine on fd (the spawner's end of the pair, taken over) whose process is
 * engine_pid. scope may be NULL (scope.backend none). On any malformed or out-of-order request,
 * and at EOF, it logs, kills every run and ends e's loop with sd_event_exit(1) (EOF after a STOP:
 * 0). 0 or a negative errno.
 */
int spawner_new(sd_event *e, const SpawnerConfig *cfg, ScopeManager *scope, int fd,
                pid_t engine_pid, Spawner **ret);

/* Kills every run (their EXITED are not sent any more) and frees the spawner. */
Spawner *spawner_free(Spawner *s);
static inline void spawner_freep(Spawner **s) {
        if (*s)
                spawner_free(*s);
}

/* Whether the engine said HELLO: it is up (the point at which lockd is ready). */
bool spawner_engine_ready(const Spawner *s);

/* Runs in flight (received, not yet answered). */
unsigned spawner_n_runs(const Spawner *s);
