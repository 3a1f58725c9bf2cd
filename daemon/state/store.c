/* The plugin store: atomic installation (temp + fsync + rename, file and directory), loading with
 * digest re-verification, listing and removal. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "fd-util.h"
#include "codec.h"
#include "macro.h"
#include "marketplace.h"
#include "store.h"

#define DIGESTS_MAX ((size_t)4096)

/* The stored files, in the order of the digests file. */
enum {
        F_MANIFEST,
        F_BINARY,
        F_MANIFEST_BUNDLE,
        F_BINARY_BUNDLE,
        _F_MAX,
};
static const char *const file_names[_F_MAX] = {
        [F_MANIFEST] = RELEASE_MANIFEST_FILE,
        [F_BINARY] = RELEASE_BINARY_FILE,
        [F_MANIFEST_BUNDLE] = RELEASE_MANIFEST_BUNDLE_FILE,
        [F_BINARY_BUNDLE] = RELEASE_BINARY_BUNDLE_FILE,
};

static const char *const error_names[_STORE_E_MAX] = {
        [STORE_OK] = "STORE_OK",
        [STORE_E_NAME] = "STORE_E_NAME",
        [STORE_E_EXISTS] = "STORE_E_EXISTS",
        [STORE_E_NOT_FOUND] = "STORE_E_NOT_FOUND",
        [STORE_E_MISSING_FILE] = "STORE_E_MISSING_FILE",
        [STORE_E_DIGESTS] = "STORE_E_DIGESTS",
        [STORE_E_DIGEST_MISMATCH] = "STORE_E_DIGEST_MISMATCH",
        [STORE_E_MANIFEST] = "STORE_E_MANIFEST",
        [STORE_E_IO] = "STORE_E_IO",
        [STORE_E_NOMEM] = "STORE_E_NOMEM",
        [STORE_E_ORIGIN] = "STORE_E_ORIGIN",
};

const char *store_error_name(StoreErrorCode code) {
        if ((unsigned)code >= _STORE_E_MAX)
                return "STORE_E_UNKNOWN";
        return error_names[code];
}

static __attribute__((format(printf, 4, 5))) int fail(StoreError *err, StoreErrorCode code, int r,
                                                      const char *fmt, ...) {
        va_list ap;

        if (err) {
                err->code = r == -ENOMEM ? STORE_E_NOMEM : code;
                va_start(ap, fmt);
                vsnprintf(err->message, sizeof(err->message), fmt, ap);
                va_end(ap);
        }
        return r;
}

/* A random suffix for temporary names. */
static int random_suffix(char out[17]) {
        uint8_t b[8];

        if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
                return negative_errno();
        hex_encode(b, sizeof(b), out);
        return 0;
}

static int open_dir(int dfd, const char *name) {
        int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? negative_errno() : fd;
}

/* Opens dfd/name, creating it (0755) if absent; *created says whether it was. */
static int mkdir_open(int dfd, const char *name, bool *created) {
        *created = false;
        if (mkdirat(dfd, name, 0755) == 0)
                *created = true;
        else if (errno != EEXIST)
                return negative_errno();
        return open_dir(dfd, name);
}

static int fsync_dir(int fd) {
        return fsync(fd) < 0 ? negative_errno() : 0;
}

/* Deletes the regular files (and symlinks) of dfd/name, then the directory; best effort for
 * cleanups, but returns the first error. The store never creates subdirectories there. */
static int remove_flat_dir(int dfd, const char *name) {
        _cleanup_close_ int fd = -1;
        DIR *d;
        struct dirent *de;
        int r = 0;

        fd = open_dir(dfd, name);
        if (fd < 0)
                return fd;
        d = fdopendir(fd);
        if (!d)
                return negative_errno();
        fd = -1; /* owned by d now */
        while ((errno = 0, de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (unlinkat(dirfd(d), de->d_name, 0) < 0 && r == 0)
                        r = negative_errno();
        }
        closedir(d);
        if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && r == 0)
                r = negative_errno();
        return r;
}

