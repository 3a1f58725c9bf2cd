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

/*
 * Watches the engine's pidfd (borrowed: it must stay open while s lives): when the engine dies
 * the spawner ends as at EOF, whoever still holds the channel, and the log says how it ended.
 * 0 or a negative errno.
 */
int spawner_watch_engine(Spawner *s, int pidfd);

/* Kills every run (their EXITED are not sent any more) and frees the spawner. */
Spawner *spawner_free(Spawner *s);
static inline void spawner_freep(Spawner **s) {
        if (*s)
                spawner_free(*s);
}

/*
 * The spawner's fds (RLIMIT_NOFILE) for workers run workers (limits.concurrent_runs) and
 * standby_max children made ahead per limit class, counted, not guessed (ARCHITECTURE.md, two
 * processes): SPAWNER_NOFILE_BASE for the loop, the bus and the journal; a datagram's fds while
 * received; a pidfd per confinement check in flight; SPAWNER_NOFILE_PER_QUEUED_RUN for each run
 * it may hold (runs_max: the workers and their queue); SPAWNER_NOFILE_PER_CHILD more for each
 * child that runs or waits in a scope (its pidfd, its control socket, its OOM watch); and
 * SPAWNER_NOFILE_PER_CACHED for each sandbox the cache may hold (the engine's memfd, the copy,
 * the Landlock ruleset). At limits.concurrent_runs 256 this is the ceiling lockd.service's
 * LimitNOFILE= allows (a unit test checks that they match).
 */
#define SPAWNER_NOFILE_BASE           64
#define SPAWNER_NOFILE_PER_QUEUED_RUN 5 /* input, inputs, stdout, stderr, detail */
#define SPAWNER_NOFILE_PER_CHILD      6 /* pidfd, control socket, up to 3 of its OOM watch, 1 */
#define SPAWNER_NOFILE_PER_CACHED     3
uint64_t spawner_nofile_need(unsigned workers, unsigned standby_max);

/* Whether the engine said HELLO: it is up (the point at which lockd is ready). */
bool spawner_engine_ready(const Spawner *s);

/*
 * Whether the spawner's table of handlers matches the request table (spawner_messages[]): every
 * request type exactly one row, every row a request type, and the request table itself
 * consistent (spawner_table_valid()). spawner_new() refuses to serve otherwise; the first type
 * that does not match in *ret_type.
 */
bool spawner_handlers_valid(uint16_t *ret_type);

/* Runs in flight (received, not yet answered). */
unsigned spawner_n_runs(const Spawner *s);
