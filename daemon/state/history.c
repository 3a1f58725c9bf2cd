/* The plugin history: the highest version ever installed per name, with its meaning. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "history.h"
#include "macro.h"
#include "store.h"
#include "update.h"

#define HISTORY_RECORD_MAX ((size_t)64 * 1024) /* a manifest's cap */

static int history_dir(int statefd, bool create) {
        int fd;

        if (create && mkdirat(statefd, HISTORY_DIR, 0700) < 0 && errno != EEXIST)
                return -errno;
        fd = openat(statefd, HISTORY_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        return fd < 0 ? -errno : fd;
}

static int record_name(const char *name, char out[NAME_MAX + 1]) {
        if (!manifest_name_valid(name))
                return -EINVAL;
        if ((size_t)snprintf(out, NAME_MAX + 1, "%s.toml", name) > NAME_MAX)
                return -ENAMETOOLONG;
        return 0;
}

int history_load(int statefd, const char *name, Manifest **ret) {
        _cleanup_close_ int dfd = -1, fd = -1;
        _cleanup_free_ char *data = NULL;
        _cleanup_(manifest_freep) Manifest *m = NULL;
        char file[NAME_MAX + 1];
        ManifestDiag diag;
        size_t len = 0;
        int r;

        if (statefd < 0 || !ret)
                return -EINVAL;
        r = record_name(name, file);
        if (r < 0)
                return r;
        dfd = history_dir(statefd, false);
        if (dfd == -ENOENT)
                return 0;
        if (dfd < 0)
                return dfd;
        fd = openat(dfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        r = read_full_fd(fd, HISTORY_RECORD_MAX, &data, &len);
        if (r < 0)
                return r;
        r = manifest_parse(data, len, &m, &diag);
        if (r < 0)
                return -EBADMSG;
        if (strcmp(m->name, name) != 0)
                return -EBADMSG;
        *ret = TAKE_PTR(m);
        return 1;
}

int history_record(int statefd, const Manifest *m, const char *data, size_t len) {
        _cleanup_(manifest_freep) Manifest *old = NULL;
        _cleanup_close_ int dfd = -1;
        char file[NAME_MAX + 1];
        int r;

        if (statefd < 0 || !m || !data || len > HISTORY_RECORD_MAX)
                return -EINVAL;
        r = record_name(m->name, file);
        if (r < 0)
                return r;
        r = history_load(statefd, m->name, &old);
        if (r < 0 && r != -EBADMSG)
                return r;
        if (r > 0 && update_version_compare(old, m) >= 0)
                return 0;
        dfd = history_dir(statefd, true);
        if (dfd < 0)
                return dfd;
        r = store_write_file(dfd, file, data, len);
        if (r < 0)
                return r;
        return fsync(dfd) < 0 ? -errno : 0;
}
