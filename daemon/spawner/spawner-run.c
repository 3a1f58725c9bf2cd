/* lockd's root process from start to end: its own configuration, the sockets, the state
 * directory handed to user lockd, the engine started, capabilities cut, scopes, and the request
 * table served until the engine is gone (ARCHITECTURE.md, Processes and privileges). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "caps.h"
#include "config.h"
#include "fd-util.h"
#include "identity.h"
#include "landlock.h"
#include "log-ids.h"
#include "log.h"
#include "macro.h"
#include "spawner-names.h"
#include "spawner-proto.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

#include "policy-file.h"
#include "scope.h"
#include "secmem.h"
#include "sockets.h"
#include "spawner-run.h"
#include "spawner.h"
#include "engine-launch.h"
#include "uidpool.h"

#ifndef __NR_pidfd_send_signal
#define __NR_pidfd_send_signal 424
#endif

#define DEFAULT_POLICY_PATH "/etc/lockd/lockd.yaml"
#define ENGINE_USER         "lockd"
/*
 * As systemd's socket units (Backlog= defaults to SOMAXCONN; the kernel caps it at
 * net.core.somaxconn): a burst of agents connecting at once waits in the kernel for the engine's
 * accept instead of a non-blocking connect() failing with EAGAIN. The caps on connections apply
 * after accept(); the backlog holds only connections not yet accepted.
 */
#define LISTEN_BACKLOG      SOMAXCONN
#define SCOPE_WAIT_USEC     (10ULL * 1000000)
#define ENGINE_EXIT_WAIT_MS 5000
#define CHOWN_DEPTH_MAX     16

/* lockd's run: the loop, the engine, and what the end must close. */
typedef struct Run {
        sd_event *event;
        pid_t engine_pid;
        int engine_pidfd;
        bool term_forwarded;
        const char *engine_path;
        int fds[2];     /* the agent and console sockets, until the engine has them */
        int pair[2];    /* the engine's channel: ours, and the engine's until it has it */
        char *bound[2]; /* the paths of the sockets lockd bound itself, unlinked at the end */
        bool activated; /* the sockets came from systemd */
} Run;

static void usage(FILE *f) {
        fputs("usage: lockd [--config FILE]\n"
              "       lockd --check-config [FILE]\n"
              "\n"
              "  --config FILE        the policy (default " DEFAULT_POLICY_PATH
              ", or the compiled-in\n"
              "                       default when that file does not exist)\n"
              "  --check-config [FILE] validate FILE (default: as --config would pick) merged\n"
              "                       with its drop-ins FILE.d/*.yaml, and print the effective\n"
              "                       policy; exit 0 valid, 1 invalid\n"
              "  --engine PATH        the engine to start (default: the installed lockd-engine)\n"
              "  --version            print the version\n",
              f);
}

static const char *pick_policy(const char *given) {
        if (given)
                return given;
        if (access(DEFAULT_POLICY_PATH, F_OK) == 0)
                return DEFAULT_POLICY_PATH;
        return NULL;
}

static void print_forced(const PolicyMarketplace *mp, const IdentityWarning *w, void *userdata) {
        fprintf(stderr, "lockd: %s:%u:%u: warning: marketplace %s: %s: %s (force: true)\n",
                (const char *)userdata, mp->identity_line, mp->identity_column, mp->name,
                identity_warning_name(w->code), w->message);
}

static int check_config(const char *path) {
        _cleanup_(policy_freep) Policy *p = NULL;
        char why[512] = "";
        int r;

        r = policy_file_load(path, &p, why, sizeof(why));
        if (r < 0) {
                fprintf(stderr, "lockd: %s\n", why[0] ? why : strerror(-r));
                return 1;
        }
        /* Accepted with force: true, still said every time. */
        policy_forced_warnings(p, print_forced, (void *)(path ? path : "-"));
        printf("# effective policy (%s)\n", path ? path : "the compiled-in default");
        if (policy_format(p, stdout) < 0 || fflush(stdout) != 0) {
                fprintf(stderr, "lockd: cannot print the policy\n");
                return 1;
        }
        return 0;
}

/* The engine executable: the installed one, or the build tree's beside a build tree's lockd
 * (decided from /proc/self/exe, never from the environment). */
static const char *engine_path(void) {
        static char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

        if (n > 0) {
                self[n] = 0;
                if (strcmp(self, LOCKD_BUILD_LOCKD_PATH) == 0)
                        return LOCKD_BUILD_ENGINE_PATH;
        }
        return LOCKD_ENGINE_PATH;
}

