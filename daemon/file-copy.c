/* Copies of console-passed files, made by a child process with a deadline. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fd-util.h"
#include "file-copy.h"
#include "macro.h"

#define COPY_FDS_MAX 16

struct FileCopy {
        sd_event *event;
        int *fds; /* the caller's array, replaced in place on success */
        size_t n;
        int copies[COPY_FDS_MAX]; /* a memfd per copied fd, -1 for one left as it is */
        pid_t pid;
        int pidfd;
        sd_event_source *exit_source, *timer;
        bool timed_out;
        FileCopyDoneFn done;
        void *userdata;
};

static void kill_child(FileCopy *c) {
        if (c->pidfd >= 0)
                (void)syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
}

/* A killed child that has not exited yet: reaped when it does, without anyone waiting. */
typedef struct Orphan {
        int pidfd;
        sd_event_source *source;
} Orphan;

static int on_orphan_exit(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Orphan *o = userdata;
        siginfo_t si = {};

        if (waitid((idtype_t)P_PIDFD, (id_t)o->pidfd, &si, WEXITED | WNOHANG) < 0 ||
            si.si_pid != 0) {
                sd_event_source_disable_unref(o->source);
                safe_close(o->pidfd);
                free(o);
        }
        return 0;
}

FileCopy *file_copy_cancel(FileCopy *c) {
        siginfo_t si = {};

        if (!c)
                return NULL;
        /* The sources before the pidfd: another copy's child may hold a duplicate of this pidfd
         * (fork copies the fd table), so closing it would not take it out of epoll. */
        c->exit_source = sd_event_source_disable_unref(c->exit_source);
        c->timer = sd_event_source_disable_unref(c->timer);
        kill_child(c);
        /*
         * A read that FUSE handed to its server waits uninterruptibly, SIGKILL or not, until the
         * server answers or the mount is aborted: the child may outlive this. Nobody waits for
         * it: it is reaped from the loop whenever it ends (a zombie only until then).
         */
        if (c->pidfd >= 0 &&
            waitid((idtype_t)P_PIDFD, (id_t)c->pidfd, &si, WEXITED | WNOHANG) == 0 &&
            si.si_pid == 0 && c->event) {
                Orphan *o = calloc(1, sizeof(*o));

                if (o && sd_event_add_io(c->event, &o->source, c->pidfd, EPOLLIN, on_orphan_exit,
                                         o) >= 0) {
                        (void)sd_event_source_set_floating(o->source, true);
                        o->pidfd = TAKE_FD(c->pidfd);
                } else
                        free(o);
        }
        safe_close(c->pidfd);
        sd_event_unref(c->event);
        for (size_t i = 0; i < c->n; i++)
                safe_close(c->copies[i]);
        free(c);
        return NULL;
}

/* Whether fd is what the methods would read: a regular file open for reading. */
static bool copyable(int fd) {
        struct stat st;
        int flags = fcntl(fd, F_GETFL);

        return flags >= 0 && (flags & O_ACCMODE) != O_WRONLY && !(flags & O_PATH) &&
               fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

/*
 * The child: copies each file into its memfd with pread() and write() only (it was forked from a
 * process with threads) and exits 0, or with the errno of what failed. It dies with lockd.
 */
_noreturn_ static void child(FileCopy *c, uint64_t max_bytes) {
        static char buf[64 * 1024];

        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                _exit(EPERM);
        /* Nothing of lockd but the files and their copies: no socket, no other child's pidfd. */
        int top = 1024;

        for (size_t i = 0; i < c->n; i++) {
                if (c->fds[i] >= top)
                        top = c->fds[i] + 1;
                if (c->copies[i] >= top)
                        top = c->copies[i] + 1;
        }
        for (int fd = 3; fd < top; fd++) {
                bool keep = false;

                for (size_t i = 0; i < c->n && !keep; i++)
                        keep = fd == c->fds[i] || fd == c->copies[i];
                if (!keep)
                        (void)close(fd);
        }
        (void)syscall(SYS_close_range, (unsigned)top, ~0U, 0U);
        for (size_t i = 0; i < c->n; i++) {
                uint64_t total = 0;
                off_t off = 0;

                if (c->copies[i] < 0)
                        continue;
                for (;;) {
                        ssize_t k = pread(c->fds[i], buf, sizeof(buf), off);

                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k < 0)
                                _exit(errno > 0 && errno < 256 ? errno : EIO);
                        if (k == 0)
                                break;
                        total += (uint64_t)k;
                        if (total > max_bytes)
                                _exit(EFBIG);
                        for (ssize_t w = 0; w < k;) {
                                ssize_t m = write(c->copies[i], buf + w, (size_t)(k - w));

                                if (m < 0 && errno == EINTR)
                                        continue;
                                if (m <= 0)
                                        _exit(m < 0 && errno > 0 && errno < 256 ? errno : EIO);
                                w += m;
                        }
                        off += k;
                }
        }
        _exit(0);
}