/*
 * Writes the file dfd/name atomically: a temporary name created O_EXCL in the same directory,
 * the bytes (from data, or from src_fd by pread() when data is NULL), fsync(), renameat(). The
 * SHA-256 of what was written goes to sha256 (the low-level SHA-256 functions: see
 * sha256() for why not EVP). The caller fsync()s dfd.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static int write_file_atomic(int dfd, const char *name, const void *data, size_t len, int src_fd,
                             mode_t mode, uint8_t sha256[32]) {
        _cleanup_close_ int fd = -1;
        SHA256_CTX ctx;
        char tmp[NAME_MAX], suffix[17];
        int r;

        r = random_suffix(suffix);
        if (r < 0)
                return r;
        snprintf(tmp, sizeof(tmp), ".#%s.%s", name, suffix);

        if (SHA256_Init(&ctx) != 1)
                return -ENOMEM;

        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0)
                return negative_errno();

        if (data) {
                r = loop_write(fd, data, len);
                if (r < 0)
                        goto fail;
                if (SHA256_Update(&ctx, data, len) != 1) {
                        r = -ENOMEM;
                        goto fail;
                }
        } else {
                uint8_t buf[64 * 1024];
                off_t off = 0;

                for (;;) {
                        ssize_t n = pread(src_fd, buf, sizeof(buf), off);
                        if (n < 0) {
                                if (errno == EINTR)
                                        continue;
                                r = negative_errno();
                                goto fail;
                        }
                        if (n == 0)
                                break;
                        r = loop_write(fd, buf, (size_t)n);
                        if (r < 0)
                                goto fail;
                        if (SHA256_Update(&ctx, buf, (size_t)n) != 1) {
                                r = -ENOMEM;
                                goto fail;
                        }
                        off += n;
                }
        }
        if (SHA256_Final(sha256, &ctx) != 1) {
                r = -ENOMEM;
                goto fail;
        }
        if (fsync(fd) < 0) {
                r = negative_errno();
                goto fail;
        }
        if (renameat(dfd, tmp, dfd, name) < 0) {
                r = negative_errno();
                goto fail;
        }
        return 0;

fail:
        (void)unlinkat(dfd, tmp, 0);
        return r;
}
#pragma GCC diagnostic pop

/* The digests file's text; origin_sha256 (NULL: none) adds the origin file's line. */
static void format_digests(const uint8_t digests[_F_MAX][32], const uint8_t *origin_sha256,
                           char *out, size_t size) {
        size_t off = 0;
        char hex[65];

        for (size_t i = 0; i < _F_MAX; i++) {
                hex_encode(digests[i], 32, hex);
                off += (size_t)snprintf(out + off, size - off, "%s  %s\n", hex, file_names[i]);
        }
        if (origin_sha256) {
                hex_encode(origin_sha256, 32, hex);
                (void)snprintf(out + off, size - off, "%s  %s\n", hex, STORE_ORIGIN_FILE);
        }
}

/* Parses one "<64 lowercase hex>  <name>\n" line at *p (before end) and advances *p. */
static int parse_digest_line(const char **p, const char *end, const char *name,
                             uint8_t digest[32]) {
        size_t nlen = strlen(name);
        const char *q = *p;
        char hex[65];

        if ((size_t)(end - q) < 64 + 2 + nlen + 1)
                return -EINVAL;
        for (size_t k = 0; k < 64; k++)
                if (!((q[k] >= '0' && q[k] <= '9') || (q[k] >= 'a' && q[k] <= 'f')))
                        return -EINVAL;
        memcpy(hex, q, 64);
        hex[64] = 0;
        if (hex_decode(hex, strlen(hex), digest, 32) < 0)
                return -EINVAL;
        q += 64;
        if (q[0] != ' ' || q[1] != ' ' || memcmp(q + 2, name, nlen) != 0 || q[2 + nlen] != '\n')
                return -EINVAL;
        *p = q + 2 + nlen + 1;
        return 0;
}

/* Parses the digests file: exactly one "<64 lowercase hex>  <file>\n" line per stored file, in
 * the order of file_names[], then optionally one for the origin file (*has_origin says). */
static int parse_digests(const char *s, size_t len, uint8_t digests[_F_MAX][32], bool *has_origin,
                         uint8_t origin[32]) {
        const char *p = s, *end = s + len;

        for (size_t i = 0; i < _F_MAX; i++)
                if (parse_digest_line(&p, end, file_names[i], digests[i]) < 0)
                        return -EINVAL;
        *has_origin = p != end;
        if (*has_origin && parse_digest_line(&p, end, STORE_ORIGIN_FILE, origin) < 0)
                return -EINVAL;
        return p == end ? 0 : -EINVAL;
}

