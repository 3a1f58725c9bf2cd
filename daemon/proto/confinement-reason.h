/* What the spawner answers the engine about an agent's confinement: the closed list of reasons a
 * peer is not confined, and the shape of the answer (ARCHITECTURE.md, what an agent can learn). */
#pragma once

#include <stdbool.h>

/* Why a peer is not confined: a closed list, so the spawner can tell the engine in a number. */
typedef enum ConfinementReason {
        CONFINEMENT_OK = 0,
        CONFINEMENT_NO_UNIT,
        CONFINEMENT_NOT_SERVICE,
        CONFINEMENT_PROTECT_PROC,
        CONFINEMENT_CGROUP_FS,
        CONFINEMENT_NO_PROPERTIES,
        CONFINEMENT_BAD_ANSWER,
        CONFINEMENT_NO_MANAGER,
        CONFINEMENT_PEER_GONE,
        _CONFINEMENT_REASON_MAX,
} ConfinementReason;

/* The reason in one sentence, for a log line. */
const char *confinement_reason_sentence(ConfinementReason r);

/*
 * done(ok, unit, missing, userdata): ok true when the peer may stay; unit the peer's unit ("" if
 * the manager named none), missing why when not ok. Called once, from the bus's
 * event loop, never from within confinement_check_start().
 */
typedef void (*ConfinementDoneFn)(bool ok, const char *unit, ConfinementReason missing,
                                  void *userdata);
