/* Release directories: plugin.toml, plugin and their two Sigstore bundles, verified under a
 * marketplace and tied to the tag <name>/v<version> of that very manifest. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "manifest.h"
#include "marketplace.h"

#define RELEASE_MANIFEST_FILE        "plugin.toml"
#define RELEASE_BINARY_FILE          "plugin"
#define RELEASE_MANIFEST_BUNDLE_FILE "plugin.toml.sigstore.json"
#define RELEASE_BINARY_BUNDLE_FILE   "plugin.sigstore.json"

#define RELEASE_MANIFEST_MAX ((size_t)64 * 1024)
#define RELEASE_BINARY_MAX   ((uint64_t)256 * 1024 * 1024)
#define RELEASE_BUNDLE_MAX   ((size_t)1024 * 1024)

typedef enum ReleaseErrorCode {
        RELEASE_OK = 0,
        RELEASE_E_MISSING_FILE, /* a file of the release is absent, not a regular file, a symlink */
        RELEASE_E_TOO_LARGE,    /* a file is over its size cap */
        RELEASE_E_IO,           /* reading failed */
        RELEASE_E_MANIFEST,     /* plugin.toml does not pass manifest_parse() */
        RELEASE_E_BINARY,       /* the binary is not a static x86-64 ELF executable */
        RELEASE_E_BUNDLE,       /* a bundle is malformed or does not verify */
        RELEASE_E_IDENTITY,     /* a certificate's issuer or SAN is not the marketplace's */
        RELEASE_E_TAG,          /* a certificate's source ref is not refs/tags/<name>/v<version> */
        RELEASE_E_INDEX, /* index.json is malformed, misnamed or its bundle does not verify */
        RELEASE_E_INDEX_MISSING,  /* the release is not listed in the marketplace's index */
        RELEASE_E_INDEX_MISMATCH, /* the release's digests differ from the index */
        RELEASE_E_NOMEM,
        RELEASE_E_VERIFIER, /* the verification helper failed: crashed, timed out, or answered
                               something malformed (lockd fails closed) */
        _RELEASE_E_MAX,
} ReleaseErrorCode;

typedef struct ReleaseError {
        ReleaseErrorCode code;
        char message[256]; /* one line */
} ReleaseError;

typedef struct Release {
        Manifest *manifest;
        char *manifest_data; /* the exact bytes of plugin.toml, NUL-terminated */
        size_t manifest_len;
        char *manifest_bundle; /* plugin.toml.sigstore.json, NUL-terminated */
        size_t manifest_bundle_len;
        char *binary_bundle; /* plugin.sigstore.json, NUL-terminated */
        size_t binary_bundle_len;
        int binary_fd; /* the binary's bytes: a sealed, executable memfd (offset 0) */
        uint64_t binary_size;
        uint8_t manifest_sha256[32];
        uint8_t binary_sha256[32];
        char *san; /* the signing identity (of the manifest's certificate); NULL from the store */
        char *source_ref; /* "refs/tags/<name>/v<version>"; NULL from the store */
} Release;

/* "RELEASE_E_TAG", …; "RELEASE_E_UNKNOWN" out of range. */
const char *release_error_name(ReleaseErrorCode code);

/* The four files of a release as open file descriptors (a peer's, received with SCM_RIGHTS), or
 * -1 for a file not given. They are borrowed: never closed, read from offset 0. */
typedef struct ReleaseFds {
        int manifest;
        int binary;
        int manifest_bundle;
        int binary_bundle;
} ReleaseFds;

/*
 * Verifies the release whose files are open at fds under m. Each fd must be a regular file open
 * for reading (fstat(), the access mode; an O_PATH or write-only fd, a FIFO, a socket, a
 * directory are refused as RELEASE_E_MISSING_FILE) within its cap (manifest 64 KiB, binary 256
 * MiB, bundles 1 MiB each); everything else is as release_verify(). lockd never opens a path a
 * peer sent: the engine snapshots what lockctl opened with the human's rights into sealed memfds,
 * and lockd-verify verifies those with this (verifier.h). Returns
 * 0 and a new Release in *ret, or a negative errno with err filled (if non-NULL) and *ret
 * untouched: -ENOENT an fd is -1, -EBADFD not a regular file, -EBADF not readable, -EFBIG, and
 * the errors of release_verify().
 */
int release_verify_fds(const Marketplace *m, const ReleaseFds *fds, Release **ret,
                       ReleaseError *err);