/* The origin file: "marketplace=<name>\nsigned=yes\n", or "marketplace=\nsigned=no\n" for an
 * unsigned release. */
int store_write_file(int dfd, const char *name, const void *data, size_t len) {
        uint8_t unused[32];

        if (dfd < 0 || !name || (!data && len > 0))
                return -EINVAL;
        return write_file_atomic(dfd, name, data ? data : "", len, -1, 0444, unused);
}

int store_write_file_private(int dfd, const char *name, const void *data, size_t len) {
        uint8_t unused[32];

        if (dfd < 0 || !name || (!data && len > 0))
                return -EINVAL;
        return write_file_atomic(dfd, name, data ? data : "", len, -1, 0600, unused);
}

int store_remove_dir(int dfd, const char *name) {
        return remove_flat_dir(dfd, name);
}

int store_temp_name(const char *prefix, const char *name, char *out, size_t size) {
        char suffix[17];
        int r;

        r = random_suffix(suffix);
        if (r < 0)
                return r;
        if ((size_t)snprintf(out, size, "%s%s-%s", prefix, name, suffix) >= size)
                return -ENAMETOOLONG;
        return 0;
}

static int format_origin(const StoreOrigin *o, char *out, size_t size) {
        if (o->signed_ != (o->marketplace[0] != 0))
                return -EINVAL; /* a signed release has a marketplace, an unsigned one none */
        if (o->signed_ && !marketplace_name_valid(o->marketplace))
                return -EINVAL;
        (void)snprintf(out, size, "marketplace=%s\nsigned=%s\n", o->marketplace,
                       o->signed_ ? "yes" : "no");
        return 0;
}

static int parse_origin(const char *s, size_t len, StoreOrigin *ret) {
        static const char k1[] = "marketplace=";
        StoreOrigin o = {};
        const char *nl;
        size_t n;

        if (strlen(s) != len || strncmp(s, k1, sizeof(k1) - 1) != 0)
                return -EINVAL;
        s += sizeof(k1) - 1;
        nl = strchr(s, '\n');
        if (!nl || (n = (size_t)(nl - s)) > MARKETPLACE_NAME_MAX)
                return -EINVAL;
        memcpy(o.marketplace, s, n);
        o.marketplace[n] = 0;
        s = nl + 1;
        if (strcmp(s, "signed=yes\n") == 0)
                o.signed_ = true;
        else if (strcmp(s, "signed=no\n") != 0)
                return -EINVAL;
        if (o.signed_ != (o.marketplace[0] != 0) ||
            (o.signed_ && !marketplace_name_valid(o.marketplace)))
                return -EINVAL;
        *ret = o;
        return 0;
}

int store_install(int statefd, const Release *rel, StoreError *err) {
        return store_install_origin(statefd, rel, NULL, err);
}

/* Opens plugins/<name>/ below statefd, creating it and plugins/ as needed (each creation made
 * durable in its parent). The directory's fd, or a negative errno with err filled. */
static int open_name_dir(int statefd, const char *name, StoreError *err) {
        _cleanup_close_ int pfd = -1;
        bool created_plugins, created_name;
        int nfd, r;

        pfd = mkdir_open(statefd, STORE_PLUGINS_DIR, &created_plugins);
        if (pfd < 0)
                return fail(err, STORE_E_IO, pfd, "cannot open %s/: %s", STORE_PLUGINS_DIR,
                            strerror(-pfd));
        if (created_plugins && (r = fsync_dir(statefd)) < 0)
                return fail(err, STORE_E_IO, r, "fsync: %s", strerror(-r));
        nfd = mkdir_open(pfd, name, &created_name);
        if (nfd < 0)
                return fail(err, STORE_E_IO, nfd, "cannot open %s/%s/: %s", STORE_PLUGINS_DIR, name,
                            strerror(-nfd));
        if (created_name && (r = fsync_dir(pfd)) < 0) {
                safe_close(nfd);
                return fail(err, STORE_E_IO, r, "fsync: %s", strerror(-r));
        }
        return nfd;
}

/* Writes rel's four files into the directory tfd, each with its SHA-256 of the bytes written in
 * digests. 0 or the negative errno of the first that fails. */
