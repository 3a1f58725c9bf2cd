/* File descriptor helpers: sealed memfd snapshots, fresh read-only reopens, full reads and writes.
 */
#include <errno.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"

ssize_t loop_read(int fd, void *buf, size_t len) {
        size_t done = 0;

        while (done < len) {
                ssize_t n = read(fd, (uint8_t *)buf + done, len - done);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                done += (size_t)n;
        }
        return (ssize_t)done;
}

int loop_write(int fd, const void *buf, size_t len) {
        const uint8_t *p = buf;

        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        return -EIO;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

/* Creates a sealable memfd, non-executable for data where the kernel supports that. */
int memfd_new(const char *name, bool executable) {
        int fd;

        if (executable) {
                fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
                return fd < 0 ? negative_errno() : fd;
        }
        fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
        if (fd < 0 && errno == EINVAL)
                fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
        return fd < 0 ? negative_errno() : fd;
}

int memfd_seal(int fd, bool executable) {
        int seals = MEMFD_SEALS_IMMUTABLE;

        /* Nobody needs to write it, and a plugin's uid must not even open it for writing. */
        if (fchmod(fd, executable ? 0555 : 0444) < 0)
                return negative_errno();

        if (!executable && fcntl(fd, F_ADD_SEALS, F_SEAL_EXEC) < 0 && errno != EINVAL)
                return negative_errno();
        if (fcntl(fd, F_ADD_SEALS, seals) < 0)
                return negative_errno();
        return 0;
}

int memfd_snapshot(int fd, const char *name, uint64_t max, bool executable) {
        _cleanup_close_ int mfd = -1;
        uint8_t buf[64 * 1024];
        uint64_t total = 0;
        int r;

        mfd = memfd_new(name, executable);
        if (mfd < 0)
                return mfd;

        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                total += (uint64_t)n;
                if (total > max)
                        return -EFBIG;
                r = loop_write(mfd, buf, (size_t)n);
                if (r < 0)
                        return r;
        }

        r = memfd_seal(mfd, executable);
        if (r < 0)
                return r;
        if (lseek(mfd, 0, SEEK_SET) < 0)
                return negative_errno();
        return TAKE_FD(mfd);
}

bool memfd_is_sealed(int fd) {
        const int needed = F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK;
        int seals = fcntl(fd, F_GET_SEALS);

        /* Only a memfd (or another shmem file that supports seals) answers F_GET_SEALS. */
        return seals >= 0 && (seals & needed) == needed;
}

int memfd_from_buffer(const void *buf, size_t len, const char *name) {
        _cleanup_close_ int mfd = -1;
        int r;

        mfd = memfd_new(name, false);
        if (mfd < 0)
                return mfd;
        r = loop_write(mfd, buf, len);
        if (r < 0)
                return r;
        r = memfd_seal(mfd, false);
        if (r < 0)
                return r;
        if (lseek(mfd, 0, SEEK_SET) < 0)
                return negative_errno();
        return TAKE_FD(mfd);
}

int fd_reopen_readonly(int fd) {
        char path[sizeof("/proc/self/fd/") + 12];
        int nfd;

        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        nfd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        return nfd < 0 ? negative_errno() : nfd;
}

int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, len = 0;

        for (;;) {
                if (len == size) {
                        size_t nsize = size == 0 ? 4096 : size * 2;
                        char *nbuf;

                        if (nsize > max + 1)
                                nsize = max + 1;
                        if (nsize <= size)
                                return -EFBIG;
                        nbuf = realloc(buf, nsize + 1);
                        if (!nbuf)
                                return -ENOMEM;
                        buf = nbuf;
                        size = nsize;
                }
                ssize_t n = read(fd, buf + len, size - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len > max)
                        return -EFBIG;
        }
        if (!buf) {
                buf = malloc(1);
                if (!buf)
                        return -ENOMEM;
        }
        buf[len] = 0;
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -1;
        struct stat st;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        if ((uint64_t)st.st_size > max)
                return -EFBIG;
        return read_full_fd(fd, max, ret, ret_len);
}

DIR *fd_opendir_dup(int dfd) {
        int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        DIR *d;

        if (fd < 0)
                return NULL;
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd); /* keeps errno */
                return NULL;
        }
        rewinddir(d);
        return d;
}

void strv_free_n(char **v, size_t n) {
        for (size_t i = 0; v && i < n; i++)
                free(v[i]);
        free(v);
}

static int strcmp_ptr(const void *a, const void *b) {
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int dir_names_sorted(int dfd, bool (*keep)(const char *name), size_t max, char ***ret,
                     size_t *ret_n) {
        char **v = NULL;
        size_t n = 0;
        struct dirent *de;
        DIR *d = fd_opendir_dup(dfd);
        int r = 0;

        if (!d)
                return negative_errno();
        while ((errno = 0, de = readdir(d))) {
                char **nv;

                if (!keep(de->d_name))
                        continue;
                if (n >= max) {
                        r = -E2BIG;
                        break;
                }
                nv = reallocarray(v, n + 2, sizeof(*v));
                if (!nv) {
                        r = -ENOMEM;
                        break;
                }
                v = nv;
                v[n] = strdup(de->d_name);
                if (!v[n]) {
                        r = -ENOMEM;
                        break;
                }
                v[++n] = NULL;
        }
        if (r == 0 && errno != 0)
                r = negative_errno();
        closedir(d);
        if (r == 0 && !v) {
                v = calloc(1, sizeof(*v));
                if (!v)
                        r = -ENOMEM;
        }
        if (r < 0) {
                strv_free_n(v, n);
                return r;
        }
        if (n > 1)
                qsort(v, n, sizeof(*v), strcmp_ptr);
        *ret = v;
        *ret_n = n;
        return 0;
}

/* Takes every fd mh carried (see recv_datagram_fds()); how many there were in all. */
static size_t cmsg_take_fds(struct msghdr *mh, int *fds, size_t max, bool *ret_other) {
        size_t n = 0;

        *ret_other = false;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
                        *ret_other = true;
                        continue;
                }
                size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < k; i++, n++) {
                        int f;

                        memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        if (n < max)
                                fds[n] = f;
                        else
                                safe_close(f);
                }
        }
        return n;
}

ssize_t recv_datagram_fds(int fd, void *buf, size_t size, int *fds, size_t max_fds,
                          size_t *ret_n_fds, bool *ret_cut) {
        union {
                struct cmsghdr align;
                uint8_t space[CMSG_SPACE(sizeof(int) * RECV_FDS_MAX)];
        } control;
        struct iovec iov = {.iov_base = buf, .iov_len = size};
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = &control,
                .msg_controllen = CMSG_SPACE(
                        sizeof(int) * (max_fds + 1 < RECV_FDS_MAX ? max_fds + 1 : RECV_FDS_MAX)),
        };
        bool other;
        ssize_t n;

        n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n < 0)
                return negative_errno();
        *ret_n_fds = cmsg_take_fds(&mh, fds, max_fds, &other);
        *ret_cut = other || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC));
        return n;
}
