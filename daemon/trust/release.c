/* Release directories: the four files read safely, the manifest parsed strictly, both bundles
 * verified under the marketplace and tied to the tag <name>/v<version> of the manifest. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf-check.h"
#include "fd-util.h"
#include "codec.h"
#include "macro.h"
#include "release.h"
#include "sigstore-util.h"

static const char *const error_names[_RELEASE_E_MAX] = {
        [RELEASE_OK] = "RELEASE_OK",
        [RELEASE_E_MISSING_FILE] = "RELEASE_E_MISSING_FILE",
        [RELEASE_E_TOO_LARGE] = "RELEASE_E_TOO_LARGE",
        [RELEASE_E_IO] = "RELEASE_E_IO",
        [RELEASE_E_MANIFEST] = "RELEASE_E_MANIFEST",
        [RELEASE_E_BINARY] = "RELEASE_E_BINARY",
        [RELEASE_E_BUNDLE] = "RELEASE_E_BUNDLE",
        [RELEASE_E_IDENTITY] = "RELEASE_E_IDENTITY",
        [RELEASE_E_TAG] = "RELEASE_E_TAG",
        [RELEASE_E_INDEX] = "RELEASE_E_INDEX",
        [RELEASE_E_INDEX_MISSING] = "RELEASE_E_INDEX_MISSING",
        [RELEASE_E_INDEX_MISMATCH] = "RELEASE_E_INDEX_MISMATCH",
        [RELEASE_E_NOMEM] = "RELEASE_E_NOMEM",
        [RELEASE_E_VERIFIER] = "RELEASE_E_VERIFIER",
};

const char *release_error_name(ReleaseErrorCode code) {
        if ((unsigned)code >= _RELEASE_E_MAX || !error_names[code])
                return "RELEASE_E_UNKNOWN";
        return error_names[code];
}

void release_error_set(ReleaseError *err, ReleaseErrorCode code, const char *fmt, ...) {
        va_list ap;

        if (!err)
                return;
        err->code = code;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof(err->message), fmt, ap);
        va_end(ap);
}

int release_check_ref(const Manifest *manifest, const char *ref) {
        static const char prefix[] = "refs/tags/";
        size_t n, plen = sizeof(prefix) - 1;

        if (!manifest || !manifest->name || !manifest->version || !ref)
                return -EKEYREJECTED;
        n = strlen(manifest->name);
        if (strncmp(ref, prefix, plen) != 0 || strncmp(ref + plen, manifest->name, n) != 0 ||
            strncmp(ref + plen + n, "/v", 2) != 0 ||
            strcmp(ref + plen + n + 2, manifest->version) != 0)
                return -EKEYREJECTED;
        return 0;
}

/* Opens name below dirfd for reading without following a symlink or blocking on a FIFO, and
 * refuses anything but a regular file. */
static int open_regular(int dirfd, const char *name) {
        _cleanup_close_ int fd = -1;
        struct stat st;

        fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        return TAKE_FD(fd);
}

/*
 * Checks that fd, which may come from a peer, is a regular file open for reading and at most max
 * bytes, and rewinds it. An O_PATH fd cannot be read, a write-only one must not be: both are
 * refused before anything is read, as is a FIFO or a socket, which could block the reader.
 */