static int write_release(int tfd, const Release *rel, uint8_t digests[_F_MAX][32]) {
        int r;

        r = write_file_atomic(tfd, file_names[F_MANIFEST], rel->manifest_data, rel->manifest_len,
                              -1, 0444, digests[F_MANIFEST]);
        if (r < 0)
                return r;
        r = write_file_atomic(tfd, file_names[F_BINARY], NULL, 0, rel->binary_fd, 0444,
                              digests[F_BINARY]);
        if (r < 0)
                return r;
        r = write_file_atomic(tfd, file_names[F_MANIFEST_BUNDLE], rel->manifest_bundle,
                              rel->manifest_bundle_len, -1, 0444, digests[F_MANIFEST_BUNDLE]);
        if (r < 0)
                return r;
        return write_file_atomic(tfd, file_names[F_BINARY_BUNDLE], rel->binary_bundle,
                                 rel->binary_bundle_len, -1, 0444, digests[F_BINARY_BUNDLE]);
}

/* Writes what the directory tfd records of the files written: the origin (origin_text, unless
 * NULL) and the digests file over them all; then fsyncs tfd. 0 or a negative errno. */
static int write_record(int tfd, const uint8_t digests[_F_MAX][32], const char *origin_text) {
        char text[(_F_MAX + 1) * (64 + 2 + 32 + 1) + 1];
        uint8_t origin_sha256[32], unused[32];
        int r;

        if (origin_text) {
                r = write_file_atomic(tfd, STORE_ORIGIN_FILE, origin_text, strlen(origin_text), -1,
                                      0444, origin_sha256);
                if (r < 0)
                        return r;
        }
        format_digests(digests, origin_text ? origin_sha256 : NULL, text, sizeof(text));
        r = write_file_atomic(tfd, STORE_DIGESTS_FILE, text, strlen(text), -1, 0444, unused);
        if (r < 0)
                return r;
        return fsync_dir(tfd);
}

/*
 * Writes rel as the version directory of nfd (plugins/<name>/): every file into a temporary
 * directory, checked against the release's verified digests, recorded and fsynced, then renamed
 * into place with RENAME_NOREPLACE. The temporary directory is removed on any failure. 0, or a
 * negative errno with err filled.
 */
static int write_version_dir(int nfd, const Release *rel, const char *origin_text,
                             StoreError *err) {
        const Manifest *m = rel->manifest;
        _cleanup_close_ int tfd = -1;
        uint8_t digests[_F_MAX][32];
        char tmpdir[NAME_MAX], suffix[17];
        int r;

        r = random_suffix(suffix);
        if (r < 0)
                return fail(err, STORE_E_IO, r, "getrandom: %s", strerror(-r));
        snprintf(tmpdir, sizeof(tmpdir), ".tmp-%s-%s", m->version, suffix);
        if (mkdirat(nfd, tmpdir, 0755) < 0)
                return fail(err, STORE_E_IO, negative_errno(), "mkdir %s: %m", tmpdir);
        tfd = open_dir(nfd, tmpdir);
        r = tfd < 0 ? tfd : write_release(tfd, rel, digests);
        /* What was written must be what was verified. */
        if (r >= 0 && (memcmp(digests[F_MANIFEST], rel->manifest_sha256, 32) != 0 ||
                       memcmp(digests[F_BINARY], rel->binary_sha256, 32) != 0)) {
                (void)remove_flat_dir(nfd, tmpdir);
                return fail(err, STORE_E_DIGEST_MISMATCH, -EKEYREJECTED,
                            "%s %s: the bytes written are not the release's verified bytes",
                            m->name, m->version);
        }
        if (r >= 0)
                r = write_record(tfd, (const uint8_t(*)[32])digests, origin_text);
        if (r < 0) {
                (void)remove_flat_dir(nfd, tmpdir);
                return fail(err, STORE_E_IO, r, "cannot write %s %s: %s", m->name, m->version,
                            strerror(-r));
        }

        if (renameat2(nfd, tmpdir, nfd, m->version, RENAME_NOREPLACE) < 0) {
                r = negative_errno();
                (void)remove_flat_dir(nfd, tmpdir);
                if (r == -EEXIST)
                        return fail(err, STORE_E_EXISTS, r, "%s %s is installed already", m->name,
                                    m->version);
                return fail(err, STORE_E_IO, r, "rename into place: %s", strerror(-r));
        }
        return 0;
}

