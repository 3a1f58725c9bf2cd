/* The handle store: snapshots and metadata of granted files, written durably, read back at
 * start. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "handle-store.h"
#include "codec.h"
#include "macro.h"
#include "store.h"

#define META_SUFFIX ".meta"
#define DATA_SUFFIX ".data"
#define META_MAX    ((size_t)4096)
#define FORMAT      1

struct HandleStore {
        int dfd;
        uint64_t max_bytes;
        uint64_t used; /* bytes of the snapshots stored */
};

HandleStore *handle_store_free(HandleStore *s) {
        if (!s)
                return NULL;
        safe_close(s->dfd);
        free(s);
        return NULL;
}

static bool has_suffix(const char *s, const char *suffix) {
        size_t n = strlen(s), k = strlen(suffix);

        return n > k && strcmp(s + n - k, suffix) == 0;
}

/* Whether name is "<handle id><suffix>", with the id copied to id. */
static bool file_of(const char *name, const char *suffix, char id[HANDLE_ID_LEN + 1]) {
        size_t n = strlen(name);

        if (n != HANDLE_ID_LEN + strlen(suffix) || !has_suffix(name, suffix))
                return false;
        memcpy(id, name, HANDLE_ID_LEN);
        id[HANDLE_ID_LEN] = 0;
        return handle_id_valid(id);
}

