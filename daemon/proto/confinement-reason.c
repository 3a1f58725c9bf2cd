/* The confinement reasons in words, for the engine's log lines and the spawner's. */
#include "confinement-reason.h"
#include "macro.h"

#define CGROUP_FS "/sys/fs/cgroup"

static const char *const reasons[_CONFINEMENT_REASON_MAX] = {
        [CONFINEMENT_OK] = "confined",
        [CONFINEMENT_NO_UNIT] = "the peer runs in no unit of the manager",
        [CONFINEMENT_NOT_SERVICE] =
                "the peer's unit is not a service (start it with lockctl agent run)",
        [CONFINEMENT_PROTECT_PROC] = "ProtectProc=invisible",
        [CONFINEMENT_CGROUP_FS] = "no access to " CGROUP_FS " (TemporaryFileSystem=" CGROUP_FS ")",
        [CONFINEMENT_NO_PROPERTIES] = "the manager did not tell the unit's properties",
        [CONFINEMENT_BAD_ANSWER] = "the manager's answer did not parse",
        [CONFINEMENT_NO_MANAGER] = "the manager cannot be asked",
        [CONFINEMENT_PEER_GONE] = "the peer's process is gone",
};

const char *confinement_reason_sentence(ConfinementReason r) {
        return r >= 0 && r < _CONFINEMENT_REASON_MAX ? reasons[r] : "an unknown reason";
}