int store_install_origin(int statefd, const Release *rel, const StoreOrigin *origin,
                         StoreError *err) {
        _cleanup_close_ int nfd = -1;
        char origin_text[sizeof("marketplace=\nsigned=yes\n") + MARKETPLACE_NAME_MAX];
        const Manifest *m;
        struct stat st;
        int r;

        if (statefd < 0 || !rel || !rel->manifest || !rel->manifest_data || !rel->manifest_bundle ||
            !rel->binary_bundle || rel->binary_fd < 0)
                return fail(err, STORE_E_NAME, -EINVAL, "invalid arguments");
        m = rel->manifest;
        if (!manifest_name_valid(m->name) || !manifest_version_valid(m->version))
                return fail(err, STORE_E_NAME, -EINVAL, "bad plugin name or version");
        if (origin && format_origin(origin, origin_text, sizeof(origin_text)) < 0)
                return fail(err, STORE_E_NAME, -EINVAL, "bad origin");

        nfd = open_name_dir(statefd, m->name, err);
        if (nfd < 0)
                return nfd;
        if (fstatat(nfd, m->version, &st, AT_SYMLINK_NOFOLLOW) == 0)
                return fail(err, STORE_E_EXISTS, -EEXIST, "%s %s is installed already", m->name,
                            m->version);
        if (errno != ENOENT)
                return fail(err, STORE_E_IO, negative_errno(), "cannot stat %s/%s: %m", m->name,
                            m->version);

        r = write_version_dir(nfd, rel, origin ? origin_text : NULL, err);
        if (r < 0)
                return r;
        r = fsync_dir(nfd);
        if (r < 0)
                return fail(err, STORE_E_IO, r, "fsync: %s", strerror(-r));
        if (err)
                *err = (StoreError){};
        return 0;
}

typedef struct Mapping {
        void *p;
        size_t len;
} Mapping;

static void mappingp(Mapping *m) {
        if (m->p)
                munmap(m->p, m->len);
}

/* Maps an error reading a stored file to a StoreError. */
static int file_fail(StoreError *err, const char *name, int r) {
        if (r == -ENOENT || r == -ELOOP || r == -EBADFD || r == -EFBIG)
                return fail(err, STORE_E_MISSING_FILE, r == -EFBIG ? r : -ENOENT, "%s: %s", name,
                            r == -ENOENT   ? "missing"
                            : r == -ELOOP  ? "a symbolic link"
                            : r == -EBADFD ? "not a regular file"
                                           : "too large");
        return fail(err, STORE_E_IO, r, "cannot read %s: %s", name, strerror(-r));
}

int store_load(int statefd, const char *name, const char *version, Release **ret, StoreError *err) {
        return store_load_origin(statefd, name, version, ret, NULL, err);
}

/* Opens plugins/<name>/<version>/ below statefd. Its fd, or a negative errno with err filled
 * (STORE_E_NOT_FOUND when a directory of the path is missing). */
static int open_version_dir(int statefd, const char *name, const char *version, StoreError *err) {
        _cleanup_close_ int pfd = -1, nfd = -1;
        int vfd = -1, r;

        pfd = open_dir(statefd, STORE_PLUGINS_DIR);
        if (pfd >= 0)
                nfd = open_dir(pfd, name);
        if (nfd >= 0)
                vfd = open_dir(nfd, version);
        if (vfd < 0) {
                r = pfd < 0 ? pfd : nfd < 0 ? nfd : vfd;
                if (r == -ENOENT)
                        return fail(err, STORE_E_NOT_FOUND, r, "%s %s is not installed", name,
                                    version);
                return fail(err, STORE_E_IO, r, "cannot open %s %s: %s", name, version,
                            strerror(-r));
        }
        return vfd;
}

/* Reads the manifest and both bundles of the version directory vfd into rel. 0, or a negative
 * errno with err filled (file_fail()). */
