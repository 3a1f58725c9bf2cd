/* One plugin run: spawn into the sandbox, collect stdout, stderr and detail, classify the answer.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "runner.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef __NR_close_range
#define __NR_close_range 436
#endif
#ifndef __NR_pidfd_send_signal
#define __NR_pidfd_send_signal 424
#endif

#define CHILD_STACK_SIZE (256 * 1024)
#define CHILD_BINARY_FD  8  /* O_CLOEXEC: open for execve's path walk, closed by execve */
#define CHILD_STATUS_FD  9  /* O_CLOEXEC: EOF tells the parent that execve succeeded */
#define CHILD_HIGH_FD    32 /* staging area while the fixed numbers are laid out */
#define NPROC_HEADROOM   512

/* What the child reports through its status pipe when it cannot enter the sandbox. */
typedef struct ChildFailure {
        int32_t stage;
        int32_t error;
} ChildFailure;

/*
 * Everything the child needs, prepared by the parent. The child shares the parent's memory
 * (CLONE_VM) and, without a TLS of its own, the parent's errno and locks, so it calls no libc
 * function that could take a lock or set errno: only the raw system calls below and plain loops.
 */
typedef struct ChildArgs {
        const Sandbox *sb;
        int go_fd, go_write_fd, status_fd;
        int devnull_fd, stdout_fd, stderr_fd, input_fd, inputs_fd, detail_fd;
        bool drop_uid;
        pid_t parent; /* lockd's pid: the child must not outlive it */
        uid_t uid;
        gid_t gid;
        int last_cap;
        struct rlimit64_ {
                uint64_t cur, max;
        } rlim[RLIM_NLIMITS];
        bool rlim_set[RLIM_NLIMITS];
        char *argv[2];
        char *envp[2];
        struct sock_filter filter[SECCOMP_INSNS_MAX];
} ChildArgs;