/*
 * Snapshots the files of a release that a peer sent (fds, borrowed) into sealed memfds, each
 * checked and capped as release_verify_fds() checks them, in the order release_verify_fds() reads
 * them, so the first refusal is the same: the manifest, with with_bundles the two bundles, then
 * the binary (an executable memfd). What is verified afterwards is exactly what is kept: the peer
 * can no longer change a byte. Returns 0 with every fd of *ret a new sealed memfd (the bundles -1
 * without with_bundles; close them with release_fds_close()), or a negative errno with err filled
 * and *ret untouched (the errnos of release_verify_fds()'s file checks).
 */
int release_snapshot_fds(const ReleaseFds *fds, bool with_bundles, ReleaseFds *ret,
                         ReleaseError *err);

/*
 * Snapshots one file a peer sent (a regular file open for reading, at most max bytes) into a
 * sealed, non-executable memfd; file names it in err's message. Returns the memfd or a negative
 * errno with err filled as release_snapshot_fds() fills it.
 */
int release_snapshot_fd(int fd, uint64_t max, const char *file, ReleaseError *err);

/* Closes the fds of fds and sets them to -1. */
void release_fds_close(ReleaseFds *fds);

/*
 * Loads a release from fds without looking at any signature: reads the manifest (and with
 * with_bundles both bundles), takes the binary (a sealed memfd is used as it is, anything else is
 * snapshotted first), parses the manifest strictly, requires a static ELF binary and computes both
 * digests. The checks of the signatures are the caller's: release_verify_fds() makes them in
 * process (lockd-verify, lockctl), the engine has the verification helper make them (verifier.h)
 * on the same sealed memfds.
 * Returns 0 and a new Release in *ret (san and source_ref NULL; without with_bundles the bundles
 * empty), or a negative errno with err filled and *ret untouched.
 */
int release_load_fds(const ReleaseFds *fds, bool with_bundles, Release **ret, ReleaseError *err);

/*
 * Loads an unsigned release (a policy with allow_unsigned: true) from fds->manifest and
 * fds->binary, checked as release_verify_fds() checks them: the manifest strictly, the binary a
 * static ELF within its cap. The bundle fds are not looked at. The Release's bundles are empty
 * (allocated, length 0), san and source_ref NULL. Returns 0 and a new Release in *ret, or a
 * negative errno with err filled and *ret untouched.
 */
int release_load_unsigned_fds(const ReleaseFds *fds, Release **ret, ReleaseError *err);

/*
 * Verifies the release directory dirfd under m. Opens the four files with openat(O_NOFOLLOW),
 * refuses anything but regular files and sizes over the caps (manifest 64 KiB, binary 256 MiB,
 * bundles 1 MiB each), parses plugin.toml strictly, refuses a binary that is not a static ELF,
 * verifies plugin.toml.sigstore.json over the manifest's bytes and plugin.sigstore.json over the
 * binary's bytes under m (marketplace_verify_file()), and requires both certificates' source ref
 * to be exactly refs/tags/<name>/v<version> of the manifest (release_check_ref()). The binary is
 * snapshotted into a sealed memfd first, so what is verified is what is kept.
 * Returns 0 and a new Release in *ret; or a negative errno with err filled (if non-NULL) and *ret
 * untouched: -ENOENT missing file, -EFBIG too large, -EINVAL manifest or binary, -EBADMSG or
 * -EKEYREJECTED bundle, identity or tag, -ENOMEM, other errnos from I/O.
 */
int release_verify(const Marketplace *m, int dirfd, Release **ret, ReleaseError *err);

/*
 * Whether ref, a Fulcio SourceRepositoryRef, names exactly the tag of manifest:
 * "refs/tags/<name>/v<version>". 0, or -EKEYREJECTED (also for NULL ref: no ref, no release).
 */
int release_check_ref(const Manifest *manifest, const char *ref);

Release *release_free(Release *r);
static inline void release_freep(Release **r) {
        if (*r)
                release_free(*r);
}

/* Fills err (if non-NULL) with code and a printf-formatted message. */
void release_error_set(ReleaseError *err, ReleaseErrorCode code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Reads the regular file open at fd (from offset 0; not an O_PATH or write-only fd) into a
 * NUL-terminated buffer, at most max bytes. 0, -EBADFD not a regular file, -EBADF not open for
 * reading, -EFBIG, or another errno; *ret untouched on failure. */
int release_read_fd(int fd, size_t max, char **ret, size_t *ret_len);

/* Reads the regular file name below dirfd (O_NOFOLLOW) into a NUL-terminated buffer, at most max
 * bytes. 0, -ENOENT absent, -ELOOP a symlink, -EBADFD not a regular file, -EFBIG, or another
 * errno; *ret untouched on failure. */
int release_read_file(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len);