int handle_store_open(int statefd, uint64_t max_bytes, HandleStore **ret) {
        _cleanup_(handle_store_freep) HandleStore *s = NULL;
        DIR *d;
        struct dirent *de;

        if (statefd < 0 || max_bytes == 0 || !ret)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->dfd = -1;
        s->max_bytes = max_bytes;
        if (mkdirat(statefd, HANDLE_STORE_DIR, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        s->dfd = openat(statefd, HANDLE_STORE_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (s->dfd < 0)
                return negative_errno();
        /* What an interrupted write left: temporary files, and snapshots whose metadata never
         * arrived (the grant was never answered). */
        d = fd_opendir_dup(s->dfd);
        if (!d)
                return negative_errno();
        while ((de = readdir(d))) {
                char id[HANDLE_ID_LEN + 1], meta[NAME_MAX + 1];
                struct stat st;

                if (de->d_name[0] == '.' && strncmp(de->d_name, ".#", 2) != 0)
                        continue;
                if (strncmp(de->d_name, ".#", 2) == 0) {
                        (void)unlinkat(s->dfd, de->d_name, 0);
                        continue;
                }
                if (file_of(de->d_name, DATA_SUFFIX, id)) {
                        snprintf(meta, sizeof(meta), "%s" META_SUFFIX, id);
                        if (fstatat(s->dfd, meta, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
                                (void)unlinkat(s->dfd, de->d_name, 0);
                }
        }
        closedir(d);
        (void)fsync(s->dfd);
        *ret = TAKE_PTR(s);
        return 0;
}

/* The metadata text: one "key value" a line, in this order. The label in hex: it may hold any
 * UTF-8 a label may, spaces included. */
static int format_meta(const Handle *h, char *out, size_t size) {
        char label[2 * HANDLE_LABEL_MAX + 1] = "-";
        int n;

        if (h->label)
                hex_encode((const uint8_t *)h->label, strlen(h->label), label);
        n = snprintf(out, size,
                     "format %d\nid %s\nsha256 %s\nbytes %" PRIu64 "\nagent %u\nexpires %" PRIu64
                     "\nbudget %" PRIu32 "\nauto %d\ngranted %" PRIu64 "\nlabel %s\n",
                     FORMAT, h->id, h->sha256, h->bytes, (unsigned)h->agent, h->expires_usec,
                     h->budget, h->auto_run ? 1 : 0, h->granted_usec, label);
        return n > 0 && (size_t)n < size ? n : -E2BIG;
}

static int sync_dir(HandleStore *s) {
        return fsync(s->dfd) < 0 ? negative_errno() : 0;
}

int handle_store_save(HandleStore *s, const Handle *h) {
        char data[NAME_MAX + 1], meta[NAME_MAX + 1], text[META_MAX];
        void *map = NULL;
        int n, r;

        if (!s || !h)
                return -EINVAL;
        if (h->bytes > s->max_bytes || s->used > s->max_bytes - h->bytes)
                return -ENOBUFS;
        n = format_meta(h, text, sizeof(text));
        if (n < 0)
                return n;
        snprintf(data, sizeof(data), "%s" DATA_SUFFIX, h->id);
        snprintf(meta, sizeof(meta), "%s" META_SUFFIX, h->id);
        if (h->bytes > 0) {
                map = mmap(NULL, h->bytes, PROT_READ, MAP_SHARED, h->memfd, 0);
                if (map == MAP_FAILED)
                        return negative_errno();
        }
        r = store_write_file_private(s->dfd, data, map ? map : "", h->bytes);
        if (map)
                munmap(map, h->bytes);
        if (r >= 0)
                r = store_write_file_private(s->dfd, meta, text, (size_t)n);
        if (r >= 0)
                r = sync_dir(s);
        if (r < 0) {
                /* Nothing of a grant that was not answered stays behind. */
                (void)unlinkat(s->dfd, meta, 0);
                (void)unlinkat(s->dfd, data, 0);
                (void)sync_dir(s);
                return r;
        }
        s->used += h->bytes;
        return 0;
}

int handle_store_remove(HandleStore *s, const char *id, uint64_t bytes) {
        char data[NAME_MAX + 1], meta[NAME_MAX + 1];
        int r = 0;

        if (!s || !handle_id_valid(id))
                return -EINVAL;
        snprintf(data, sizeof(data), "%s" DATA_SUFFIX, id);
        snprintf(meta, sizeof(meta), "%s" META_SUFFIX, id);
        if (unlinkat(s->dfd, meta, 0) < 0 && errno != ENOENT)
                r = negative_errno();
        if (unlinkat(s->dfd, data, 0) < 0 && errno != ENOENT && r == 0)
                r = negative_errno();
        if (r == 0)
                r = sync_dir(s);
        s->used = s->used > bytes ? s->used - bytes : 0;
        return r;
}

/* Reads "key value\n" for exactly key at *p, leaving *p after the line; the value NUL-ended in
 * place. */
static char *take_line(char **p, const char *key) {
        size_t k = strlen(key);
        char *nl, *v;

        if (strncmp(*p, key, k) != 0 || (*p)[k] != ' ')
                return NULL;
        v = *p + k + 1;
        nl = strchr(v, '\n');
        if (!nl || nl == v)
                return NULL;
        *nl = 0;
        *p = nl + 1;
        return v;
}

static bool parse_u64(const char *s, uint64_t max, uint64_t *ret) {
        char *end;
        unsigned long long v;

        if (!s || s[0] < '0' || s[0] > '9' || (s[0] == '0' && s[1]))
                return false;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno != 0 || *end || v > max)
                return false;
        *ret = v;
        return true;
}

/* Parses the metadata strictly into h (id, sha256, fields). 0 or -EBADMSG. */
static int parse_meta(char *text, const char *id, Handle *h, char **ret_label) {
        char *p = text, *v;
        uint64_t u;
        uint8_t raw[HANDLE_LABEL_MAX];
        size_t n;

        if (!(v = take_line(&p, "format")) || strcmp(v, "1") != 0)
                return -EBADMSG;
        if (!(v = take_line(&p, "id")) || strcmp(v, id) != 0)
                return -EBADMSG;
        memcpy(h->id, id, sizeof(h->id));
        if (!(v = take_line(&p, "sha256")) || strlen(v) != HANDLE_SHA256_HEX ||
            hex_decode(v, strlen(v), h->digest, sizeof(h->digest)) < 0)
                return -EBADMSG;
        hex_encode(h->digest, sizeof(h->digest), h->sha256);
        if (strcmp(h->sha256, v) != 0) /* lowercase only, as written */
                return -EBADMSG;
        if (!parse_u64(take_line(&p, "bytes"), UINT64_MAX, &h->bytes))
                return -EBADMSG;
        if (!parse_u64(take_line(&p, "agent"), UINT32_MAX - 1, &u))
                return -EBADMSG;
        h->agent = (uid_t)u;
        if (!parse_u64(take_line(&p, "expires"), UINT64_MAX, &h->expires_usec))
                return -EBADMSG;
        if (!parse_u64(take_line(&p, "budget"), UINT32_MAX, &u) || u == 0)
                return -EBADMSG;
        h->budget = (uint32_t)u;
        if (!parse_u64(take_line(&p, "auto"), 1, &u))
                return -EBADMSG;
        h->auto_run = u == 1;
        if (!parse_u64(take_line(&p, "granted"), UINT64_MAX, &h->granted_usec))
                return -EBADMSG;
        if (!(v = take_line(&p, "label")) || *p != 0)
                return -EBADMSG;
        *ret_label = NULL;
        if (strcmp(v, "-") != 0) {
                n = strlen(v);
                if (n % 2 != 0 || n / 2 > sizeof(raw) || hex_decode(v, strlen(v), raw, n / 2) < 0 ||
                    !handle_label_valid((const char *)raw, n / 2))
                        return -EBADMSG;
                *ret_label = strndup((const char *)raw, n / 2);
                if (!*ret_label)
                        return -ENOMEM;
        }
        return 0;
}

/* Loads the handle id: 1 restored, 0 expired (removed), -EBADMSG damaged (removed), or another
 * negative errno. */
static int load_one(HandleStore *s, Handles *hs, const char *id, uint64_t max_snapshot_bytes,
                    uint64_t now) {
        char data[NAME_MAX + 1], meta[NAME_MAX + 1];
        _cleanup_free_ char *text = NULL, *label = NULL;
        _cleanup_close_ int mfd = -1, dfd = -1, memfd = -1;
        Handle h = {.memfd = -1};
        uint8_t digest[32];
        struct stat st;
        size_t len = 0;
        int r;

        snprintf(data, sizeof(data), "%s" DATA_SUFFIX, id);
        snprintf(meta, sizeof(meta), "%s" META_SUFFIX, id);
        mfd = openat(s->dfd, meta, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (mfd < 0)
                return negative_errno();
        r = read_full_fd(mfd, META_MAX, &text, &len);
        if (r < 0)
                return r == -EFBIG ? -EBADMSG : r;
        if (strlen(text) != len)
                return -EBADMSG;
        r = parse_meta(text, id, &h, &label);
        if (r < 0)
                return r;
        if (h.expires_usec != 0 && h.expires_usec <= now)
                return 0;
        dfd = openat(s->dfd, data, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (dfd < 0)
                return errno == ENOENT ? -EBADMSG : negative_errno();
        if (fstat(dfd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != h.bytes || h.bytes > max_snapshot_bytes)
                return -EBADMSG;
        memfd = memfd_snapshot(dfd, "lockd-handle", max_snapshot_bytes, false);
        if (memfd < 0)
                return memfd;
        r = sha256_fd(memfd, digest);
        if (r < 0)
                return r;
        if (memcmp(digest, h.digest, sizeof(digest)) != 0)
                return -EBADMSG; /* other bytes than were granted: never served */
        h.memfd = memfd;
        h.label = label;
        r = handles_restore(hs, &h);
        if (r < 0)
                return r;
        memfd = -1; /* the handle's now */
        label = NULL;
        s->used += h.bytes;
        return 1;
}

int handle_store_load(HandleStore *s, Handles *hs, uint64_t max_snapshot_bytes,
                      unsigned *ret_dropped) {
        uint64_t now = handles_now_usec();
        struct dirent *de;
        unsigned dropped = 0;
        int restored = 0, r = 0;
        DIR *d;

        if (!s || !hs)
                return -EINVAL;
        d = fd_opendir_dup(s->dfd);
        if (!d)
                return negative_errno();
        while ((de = readdir(d))) {
                char id[HANDLE_ID_LEN + 1];
                int q;

                if (!file_of(de->d_name, META_SUFFIX, id))
                        continue;
                q = load_one(s, hs, id, max_snapshot_bytes, now);
                if (q > 0)
                        restored++;
                else if (q == 0 || q == -EBADMSG) {
                        dropped += q < 0;
                        (void)handle_store_remove(s, id, 0);
                } else if (r == 0)
                        r = q;
        }
        closedir(d);
        if (ret_dropped)
                *ret_dropped = dropped;
        return r < 0 ? r : restored;
}
