/* The engine's side of the spawner's channel: plugin runs and agent confinement checks asked of
 * the root process, their output read here, their answers classified here (ARCHITECTURE.md). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "confinement-reason.h"
#include "run-request.h"
#include "spawner-proto.h"

typedef struct SpawnerLink SpawnerLink;
typedef struct SpawnerCheck SpawnerCheck;

/* The channel fd lockd passed (LOCKD_SPAWNER_FD, then unset), checked to be a SEQPACKET socket;
 * or a negative errno: -ENOENT when this process was not started by lockd. */
int spawner_link_channel_fd(void);

/*
 * Takes over fd (the engine's end of the pair), says HELLO and waits for the spawner's answer
 * (at most a few seconds). runs_max: runs in flight at most (more: -EAGAIN at submit). If the
 * channel breaks or the spawner answers anything malformed later, the link logs and ends e's
 * loop with sd_event_exit(1). 0 or a negative errno.
 */
int spawner_link_new(sd_event *e, int fd, unsigned runs_max, SpawnerLink **ret);

/* Frees the link: runs still in flight end with -ECONNABORTED, their fate unknown (their done
 * callbacks run now). */
SpawnerLink *spawner_link_free(SpawnerLink *l);

/* The spawner's Landlock ABI, and whether its runs get scopes (scope.backend systemd). */
int spawner_link_landlock_abi(const SpawnerLink *l);
bool spawner_link_scopes(const SpawnerLink *l);

/*
 * Sends req to the spawner: req->sandbox's binary memfd and spec, req->input_fd, the inputs (as a
 * sealed memfd) and three new pipes for the output. The link owns req until its done callback
 * ran, which happens on the loop once the spawner said EXITED and the pipes reached EOF.
 * req->id must be set (> 0, unique); req->unit is the spawner's (EXITED). 0, -EAGAIN (runs_max in
 * flight), -ESHUTDOWN (after kill_all) or another negative errno (req not taken).
 */
int spawner_link_submit(SpawnerLink *l, RunRequest *req);

/* STOP: the spawner ends every run; each still ends through its done callback. Once. */
void spawner_link_kill_all(SpawnerLink *l);

/* Has the spawner tell systemd state (READY=1, STATUS=, RELOADING=1, STOPPING=1) with the
 * number of plugins and of runs in flight: the engine never speaks to systemd itself. */
void spawner_link_notify(SpawnerLink *l, SpawnerNotifyState state, unsigned plugins);

/* Runs sent and not yet handed to their done callback. */
unsigned spawner_link_n_active(const SpawnerLink *l);

/* Tells the spawner an installed plugin's limits, so that a scope waits ready for its class. */
void spawner_link_warm(SpawnerLink *l, const SandboxLimits *limits);

/*
 * Asks the spawner whether the agent pid (pidfd attached, borrowed) runs confined: done is called
 * once, later, from the loop, unless the check is freed first. The caller frees the check with
 * spawner_check_free() in either case (from done too), before the link goes. 0 with *ret, or a
 * negative errno.
 */
int spawner_link_confine(SpawnerLink *l, pid_t pid, int pidfd, ConfinementDoneFn done,
                         void *userdata, SpawnerCheck **ret);
SpawnerCheck *spawner_check_free(SpawnerCheck *c);