/* A raw x86-64 system call: returns -errno on failure and never touches errno. */
__attribute__((no_sanitize("address", "undefined"))) static inline long
raw_syscall(long n, long a1, long a2, long a3, long a4, long a5, long a6) {
        long ret;
        register long r10 __asm__("r10") = a4;
        register long r8 __asm__("r8") = a5;
        register long r9 __asm__("r9") = a6;

        __asm__ volatile("syscall"
                         : "=a"(ret)
                         : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                         : "rcx", "r11", "memory");
        return ret;
}
#define SYS0(n)             raw_syscall(n, 0, 0, 0, 0, 0, 0)
#define SYS1(n, a)          raw_syscall(n, (long)(a), 0, 0, 0, 0, 0)
#define SYS2(n, a, b)       raw_syscall(n, (long)(a), (long)(b), 0, 0, 0, 0)
#define SYS3(n, a, b, c)    raw_syscall(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define SYS4(n, a, b, c, d) raw_syscall(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define SYS5(n, a, b, c, d, e)                                                                     \
        raw_syscall(n, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

/* Reports the failed stage to the parent and ends the child: a half-applied sandbox never execs. */
__attribute__((no_sanitize("address", "undefined"), noreturn)) static void
child_fail(int status_fd, SpawnStage stage, long err) {
        ChildFailure f = {.stage = (int32_t)stage, .error = (int32_t)(err < 0 ? -err : EIO)};

        (void)SYS3(__NR_write, status_fd, &f, sizeof(f));
        for (;;)
                (void)SYS1(__NR_exit_group, 127);
}

/* Moves fd to a number >= CHILD_HIGH_FD (close-on-exec), so laying out 0..9 cannot clobber it. */
__attribute__((no_sanitize("address", "undefined"))) static long child_lift(int fd) {
        if (fd < 0)
                return -1;
        return SYS3(__NR_fcntl, fd, F_DUPFD_CLOEXEC, CHILD_HIGH_FD);
}

/*
 * The child, in ARCHITECTURE.md's order (the sandbox): wait for the parent (scope) → groups, gid,
 * uid → capabilities → rlimits → fds 0,1,2,3,(6),(7) → cwd / → no_new_privs → Landlock → close
 * every other fd → seccomp → execve. Every step that fails ends the child before exec.
 */
__attribute__((no_sanitize("address", "undefined"))) static int child_main(void *userdata) {
        ChildArgs *a = userdata;
        const Sandbox *sb = a->sb;
        int status = a->status_fd;
        long r, in, out, err, input, inputs = -1, detail = -1, binary, ruleset, devnull;
        size_t n;
        char go;

        /* Default dispositions and an empty mask: nothing of the parent's signal state survives. */
        for (int sig = 1; sig < 65; sig++) {
                struct {
                        void *handler;
                        unsigned long flags;
                        void *restorer;
                        uint64_t mask;
                } sa = {.handler = SIG_DFL};
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void)SYS4(__NR_rt_sigaction, sig, &sa, NULL, 8);
        }
        uint64_t empty = 0;
        r = SYS4(__NR_rt_sigprocmask, SIG_SETMASK, &empty, NULL, 8);
        if (r < 0)
                child_fail(status, SPAWN_STAGE_CLONE, r);

        /*
         * Dies with lockd from the start: if lockd is killed while we wait for our scope, EOF on
         * the go pipe may never come (children of other runs hold copies of its write end until
         * their own execve). Set again after the uid change, which clears it.
         */
        r = SYS2(__NR_prctl, PR_SET_PDEATHSIG, SIGKILL);
        if (r < 0)
                child_fail(status, SPAWN_STAGE_PDEATHSIG, r);
        if (SYS0(__NR_getppid) != a->parent)
                child_fail(status, SPAWN_STAGE_PDEATHSIG, -ESRCH);

        /*
         * Wait until the parent has put us into our scope (or given up: then EOF, and we end). Our
         * copy of the write end goes first, or EOF could never come.
         */
        (void)SYS1(__NR_close, a->go_write_fd);
        do
                r = SYS3(__NR_read, a->go_fd, &go, 1);
        while (r == -EINTR);
        if (r != 1)
                child_fail(status, SPAWN_STAGE_SCOPE, r < 0 ? r : -ECANCELED);

        if (a->drop_uid) {
                /*
                 * The bounding set and ambient set go first, while we still hold CAP_SETPCAP; after
                 * setresuid() to a non-root uid the kernel clears the permitted and effective sets.
                 */
                for (int c = 0; c <= a->last_cap; c++) {
                        r = SYS2(__NR_prctl, PR_CAPBSET_DROP, c);
                        if (r < 0 && r != -EINVAL)
                                child_fail(status, SPAWN_STAGE_CAPS, r);
                }
                r = SYS2(__NR_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL);
                if (r < 0)
                        child_fail(status, SPAWN_STAGE_CAPS, r);
                r = SYS2(__NR_setgroups, 0, NULL);
                if (r < 0)
                        child_fail(status, SPAWN_STAGE_GROUPS, r);
                r = SYS3(__NR_setresgid, a->gid, a->gid, a->gid);
                if (r < 0)
                        child_fail(status, SPAWN_STAGE_GID, r);
                r = SYS3(__NR_setresuid, a->uid, a->uid, a->uid);
                if (r < 0)
                        child_fail(status, SPAWN_STAGE_UID, r);
        }

        /*
         * A plugin never outlives the process that runs it: if lockd dies (SIGKILL, a crash), the
         * kernel kills the plugin at once rather than leaving it to its scope's RuntimeMaxUSec=.
         * After the uid change, which clears the death signal; then a check for a parent that
         * died before it was set.
         */
        r = SYS2(__NR_prctl, PR_SET_PDEATHSIG, SIGKILL);
        if (r < 0)
                child_fail(status, SPAWN_STAGE_PDEATHSIG, r);
        if (SYS0(__NR_getppid) != a->parent)
                child_fail(status, SPAWN_STAGE_PDEATHSIG, -ESRCH);

        /* Every capability, in every set, dropped; then read back to be sure. */
        struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct data[2] = {};
        r = SYS2(__NR_capset, &hdr, data);
        if (r < 0)
                child_fail(status, SPAWN_STAGE_CAPS, r);
        r = SYS2(__NR_capget, &hdr, data);
        if (r < 0)
                child_fail(status, SPAWN_STAGE_CAPS, r);
        for (int i = 0; i < 2; i++)
                if (data[i].effective || data[i].permitted || data[i].inheritable)
                        child_fail(status, SPAWN_STAGE_CAPS, -EPERM);

        for (int res = 0; res < RLIM_NLIMITS; res++) {
                if (!a->rlim_set[res])
                        continue;
                r = SYS4(__NR_prlimit64, 0, res, &a->rlim[res], NULL);
                if (r < 0)
                        child_fail(status, SPAWN_STAGE_RLIMIT, r);
        }

        /* Lift every source above the fixed numbers first, then lay them out. */
        devnull = child_lift(a->devnull_fd);
        out = child_lift(a->stdout_fd);
        err = child_lift(a->stderr_fd);
        input = child_lift(a->input_fd);
        if (sb->spec.inputs)
                inputs = child_lift(a->inputs_fd);
        if (sb->spec.detail)
                detail = child_lift(a->detail_fd);
        binary = child_lift(sb->binary_fd);
        ruleset = child_lift(sb->ruleset_fd);
        in = child_lift(status);
        if (devnull < 0 || out < 0 || err < 0 || input < 0 || binary < 0 || ruleset < 0 || in < 0 ||
            (sb->spec.inputs && inputs < 0) || (sb->spec.detail && detail < 0))
                child_fail(status, SPAWN_STAGE_FDS, -EBADF);
        r = SYS3(__NR_dup3, in, CHILD_STATUS_FD, O_CLOEXEC);
        if (r < 0)
                child_fail(status, SPAWN_STAGE_FDS, r);
        status = CHILD_STATUS_FD;
        if (SYS2(__NR_dup2, devnull, 0) < 0 || SYS2(__NR_dup2, out, 1) < 0 ||
            SYS2(__NR_dup2, err, 2) < 0 || SYS2(__NR_dup2, input, 3) < 0 ||
            SYS3(__NR_dup3, binary, CHILD_BINARY_FD, O_CLOEXEC) < 0)
                child_fail(status, SPAWN_STAGE_FDS, -EBADF);
        /* 4 and 5 never exist; 6 and 7 only for the protocol-2 extras the manifest asks for. */
        (void)SYS1(__NR_close, 4);
        (void)SYS1(__NR_close, 5);
        if (!sb->spec.inputs)
                (void)SYS1(__NR_close, 6);
        else if (SYS2(__NR_dup2, inputs, 6) < 0)
                child_fail(status, SPAWN_STAGE_FDS, -EBADF);
        if (!sb->spec.detail)
                (void)SYS1(__NR_close, 7);
        else if (SYS2(__NR_dup2, detail, 7) < 0)
                child_fail(status, SPAWN_STAGE_FDS, -EBADF);

        r = SYS1(__NR_chdir, "/");
        if (r < 0)
                child_fail(status, SPAWN_STAGE_CWD, r);

        r = SYS5(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        if (r < 0)
                child_fail(status, SPAWN_STAGE_NO_NEW_PRIVS, r);

        r = SYS2(__NR_landlock_restrict_self, ruleset, 0);
        if (r < 0)
                child_fail(status, SPAWN_STAGE_LANDLOCK, r);

        /* Nothing but 0-3, 6, 7 and the two close-on-exec fds 8 and 9 may reach the plugin. */
        r = SYS3(__NR_close_range, CHILD_STATUS_FD + 1, ~0U, 0);
        if (r < 0)
                child_fail(status, SPAWN_STAGE_CLOSE_FDS, r);

        n = seccomp_program_instantiate(sb->seccomp, (pid_t)SYS0(__NR_getpid), a->filter);
        struct sock_fprog prog = {.len = (unsigned short)n, .filter = a->filter};
        r = SYS3(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
        if (r < 0)
                child_fail(status, SPAWN_STAGE_SECCOMP, r);

        r = SYS3(__NR_execve, sb->exec_path, a->argv, a->envp);
        child_fail(status, SPAWN_STAGE_EXEC, r);
}

/*
 * Counts the tasks (threads included) whose real uid is uid, as the kernel does for RLIMIT_NPROC.
 * Only needed when the plugin runs under the caller's own uid; an ephemeral uid runs nothing.
 */
static uint64_t count_tasks_of_uid(uid_t uid) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        uint64_t total = 0;

        d = opendir("/proc");
        if (!d)
                return 0;
        while ((de = readdir(d))) {
                char path[300], line[256];
                FILE *f;
                long ruid = -1, threads = 0;

                if (de->d_name[0] < '0' || de->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/status", de->d_name);
                f = fopen(path, "re");
                if (!f)
                        continue;
                while (fgets(line, sizeof(line), f)) {
                        if (sscanf(line, "Uid: %ld", &ruid) == 1)
                                continue;
                        if (sscanf(line, "Threads: %ld", &threads) == 1)
                                break;
                }
                fclose(f);
                if (ruid == (long)uid && threads > 0)
                        total += (uint64_t)threads;
        }
        return total;
}

static void set_rlimit(ChildArgs *a, int res, uint64_t cur, uint64_t max) {
        a->rlim[res].cur = cur;
        a->rlim[res].max = max;
        a->rlim_set[res] = true;
}

/* The contract's Limits row, exactly. */
static void prepare_rlimits(ChildArgs *a, const SandboxLimits *l, uint64_t tasks_before) {
        set_rlimit(a, RLIMIT_CPU, l->cpu_s,
                   l->cpu_s + 1); /* SIGXCPU, then SIGKILL a second later */
        set_rlimit(a, RLIMIT_DATA, l->memory_bytes, l->memory_bytes);
        set_rlimit(a, RLIMIT_STACK, 8 * MiB, 8 * MiB);
        set_rlimit(a, RLIMIT_AS, l->memory_bytes + 4 * GiB, l->memory_bytes + 4 * GiB);
        set_rlimit(a, RLIMIT_CORE, 0, 0);
        set_rlimit(a, RLIMIT_FSIZE, 0, 0);
        /* The plugin itself is one task of its uid; 512 more may exist, then clone gets EAGAIN. */
        set_rlimit(a, RLIMIT_NPROC, tasks_before + 1 + NPROC_HEADROOM,
                   tasks_before + 1 + NPROC_HEADROOM);
}

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
}

static void close_pair(int p[2]) {
        p[0] = safe_close(p[0]);
        p[1] = safe_close(p[1]);
}

bool run_drain(int fd, uint8_t *buf, size_t keep, size_t *kept, uint64_t *total) {
        uint8_t scratch[16384];

        for (;;) {
                ssize_t n = read(fd, scratch, sizeof(scratch));
                if (n < 0)
                        return errno == EAGAIN || errno == EINTR;
                if (n == 0)
                        return false;
                if (buf && *kept < keep) {
                        size_t take = (size_t)n < keep - *kept ? (size_t)n : keep - *kept;
                        memcpy(buf + *kept, scratch, take);
                        *kept += take;
                }
                *total += (uint64_t)n;
        }
}

typedef struct RunIO {
        int stdout_fd, stderr_fd, detail_fd, pidfd;
        bool (*oom_check)(void *userdata);
        void *oom_check_userdata;
        uint8_t out[RUN_STDOUT_KEEP];
        size_t out_len;
        uint64_t out_total;
} RunIO;

/* Collects output until the plugin ended; kills it at the deadline. Returns how it ended. */
static int collect(RunIO *io, uint64_t deadline, RunResult *res, RunExit *e, struct rusage *ru) {
        /* With its output read by another process (RunFds), only the plugin's end is waited for. */
        bool out_open = io->stdout_fd >= 0, err_open = io->stderr_fd >= 0,
             det_open = io->detail_fd >= 0, exited = false;
        size_t unused = 0;

        while (out_open || err_open || det_open || !exited) {
                struct pollfd p[4] = {
                        {.fd = out_open ? io->stdout_fd : -1, .events = POLLIN},
                        {.fd = err_open ? io->stderr_fd : -1, .events = POLLIN},
                        {.fd = det_open ? io->detail_fd : -1, .events = POLLIN},
                        {.fd = exited ? -1 : io->pidfd, .events = POLLIN},
                };
                uint64_t now = now_usec();
                int timeout_ms = -1;

                if (!e->timed_out)
                        timeout_ms = now >= deadline ? 0 : (int)((deadline - now + 999) / 1000);
                if (poll(p, 4, timeout_ms) < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (!e->timed_out && now_usec() >= deadline) {
                        /* The wall clock is up: the whole thread group dies, no grace. */
                        (void)syscall(__NR_pidfd_send_signal, io->pidfd, SIGKILL, NULL, 0);
                        e->timed_out = true;
                }
                if (out_open && p[0].revents)
                        out_open = run_drain(io->stdout_fd, io->out, sizeof(io->out), &io->out_len,
                                             &io->out_total);
                if (err_open && p[1].revents)
                        err_open = run_drain(io->stderr_fd, NULL, 0, &unused, &res->stderr_bytes);
                if (det_open && p[2].revents)
                        det_open = run_drain(io->detail_fd, (uint8_t *)res->detail,
                                             sizeof(res->detail), &res->detail_len,
                                             &res->detail_total);
                if (!exited && p[3].revents) {
                        siginfo_t si = {};

                        if (syscall(SYS_waitid, P_PIDFD, io->pidfd, &si, WEXITED, ru) < 0) {
                                if (errno == EINTR)
                                        continue;
                                return negative_errno();
                        }
                        exited = true;
                        if (si.si_code == CLD_EXITED) {
                                e->exited = true;
                                e->exit_status = si.si_status;
                        } else {
                                e->signal = si.si_status;
                        }
                        /* Asked now, before the manager may have removed the scope's cgroup. */
                        if (e->signal == SIGKILL && !e->timed_out && io->oom_check)
                                e->oom = io->oom_check(io->oom_check_userdata);
                        /*
                         * Threads share the fd table and the plugin cannot fork, so once it is
                         * reaped every write end is closed: the pipes reach EOF now.
                         */
                }
        }
        return 0;
}

int runner_run(const Sandbox *sb, const RunParams *p, RunResult *ret) {
        _cleanup_close_ int devnull = -1, inputs_mfd = -1, inputs_ro = -1, pidfd = -1;
        int out[2] = {-1, -1}, err[2] = {-1, -1}, det[2] = {-1, -1}, go[2] = {-1, -1},
            st[2] = {-1, -1};
        _cleanup_free_ ChildArgs *a = NULL;
        RunResult res = {};
        RunExit e = {};
        ChildFailure fail = {};
        struct rusage ru = {};
        sigset_t all, saved;
        void *stack = MAP_FAILED;
        uint64_t start;
        ssize_t n;
        pid_t pid;
        int r = 0;

        if (!sb || !p || p->input_fd < 0)
                return -EINVAL;
        if (p->fds ? (p->fds->stdout_fd < 0 || p->fds->stderr_fd < 0 || !p->fds->exit ||
                      (sb->spec.inputs && p->fds->inputs_fd < 0) ||
                      (sb->spec.detail && p->fds->detail_fd < 0))
                   : sb->spec.inputs && !p->inputs_json)
                return -EINVAL;
        if (p->drop_to_uid && geteuid() != 0)
                return -EPERM;
        if (p->drop_to_uid && (p->uid == 0 || p->gid == 0))
                return -EINVAL; /* never run a plugin as root */

        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;

        devnull = open("/dev/null", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (devnull < 0)
                return negative_errno();
        if (sb->spec.inputs && !p->fds) {
                /* fd 6: sealed against any change, and handed over through a read-only open. */
                inputs_mfd = memfd_from_buffer(p->inputs_json, p->inputs_len, "lockd-inputs");
                if (inputs_mfd < 0)
                        return inputs_mfd;
                inputs_ro = fd_reopen_readonly(inputs_mfd);
                if (inputs_ro < 0)
                        return inputs_ro;
        }
        if (pipe2(go, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0 ||
            (!p->fds && (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
                         (sb->spec.detail && pipe2(det, O_CLOEXEC) < 0)))) {
                r = negative_errno();
                goto finish;
        }
        for (int *fd = (int[]){out[0], err[0], det[0], -1}; *fd >= 0; fd++)
                (void)fcntl(*fd, F_SETFL, O_NONBLOCK);

        a->sb = sb;
        a->go_fd = go[0];
        a->go_write_fd = go[1];
        a->status_fd = st[1];
        a->devnull_fd = devnull;
        a->stdout_fd = p->fds ? p->fds->stdout_fd : out[1];
        a->stderr_fd = p->fds ? p->fds->stderr_fd : err[1];
        a->input_fd = p->input_fd;
        a->inputs_fd = p->fds ? p->fds->inputs_fd : inputs_ro;
        a->detail_fd = p->fds ? p->fds->detail_fd : det[1];
        a->drop_uid = p->drop_to_uid;
        a->uid = p->uid;
        a->gid = p->gid;
        a->last_cap = cap_max_bits() - 1;
        a->parent = getpid();
        a->argv[0] = (char *)"plugin";
        a->envp[0] = (char *)sb->env_protocol;
        prepare_rlimits(a, &sb->spec.limits, p->drop_to_uid ? 0 : count_tasks_of_uid(getuid()));

        /*
         * CLONE_VM so the cost does not grow with our memory; no CLONE_VFORK, because the child
         * must wait for its scope while we create it. All signals stay blocked around clone() so
         * no handler of ours runs on the child's stack.
         */
        stack = mmap(NULL, CHILD_STACK_SIZE, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (stack == MAP_FAILED) {
                r = negative_errno();
                goto finish;
        }
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        pid = clone(child_main, (uint8_t *)stack + CHILD_STACK_SIZE,
                    CLONE_VM | CLONE_PIDFD | SIGCHLD, a, &pidfd);
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        if (pid < 0) {
                r = negative_errno();
                goto finish;
        }
        start = now_usec();
        res.uid = p->drop_to_uid ? p->uid : getuid();
        res.landlock_abi = sb->landlock_abi;

        /* Our copies of the child's ends go now, so EOF means the child (or exec) closed them. */
        go[0] = safe_close(go[0]);
        st[1] = safe_close(st[1]);
        out[1] = safe_close(out[1]);
        err[1] = safe_close(err[1]);
        det[1] = safe_close(det[1]);

        r = p->start_hook ? p->start_hook(pid, pidfd, p->start_hook_userdata) : 0;
        if (r < 0) {
                /*
                 * Refused (no scope: fail closed). The child cannot be left to find EOF on its
                 * go pipe: every child spawned meanwhile holds a copy of our write end until its
                 * own execve, so it dies now. The hook's errno is the cause's
                 * (spawn:scope:<errno>), so a timeout reads apart from a manager's refusal.
                 */
                (void)syscall(__NR_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                fail.stage = SPAWN_STAGE_SCOPE;
                fail.error = -r;
                r = 0;
        } else if (loop_write(go[1], "g", 1) < 0) {
                fail.stage = SPAWN_STAGE_SCOPE;
                fail.error = EPIPE;
        }
        go[1] = safe_close(go[1]);

        /* EOF without a record: execve closed the status pipe, so the child left our memory. */
        ChildFailure rec = {};
        do
                n = read(st[0], &rec, sizeof(rec));
        while (n < 0 && errno == EINTR);
        munmap(stack, CHILD_STACK_SIZE);
        stack = MAP_FAILED;
        if (fail.stage == SPAWN_STAGE_NONE && n != 0) {
                /* A record, a short one or a read error: the child did not reach the plugin. */
                bool valid = n == (ssize_t)sizeof(rec) && rec.stage > SPAWN_STAGE_NONE &&
                             rec.stage < _SPAWN_STAGE_MAX;
                fail.stage = valid ? rec.stage : SPAWN_STAGE_EXEC;
                fail.error = valid ? rec.error : EIO;
        }

        if (fail.stage != SPAWN_STAGE_NONE) {
                siginfo_t si = {};

                (void)syscall(__NR_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                (void)syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED, &ru);
                res.outcome = RUN_PLUGIN_ERROR;
                res.cause = RUN_CAUSE_SPAWN;
                res.spawn_stage = (SpawnStage)fail.stage;
                res.spawn_errno = fail.error;
                res.wall_usec = now_usec() - start;
                *ret = res;
                goto finish;
        }

        RunIO io = {.stdout_fd = out[0],
                    .stderr_fd = err[0],
                    .detail_fd = det[0],
                    .pidfd = pidfd,
                    .oom_check = p->oom_check,
                    .oom_check_userdata = p->oom_check_userdata};
        /* The plugin's time starts at its execve: a wait for a busy manager to create the scope
         * is lockd's, never charged against the plugin's timeout (the scope's RuntimeMaxUSec
         * bounds the whole). */
        r = collect(&io, now_usec() + sb->spec.limits.timeout_s * 1000000ULL, &res, &e, &ru);
        if (r < 0) {
                siginfo_t si = {};

                /* We cannot watch it any more: it must not outlive the run. */
                (void)syscall(__NR_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                (void)syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED, NULL);
                goto finish;
        }
        res.wall_usec = now_usec() - start;
        res.cpu_usec = (uint64_t)ru.ru_utime.tv_sec * 1000000ULL + (uint64_t)ru.ru_utime.tv_usec +
                       (uint64_t)ru.ru_stime.tv_sec * 1000000ULL + (uint64_t)ru.ru_stime.tv_usec;
        res.peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024;
        if (p->fds)
                *p->fds->exit = e; /* the reader classifies */
        else
                run_classify(io.out, io.out_len, io.out_total, &e, &res);
        *ret = res;

finish:
        if (stack != MAP_FAILED)
                munmap(stack, CHILD_STACK_SIZE);
        close_pair(out);
        close_pair(err);
        close_pair(det);
        close_pair(go);
        close_pair(st);
        return r;
}
