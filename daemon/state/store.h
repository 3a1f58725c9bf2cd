/* The plugin store under lockd's state directory: plugins/<name>/<version>/ with the four release
 * files and their digests, written atomically and re-verified by digest when loaded. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "marketplace.h"
#include "release.h"

#define STORE_PLUGINS_DIR  "plugins"
#define STORE_DIGESTS_FILE "digests"
#define STORE_ORIGIN_FILE  "origin"
#define STORE_ORIGIN_MAX   ((size_t)256)

typedef enum StoreErrorCode {
        STORE_OK = 0,
        STORE_E_NAME,            /* not a valid plugin name or SemVer version */
        STORE_E_EXISTS,          /* that version is installed already */
        STORE_E_NOT_FOUND,       /* that version is not installed */
        STORE_E_MISSING_FILE,    /* a stored file is absent, a symlink, not regular or too large */
        STORE_E_DIGESTS,         /* the digests file is malformed */
        STORE_E_DIGEST_MISMATCH, /* a stored file's SHA-256 is not the one recorded at install */
        STORE_E_MANIFEST,        /* the stored manifest does not parse or names another release */
        STORE_E_IO,
        STORE_E_NOMEM,
        STORE_E_ORIGIN, /* the origin file is malformed */
        _STORE_E_MAX,
} StoreErrorCode;

typedef struct StoreError {
        StoreErrorCode code;
        char message[256];
} StoreError;

typedef struct StoreEntry {
        char *name;
        char *version;
} StoreEntry;

/* Where a stored release came from, recorded beside it at install (the origin file, listed in
 * digests like the release's files). */
typedef struct StoreOrigin {
        char marketplace[MARKETPLACE_NAME_MAX + 1]; /* "" for an unsigned release */
        bool signed_;                               /* exactly when marketplace is set */
} StoreOrigin;

/* "STORE_E_DIGEST_MISMATCH", …; "STORE_E_UNKNOWN" out of range. */
const char *store_error_name(StoreErrorCode code);

/*
 * Installs rel under statefd as plugins/<name>/<version>/ with plugin.toml, plugin,
 * plugin.toml.sigstore.json, plugin.sigstore.json and digests (sha256sum format, in that order).
 * Every file is written under a temporary O_EXCL name, fsync()ed and renamed into place, inside a
 * temporary version directory that is fsync()ed and then renamed (RENAME_NOREPLACE) to <version>,
 * and the parent fsync()ed: after a crash the version is either all there or absent. Refuses when
 * the bytes read back from rel differ from rel's digests. Returns 0 or a negative errno with err
 * filled: -EINVAL (STORE_E_NAME), -EEXIST (STORE_E_EXISTS), -EKEYREJECTED
 * (STORE_E_DIGEST_MISMATCH), -ENOMEM, I/O errnos (STORE_E_IO).
 */
int store_install(int statefd, const Release *rel, StoreError *err);

/* Like store_install(), and records origin (NULL: none) in the origin file, written and listed
 * in digests with the rest; -EINVAL (STORE_E_NAME) for an origin that is signed without a valid
 * marketplace name or names one while unsigned. */
int store_install_origin(int statefd, const Release *rel, const StoreOrigin *origin,
                         StoreError *err);

/*
 * Loads plugins/<name>/<version>/ below statefd: reads every file (O_NOFOLLOW, the release size
 * caps), checks each against the SHA-256 recorded in digests at install, parses the manifest
 * strictly and requires its name and version to be the directory's. Returns 0 and a Release in
 * *ret (binary in a sealed memfd; san and source_ref NULL: the signatures were verified at
 * install), or a negative errno with err filled and *ret untouched: -EINVAL (STORE_E_NAME,
 * STORE_E_DIGESTS, STORE_E_MANIFEST), -ENOENT (STORE_E_NOT_FOUND, STORE_E_MISSING_FILE),
 * -EKEYREJECTED (STORE_E_DIGEST_MISMATCH), -ENOMEM, I/O errnos.
 */
int store_load(int statefd, const char *name, const char *version, Release **ret, StoreError *err);

/* Like store_load(), and fills *ret_origin (if non-NULL) from the origin file, checked against
 * its recorded digest (-EKEYREJECTED) and parsed strictly (-EINVAL, STORE_E_ORIGIN); a release
 * stored without one reads as unsigned with no marketplace. */
int store_load_origin(int statefd, const char *name, const char *version, Release **ret,
                      StoreOrigin *ret_origin, StoreError *err);

/*
 * Lists the installed versions (directories with a valid name and version; temporary ones are
 * skipped), sorted by name, then by version in SemVer order. 0 with a new array in *ret (NULL
 * when empty) and its size in *ret_n, or a negative errno, *ret and *ret_n untouched.
 */
int store_list(int statefd, StoreEntry **ret, size_t *ret_n);
void store_entries_free(StoreEntry *entries, size_t n);

/*
 * Removes plugins/<name>/<version>/: renamed away to a temporary name first (atomic), then its
 * files and itself deleted, and plugins/<name>/ if that was its last version. 0, -EINVAL bad
 * name or version, -ENOENT not installed, or another negative errno.
 */
int store_remove(int statefd, const char *name, const char *version);

/*
 * For the other writers of the state directory (marketplaces/), with the store's rules.
 * store_write_file() writes dfd/name atomically (a temporary O_EXCL name, fsync(), rename(); the
 * caller fsync()s dfd). store_remove_dir() deletes the flat directory dfd/name and its files.
 * store_temp_name() makes "<prefix><name>-<16 random hex>" in out. 0 or a negative errno.
 */
int store_write_file(int dfd, const char *name, const void *data, size_t len);
/* store_write_file() of a file only root may read (0600): the handles' snapshots and metadata. */
int store_write_file_private(int dfd, const char *name, const void *data, size_t len);
int store_remove_dir(int dfd, const char *name);
int store_temp_name(const char *prefix, const char *name, char *out, size_t size);