/*
 * Gives the engine what a lockd of one process left root's under dfd: every directory, and every
 * regular file or symlink with a single link, that root owns. Never follows a symlink, never
 * leaves dev, and never touches a file with more than one link: an engine that once ran here
 * could have made a hard link to a file of root's elsewhere (where protected_hardlinks is off),
 * and that file must not become its own. Walked at a start that finds the directory itself not
 * the engine's yet, before the engine runs.
 */
static int chown_tree(int dfd, dev_t dev, uid_t uid, gid_t gid, unsigned depth) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        int fd, r = 0;

        if (depth > CHOWN_DEPTH_MAX)
                return -ELOOP;
        fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return negative_errno();
        d = fdopendir(fd);
        if (!d) {
                r = negative_errno();
                safe_close(fd);
                return r;
        }
        while ((de = readdir(d))) {
                struct stat st;

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return negative_errno();
                if (st.st_dev != dev)
                        continue;
                if (S_ISDIR(st.st_mode)) {
                        _cleanup_close_ int sub =
                                openat(dirfd(d), de->d_name,
                                       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0)
                                return negative_errno();
                        /* What was opened decides, not what the name held a moment before. */
                        if (fstat(sub, &st) < 0)
                                return negative_errno();
                        if (st.st_dev != dev)
                                continue;
                        r = chown_tree(sub, dev, uid, gid, depth + 1);
                        if (r < 0)
                                return r;
                        if (st.st_uid == 0 && fchown(sub, uid, gid) < 0)
                                return negative_errno();
                } else if ((S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) && st.st_uid == 0 &&
                           st.st_nlink == 1) {
                        /*
                         * Checked and changed through one fd (O_PATH, never following): the
                         * name may have been swapped between the check and the chown, the open
                         * file cannot. Its link count and owner are checked again on it.
                         */
                        _cleanup_close_ int f =
                                openat(dirfd(d), de->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                        struct stat fst;

                        if (f < 0)
                                return negative_errno();
                        if (fstat(f, &fst) < 0)
                                return negative_errno();
                        if (fst.st_dev != dev || fst.st_ino != st.st_ino || fst.st_nlink != 1 ||
                            fst.st_uid != 0)
                                continue;
                        if (fchownat(f, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                                return negative_errno();
                }
        }
        return 0;
}

/*
 * The state directory, 0700 and the engine's: created, or handed over (chown_tree()). One that
 * is the engine's already is left alone, unopened: under lockd.service the spawner has no
 * CAP_DAC_OVERRIDE and could not open it (tmpfiles.d made it user lockd's).
 */
static int state_dir_prepare(const char *path, uid_t uid, gid_t gid) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        if (lstat(path, &st) < 0)
                return negative_errno();
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        if (st.st_uid == uid && st.st_gid == gid && (st.st_mode & 07777) == 0700)
                return 0;
        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (st.st_uid != uid && st.st_uid != 0)
                return -EPERM; /* someone else's: never taken over */
        r = chown_tree(fd, st.st_dev, uid, gid, 0);
        if (r < 0)
                return r;
        if ((st.st_uid != uid || st.st_gid != gid) && fchown(fd, uid, gid) < 0)
                return negative_errno();
        if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700) < 0)
                return negative_errno();
        return 0;
}

static void on_scope_connection(ScopeConnection what, int error, void *userdata) {
        const char *bus = userdata;

        if (what == SCOPE_CONNECTION_LOST)
                log_struct(LOG_WARNING, LOCKD_MESSAGE_SCOPE_FAILED, NULL,
                           "the connection to the manager at %s dropped (runs being set up fail "
                           "closed); connecting again",
                           bus);
        else if (what == SCOPE_CONNECTION_RETRY)
                log_struct_errno(LOG_WARNING, error, LOCKD_MESSAGE_SCOPE_FAILED, NULL,
                                 "the manager at %s cannot be reached yet: %m; trying again", bus);
        else
                log_struct(LOG_NOTICE, LOCKD_MESSAGE_SCOPE_FAILED, NULL,
                           "connected to the manager at %s again", bus);
}

/* SIGTERM, SIGINT and SIGHUP go to the engine, which decides; the spawner ends when it does. */
static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Run *run = userdata;
        int sig = si->ssi_signo == SIGHUP ? SIGHUP : SIGTERM;

        if (sig == SIGTERM)
                run->term_forwarded = true;
        (void)syscall(__NR_pidfd_send_signal, run->engine_pidfd, sig, NULL, 0);
        return 0;
}

