/* Agent confinement: whether an agent peer runs where it cannot watch plugin runs (its unit has
 * ProtectProc=invisible and no access to the cgroup file system), asked of the manager lockd uses
 * at accept (ARCHITECTURE.md, what an agent can learn). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "confinement-reason.h"

#define CONFINEMENT_UNIT_MAX 256

/* What a unit says about itself that decides the check. */
typedef struct ConfinementUnit {
        const char *unit;          /* its name */
        const char *protect_proc;  /* ProtectProc=: "default", "invisible", ... */
        const char **inaccessible; /* InaccessiblePaths=, NULL-terminated, "-"/"+" prefixes kept */
        const char **tmpfs;        /* the paths of TemporaryFileSystem=, NULL-terminated */
} ConfinementUnit;

/*
 * Decides whether u keeps its processes from watching runs: a service (a scope or anything else
 * runs no ExecStart of ours and carries no ProtectProc=), ProtectProc= invisible or noaccess, and
 * /sys/fs/cgroup (or a directory above it) among InaccessiblePaths= or TemporaryFileSystem=.
 * true, or false with *ret_missing naming the first thing missing. Pure.
 */
bool confinement_evaluate(const ConfinementUnit *u, ConfinementReason *ret_missing);

typedef struct ConfinementCheck ConfinementCheck;

/*
 * Asks the manager on bus which unit pid runs in, then that unit's properties, without blocking.
 * pidfd is the peer's (SO_PEERPIDFD, or pidfd_open() at accept; borrowed): after the manager
 * answered by pid, the pidfd must still be a live process, so a pid reused in between is never
 * judged in the peer's place. 0 and a new check in *ret (free it to cancel; done is then never
 * called), or a negative errno.
 */
int confinement_check_start(sd_bus *bus, pid_t pid, int pidfd, ConfinementDoneFn done,
                            void *userdata, ConfinementCheck **ret);
ConfinementCheck *confinement_check_free(ConfinementCheck *c);
