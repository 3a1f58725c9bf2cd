/* The handle store: each granted snapshot and its metadata under handles/ in the state directory,
 * so that grants survive a restart, a crash or an OOM kill (ARCHITECTURE.md, grant). */
#pragma once

#include <stdint.h>

#include "handles.h"

#define HANDLE_STORE_DIR "handles"

typedef struct HandleStore HandleStore;

/*
 * Opens (creating it 0700) handles/ below statefd, removing what an interrupted write left
 * there (temporary files, a snapshot without its metadata). max_bytes caps the bytes of all
 * stored snapshots together. 0 and a new store in *ret, or a negative errno.
 */
int handle_store_open(int statefd, uint64_t max_bytes, HandleStore **ret);
HandleStore *handle_store_free(HandleStore *s);
static inline void handle_store_freep(HandleStore **s) {
        if (*s)
                handle_store_free(*s);
}

/*
 * Stores h: its snapshot (<id>.data) and then its metadata (<id>.meta), each written to a
 * temporary name, fsync()ed, renamed into place, and the directory fsync()ed. The metadata is
 * the commit: a handle exists on disk once it is there. 0; -ENOBUFS past max_bytes; an I/O errno
 * (ENOSPC, EDQUOT, EIO...) with nothing of h left behind.
 */
int handle_store_save(HandleStore *s, const Handle *h);

/* Removes h's files (the metadata first) and syncs the directory. 0 or a negative errno. */
int handle_store_remove(HandleStore *s, const char *id, uint64_t bytes);

/*
 * Reads every stored handle back, strictly: metadata of the exact format, a snapshot of the
 * recorded size and SHA-256 (a mismatch, or a snapshot past max_snapshot_bytes, drops that
 * handle and its files: it is never served with other bytes). Each live one is given to
 * handles_restore(); expired ones are removed. Returns the number restored, or a negative errno
 * when the directory cannot be read. *ret_dropped counts the handles dropped as damaged.
 */
int handle_store_load(HandleStore *s, Handles *hs, uint64_t max_snapshot_bytes,
                      unsigned *ret_dropped);
