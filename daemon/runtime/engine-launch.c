/* Starting the engine as its own user, with the sockets and the channel at fixed numbers. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine-launch.h"
#include "fd-util.h"
#include "macro.h"

#ifndef __NR_close_range
#define __NR_close_range 436
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif

#define STAGING_FD 64 /* above every fixed number while they are laid out */

/* The child, between fork() and execve(): any failure ends it before the engine runs. */
static _Noreturn void child(const EngineLaunch *l, pid_t parent) {
        int src[ENGINE_LISTEN_FDS + 1];
        char pid[32], fd[16];
        const char *argv[4] = {"lockd-engine", NULL, NULL, NULL};
        extern char **environ;

        /* Lift the sources above the fixed numbers first, then lay them out. */
        for (int i = 0; i < ENGINE_LISTEN_FDS; i++)
                src[i] = fcntl(l->listen_fds[i], F_DUPFD_CLOEXEC, STAGING_FD);
        src[ENGINE_LISTEN_FDS] = fcntl(l->channel_fd, F_DUPFD_CLOEXEC, STAGING_FD);
        for (int i = 0; i <= ENGINE_LISTEN_FDS; i++)
                if (src[i] < 0 || dup2(src[i], ENGINE_LISTEN_FDS_START + i) < 0)
                        goto fail;
        if (syscall(__NR_close_range, ENGINE_CHANNEL_FD + 1, ~0U, 0) < 0)
                goto fail;

        snprintf(pid, sizeof(pid), "%d", (int)getpid());
        snprintf(fd, sizeof(fd), "%d", ENGINE_CHANNEL_FD);
        /* The engine never speaks to systemd: it tells the spawner, which does (NOTIFY). */
        (void)unsetenv("NOTIFY_SOCKET");
        if (setenv("LISTEN_PID", pid, 1) < 0 || setenv("LISTEN_FDS", "2", 1) < 0 ||
            setenv("LISTEN_FDNAMES", "agent:console", 1) < 0 ||
            setenv(ENGINE_CHANNEL_ENV, fd, 1) < 0)
                goto fail;

        /* The bounding set goes while we still hold CAP_SETPCAP; the uid change clears the rest. */
        for (int c = 0; c <= 63; c++)
                if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
                        goto fail;
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                goto fail;
        if (setgroups(0, NULL) < 0 || setresgid(l->gid, l->gid, l->gid) < 0 ||
            setresuid(l->uid, l->uid, l->uid) < 0)
                goto fail;
        /*
         * The engine dies with the spawner, as one lockd killed outright would: no plugin can run
         * without the spawner, and the next start ends what was open (expired tickets). Set after
         * the uid change, which clears it.
         */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
                goto fail;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                goto fail;

        if (l->config) {
                argv[1] = "--config";
                argv[2] = l->config;
        }
        execve(l->path, (char **)argv, environ);
fail:
        fprintf(stderr, "lockd: cannot start the engine %s: %s\n", l->path, strerror(errno));
        _exit(127);
}

int engine_launch(const EngineLaunch *l, pid_t *ret_pid, int *ret_pidfd) {
        pid_t parent = getpid(), pid;
        int pidfd;

        if (!l || !l->path || l->uid == 0 || l->channel_fd < 0 || !ret_pid || !ret_pidfd)
                return -EINVAL;
        for (int i = 0; i < ENGINE_LISTEN_FDS; i++)
                if (l->listen_fds[i] < 0)
                        return -EINVAL;
        pid = fork();
        if (pid < 0)
                return negative_errno();
        if (pid == 0)
                child(l, parent);
        pidfd = (int)syscall(__NR_pidfd_open, pid, 0);
        if (pidfd < 0) {
                int r = negative_errno();

                (void)kill(pid, SIGKILL);
                return r;
        }
        *ret_pid = pid;
        *ret_pidfd = pidfd;
        return 0;
}