static const char *scope_bus(const Policy *p) {
        return p->scope.bus == POLICY_BUS_SYSTEM ? "system"
               : p->scope.bus == POLICY_BUS_USER ? "user"
                                                 : p->scope.bus_address;
}

/* Binds (or takes from systemd) the two sockets; bound paths are recorded for the end. */
static int open_sockets(const Policy *p, const SpawnerNames *names, int fds[2], char *bound[2],
                        bool *ret_activated) {
        ListenSpec specs[2] = {
                {.name = "agent",
                 .path = p->agent_socket.path,
                 .mode = p->agent_socket.mode,
                 .gid = names->socket_gid[0]},
                {.name = "console",
                 .path = p->console_socket.path,
                 .mode = p->console_socket.mode,
                 .gid = names->socket_gid[1]},
        };
        int r;

        for (size_t i = 0; i < 2; i++)
                if (specs[i].gid == (gid_t)-2)
                        return log_error_errno(-ENOENT, NULL, "%s socket: unknown group",
                                               specs[i].name);
        r = sockets_from_systemd(specs, 2, fds);
        if (r < 0)
                return log_error_errno(r, NULL, "socket activation: unexpected fds passed");
        *ret_activated = r > 0;
        for (size_t i = 0; i < 2; i++) {
                if (fds[i] >= 0)
                        continue;
                fds[i] = socket_bind_listen(&specs[i], LISTEN_BACKLOG);
                if (fds[i] < 0)
                        return log_error_errno(
                                fds[i], NULL, "%s socket %s: %s", specs[i].name, specs[i].path,
                                fds[i] == -EEXIST ? "in use or not a socket" : strerror(-fds[i]));
                bound[i] = strdup(specs[i].path);
        }
        return 0;
}

/*
 * The fd the engine logs to: the spawner's own stderr (the journal's stream under lockd.service,
 * a file or a pipe), never a terminal. With stderr a terminal (root started lockd by hand) the
 * engine gets none and logs to journald's socket: a terminal handed to the engine is one it could
 * push input into (TIOCSTI) or read from.
 */
static int engine_log_fd(void) {
        if (fcntl(STDERR_FILENO, F_GETFD) < 0 || isatty(STDERR_FILENO))
                return -1;
        return STDERR_FILENO;
}

/*
 * Raises the spawner's RLIMIT_NOFILE to need (spawner_nofile_need()): a burst of every run the
 * engine may queue must not find the fd table full, where the next RUN's fds would be cut off
 * (MSG_CTRUNC) and end lockd. The hard limit is raised too where this process may
 * (CAP_SYS_RESOURCE, by hand); lockd.service's LimitNOFILE= sets it to the ceiling. 0, or -EPERM
 * with *ret_hard when the hard limit is too low.
 */
static int nofile_raise(uint64_t need, uint64_t *ret_hard) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return negative_errno();
        *ret_hard = rl.rlim_max;
        if (rl.rlim_cur >= need)
                return 0;
        rl.rlim_cur = need;
        if (rl.rlim_max < need)
                rl.rlim_max = need;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                return negative_errno();
        return 0;
}

/* Waits for the engine to end (it was told, or its channel closed); SIGKILL after a while. */
static int engine_reap(Run *run) {
        struct pollfd pfd = {.fd = run->engine_pidfd, .events = POLLIN};
        siginfo_t si = {};

        if (poll(&pfd, 1, ENGINE_EXIT_WAIT_MS) <= 0)
                (void)syscall(__NR_pidfd_send_signal, run->engine_pidfd, SIGKILL, NULL, 0);
        if (waitid(P_PID, (id_t)run->engine_pid, &si, WEXITED) < 0)
                return -1;
        return si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
}

/* What lockd was asked on its command line: -1 to go on and serve with *ret_config and
 * *ret_engine, or the exit code (usage, --version, --check-config's verdict). */