static int read_release_files(int vfd, Release *rel, StoreError *err) {
        int r;

        r = release_read_file(vfd, RELEASE_MANIFEST_FILE, RELEASE_MANIFEST_MAX, &rel->manifest_data,
                              &rel->manifest_len);
        if (r < 0)
                return file_fail(err, RELEASE_MANIFEST_FILE, r);
        r = release_read_file(vfd, RELEASE_MANIFEST_BUNDLE_FILE, RELEASE_BUNDLE_MAX,
                              &rel->manifest_bundle, &rel->manifest_bundle_len);
        if (r < 0)
                return file_fail(err, RELEASE_MANIFEST_BUNDLE_FILE, r);
        r = release_read_file(vfd, RELEASE_BINARY_BUNDLE_FILE, RELEASE_BUNDLE_MAX,
                              &rel->binary_bundle, &rel->binary_bundle_len);
        if (r < 0)
                return file_fail(err, RELEASE_BINARY_BUNDLE_FILE, r);
        return 0;
}

/* Snapshots the binary of the version directory vfd into a sealed memfd (rel->binary_fd and
 * rel->binary_size) and maps it read-only into *map (nothing mapped for an empty binary). 0, or a
 * negative errno with err filled (file_fail()). */
static int load_binary(int vfd, Release *rel, Mapping *map, StoreError *err) {
        _cleanup_close_ int bfd = -1;
        struct stat st;
        int r;

        bfd = openat(vfd, RELEASE_BINARY_FILE,
                     O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (bfd < 0)
                return file_fail(err, RELEASE_BINARY_FILE, negative_errno());
        if (fstat(bfd, &st) < 0)
                return file_fail(err, RELEASE_BINARY_FILE, negative_errno());
        if (!S_ISREG(st.st_mode))
                return file_fail(err, RELEASE_BINARY_FILE, -EBADFD);
        if ((uint64_t)st.st_size > RELEASE_BINARY_MAX)
                return file_fail(err, RELEASE_BINARY_FILE, -EFBIG);
        r = memfd_snapshot(bfd, "plugin", RELEASE_BINARY_MAX, true);
        if (r < 0)
                return file_fail(err, RELEASE_BINARY_FILE, r);
        rel->binary_fd = r;
        if (fstat(rel->binary_fd, &st) < 0)
                return file_fail(err, RELEASE_BINARY_FILE, negative_errno());
        rel->binary_size = (uint64_t)st.st_size;
        if (rel->binary_size > 0) {
                map->len = (size_t)rel->binary_size;
                map->p = mmap(NULL, map->len, PROT_READ, MAP_PRIVATE, rel->binary_fd, 0);
                if (map->p == MAP_FAILED) {
                        map->p = NULL;
                        return file_fail(err, RELEASE_BINARY_FILE, negative_errno());
                }
        }
        return 0;
}

/* Checks the four files of rel (the binary as mapped in map) against the digests recorded at
 * install, and keeps the manifest's and the binary's in rel. 0, or -EKEYREJECTED with err
 * filled, naming the first file that differs. */
static int check_digests(Release *rel, const Mapping *map, const uint8_t recorded[_F_MAX][32],
                         const char *name, const char *version, StoreError *err) {
        uint8_t actual[_F_MAX][32];

        /* The digests are checked on the bytes kept (the memfd), not on a second read. */
        sha256((const uint8_t *)rel->manifest_data, rel->manifest_len, actual[F_MANIFEST]);
        sha256(map->p ? map->p : (const uint8_t *)"", map->len, actual[F_BINARY]);
        sha256((const uint8_t *)rel->manifest_bundle, rel->manifest_bundle_len,
               actual[F_MANIFEST_BUNDLE]);
        sha256((const uint8_t *)rel->binary_bundle, rel->binary_bundle_len,
               actual[F_BINARY_BUNDLE]);
        for (size_t i = 0; i < _F_MAX; i++)
                if (memcmp(recorded[i], actual[i], 32) != 0)
                        return fail(err, STORE_E_DIGEST_MISMATCH, -EKEYREJECTED,
                                    "%s %s: %s differs from the digest recorded at install", name,
                                    version, file_names[i]);
        memcpy(rel->manifest_sha256, actual[F_MANIFEST], 32);
        memcpy(rel->binary_sha256, actual[F_BINARY], 32);
        return 0;
}

/* Reads the origin file of the version directory vfd, checks it against the digest recorded at
 * install and parses it into *ret. 0, or a negative errno with err filled. */
static int load_origin(int vfd, const uint8_t recorded[32], const char *name, const char *version,
                       StoreOrigin *ret, StoreError *err) {
        _cleanup_free_ char *text = NULL;
        uint8_t actual[32];
        size_t len = 0;
        int r;

        r = release_read_file(vfd, STORE_ORIGIN_FILE, STORE_ORIGIN_MAX, &text, &len);
        if (r < 0)
                return file_fail(err, STORE_ORIGIN_FILE, r);
        sha256((const uint8_t *)text, len, actual);
        if (memcmp(recorded, actual, 32) != 0)
                return fail(err, STORE_E_DIGEST_MISMATCH, -EKEYREJECTED,
                            "%s %s: %s differs from the digest recorded at install", name, version,
                            STORE_ORIGIN_FILE);
        if (parse_origin(text, len, ret) < 0)
                return fail(err, STORE_E_ORIGIN, -EINVAL, "%s %s: malformed %s", name, version,
                            STORE_ORIGIN_FILE);
        return 0;
}

int store_load_origin(int statefd, const char *name, const char *version, Release **ret,
                      StoreOrigin *ret_origin, StoreError *err) {
        _cleanup_(release_freep) Release *rel = NULL;
        _cleanup_(mappingp) Mapping map = {};
        _cleanup_close_ int vfd = -1;
        _cleanup_free_ char *digests_text = NULL;
        uint8_t recorded[_F_MAX][32], origin_recorded[32];
        size_t digests_len = 0;
        bool has_origin = false;
        StoreOrigin origin = {};
        ManifestDiag diag = {};
        int r;

        if (statefd < 0 || !ret)
                return fail(err, STORE_E_NAME, -EINVAL, "invalid arguments");
        if (!manifest_name_valid(name) || !manifest_version_valid(version))
                return fail(err, STORE_E_NAME, -EINVAL, "bad plugin name or version");
        vfd = open_version_dir(statefd, name, version, err);
        if (vfd < 0)
                return vfd;

        rel = calloc(1, sizeof(*rel));
        if (!rel)
                return fail(err, STORE_E_NOMEM, -ENOMEM, "out of memory");
        rel->binary_fd = -1;

        r = release_read_file(vfd, STORE_DIGESTS_FILE, DIGESTS_MAX, &digests_text, &digests_len);
        if (r < 0)
                return file_fail(err, STORE_DIGESTS_FILE, r);
        if (parse_digests(digests_text, digests_len, recorded, &has_origin, origin_recorded) < 0)
                return fail(err, STORE_E_DIGESTS, -EINVAL, "%s %s: malformed %s", name, version,
                            STORE_DIGESTS_FILE);
        r = read_release_files(vfd, rel, err);
        if (r < 0)
                return r;
        r = load_binary(vfd, rel, &map, err);
        if (r < 0)
                return r;
        r = check_digests(rel, &map, (const uint8_t(*)[32])recorded, name, version, err);
        if (r < 0)
                return r;
        /* The origin, when one was recorded: checked like the other files. Without one (a
         * release stored by store_install()), the release counts as unsigned. */
        if (has_origin) {
                r = load_origin(vfd, origin_recorded, name, version, &origin, err);
                if (r < 0)
                        return r;
        }

        r = manifest_parse(rel->manifest_data, rel->manifest_len, &rel->manifest, &diag);
        if (r < 0)
                return fail(err, STORE_E_MANIFEST, r, "%s %s: stored manifest: %s: %s", name,
                            version, manifest_error_name(diag.code), diag.message);
        if (strcmp(rel->manifest->name, name) != 0 || strcmp(rel->manifest->version, version) != 0)
                return fail(err, STORE_E_MANIFEST, -EINVAL, "%s %s: the stored manifest is %s %s",
                            name, version, rel->manifest->name, rel->manifest->version);

        if (err)
                *err = (StoreError){};
        if (ret_origin)
                *ret_origin = origin;
        *ret = TAKE_PTR(rel);
        return 0;
}

void store_entries_free(StoreEntry *entries, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(entries[i].name);
                free(entries[i].version);
        }
        free(entries);
}

