/* The newest index version lockd has verified for each marketplace, kept durably in the state
 * directory (index-versions/<name>), and the freshness rule an index must pass against it:
 * neither older than that version (rollback) nor past its own expiry (freeze). */
#pragma once

#include <stdint.h>

#include "verifier.h"

#define INDEX_VERSIONS_DIR "index-versions"

typedef enum IndexFreshness {
        INDEX_FRESH,    /* as new as the newest verified, or newer; not expired */
        INDEX_ROLLBACK, /* older than the newest verified for the marketplace */
        INDEX_EXPIRED,  /* its expires is not after now */
} IndexFreshness;

/*
 * The newest index version recorded for the marketplace name below statefd: 0 and *ret (0 when
 * none was ever recorded), or a negative errno (-EBADMSG for a file that is not one decimal
 * number and a newline; the caller fails closed), *ret untouched.
 */
int index_versions_get(int statefd, const char *name, uint64_t *ret);

/*
 * Decides whether the verified index vi of marketplace name may be used at wall-clock time now
 * (seconds since the epoch), and records its version when it is newer than the recorded one:
 * written under a temporary O_EXCL name, fsync()ed, renamed into place and the directory
 * fsync()ed, so the version survives a crash and a restart before the caller answers. Returns 0
 * and *ret_verdict INDEX_FRESH; -ESTALE and INDEX_ROLLBACK, -ETIME and INDEX_EXPIRED (nothing
 * recorded then); or another negative errno (the record could not be read or written: the index
 * is not admitted). *ret_newest is the newest version recorded before the call.
 */
int index_versions_admit(int statefd, const char *name, const VerifiedIndex *vi, int64_t now,
                         IndexFreshness *ret_verdict, uint64_t *ret_newest);

/* Forgets the marketplace's record (a removed marketplace): 0, or a negative errno other than
 * -ENOENT. */
int index_versions_remove(int statefd, const char *name);