static int parse_args(int argc, char **argv, const char **ret_config, const char **ret_engine) {
        static const struct option opts[] = {
                {"config", required_argument, NULL, 'c'},
                {"check-config", optional_argument, NULL, 'C'},
                {"engine", required_argument, NULL, 'E'},
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, 'V'},
                {},
        };
        const char *config = NULL, *check = NULL;
        bool checking = false;
        int c;

        while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) >= 0) {
                switch (c) {
                case 'c':
                        config = optarg;
                        break;
                case 'C':
                        checking = true;
                        check = optarg;
                        break;
                case 'E':
                        *ret_engine = optarg;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'V':
                        printf("lockd %s\n", LOCKD_VERSION);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (checking && !check && optind < argc)
                check = argv[optind++];
        if (optind < argc) {
                fprintf(stderr, "lockd: unexpected argument '%s'\n", argv[optind]);
                usage(stderr);
                return 2;
        }
        *ret_config = pick_policy(checking && check ? check : config);
        if (checking)
                return check_config(*ret_config);
        return -1;
}

/* The run pool's configuration from the policy, and RLIMIT_NOFILE raised for it (nofile_raise());
 * 0, or a negative errno, logged. */
static int pool_config(const Policy *p, int landlock_abi, SpawnerConfig *ret) {
        uint64_t need, hard = 0;
        int r;

        *ret = (SpawnerConfig){
                .landlock_abi = landlock_abi,
                .pool =
                        {
                                .workers = p->limits.concurrent_runs,
                                .queue_max = SPAWNER_RUNS_MAX(p->limits.concurrent_runs),
                                .uid_first = p->ephemeral_uid_first,
                                .uid_last = p->ephemeral_uid_last,
                                .drop_to_uid = true,
                                .scope_timeout_usec = SCOPE_WAIT_USEC,
                                .slice = p->scope.slice,
                                /* Up to this many children ready per limit class, as demand
                                 * asks (ARCHITECTURE.md, scopes made ahead). */
                                .standby_max = p->limits.concurrent_runs < p->scope.ahead
                                                       ? p->limits.concurrent_runs
                                                       : p->scope.ahead,
                        },
        };
        need = spawner_nofile_need(ret->pool.workers, ret->pool.standby_max);
        r = nofile_raise(need, &hard);
        if (r < 0)
                return log_error_errno(r, NULL,
                                       "limits.concurrent_runs %u needs %" PRIu64
                                       " open files, and RLIMIT_NOFILE's hard limit is "
                                       "%" PRIu64 " (LimitNOFILE=): %m",
                                       ret->pool.workers, need, hard);
        return 0;
}

/* The names the policy gives, looked up, and the ephemeral uids enough for every run in flight;
 * 0, or a negative errno, logged. */
static int names_check(const Policy *p, SpawnerNames *names) {
        int r;

        /* The user and group databases, read by a child: lockd itself never loads NSS modules. */
        r = spawner_names_lookup(p, ENGINE_USER, names);
        if (r < 0)
                return log_error_errno(r, NULL, "the user and group lookups failed: %m");
        if (names->range_error < 0)
                return log_error_errno(names->range_error, NULL, "ephemeral_uids: %s",
                                       names->range_why);
        /* Each run in flight holds a uid of its own. */
        if ((uint64_t)p->ephemeral_uid_last - p->ephemeral_uid_first + 1 <
            p->limits.concurrent_runs)
                return log_error_errno(-EINVAL, NULL,
                                       "ephemeral_uids holds %u uid(s), fewer than "
                                       "limits.concurrent_runs (%u): each run needs its own",
                                       p->ephemeral_uid_last - p->ephemeral_uid_first + 1,
                                       p->limits.concurrent_runs);
        r = names->engine_error;
        if (r < 0)
                return log_error_errno(r, NULL,
                                       "user " ENGINE_USER ": %s; the engine runs as it (the "
                                       "package's sysusers.d file creates it)",
                                       r == -ENOENT  ? "no such user"
                                       : r == -EPERM ? "must not be root"
                                                     : strerror(-r));
        return 0;
}

/*
 * What must hold before anything is bound or started: root, Landlock, the pool's configuration
 * and its fds, the names, the state directory the engine's and the runtime directory there.
 * 0, or a negative errno, logged.
 */
static int preflight(const Policy *p, SpawnerConfig *cfg, SpawnerNames *names) {
        int r;

        if (geteuid() != 0)
                return log_error_errno(-EPERM, NULL,
                                       "lockd must run as root: each plugin run gets its own uid");
        r = landlock_abi_version();
        if (r < 0)
                return log_error_errno(r, NULL,
                                       "Landlock: %s; plugins cannot run sandboxed, and "
                                       "lockd has no fallback",
                                       landlock_strerror(r) ? landlock_strerror(r) : strerror(-r));
        r = pool_config(p, r, cfg);
        if (r < 0)
                return r;
        r = names_check(p, names);
        if (r < 0)
                return r;
        r = state_dir_prepare(p->state_directory, names->engine_uid, names->engine_gid);
        if (r < 0)
                return log_error_errno(r, NULL,
                                       "state directory %s: %s; it must be user " ENGINE_USER
                                       "'s (systemd-tmpfiles --create makes it so)",
                                       p->state_directory,
                                       r == -EPERM ? "owned by another user, or root's and "
                                                     "lockd may not change that here"
                                                   : strerror(-r));
        /* The runtime directory holds the console socket when lockd binds it: root's, 0755. */
        if (mkdir(p->runtime_directory, 0755) < 0 && errno != EEXIST)
                return log_error_errno(negative_errno(), NULL, "runtime directory %s: %m",
                                       p->runtime_directory);
        return 0;
}

/*
 * The sockets bound (or taken from systemd) and handed to the engine, started as user lockd
 * with its channel; then the spawner's capabilities cut to the kept ones and no_new_privs set.
 * 0, or a negative errno, logged.
 */
static int engine_start(Run *run, const Policy *p, const SpawnerNames *names, const char *config,
                        const char *engine) {
        int r;

        r = open_sockets(p, names, run->fds, run->bound, &run->activated);
        if (r < 0)
                return r;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, run->pair) < 0)
                return log_error_errno(negative_errno(), NULL, "the engine's channel: %m");
        EngineLaunch el = {
                .path = engine ? engine : engine_path(),
                .config = config,
                .uid = names->engine_uid,
                .gid = names->engine_gid,
                .listen_fds = {run->fds[0], run->fds[1]},
                .channel_fd = run->pair[1],
                .log_fd = engine_log_fd(),
                .log_level = log_get_max_level(),
        };
        run->engine_path = el.path;
        /* The journal's stream keeps its name in the engine only where it is the log fd. */
        if (el.log_fd >= 0 && log_get_target() == LOG_TARGET_JOURNAL)
                el.journal_stream = getenv("JOURNAL_STREAM");
        r = engine_launch(&el, &run->engine_pid, &run->engine_pidfd);
        /* The sockets are the engine's alone from here: the root process holds none. */
        run->fds[0] = safe_close(run->fds[0]);
        run->fds[1] = safe_close(run->fds[1]);
        run->pair[1] = safe_close(run->pair[1]);
        if (r < 0)
                return log_error_errno(r, NULL, "cannot start the engine %s: %m", el.path);

        r = caps_drop_except(caps_kept, caps_n_kept);
        if (r < 0)
                return log_error_errno(r, NULL, "cannot drop capabilities: %s", strerror(-r));
        /* Nothing the spawner execs (nothing but plugins) gains privileges through a file. */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return log_error_errno(negative_errno(), NULL, "cannot set no_new_privs: %m");
        log_struct(LOG_INFO, LOCKD_MESSAGE_CAPABILITIES, NULL,
                   "spawner: sockets %s, handed to the engine (pid %d, user " ENGINE_USER
                   ", no capability); capabilities kept: cap_setuid cap_setgid cap_setpcap "
                   "cap_kill",
                   run->activated ? "activated by systemd" : "bound", (int)run->engine_pid);
        return 0;
}

