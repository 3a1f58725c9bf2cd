/* Starting the engine: a separate executable, switched to its own user before its exec, handed
 * the listening sockets and its end of the spawner's channel (ARCHITECTURE.md). */
#pragma once

#include <sys/types.h>

/* The fds the engine finds: the sockets as systemd would pass them, then the channel. */
#define ENGINE_LISTEN_FDS_START 3
#define ENGINE_LISTEN_FDS       2 /* agent, console */
#define ENGINE_CHANNEL_FD       (ENGINE_LISTEN_FDS_START + ENGINE_LISTEN_FDS)
#define ENGINE_CHANNEL_ENV      "LOCKD_SPAWNER_FD"

typedef struct EngineLaunch {
        const char *path;   /* the engine executable */
        const char *config; /* --config for it, or NULL */
        uid_t uid;          /* never 0 */
        gid_t gid;
        int listen_fds[ENGINE_LISTEN_FDS]; /* agent, console: borrowed */
        int channel_fd;                    /* the engine's end of the pair: borrowed */
} EngineLaunch;

/*
 * Forks the engine: in the child, the fds laid out at 3 (agent), 4 (console) and 5 (channel) and
 * every other one closed, LISTEN_PID/LISTEN_FDS/LISTEN_FDNAMES and LOCKD_SPAWNER_FD set, the
 * bounding set emptied, groups, gid and uid switched to l->uid/l->gid, no_new_privs, a parent
 * death signal (SIGKILL), then execve(). A child that cannot do any of it exits 127 before the
 * exec. Must be called before any thread exists. The child's pid and a pidfd, or a negative
 * errno.
 */
int engine_launch(const EngineLaunch *l, pid_t *ret_pid, int *ret_pidfd);