static int version_cmp(const char *a, const char *b) {
        unsigned long x[3] = {}, y[3] = {};

        sscanf(a, "%lu.%lu.%lu", &x[0], &x[1], &x[2]);
        sscanf(b, "%lu.%lu.%lu", &y[0], &y[1], &y[2]);
        for (size_t i = 0; i < 3; i++)
                if (x[i] != y[i])
                        return x[i] < y[i] ? -1 : 1;
        return 0;
}

static int entry_cmp(const void *a, const void *b) {
        const StoreEntry *x = a, *y = b;
        int c = strcmp(x->name, y->name);

        return c != 0 ? c : version_cmp(x->version, y->version);
}

/* Calls f for each valid subdirectory name of dfd; stops at f's first error. */
static int for_each_dir(int dfd, int (*f)(const char *name, void *userdata), void *userdata) {
        DIR *d = fd_opendir_dup(dfd);
        struct dirent *de;
        int r = 0;

        if (!d)
                return negative_errno();
        while ((errno = 0, de = readdir(d))) {
                struct stat st;

                if (de->d_name[0] == '.')
                        continue; /* ".", "..", temporary directories */
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISDIR(st.st_mode))
                        continue;
                r = f(de->d_name, userdata);
                if (r < 0)
                        break;
        }
        if (r == 0 && errno != 0)
                r = negative_errno();
        closedir(d);
        return r;
}