/* The manager's connection for the runs' scopes (scope.backend systemd), the scopes of a lockd
 * killed outright stopped first. 0, or a negative errno, logged. */
static int scopes_open(Run *run, const Policy *p, ScopeManager **ret) {
        ScopeConfig sc = {
                .bus = scope_bus(p),
                .slice = p->scope.slice,
                .cpu_quota_usec = (uint64_t)p->scope.cpu_quota_percent * 10000ULL,
        };
        unsigned stale = 0;
        int r;

        r = scope_manager_new(run->event, &sc, ret);
        if (r < 0)
                return log_error_errno(r, LOCKD_MESSAGE_SCOPE_FAILED,
                                       "no systemd manager at %s (%s): plugin runs need their "
                                       "scope; scope.backend: none runs without",
                                       sc.bus, strerror(-r));
        scope_manager_set_connection_hook(*ret, on_scope_connection, (void *)sc.bus);
        /* Runs of a lockd that was killed outright: their scopes go before anything runs. */
        r = scope_kill_stale(*ret, "lockd-run-*.scope", &stale);
        if (r < 0)
                return log_error_errno(r, LOCKD_MESSAGE_SCOPE_FAILED,
                                       "cannot list the scopes of earlier runs: %m");
        if (stale > 0)
                log_struct(LOG_WARNING, LOCKD_MESSAGE_SCOPE_FAILED, NULL,
                           "killed %u scope(s) left by an earlier lockd", stale);
        return 0;
}

