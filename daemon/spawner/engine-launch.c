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
#define ENV_MAX    16 /* the engine's whole environment, NULL included */
#define ENV_LEN    256

/*
 * What a sanitized build (tests only, never shipped) passes on besides: the sanitizers' options.
 * A shipped engine gets nothing of root's environment.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
static const char *const passed_on[] = {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"};
#else
static const char *const passed_on[] = {NULL};
#endif

typedef struct EngineEnv {
        char text[ENV_MAX][ENV_LEN];
        char *envp[ENV_MAX];
        size_t n;
} EngineEnv;

/* Appends NAME=value; false when it does not fit (the launch fails rather than cut it). */
static bool env_add(EngineEnv *e, const char *name, const char *value) {
        int n;

        if (e->n + 1 >= ENV_MAX)
                return false;
        n = snprintf(e->text[e->n], ENV_LEN, "%s=%s", name, value);
        if (n < 0 || n >= ENV_LEN)
                return false;
        e->envp[e->n] = e->text[e->n];
        e->envp[++e->n] = NULL;
        return true;
}

/*
 * The engine's whole environment, built here and never inherited (ARCHITECTURE.md, two
 * processes): the sockets as systemd would name them (LISTEN_PID is filled in by the child),
 * the channel's number, the log's fd and level, and JOURNAL_STREAM when the log fd is the
 * journal's stream. A variable in root's environment reaches no engine.
 */
static int env_build(const EngineLaunch *l, EngineEnv *e) {
        char num[16];

        *e = (EngineEnv){};
        snprintf(num, sizeof(num), "%d", ENGINE_CHANNEL_FD);
        if (!env_add(e, "LISTEN_PID", "0") || !env_add(e, "LISTEN_FDS", "2") ||
            !env_add(e, "LISTEN_FDNAMES", "agent:console") || !env_add(e, ENGINE_CHANNEL_ENV, num))
                return -E2BIG;
        snprintf(num, sizeof(num), "%d", l->log_level);
        if (!env_add(e, "LOCKD_LOG_LEVEL", num))
                return -E2BIG;
        if (l->log_fd >= 0) {
                snprintf(num, sizeof(num), "%d", ENGINE_LOG_FD);
                if (!env_add(e, ENGINE_LOG_ENV, num))
                        return -E2BIG;
                if (l->journal_stream && !env_add(e, "JOURNAL_STREAM", l->journal_stream))
                        return -E2BIG;
        }
        for (size_t i = 0; i < ELEMENTSOF(passed_on); i++) {
                const char *v = passed_on[i] ? getenv(passed_on[i]) : NULL;

                if (v && !env_add(e, passed_on[i], v))
                        return -E2BIG;
        }
        return 0;
}

/* The child, between fork() and execve(): any failure ends it before the engine runs. */
static _Noreturn void child(const EngineLaunch *l, EngineEnv *env, pid_t parent) {
        int src[ENGINE_LISTEN_FDS + 2], devnull, log_src = -1, last = ENGINE_CHANNEL_FD;
        const char *argv[4] = {"lockd-engine", NULL, NULL, NULL};

        /*
         * A session of its own, no controlling terminal: whatever terminal root started lockd
         * from, the engine cannot open /dev/tty or push input into it (TIOCSTI).
         */
        if (setsid() < 0)
                goto fail;
        /* Above the fixed numbers too: opened at 6, a dup2() below would take it for the log. */
        devnull = open("/dev/null", O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (devnull < 0)
                goto fail;
        devnull = fcntl(devnull, F_DUPFD_CLOEXEC, STAGING_FD);
        if (devnull < 0)
                goto fail;
        /* Lift the sources above the fixed numbers first, then lay them out. */
        for (int i = 0; i < ENGINE_LISTEN_FDS; i++)
                src[i] = fcntl(l->listen_fds[i], F_DUPFD_CLOEXEC, STAGING_FD);
        src[ENGINE_LISTEN_FDS] = fcntl(l->channel_fd, F_DUPFD_CLOEXEC, STAGING_FD);
        if (l->log_fd >= 0) {
                log_src = fcntl(l->log_fd, F_DUPFD_CLOEXEC, STAGING_FD);
                if (log_src < 0)
                        goto fail;
                last = ENGINE_LOG_FD;
        }
        for (int i = 0; i <= ENGINE_LISTEN_FDS; i++)
                if (src[i] < 0 || dup2(src[i], ENGINE_LISTEN_FDS_START + i) < 0)
                        goto fail;
        if (log_src >= 0 && dup2(log_src, ENGINE_LOG_FD) < 0)
                goto fail;
        /* fds 0-2 on /dev/null: never root's terminal, whatever they were in the spawner. */
        for (int i = 0; i <= 2; i++)
                if (dup2(devnull, i) < 0)
                        goto fail;
        if (syscall(__NR_close_range, last + 1, ~0U, 0) < 0)
                goto fail;

        snprintf(env->text[0], ENV_LEN, "LISTEN_PID=%d", (int)getpid());

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
        execve(l->path, (char **)argv, env->envp);
fail:
        /* fd 2 may be /dev/null by now: the exit status says it (127), the spawner logs that. */
        _exit(127);
}

int engine_launch(const EngineLaunch *l, pid_t *ret_pid, int *ret_pidfd) {
        pid_t parent = getpid(), pid;
        EngineEnv *env;
        int pidfd, r;

        if (!l || !l->path || l->uid == 0 || l->channel_fd < 0 || !ret_pid || !ret_pidfd)
                return -EINVAL;
        for (int i = 0; i < ENGINE_LISTEN_FDS; i++)
                if (l->listen_fds[i] < 0)
                        return -EINVAL;
        /* Built before the fork: the child only fills in its own pid. */
        env = malloc(sizeof(*env));
        if (!env)
                return -ENOMEM;
        r = env_build(l, env);
        if (r < 0) {
                free(env);
                return r;
        }
        pid = fork();
        if (pid < 0) {
                r = negative_errno();
                free(env);
                return r;
        }
        if (pid == 0)
                child(l, env, parent);
        free(env);
        pidfd = (int)syscall(__NR_pidfd_open, pid, 0);
        if (pidfd < 0) {
                r = negative_errno();

                (void)kill(pid, SIGKILL);
                return r;
        }
        *ret_pid = pid;
        *ret_pidfd = pidfd;
        return 0;
}
