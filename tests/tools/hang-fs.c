/*
 * hang-fs: a FUSE file system for the tests whose one file, /hang, opens and stats like any
 * other but whose reads never answer: it stands for a hung NFS or sshfs mount. Usage:
 * hang-fs MOUNTPOINT (stays in the foreground; SIGTERM or an unmount ends it).
 */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fuse.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char name[] = "/hang";

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
        memset(st, 0, sizeof(*st));
        if (strcmp(path, "/") == 0) {
                st->st_mode = S_IFDIR | 0755;
                st->st_nlink = 2;
                return 0;
        }
        if (strcmp(path, name) == 0) {
                st->st_mode = S_IFREG | 0444;
                st->st_nlink = 1;
                st->st_size = 4096;
                return 0;
        }
        return -ENOENT;
}

static int fs_open(const char *path, struct fuse_file_info *fi) {
        if (strcmp(path, name) != 0)
                return -ENOENT;
        if ((fi->flags & O_ACCMODE) != O_RDONLY)
                return -EACCES;
        fi->direct_io = 1; /* no page cache: every read reaches us */
        return 0;
}

/* Never answers: the reader waits until it is killed, or the file system goes away. */
static int fs_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
        for (;;)
                pause();
        return -EIO;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags) {
        if (strcmp(path, "/") != 0)
                return -ENOENT;
        fill(buf, ".", NULL, 0, 0);
        fill(buf, "..", NULL, 0, 0);
        fill(buf, name + 1, NULL, 0, 0);
        return 0;
}

static const struct fuse_operations ops = {
        .getattr = fs_getattr,
        .open = fs_open,
        .read = fs_read,
        .readdir = fs_readdir,
};

int main(int argc, char **argv) {
        char *args[] = {argv[0], "-f", "-o", "allow_other", argc > 1 ? argv[1] : NULL, NULL};

        if (argc != 2)
                return 2;
        return fuse_main(5, args, &ops, NULL);
}