static void finish(FileCopy *c, int error) {
        FileCopyDoneFn done = c->done;
        void *userdata = c->userdata;

        if (error == 0)
                for (size_t i = 0; i < c->n; i++) {
                        if (c->copies[i] < 0)
                                continue;
                        if (memfd_seal(c->copies[i], false) < 0 ||
                            lseek(c->copies[i], 0, SEEK_SET) < 0) {
                                error = -errno;
                                break;
                        }
                }
        if (error == 0)
                for (size_t i = 0; i < c->n; i++)
                        if (c->copies[i] >= 0) {
                                safe_close(c->fds[i]);
                                c->fds[i] = TAKE_FD(c->copies[i]);
                        }
        file_copy_cancel(c); /* reaped already: the SIGKILL finds nothing */
        done(error, userdata);
}

static int on_child_exit(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        FileCopy *c = userdata;
        siginfo_t si = {};
        int error;

        if (waitid((idtype_t)P_PIDFD, (id_t)c->pidfd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
                return 0; /* not yet: the next wakeup */
        if (c->timed_out)
                error = -ETIMEDOUT;
        else if (si.si_code == CLD_EXITED)
                error = -si.si_status;
        else
                error = -EIO;
        finish(c, error);
        return 0;
}

/* The deadline: the answer goes now, whatever the child does (file_copy_cancel() kills it). */
static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        FileCopy *c = userdata;

        c->timed_out = true;
        finish(c, -ETIMEDOUT);
        return 0;
}

int file_copy_start(sd_event *e, int *fds, size_t n, uint64_t max_bytes, uint64_t timeout_usec,
                    FileCopyDoneFn done, void *userdata, FileCopy **ret) {
        FileCopy *c;
        int r;

        if (!e || (!fds && n > 0) || n > COPY_FDS_MAX || !done || !ret || timeout_usec == 0)
                return -EINVAL;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (FileCopy){.event = sd_event_ref(e),
                        .fds = fds,
                        .n = n,
                        .pidfd = -1,
                        .done = done,
                        .userdata = userdata};
        for (size_t i = 0; i < COPY_FDS_MAX; i++)
                c->copies[i] = -1;
        for (size_t i = 0; i < n; i++)
                if (fds[i] >= 0 && copyable(fds[i])) {
                        c->copies[i] = memfd_new("lockd-console-file", false);
                        if (c->copies[i] < 0) {
                                r = c->copies[i];
                                c->copies[i] = -1;
                                file_copy_cancel(c);
                                return r;
                        }
                }
        c->pid = fork();
        if (c->pid < 0) {
                r = -errno;
                file_copy_cancel(c);
                return r;
        }
        if (c->pid == 0)
                child(c, max_bytes);
        c->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
        if (c->pidfd < 0) {
                r = -errno;
                (void)kill(c->pid, SIGKILL);
                (void)waitpid(c->pid, NULL, 0);
                c->pid = 0;
                file_copy_cancel(c);
                return r;
        }
        r = sd_event_add_io(e, &c->exit_source, c->pidfd, EPOLLIN, on_child_exit, c);
        if (r >= 0)
                r = sd_event_add_time_relative(e, &c->timer, CLOCK_MONOTONIC, timeout_usec,
                                               10 * 1000, on_timeout, c);
        if (r < 0) {
                file_copy_cancel(c);
                return r;
        }
        *ret = c;
        return 0;
}
