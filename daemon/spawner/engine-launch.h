/* Starting the engine: a separate executable, switched to its own user before its exec, handed
 * the listening sockets and its end of the spawner's channel (ARCHITECTURE.md). */
#pragma once

#include <sys/types.h>

#include "engine-fds.h"

typedef struct EngineLaunch {
        const char *path;   /* the engine executable */
        const char *config; /* --config for it, or NULL */
        uid_t uid;          /* never 0 */
        gid_t gid;
        int listen_fds[ENGINE_LISTEN_FDS]; /* agent, console: borrowed */
        int channel_fd;                    /* the engine's end of the pair: borrowed */
        int log_fd;                 /* becomes ENGINE_LOG_FD, or -1 (the engine logs to journald) */
        const char *journal_stream; /* JOURNAL_STREAM's value when log_fd is that stream, or NULL */
        int log_level;              /* LOCKD_LOG_LEVEL for the engine */
} EngineLaunch;

/*
 * Forks the engine: in the child, a session of its own (setsid(): no controlling terminal), fds
 * 0-2 on /dev/null, the fds laid out at 3 (agent), 4 (console), 5 (channel) and with a log fd 6,
 * every other one closed, an environment built here and nothing of the spawner's
 * (LISTEN_PID/LISTEN_FDS/LISTEN_FDNAMES, LOCKD_SPAWNER_FD, LOCKD_LOG_LEVEL, with a log fd
 * LOCKD_LOG_FD and maybe JOURNAL_STREAM), the bounding set emptied, groups, gid and uid
 * switched to l->uid/l->gid, no_new_privs, a parent death signal (SIGKILL), then execve(). A child
 * that cannot do any of it exits 127 before the exec. Must be called before any thread exists. The
 * child's pid and a pidfd, or a negative errno.
 */
int engine_launch(const EngineLaunch *l, pid_t *ret_pid, int *ret_pidfd);
