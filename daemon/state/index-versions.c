/* The newest verified index version per marketplace, on disk, and the rollback and freeze rule
 * (ARCHITECTURE.md, "The marketplace flow"). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "index-versions.h"
#include "index.h"
#include "macro.h"
#include "marketplace.h"
#include "release.h"
#include "store.h"

/* "<decimal>\n": at most 16 digits (2^53 has 16). */
#define RECORD_MAX 32

static int parse_record(const char *s, size_t len, uint64_t *ret) {
        uint64_t v = 0;

        if (len < 2 || len > 17 || s[len - 1] != '\n' || (s[0] == '0' && len > 2))
                return -EBADMSG;
        for (size_t i = 0; i + 1 < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -EBADMSG;
                v = v * 10 + (uint64_t)(s[i] - '0');
        }
        if (v > INDEX_VERSION_MAX)
                return -EBADMSG;
        *ret = v;
        return 0;
}

int index_versions_get(int statefd, const char *name, uint64_t *ret) {
        _cleanup_close_ int dfd = -1;
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        if (statefd < 0 || !marketplace_name_valid(name) || !ret)
                return -EINVAL;
        dfd = openat(statefd, INDEX_VERSIONS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0 && errno == ENOENT) {
                *ret = 0;
                return 0;
        }
        if (dfd < 0)
                return negative_errno();
        r = release_read_file(dfd, name, RECORD_MAX, &text, &len);
        if (r == -ENOENT) {
                *ret = 0;
                return 0;
        }
        if (r < 0)
                return r == -EFBIG ? -EBADMSG : r;
        return parse_record(text, len, ret);
}

/* Writes the record of name durably: the file atomically, then the directory synced. */
static int record_write(int statefd, const char *name, uint64_t version) {
        _cleanup_close_ int dfd = -1;
        char text[RECORD_MAX];
        int r, n;

        if (mkdirat(statefd, INDEX_VERSIONS_DIR, 0755) == 0) {
                if (fsync(statefd) < 0)
                        return negative_errno();
        } else if (errno != EEXIST)
                return negative_errno();
        dfd = openat(statefd, INDEX_VERSIONS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return negative_errno();
        n = snprintf(text, sizeof(text), "%" PRIu64 "\n", version);
        r = store_write_file(dfd, name, text, (size_t)n);
        if (r < 0)
                return r;
        return fsync(dfd) < 0 ? negative_errno() : 0;
}

int index_versions_admit(int statefd, const char *name, const VerifiedIndex *vi, int64_t now,
                         IndexFreshness *ret_verdict, uint64_t *ret_newest) {
        uint64_t newest = 0;
        int r;

        if (!vi || !ret_verdict || !ret_newest)
                return -EINVAL;
        r = index_versions_get(statefd, name, &newest);
        if (r < 0)
                return r;
        *ret_newest = newest;

        /*
         * Rollback first: an index older than one lockd has verified is what a mirror or an
         * attacker serves to hold back a fix, validly signed as it once was. An equal version is
         * the same index fetched again. Then freeze: an index past its expiry may be the newest
         * an attacker lets through, so it is refused however new it is (TUF's freeze attack; apt's
         * Valid-Until). The wall clock is the right clock: expires is a date the publisher signed.
         */
        if (vi->version < newest) {
                *ret_verdict = INDEX_ROLLBACK;
                return -ESTALE;
        }
        if (vi->expires <= now) {
                *ret_verdict = INDEX_EXPIRED;
                return -ETIME;
        }
        if (vi->version > newest) {
                r = record_write(statefd, name, vi->version);
                if (r < 0)
                        return r;
        }
        *ret_verdict = INDEX_FRESH;
        return 0;
}

int index_versions_remove(int statefd, const char *name) {
        _cleanup_close_ int dfd = -1;

        if (statefd < 0 || !marketplace_name_valid(name))
                return -EINVAL;
        dfd = openat(statefd, INDEX_VERSIONS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return errno == ENOENT ? 0 : negative_errno();
        if (unlinkat(dfd, name, 0) < 0)
                return errno == ENOENT ? 0 : negative_errno();
        return fsync(dfd) < 0 ? negative_errno() : 0;
}