typedef struct ListState {
        int pfd;
        const char *name;
        StoreEntry *entries;
        size_t n, size;
} ListState;

static int add_version(const char *version, void *userdata) {
        ListState *s = userdata;

        if (!manifest_version_valid(version))
                return 0;
        if (s->n == s->size) {
                size_t nsize = s->size ? s->size * 2 : 16;
                StoreEntry *e = reallocarray(s->entries, nsize, sizeof(StoreEntry));
                if (!e)
                        return -ENOMEM;
                s->entries = e;
                s->size = nsize;
        }
        s->entries[s->n] = (StoreEntry){.name = strdup(s->name), .version = strdup(version)};
        s->n++;
        if (!s->entries[s->n - 1].name || !s->entries[s->n - 1].version)
                return -ENOMEM;
        return 0;
}

static int add_name(const char *name, void *userdata) {
        ListState *s = userdata;
        _cleanup_close_ int nfd = -1;

        if (!manifest_name_valid(name))
                return 0;
        nfd = open_dir(s->pfd, name);
        if (nfd < 0)
                return nfd == -ENOENT ? 0 : nfd;
        s->name = name;
        return for_each_dir(nfd, add_version, s);
}

int store_list(int statefd, StoreEntry **ret, size_t *ret_n) {
        _cleanup_close_ int pfd = -1;
        ListState s = {};
        int r;

        if (statefd < 0 || !ret || !ret_n)
                return -EINVAL;
        pfd = open_dir(statefd, STORE_PLUGINS_DIR);
        if (pfd == -ENOENT) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        if (pfd < 0)
                return pfd;
        s.pfd = pfd;
        r = for_each_dir(pfd, add_name, &s);
        if (r < 0) {
                store_entries_free(s.entries, s.n);
                return r;
        }
        if (s.n > 0)
                qsort(s.entries, s.n, sizeof(StoreEntry), entry_cmp);
        *ret = s.entries;
        *ret_n = s.n;
        return 0;
}

int store_remove(int statefd, const char *name, const char *version) {
        _cleanup_close_ int pfd = -1, nfd = -1;
        char gone[NAME_MAX], suffix[17];
        int r;

        if (statefd < 0 || !manifest_name_valid(name) || !manifest_version_valid(version))
                return -EINVAL;
        pfd = open_dir(statefd, STORE_PLUGINS_DIR);
        if (pfd < 0)
                return pfd;
        nfd = open_dir(pfd, name);
        if (nfd < 0)
                return nfd;

        r = random_suffix(suffix);
        if (r < 0)
                return r;
        snprintf(gone, sizeof(gone), ".rm-%s-%s", version, suffix);
        if (renameat2(nfd, version, nfd, gone, RENAME_NOREPLACE) < 0)
                return negative_errno();
        r = fsync_dir(nfd);
        if (r < 0)
                return r;
        r = remove_flat_dir(nfd, gone);
        if (r < 0)
                return r;

        /* The last version takes the name's directory with it. */
        if (unlinkat(pfd, name, AT_REMOVEDIR) < 0) {
                if (errno != ENOTEMPTY && errno != EEXIST)
                        return negative_errno();
                return fsync_dir(nfd);
        }
        return fsync_dir(pfd);
}