static int check_readable_regular(int fd, uint64_t max) {
        struct stat st;
        int flags;

        if (fd < 0)
                return -ENOENT;
        flags = fcntl(fd, F_GETFL);
        if (flags < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        if ((flags & O_PATH) || (flags & O_ACCMODE) == O_WRONLY)
                return -EBADF;
        if ((uint64_t)st.st_size > max)
                return -EFBIG;
        if (lseek(fd, 0, SEEK_SET) < 0)
                return negative_errno();
        return 0;
}

int release_read_fd(int fd, size_t max, char **ret, size_t *ret_len) {
        int r;

        r = check_readable_regular(fd, max);
        if (r < 0)
                return r;
        /* The size may change under us: read_full_fd() enforces max on what it actually reads. */
        return read_full_fd(fd, max, ret, ret_len);
}

int release_read_file(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -1;

        fd = open_regular(dirfd, name);
        if (fd < 0)
                return fd;
        return release_read_fd(fd, max, ret, ret_len);
}

/* Maps a file error to the named error of the release. */
static int file_error(ReleaseError *err, const char *name, int r) {
        switch (r) {
        case -ENOENT:
                release_error_set(err, RELEASE_E_MISSING_FILE, "%s is missing", name);
                break;
        case -ELOOP:
                release_error_set(err, RELEASE_E_MISSING_FILE, "%s is a symbolic link", name);
                break;
        case -EBADFD:
                release_error_set(err, RELEASE_E_MISSING_FILE, "%s is not a regular file", name);
                break;
        case -EBADF:
                release_error_set(err, RELEASE_E_MISSING_FILE, "%s is not open for reading", name);
                break;
        case -EFBIG:
                release_error_set(err, RELEASE_E_TOO_LARGE, "%s is too large", name);
                break;
        case -ENOMEM:
                release_error_set(err, RELEASE_E_NOMEM, "out of memory reading %s", name);
                break;
        default:
                release_error_set(err, RELEASE_E_IO, "cannot read %s: %s", name, strerror(-r));
        }
        return r;
}

/* Maps a verification failure of file to RELEASE_E_BUNDLE or RELEASE_E_IDENTITY. */
static int verify_error(ReleaseError *err, const char *file, int r, const SigstoreResult *res) {
        bool identity = strstr(res->reason, "identity") || strstr(res->reason, "issuer");

        if (r == -ENOMEM)
                release_error_set(err, RELEASE_E_NOMEM, "out of memory verifying %s", file);
        else
                release_error_set(err, identity ? RELEASE_E_IDENTITY : RELEASE_E_BUNDLE, "%s: %s",
                                  file, res->reason[0] ? res->reason : "does not verify");
        return r;
}

Release *release_free(Release *r) {
        if (!r)
                return NULL;
        manifest_free(r->manifest);
        free(r->manifest_data);
        free(r->manifest_bundle);
        free(r->binary_bundle);
        safe_close(r->binary_fd);
        free(r->san);
        free(r->source_ref);
        free(r);
        return NULL;
}

typedef struct Mapping {
        void *p;
        size_t len;
} Mapping;

static void mappingp(Mapping *m) {
        if (m->p && m->p != MAP_FAILED)
                munmap(m->p, m->len);
}

/* Maps the release's binary (rel->binary_fd, not empty) for reading. */
static int map_binary(const Release *rel, Mapping *map, ReleaseError *err) {
        map->len = (size_t)rel->binary_size;
        map->p = mmap(NULL, map->len, PROT_READ, MAP_PRIVATE, rel->binary_fd, 0);
        if (map->p == MAP_FAILED) {
                map->p = NULL;
                return file_error(err, RELEASE_BINARY_FILE, negative_errno());
        }
        return 0;
}

/* Whether fd is a memfd sealed immutable: its bytes can never change again, whoever made it. */
static bool sealed_immutable(int fd) {
        int seals = fcntl(fd, F_GET_SEALS);

        return seals >= 0 && (seals & MEMFD_SEALS_IMMUTABLE) == MEMFD_SEALS_IMMUTABLE;
}

int release_load_fds(const ReleaseFds *fds, bool with_bundles, Release **ret, ReleaseError *err) {
        _cleanup_(release_freep) Release *rel = NULL;
        _cleanup_(mappingp) Mapping map = {};
        ManifestDiag diag = {};
        struct stat st;
        int r;

        if (!fds || !ret) {
                release_error_set(err, RELEASE_E_IO, "invalid arguments");
                return -EINVAL;
        }
        rel = calloc(1, sizeof(*rel));
        if (!rel) {
                release_error_set(err, RELEASE_E_NOMEM, "out of memory");
                return -ENOMEM;
        }
        rel->binary_fd = -1;

        r = release_read_fd(fds->manifest, RELEASE_MANIFEST_MAX, &rel->manifest_data,
                            &rel->manifest_len);
        if (r < 0)
                return file_error(err, RELEASE_MANIFEST_FILE, r);
        if (with_bundles) {
                r = release_read_fd(fds->manifest_bundle, RELEASE_BUNDLE_MAX, &rel->manifest_bundle,
                                    &rel->manifest_bundle_len);
                if (r < 0)
                        return file_error(err, RELEASE_MANIFEST_BUNDLE_FILE, r);
                r = release_read_fd(fds->binary_bundle, RELEASE_BUNDLE_MAX, &rel->binary_bundle,
                                    &rel->binary_bundle_len);
                if (r < 0)
                        return file_error(err, RELEASE_BINARY_BUNDLE_FILE, r);
        } else {
                /* Unsigned: empty bundles, so the store keeps its one layout. */
                rel->manifest_bundle = strdup("");
                rel->binary_bundle = strdup("");
                if (!rel->manifest_bundle || !rel->binary_bundle) {
                        release_error_set(err, RELEASE_E_NOMEM, "out of memory");
                        return -ENOMEM;
                }
        }

        /*
         * The binary is snapshotted first, so what is checked and verified is what is kept. A
         * memfd sealed immutable already is such a snapshot (release_snapshot_fds()): no second
         * copy of up to 256 MiB.
         */
        r = check_readable_regular(fds->binary, RELEASE_BINARY_MAX);
        if (r < 0)
                return file_error(err, RELEASE_BINARY_FILE, r);
        if (sealed_immutable(fds->binary)) {
                r = fcntl(fds->binary, F_DUPFD_CLOEXEC, 3);
                if (r < 0)
                        r = negative_errno();
        } else
                r = memfd_snapshot(fds->binary, "plugin", RELEASE_BINARY_MAX, true);
        if (r < 0)
                return file_error(err, RELEASE_BINARY_FILE, r);
        rel->binary_fd = r;
        if (fstat(rel->binary_fd, &st) < 0 || lseek(rel->binary_fd, 0, SEEK_SET) < 0)
                return file_error(err, RELEASE_BINARY_FILE, negative_errno());
        rel->binary_size = (uint64_t)st.st_size;

        /* The manifest, strictly. */
        r = manifest_parse(rel->manifest_data, rel->manifest_len, &rel->manifest, &diag);
        if (r == -ENOMEM) {
                release_error_set(err, RELEASE_E_NOMEM, "out of memory parsing the manifest");
                return r;
        }
        if (r < 0) {
                release_error_set(err, RELEASE_E_MANIFEST, "%s: %s: %s (%u:%u)",
                                  RELEASE_MANIFEST_FILE, manifest_error_name(diag.code),
                                  diag.message, diag.line, diag.column);
                return r;
        }

        /* The binary: a static ELF, as it is kept. */
        if (rel->binary_size == 0) {
                release_error_set(err, RELEASE_E_BINARY, "%s is empty", RELEASE_BINARY_FILE);
                return -EINVAL;
        }
        r = map_binary(rel, &map, err);
        if (r < 0)
                return r;
        r = elf_check_static(map.p, map.len);
        if (r < 0) {
                release_error_set(err, RELEASE_E_BINARY, "%s: %s", RELEASE_BINARY_FILE,
                                  r == -ELIBEXEC ? "dynamically linked (has PT_INTERP)"
                                                 : "not a static x86-64 ELF executable");
                return -EINVAL;
        }

        sha256((const uint8_t *)rel->manifest_data, rel->manifest_len, rel->manifest_sha256);
        sha256(map.p, map.len, rel->binary_sha256);

        *ret = TAKE_PTR(rel);
        return 0;
}

/* Verifies one bundle of rel under m and requires its certificate to name the manifest's tag;
 * with ret_san/ret_ref non-NULL the certificate's SAN and ref are handed over. */
static int verify_bundle(const Marketplace *m, const Release *rel, const char *file,
                         const void *data, size_t len, const char *bundle, size_t bundle_len,
                         char **ret_san, char **ret_ref, ReleaseError *err) {
        SigstoreResult res = {};
        int r;

        r = marketplace_verify_file(m, data, len, bundle, bundle_len, &res);
        if (r < 0)
                return verify_error(err, file, r, &res);
        r = release_check_ref(rel->manifest, res.source_ref);
        if (r < 0) {
                release_error_set(err, RELEASE_E_TAG,
                                  "%s: certificate ref %.80s is not refs/tags/%s/v%s", file,
                                  res.source_ref ? res.source_ref : "(none)", rel->manifest->name,
                                  rel->manifest->version);
                sigstore_result_done(&res);
                return r;
        }
        if (ret_san)
                *ret_san = TAKE_PTR(res.san);
        if (ret_ref)
                *ret_ref = TAKE_PTR(res.source_ref);
        sigstore_result_done(&res);
        return 0;
}

void release_fds_close(ReleaseFds *fds) {
        if (!fds)
                return;
        fds->manifest = safe_close(fds->manifest);
        fds->binary = safe_close(fds->binary);
        fds->manifest_bundle = safe_close(fds->manifest_bundle);
        fds->binary_bundle = safe_close(fds->binary_bundle);
}

/* Snapshots fd into a sealed memfd after the checks of check_readable_regular(). */
static int snapshot(int fd, uint64_t max, bool executable, const char *file, ReleaseError *err) {
        int r;

        r = check_readable_regular(fd, max);
        if (r < 0)
                return file_error(err, file, r);
        r = memfd_snapshot(fd, file, max, executable);
        if (r < 0)
                return file_error(err, file, r);
        return r;
}

int release_snapshot_fd(int fd, uint64_t max, const char *file, ReleaseError *err) {
        if (!file) {
                release_error_set(err, RELEASE_E_IO, "invalid arguments");
                return -EINVAL;
        }
        return snapshot(fd, max, false, file, err);
}

int release_snapshot_fds(const ReleaseFds *fds, bool with_bundles, ReleaseFds *ret,
                         ReleaseError *err) {
        _cleanup_(release_fds_close) ReleaseFds s = {-1, -1, -1, -1};
        int r;

        if (!fds || !ret) {
                release_error_set(err, RELEASE_E_IO, "invalid arguments");
                return -EINVAL;
        }
        r = snapshot(fds->manifest, RELEASE_MANIFEST_MAX, false, RELEASE_MANIFEST_FILE, err);
        if (r < 0)
                return r;
        s.manifest = r;
        if (with_bundles) {
                r = snapshot(fds->manifest_bundle, RELEASE_BUNDLE_MAX, false,
                             RELEASE_MANIFEST_BUNDLE_FILE, err);
                if (r < 0)
                        return r;
                s.manifest_bundle = r;
                r = snapshot(fds->binary_bundle, RELEASE_BUNDLE_MAX, false,
                             RELEASE_BINARY_BUNDLE_FILE, err);
                if (r < 0)
                        return r;
                s.binary_bundle = r;
        }
        r = snapshot(fds->binary, RELEASE_BINARY_MAX, true, RELEASE_BINARY_FILE, err);
        if (r < 0)
                return r;
        s.binary = r;
        *ret = s;
        s = (ReleaseFds){-1, -1, -1, -1};
        return 0;
}

int release_verify_fds(const Marketplace *m, const ReleaseFds *fds, Release **ret,
                       ReleaseError *err) {
        _cleanup_(release_freep) Release *rel = NULL;
        _cleanup_(mappingp) Mapping map = {};
        int r;

        if (!m || !fds || !ret) {
                release_error_set(err, RELEASE_E_IO, "invalid arguments");
                return -EINVAL;
        }

        r = release_load_fds(fds, true, &rel, err);
        if (r < 0)
                return r;
        r = map_binary(rel, &map, err);
        if (r < 0)
                return r;

        /* Both bundles, under the marketplace, from the manifest's very tag. */
        r = verify_bundle(m, rel, RELEASE_MANIFEST_BUNDLE_FILE, rel->manifest_data,
                          rel->manifest_len, rel->manifest_bundle, rel->manifest_bundle_len,
                          &rel->san, &rel->source_ref, err);
        if (r < 0)
                return r;
        r = verify_bundle(m, rel, RELEASE_BINARY_BUNDLE_FILE, map.p, map.len, rel->binary_bundle,
                          rel->binary_bundle_len, NULL, NULL, err);
        if (r < 0)
                return r;

        if (err)
                *err = (ReleaseError){};
        *ret = TAKE_PTR(rel);
        return 0;
}

int release_load_unsigned_fds(const ReleaseFds *fds, Release **ret, ReleaseError *err) {
        _cleanup_(release_freep) Release *rel = NULL;
        int r;

        if (!fds || !ret) {
                release_error_set(err, RELEASE_E_IO, "invalid arguments");
                return -EINVAL;
        }
        r = release_load_fds(fds, false, &rel, err);
        if (r < 0)
                return r;
        if (err)
                *err = (ReleaseError){};
        *ret = TAKE_PTR(rel);
        return 0;
}

int release_verify(const Marketplace *m, int dirfd, Release **ret, ReleaseError *err) {
        static const char *const names[] = {
                RELEASE_MANIFEST_FILE,
                RELEASE_MANIFEST_BUNDLE_FILE,
                RELEASE_BINARY_BUNDLE_FILE,
                RELEASE_BINARY_FILE,
        };
        _cleanup_close_ int fd_manifest = -1, fd_manifest_bundle = -1, fd_binary_bundle = -1,
                            fd_binary = -1;
        int *fds[] = {&fd_manifest, &fd_manifest_bundle, &fd_binary_bundle, &fd_binary};

        if (!m || dirfd < 0 || !ret) {
                release_error_set(err, RELEASE_E_IO, "invalid arguments");
                return -EINVAL;
        }
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                *fds[i] = open_regular(dirfd, names[i]);
                if (*fds[i] < 0)
                        return file_error(err, names[i], *fds[i]);
        }
        return release_verify_fds(m,
                                  &(const ReleaseFds){.manifest = fd_manifest,
                                                      .binary = fd_binary,
                                                      .manifest_bundle = fd_manifest_bundle,
                                                      .binary_bundle = fd_binary_bundle},
                                  ret, err);
}