/* Says how the engine ended, from engine_reap()'s status. */
static void log_engine_status(const Run *run, int status) {
        if (status == 127)
                log_struct(LOG_ERR, NULL, NULL,
                           "the engine ended with status 127: it could not be started (%s)",
                           run->engine_path);
        else if (status > 128)
                log_struct(LOG_ERR, NULL, NULL, "the engine was killed by signal %d (SIG%s)",
                           status - 128,
                           sigabbrev_np(status - 128) ? sigabbrev_np(status - 128) : "?");
        else if (status != 0 && status != -1)
                log_struct(LOG_ERR, NULL, NULL, "the engine ended with status %d", status);
}

/*
 * The loop: signals forwarded to the engine, the scopes' manager, the request table served until
 * the engine is gone; then every run killed and the engine reaped. lockd's exit code: 0 only for
 * an engine told to stop that stopped.
 */
static int serve(Run *run, const Policy *p, const SpawnerConfig *cfg, ScopeManager **scope) {
        _cleanup_(spawner_freep) Spawner *sp = NULL;
        int r, status;

        r = sd_event_new(&run->event);
        if (r < 0)
                return log_error_errno(r, NULL, "event loop: %s", strerror(-r)), 1;
        if (sd_event_add_signal(run->event, NULL, SIGTERM, on_signal, run) < 0 ||
            sd_event_add_signal(run->event, NULL, SIGINT, on_signal, run) < 0 ||
            sd_event_add_signal(run->event, NULL, SIGHUP, on_signal, run) < 0)
                return log_error_errno(-EIO, NULL, "cannot watch signals"), 1;
        if (p->scope.backend == POLICY_SCOPE_SYSTEMD && scopes_open(run, p, scope) < 0)
                return 1;
        r = spawner_new(run->event, cfg, *scope, TAKE_FD(run->pair[0]), run->engine_pid, &sp);
        if (r >= 0)
                r = spawner_watch_engine(sp, run->engine_pidfd);
        if (r < 0)
                return log_error_errno(r, NULL, "spawner: %s", strerror(-r)), 1;
        r = sd_event_loop(run->event);
        sp = spawner_free(sp); /* every run killed, every scope stopped */
        status = engine_reap(run);
        run->engine_pid = 0;
        log_engine_status(run, status);
        /* A clean end: the engine was told to stop and stopped; anything else restarts lockd. */
        return r == 0 && status == 0 ? 0 : 1;
}

/* What is left at the end: an engine still running killed, the fds, the sockets lockd bound. */
static void run_finish(Run *run) {
        if (run->engine_pid > 0) {
                (void)syscall(__NR_pidfd_send_signal, run->engine_pidfd, SIGKILL, NULL, 0);
                (void)waitpid(run->engine_pid, NULL, 0);
        }
        safe_close(run->engine_pidfd);
        safe_close(run->pair[0]);
        safe_close(run->pair[1]);
        safe_close(run->fds[0]);
        safe_close(run->fds[1]);
        for (size_t i = 0; i < 2; i++)
                if (run->bound[i]) {
                        /* Sockets lockd bound itself go with it; activated ones are systemd's. */
                        (void)unlink(run->bound[i]);
                        free(run->bound[i]);
                }
}

int spawner_run(int argc, char **argv) {
        _cleanup_(policy_freep) Policy *p = NULL;
        _cleanup_(scope_manager_freep) ScopeManager *scope = NULL;
        const char *config = NULL, *engine = NULL;
        Run run = {.engine_pidfd = -1, .fds = {-1, -1}, .pair = {-1, -1}};
        SpawnerConfig cfg;
        SpawnerNames names;
        char why[512] = "";
        sigset_t ss;
        int r, ret = 1;

        r = parse_args(argc, argv, &config, &engine);
        if (r >= 0)
                return r;

        log_open(false);
        r = secmem_harden_process();
        if (r < 0)
                return log_error_errno(r, NULL, "cannot make lockd undumpable: %m"), 1;
        r = policy_file_load(config, &p, why, sizeof(why));
        if (r < 0)
                return log_error_errno(r, NULL, "%s", why[0] ? why : strerror(-r)), 1;
        if (preflight(p, &cfg, &names) < 0)
                return 1;

        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        sigprocmask(SIG_BLOCK, &ss, NULL);

        if (engine_start(&run, p, &names, config, engine) >= 0)
                ret = serve(&run, p, &cfg, &scope);
        run_finish(&run);
        scope = scope_manager_free(scope);
        sd_event_unref(run.event);
        return ret;
}
