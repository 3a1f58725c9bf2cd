/* One plugin run: spawn into the sandbox, collect stdout, stderr and detail, classify the answer.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fd-util.h"
#include "macro.h"
#include "runner.h"
#include "seccomp.h"

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
/* The release's fds, in this order; inputs and detail only when the spec has them. */
enum {
        CHILD_FD_DEVNULL,
        CHILD_FD_STDOUT,
        CHILD_FD_STDERR,
        CHILD_FD_INPUT,
        CHILD_FD_BINARY,
        CHILD_FD_RULESET,
        CHILD_FD_INPUTS,
        CHILD_FD_DETAIL,
        CHILD_FDS_MAX,
};
#define NPROC_HEADROOM 512

/* What the child reports through its control socket when it cannot enter the sandbox. */
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
        int ctl_fd; /* the child's end of its control socket, until it is CHILD_STATUS_FD */
        /* Filled by the child from the release's SCM_RIGHTS, in CHILD_FD_* order. */
        int devnull_fd, stdout_fd, stderr_fd, input_fd, inputs_fd, detail_fd, binary_fd, ruleset_fd;
        unsigned n_fds; /* how many fds the release carries */
        char release_byte;
        struct iovec iov;
        struct msghdr msg;
        union {
                struct cmsghdr align;
                uint8_t space[CMSG_SPACE(sizeof(int) * (CHILD_FDS_MAX + 1))];
        } control;
        bool drop_uid;
        bool bset;      /* set at creation: we are root, so the child empties its bounding set */
        bool bset_done; /* set by the child once it did */
        pid_t parent;   /* lockd's pid: the child must not outlive it */
        const SeccompProgram *filter_ahead, *filter_last; /* the filter's two parts */
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
        /*
         * Read by the child just before its execve: CLOCK_MONOTONIC and its own CPU time, valid
         * once exec_read is set (after both). The plugin's time starts there: the control
         * socket's EOF says the same, but only when our thread gets a CPU to read it, which on a
         * busy machine came up to a millisecond later, so that the run's setup was counted too
         * long and its wall time too short; the child's CPU up to there (its sandbox entry) is
         * left out of the run's CPU time as it is of the wall time.
         */
        struct timespec exec_at, exec_cpu;
        bool exec_read;
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

        /*
         * write(), not send(): the filter denies every socket call, and a failure may come after
         * it is loaded (execve's own). A spawner that gave up on us closed its end: SIGPIPE or
         * exit, we end either way.
         */
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
 * Takes the release: one byte and, by SCM_RIGHTS, exactly a->n_fds fds in CHILD_FD_* order.
 * Anything else (EOF: the spawner gave us up) ends the child before it touched the sandbox.
 */
__attribute__((no_sanitize("address", "undefined"))) static void child_take_release(ChildArgs *a) {
        struct cmsghdr *cm;
        const int *in;
        int *slots[CHILD_FDS_MAX] = {
                &a->devnull_fd, &a->stdout_fd,  &a->stderr_fd, &a->input_fd,
                &a->binary_fd,  &a->ruleset_fd, &a->inputs_fd, &a->detail_fd,
        };
        long r;

        a->iov.iov_base = &a->release_byte;
        a->iov.iov_len = 1;
        a->msg.msg_iov = &a->iov;
        a->msg.msg_iovlen = 1;
        a->msg.msg_control = &a->control;
        a->msg.msg_controllen = sizeof(a->control);
        do
                r = SYS3(__NR_recvmsg, CHILD_STATUS_FD, &a->msg, MSG_CMSG_CLOEXEC);
        while (r == -EINTR);
        if (r != 1)
                child_fail(CHILD_STATUS_FD, SPAWN_STAGE_SCOPE, r < 0 ? r : -ECANCELED);
        cm = CMSG_FIRSTHDR(&a->msg);
        if ((a->msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || !cm || cm->cmsg_level != SOL_SOCKET ||
            cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(int) * a->n_fds))
                child_fail(CHILD_STATUS_FD, SPAWN_STAGE_FDS, -EBADMSG);
        in = (const int *)CMSG_DATA(cm);
        for (unsigned i = 0, k = 0; i < CHILD_FDS_MAX; i++) {
                if ((i == CHILD_FD_INPUTS && !a->sb->spec.inputs) ||
                    (i == CHILD_FD_DETAIL && !a->sb->spec.detail)) {
                        *slots[i] = -1;
                        continue;
                }
                *slots[i] = in[k++];
        }
}

/*
 * The child's first steps, whatever run it gets: default signal dispositions, its name, the
 * control socket at CHILD_STATUS_FD and every other fd the clone copied closed, an empty signal
 * mask. Like every child_* step: raw system calls only, and any failure ends the child.
 */
__attribute__((no_sanitize("address", "undefined"))) static void child_reset(ChildArgs *a) {
        long r;

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

        /* The control socket goes to its fixed number; every other fd the clone copied, closed. */
        if (a->ctl_fd != CHILD_STATUS_FD &&
            SYS3(__NR_dup3, a->ctl_fd, CHILD_STATUS_FD, O_CLOEXEC) < 0)
                for (;;)
                        (void)SYS1(__NR_exit_group, 127); /* nobody to tell: EOF says it */
        (void)SYS3(__NR_close_range, 0, CHILD_STATUS_FD - 1, 0);
        r = SYS3(__NR_close_range, CHILD_STATUS_FD + 1, ~0U, 0);
        if (r < 0)
                child_fail(CHILD_STATUS_FD, SPAWN_STAGE_CLOSE_FDS, r);

        /* A name that tells a waiting child from its spawner in ps and in its scope; given once
         * the spawner's fds are closed, so that a child of that name holds none of them. */
        (void)SYS2(__NR_prctl, PR_SET_NAME, "lockd-standby");
        uint64_t empty = 0;
        r = SYS4(__NR_rt_sigprocmask, SIG_SETMASK, &empty, NULL, 8);
        if (r < 0)
                child_fail(CHILD_STATUS_FD, SPAWN_STAGE_CLONE, r);
}

/* Dies with the thread that made it (PR_SET_PDEATHSIG), and checks that thread did not die
 * before: the death signal is set at the start and again after the uid change, which clears it. */
__attribute__((no_sanitize("address", "undefined"))) static void
child_die_with_parent(ChildArgs *a) {
        long r;

        r = SYS2(__NR_prctl, PR_SET_PDEATHSIG, SIGKILL);
        if (r < 0)
                child_fail(CHILD_STATUS_FD, SPAWN_STAGE_PDEATHSIG, r);
        if (SYS0(__NR_getppid) != a->parent)
                child_fail(CHILD_STATUS_FD, SPAWN_STAGE_PDEATHSIG, -ESRCH);
}

/* Loads one part of the filter, its own-pid slots filled with this process's pid. */
__attribute__((no_sanitize("address", "undefined"))) static void
child_load_filter(ChildArgs *a, const SeccompProgram *part) {
        size_t n = seccomp_program_instantiate(part, (pid_t)SYS0(__NR_getpid), a->filter);
        struct sock_fprog prog = {.len = (unsigned short)n, .filter = a->filter};
        long r = SYS3(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);

        if (r < 0)
                child_fail(CHILD_STATUS_FD, SPAWN_STAGE_SECCOMP, r);
}

/*
 * What no run decides, done off the run's path (ARCHITECTURE.md, the sandbox). The bounding and
 * ambient sets go while we hold CAP_SETPCAP: they limit only what an execve could grant, not the
 * effective set the uid change still needs, and after setresuid() to a non-root uid the kernel
 * clears the permitted and effective sets.
 */
__attribute__((no_sanitize("address", "undefined"))) static void child_ahead(ChildArgs *a) {
        long r;

        if (a->bset) {
                for (int c = 0; c <= a->last_cap; c++) {
                        r = SYS2(__NR_prctl, PR_CAPBSET_DROP, c);
                        if (r < 0 && r != -EINVAL)
                                child_fail(CHILD_STATUS_FD, SPAWN_STAGE_CAPS, r);
                }
                r = SYS2(__NR_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL);
                if (r < 0)
                        child_fail(CHILD_STATUS_FD, SPAWN_STAGE_CAPS, r);
                a->bset_done = true;
        }

        /* no_new_privs only concerns execve, and it lets us load a filter without CAP_SYS_ADMIN. */
        r = SYS5(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        if (r < 0)
                child_fail(CHILD_STATUS_FD, SPAWN_STAGE_NO_NEW_PRIVS, r);

        /*
         * The AHEAD part rules on every syscall but the five the setup after the release still
         * makes, which the LAST part rules on before execve; the kernel applies both, the
         * stricter verdict winning, so the plugin runs under the whole policy (seccomp.h).
         * Loading it costs the kernel ~0.1 ms (the JIT), which a child made ahead pays before it
         * is needed.
         */
        child_load_filter(a, a->filter_ahead);
}

/* The run's uid and gid, no supplementary group, and no capability left in any set (read back
 * to be sure); then its rlimits. */
__attribute__((no_sanitize("address", "undefined"))) static void child_become(ChildArgs *a) {
        long r;

        if (a->drop_uid) {
                /* A run as another uid needs the bounding set emptied ahead: never without. */
                if (!a->bset_done)
                        child_fail(CHILD_STATUS_FD, SPAWN_STAGE_CAPS, -EPERM);
                r = SYS2(__NR_setgroups, 0, NULL);
                if (r < 0)
                        child_fail(CHILD_STATUS_FD, SPAWN_STAGE_GROUPS, r);
                r = SYS3(__NR_setresgid, a->gid, a->gid, a->gid);
                if (r < 0)
                        child_fail(CHILD_STATUS_FD, SPAWN_STAGE_GID, r);
                r = SYS3(__NR_setresuid, a->uid, a->uid, a->uid);
                if (r < 0)
                        child_fail(CHILD_STATUS_FD, SPAWN_STAGE_UID, r);
        }

        /*
         * A plugin never outlives the process that runs it: if lockd dies (SIGKILL, a crash), the
         * kernel kills the plugin at once rather than leaving it to its scope's RuntimeMaxUSec=.
         * After the uid change, which clears the death signal; then a check for a parent that
         * died before it was set.
         */
        child_die_with_parent(a);

        /* Every capability, in every set, dropped; then read back to be sure. */
        struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct data[2] = {};
        r = SYS2(__NR_capset, &hdr, data);
        if (r < 0)
                child_fail(CHILD_STATUS_FD, SPAWN_STAGE_CAPS, r);
        r = SYS2(__NR_capget, &hdr, data);
        if (r < 0)
                child_fail(CHILD_STATUS_FD, SPAWN_STAGE_CAPS, r);
        for (int i = 0; i < 2; i++)
                if (data[i].effective || data[i].permitted || data[i].inheritable)
                        child_fail(CHILD_STATUS_FD, SPAWN_STAGE_CAPS, -EPERM);

        for (int res = 0; res < RLIM_NLIMITS; res++) {
                if (!a->rlim_set[res])
                        continue;
                r = SYS4(__NR_prlimit64, 0, res, &a->rlim[res], NULL);
                if (r < 0)
                        child_fail(CHILD_STATUS_FD, SPAWN_STAGE_RLIMIT, r);
        }
}

/* The release's fds at their fixed numbers: 0, 1, 2, 3, (6), (7) and the binary at
 * CHILD_BINARY_FD; 4 and 5 never exist. Every source is lifted above them first; the Landlock
 * ruleset stays up there, its number returned. */
__attribute__((no_sanitize("address", "undefined"))) static long child_lay_out_fds(ChildArgs *a) {
        const Sandbox *sb = a->sb;
        long out, err, input, inputs = -1, detail = -1, binary, ruleset, devnull;

        devnull = child_lift(a->devnull_fd);
        out = child_lift(a->stdout_fd);
        err = child_lift(a->stderr_fd);
        input = child_lift(a->input_fd);
        if (sb->spec.inputs)
                inputs = child_lift(a->inputs_fd);
        if (sb->spec.detail)
                detail = child_lift(a->detail_fd);
        binary = child_lift(a->binary_fd);
        ruleset = child_lift(a->ruleset_fd);
        if (devnull < 0 || out < 0 || err < 0 || input < 0 || binary < 0 || ruleset < 0 ||
            (sb->spec.inputs && inputs < 0) || (sb->spec.detail && detail < 0))
                child_fail(CHILD_STATUS_FD, SPAWN_STAGE_FDS, -EBADF);
        if (SYS2(__NR_dup2, devnull, 0) < 0 || SYS2(__NR_dup2, out, 1) < 0 ||
            SYS2(__NR_dup2, err, 2) < 0 || SYS2(__NR_dup2, input, 3) < 0 ||
            SYS3(__NR_dup3, binary, CHILD_BINARY_FD, O_CLOEXEC) < 0)
                child_fail(CHILD_STATUS_FD, SPAWN_STAGE_FDS, -EBADF);
        /* 4 and 5 never exist; 6 and 7 only for the protocol-2 extras the manifest asks for. */
        (void)SYS1(__NR_close, 4);
        (void)SYS1(__NR_close, 5);
        if (!sb->spec.inputs)
                (void)SYS1(__NR_close, 6);
        else if (SYS2(__NR_dup2, inputs, 6) < 0)
                child_fail(CHILD_STATUS_FD, SPAWN_STAGE_FDS, -EBADF);
        if (!sb->spec.detail)
                (void)SYS1(__NR_close, 7);
        else if (SYS2(__NR_dup2, detail, 7) < 0)
                child_fail(CHILD_STATUS_FD, SPAWN_STAGE_FDS, -EBADF);
        return ruleset;
}

/*
 * The child, in ARCHITECTURE.md's order (the sandbox). Made ahead of its run: it keeps only its
 * control socket (every other inherited fd closed), does what no run decides (bounding and
 * ambient sets emptied, no_new_privs, the filter's AHEAD part) and waits for the release, which
 * the spawner sends once the child is in its scope; then groups, gid, uid → capabilities →
 * rlimits → fds 0,1,2,3,(6),(7) → cwd / → Landlock → close every other fd → the filter's LAST
 * part → execve. Every step that fails ends the child before exec (child_fail()): the steps are
 * functions of their own, each async-signal-safe as this one (raw system calls, no allocation, no
 * lock, no errno) and built without the sanitizers, which the shared memory would confuse.
 */
__attribute__((no_sanitize("address", "undefined"))) static int child_main(void *userdata) {
        ChildArgs *a = userdata;
        long r, ruleset;

        child_reset(a);
        /* Dies with the thread that made it from the start: the release may never come. */
        child_die_with_parent(a);
        child_ahead(a);

        /* Wait for the run (the parent has put us into our scope by then, or gives us up). */
        child_take_release(a);

        child_become(a);
        ruleset = child_lay_out_fds(a);

        r = SYS1(__NR_chdir, "/");
        if (r < 0)
                child_fail(CHILD_STATUS_FD, SPAWN_STAGE_CWD, r);

        r = SYS2(__NR_landlock_restrict_self, ruleset, 0);
        if (r < 0)
                child_fail(CHILD_STATUS_FD, SPAWN_STAGE_LANDLOCK, r);

        /* Nothing but 0-3, 6, 7 and the two close-on-exec fds 8 and 9 may reach the plugin. */
        r = SYS3(__NR_close_range, CHILD_STATUS_FD + 1, ~0U, 0);
        if (r < 0)
                child_fail(CHILD_STATUS_FD, SPAWN_STAGE_CLOSE_FDS, r);

        child_load_filter(a, a->filter_last);

        if (SYS2(__NR_clock_gettime, CLOCK_PROCESS_CPUTIME_ID, &a->exec_cpu) >= 0 &&
            SYS2(__NR_clock_gettime, CLOCK_MONOTONIC, &a->exec_at) >= 0)
                __atomic_store_n(&a->exec_read, true, __ATOMIC_RELEASE);
        r = SYS3(__NR_execve, a->sb->exec_path, a->argv, a->envp);
        child_fail(CHILD_STATUS_FD, SPAWN_STAGE_EXEC, r);
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

static void close_pair(int p[2]) {
        p[0] = safe_close(p[0]);
        p[1] = safe_close(p[1]);
}

typedef struct RunIO {
        int stdout_fd, stderr_fd, detail_fd, pidfd;
        bool (*oom_check)(void *userdata);
        void *oom_check_userdata;
        int (*peak_check)(void *userdata, uint64_t *ret);
        int peak_error; /* peak_check()'s return: 0 when peak holds the cgroup's peak */
        uint64_t peak;
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
                uint64_t now = clock_monotonic_usec();
                int timeout_ms = -1;

                if (!e->timed_out)
                        timeout_ms = now >= deadline ? 0 : (int)((deadline - now + 999) / 1000);
                if (poll(p, 4, timeout_ms) < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (!e->timed_out && clock_monotonic_usec() >= deadline) {
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
                        /* The same race: the cgroup's peak is read before it goes. */
                        io->peak_error = io->peak_check
                                                 ? io->peak_check(io->oom_check_userdata, &io->peak)
                                                 : -ENOENT;
                        /*
                         * Threads share the fd table and the plugin cannot fork, so once it is
                         * reaped every write end is closed: the pipes reach EOF now.
                         */
                }
        }
        return 0;
}

/* The fds a run makes itself: /dev/null, and without RunFds the inputs' read-only memfd and the
 * three pipes (read ends non-blocking, ours; write ends the child's). */
typedef struct RunOwnFds {
        int devnull, inputs_mfd, inputs_ro;
        int out[2], err[2], det[2];
} RunOwnFds;

struct RunChild {
        pid_t pid;
        int pidfd;
        int ctl_fd; /* our end: the release goes out, a failure record comes back, EOF at execve */
        bool reaped;
        void *stack;
        ChildArgs *args;
        uint64_t born_usec;
        /* Between run_child_release() and run_child_finish(): the run's own fds, the release's
         * time and how its send went (0 or a negative errno). */
        bool released;
        RunOwnFds own;
        uint64_t release_usec;
        int sent;
};

static void run_own_fds_close(RunOwnFds *o) {
        o->devnull = safe_close(o->devnull);
        o->inputs_mfd = safe_close(o->inputs_mfd);
        o->inputs_ro = safe_close(o->inputs_ro);
        close_pair(o->out);
        close_pair(o->err);
        close_pair(o->det);
}

/* The filter's two parts: the same for every plugin and every child, built once per process. */
static pthread_once_t filters_once = PTHREAD_ONCE_INIT;
static SeccompProgram *filter_ahead, *filter_last;
static int filters_error;

static void filters_build(void) {
        int r;

        r = seccomp_program_new_part(SECCOMP_PART_AHEAD, &filter_ahead);
        if (r >= 0)
                r = seccomp_program_new_part(SECCOMP_PART_LAST, &filter_last);
        /* The AHEAD part holds every own-pid rule; a part the child could not copy is refused. */
        if (r >= 0 && (filter_ahead->n_insns > SECCOMP_INSNS_MAX ||
                       filter_ahead->n_pid_slots == 0 || filter_last->n_insns > SECCOMP_INSNS_MAX))
                r = -EINVAL;
        filters_error = r < 0 ? r : 0;
}

int run_child_new(RunChild **ret) {
        _cleanup_(run_child_freep) RunChild *c = NULL;
        int pair[2] = {-1, -1};
        sigset_t all, saved;
        int r;

        if (!ret)
                return -EINVAL;
        r = pthread_once(&filters_once, filters_build);
        if (r != 0)
                return -r;
        if (filters_error < 0)
                return filters_error;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->pidfd = c->ctl_fd = -1;
        c->own = (RunOwnFds){.devnull = -1,
                             .inputs_mfd = -1,
                             .inputs_ro = -1,
                             .out = {-1, -1},
                             .err = {-1, -1},
                             .det = {-1, -1}};
        c->stack = MAP_FAILED;
        /* Opened ahead, off the run's path: the plugin's stdin. */
        c->own.devnull = open("/dev/null", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (c->own.devnull < 0)
                return negative_errno();
        c->args = calloc(1, sizeof(*c->args));
        if (!c->args)
                return -ENOMEM;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
                return negative_errno();
        c->ctl_fd = pair[0];
        c->args->ctl_fd = pair[1];
        c->args->parent = getpid();
        c->args->bset = geteuid() == 0;
        c->args->last_cap = cap_max_bits() - 1;
        c->args->filter_ahead = filter_ahead;
        c->args->filter_last = filter_last;
        c->stack = mmap(NULL, CHILD_STACK_SIZE, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (c->stack == MAP_FAILED) {
                safe_close(pair[1]);
                return negative_errno();
        }
        /*
         * CLONE_VM so the cost does not grow with our memory; no CLONE_VFORK, because the child
         * waits for its scope and its run. All signals stay blocked around clone() so no handler
         * of ours runs on the child's stack.
         */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        c->pid = clone(child_main, (uint8_t *)c->stack + CHILD_STACK_SIZE,
                       CLONE_VM | CLONE_PIDFD | SIGCHLD, c->args, &c->pidfd);
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        /* Our copy of the child's end goes now, so EOF means the child (or its execve) closed it.
         */
        safe_close(pair[1]);
        if (c->pid < 0) {
                c->pid = 0;
                return negative_errno();
        }
        c->born_usec = clock_monotonic_usec();
        *ret = TAKE_PTR(c);
        return 0;
}

pid_t run_child_pid(const RunChild *c) {
        return c ? c->pid : 0;
}

int run_child_pidfd(const RunChild *c) {
        return c ? c->pidfd : -1;
}

uint64_t run_child_born_usec(const RunChild *c) {
        return c ? c->born_usec : 0;
}

bool run_child_waiting(const RunChild *c) {
        struct pollfd p = {.fd = c ? c->pidfd : -1, .events = POLLIN};

        /* The pidfd turns readable when the child ended: a child that did is of no use. */
        return c && !c->reaped && c->pid > 0 && poll(&p, 1, 0) == 0;
}

RunChild *run_child_free(RunChild *c) {
        if (!c)
                return NULL;
        if (c->pid > 0 && !c->reaped) {
                siginfo_t si = {};

                /* Never started, or its run failed: it must not outlive its handle. */
                (void)syscall(__NR_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
                while (syscall(SYS_waitid, P_PIDFD, c->pidfd, &si, WEXITED, NULL) < 0 &&
                       errno == EINTR)
                        ;
        }
        /* Only now: a child that has not exec'd yet runs on this stack, in our memory. */
        if (c->stack != MAP_FAILED)
                munmap(c->stack, CHILD_STACK_SIZE);
        run_own_fds_close(&c->own);
        safe_close(c->pidfd);
        safe_close(c->ctl_fd);
        free(c->args);
        free(c);
        return NULL;
}

/*
 * A reaped child's maxrss (KiB) in bytes when it is the plugin's own, else 0 (unknown). execve()
 * from our shared memory kept our high-water mark then (exec_mmap()); ours only grows, so a child
 * above our own maxrss now was above it then too, and its maxrss is the plugin's resident peak.
 */
static uint64_t maxrss_if_own(long child_kib) {
        struct rusage self;

        if (child_kib <= 0 || getrusage(RUSAGE_SELF, &self) < 0 || child_kib <= self.ru_maxrss)
                return 0;
        return (uint64_t)child_kib * 1024;
}

/* Whether a record of n bytes read into f is a child's failure report: whole, a real stage. */
static bool failure_valid(ssize_t n, const ChildFailure *f) {
        return n == (ssize_t)sizeof(*f) && f->stage > SPAWN_STAGE_NONE &&
               f->stage < _SPAWN_STAGE_MAX;
}

/* Sends the release: one byte and fds in CHILD_FD_* order. 0 or a negative errno. */
static int send_release(int ctl, const int *fds, size_t n) {
        union {
                struct cmsghdr align;
                uint8_t space[CMSG_SPACE(sizeof(int) * CHILD_FDS_MAX)];
        } control = {};
        struct iovec iov = {.iov_base = (char *)"g", .iov_len = 1};
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = &control,
                .msg_controllen = CMSG_SPACE(sizeof(int) * n),
        };
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        ssize_t k;

        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
        do
                k = sendmsg(ctl, &mh, MSG_NOSIGNAL);
        while (k < 0 && errno == EINTR);
        return k == 1 ? 0 : k < 0 ? negative_errno() : -EIO;
}

/* Whether p is a run this child can make: 0, -EINVAL, or -EPERM (a uid to drop to, not root). */
static int run_params_check(const RunChild *c, const Sandbox *sb, const RunParams *p) {
        if (!c || !sb || !p || p->input_fd < 0 || c->reaped || c->pid <= 0)
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
        return 0;
}

/* The run's own fds but /dev/null, which run_child_new() opened ahead. */
static int run_own_fds_open(const Sandbox *sb, const RunParams *p, RunOwnFds *o) {
        if (sb->spec.inputs && !p->fds) {
                /* fd 6: sealed against any change, and handed over through a read-only open. */
                o->inputs_mfd = memfd_from_buffer(p->inputs_json, p->inputs_len, "lockd-inputs");
                if (o->inputs_mfd < 0)
                        return o->inputs_mfd;
                o->inputs_ro = fd_reopen_readonly(o->inputs_mfd);
                if (o->inputs_ro < 0)
                        return o->inputs_ro;
        }
        if (!p->fds && (pipe2(o->out, O_CLOEXEC) < 0 || pipe2(o->err, O_CLOEXEC) < 0 ||
                        (sb->spec.detail && pipe2(o->det, O_CLOEXEC) < 0)))
                return negative_errno();
        for (int *fd = (int[]){o->out[0], o->err[0], o->det[0], -1}; *fd >= 0; fd++)
                (void)fcntl(*fd, F_SETFL, O_NONBLOCK);
        return 0;
}

/* What the child reads after the release (it waits in recvmsg() until then), and the release's
 * fds in CHILD_FD_* order; how many. */
static size_t release_prepare(RunChild *c, const Sandbox *sb, const RunParams *p,
                              const RunOwnFds *o, int fds[CHILD_FDS_MAX]) {
        ChildArgs *a = c->args;
        size_t n = 0;

        a->sb = sb;
        a->n_fds = 6 + sb->spec.inputs + sb->spec.detail;
        a->drop_uid = p->drop_to_uid;
        a->uid = p->uid;
        a->gid = p->gid;
        a->argv[0] = (char *)"plugin";
        a->envp[0] = (char *)sb->env_protocol;
        prepare_rlimits(a, &sb->spec.limits, p->drop_to_uid ? 0 : count_tasks_of_uid(getuid()));
        fds[n++] = o->devnull;
        fds[n++] = p->fds ? p->fds->stdout_fd : o->out[1];
        fds[n++] = p->fds ? p->fds->stderr_fd : o->err[1];
        fds[n++] = p->input_fd;
        fds[n++] = sb->binary_fd;
        fds[n++] = sb->ruleset_fd;
        if (sb->spec.inputs)
                fds[n++] = p->fds ? p->fds->inputs_fd : o->inputs_ro;
        if (sb->spec.detail)
                fds[n++] = p->fds ? p->fds->detail_fd : o->det[1];
        return n;
}

/* After the release went out (sent: 0, or the send's negative errno): the child's failure
 * record, or none (stage SPAWN_STAGE_NONE) once execve closed the control socket. */
static ChildFailure release_wait(RunChild *c, int sent) {
        ChildFailure fail = {};
        ssize_t n;

        if (sent < 0) {
                /*
                 * It died while it waited: killed with its scope or by a stop, or it failed a step
                 * it takes before the release, whose record then waits in our socket.
                 */
                n = recv(c->ctl_fd, &fail, sizeof(fail), MSG_DONTWAIT);
                if (!failure_valid(n, &fail))
                        fail = (ChildFailure){.stage = SPAWN_STAGE_SCOPE, .error = -sent};
                return fail;
        }
        /* EOF without a record: execve closed the control socket, so the child left our memory. */
        do
                n = recv(c->ctl_fd, &fail, sizeof(fail), 0);
        while (n < 0 && errno == EINTR);
        /* A record, a short one or a read error: the child did not reach the plugin (EOF read
         * nothing into fail, which stays without a stage). */
        if (n != 0 && !failure_valid(n, &fail))
                fail = (ChildFailure){.stage = SPAWN_STAGE_EXEC, .error = EIO};
        return fail;
}

/* A child that never reached the plugin: killed, reaped, and the run's result says where. */
static void spawn_failed(RunChild *c, const ChildFailure *fail, RunResult *res) {
        siginfo_t si = {};
        struct rusage ru = {};

        (void)syscall(__NR_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
        (void)syscall(SYS_waitid, P_PIDFD, c->pidfd, &si, WEXITED, &ru);
        c->reaped = true;
        res->outcome = RUN_PLUGIN_ERROR;
        res->cause = RUN_CAUSE_SPAWN;
        res->spawn_stage = (SpawnStage)fail->stage;
        res->spawn_errno = fail->error;
}

/* When the plugin's execve began, and the child's CPU time up to it: the child's own readings,
 * if they are (after the release, not after now), else now, when we saw the control socket's
 * EOF, and 0. */
static uint64_t exec_point(const RunChild *c, uint64_t now, uint64_t *ret_cpu_before) {
        const ChildArgs *a = c->args;
        uint64_t t;

        *ret_cpu_before = 0;
        if (!__atomic_load_n(&a->exec_read, __ATOMIC_ACQUIRE))
                return now;
        t = clock_timespec_usec(&a->exec_at);
        if (t < c->release_usec || t > now)
                return now;
        *ret_cpu_before = clock_timespec_usec(&a->exec_cpu);
        return t;
}

/* The plugin, from its execve (start, with cpu_before of the child's CPU time spent by then) to
 * its reap: its output collected (o's read ends, without RunFds), its time, CPU and peak memory;
 * classified here or by the reader. 0 or a negative errno. */
static int plugin_watch(RunChild *c, const Sandbox *sb, const RunParams *p, const RunOwnFds *o,
                        uint64_t start, uint64_t cpu_before, RunResult *res) {
        RunIO io = {.stdout_fd = o->out[0],
                    .stderr_fd = o->err[0],
                    .detail_fd = o->det[0],
                    .pidfd = c->pidfd,
                    .oom_check = p->oom_check,
                    .oom_check_userdata = p->oom_check_userdata,
                    .peak_check = p->peak_check,
                    .peak_error = -ENOENT};
        struct rusage ru = {};
        RunExit e = {};
        int r;

        /* The plugin's time starts at its execve: what came before is lockd's, reported apart
         * (setup_usec), never charged against the plugin's timeout. */
        r = collect(&io, start + sb->spec.limits.timeout_s * 1000000ULL, res, &e, &ru);
        if (r < 0) {
                siginfo_t si = {};

                /* We cannot watch it any more: it must not outlive the run. */
                (void)syscall(__NR_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
                (void)syscall(SYS_waitid, P_PIDFD, c->pidfd, &si, WEXITED, NULL);
                c->reaped = true;
                return r;
        }
        c->reaped = true;
        res->wall_usec = clock_monotonic_usec() - start;
        res->cpu_usec = (uint64_t)ru.ru_utime.tv_sec * 1000000ULL + (uint64_t)ru.ru_utime.tv_usec +
                        (uint64_t)ru.ru_stime.tv_sec * 1000000ULL + (uint64_t)ru.ru_stime.tv_usec;
        /* From the execve, as the wall time: the child's sandbox entry before it is lockd's. */
        if (cpu_before <= res->cpu_usec)
                res->cpu_usec -= cpu_before;
        /*
         * The plugin's own peak is its memory cgroup's (a fresh scope per run). ru_maxrss is not:
         * the waiting child shared the spawner's memory (CLONE_VM), and execve() keeps the larger
         * of the old and the new memory's high-water mark (exec_mmap()), so it is never below the
         * spawner's resident size. It stands in only where no cgroup told, and only where it is
         * provably the plugin's (maxrss_if_own()); otherwise the peak is unknown (0), never our
         * own size passed off as the plugin's.
         */
        res->peak_rss_bytes = io.peak_error == 0 ? io.peak : maxrss_if_own(ru.ru_maxrss);
        if (p->fds)
                *p->fds->exit = e; /* the reader classifies */
        else
                run_classify(io.out, io.out_len, io.out_total, &e, res);
        return 0;
}

int run_child_release(RunChild *c, const Sandbox *sb, const RunParams *p) {
        int fds[CHILD_FDS_MAX];
        size_t n_fds;
        int r;

        if (c && c->released)
                return -EALREADY;
        r = run_params_check(c, sb, p);
        if (r < 0)
                return r;
        r = run_own_fds_open(sb, p, &c->own);
        if (r < 0) {
                run_own_fds_close(&c->own);
                return r;
        }
        n_fds = release_prepare(c, sb, p, &c->own, fds);
        c->release_usec = clock_monotonic_usec();
        c->sent = send_release(c->ctl_fd, fds, n_fds);
        c->released = true;
        /* Our copies of the child's ends go now, so EOF means the child (or exec) closed them. */
        c->own.out[1] = safe_close(c->own.out[1]);
        c->own.err[1] = safe_close(c->own.err[1]);
        c->own.det[1] = safe_close(c->own.det[1]);
        return 0;
}

int run_child_finish(RunChild *c, const Sandbox *sb, const RunParams *p, RunResult *ret) {
        RunResult res = {};
        ChildFailure fail;
        uint64_t exec_usec, cpu_before = 0;
        int r;

        if (!c || !sb || !p || !ret || !c->released || c->reaped)
                return -EINVAL;
        res.uid = p->drop_to_uid ? p->uid : getuid();
        res.landlock_abi = sb->landlock_abi;
        fail = release_wait(c, c->sent);
        /* A child that failed did not exec: its setup ends when we heard of it. */
        exec_usec = fail.stage == SPAWN_STAGE_NONE
                            ? exec_point(c, clock_monotonic_usec(), &cpu_before)
                            : clock_monotonic_usec();
        res.setup_usec = exec_usec - c->release_usec;
        if (p->launched)
                p->launched(p->launched_userdata);

        if (fail.stage != SPAWN_STAGE_NONE) {
                spawn_failed(c, &fail, &res);
                *ret = res;
                r = 0;
        } else {
                r = plugin_watch(c, sb, p, &c->own, exec_usec, cpu_before, &res);
                if (r >= 0)
                        *ret = res;
        }
        run_own_fds_close(&c->own);
        return r;
}

int run_child_start(RunChild *c, const Sandbox *sb, const RunParams *p, RunResult *ret) {
        int r;

        if (!ret)
                return -EINVAL;
        r = run_child_release(c, sb, p);
        return r < 0 ? r : run_child_finish(c, sb, p, ret);
}

int runner_run(const Sandbox *sb, const RunParams *p, RunResult *ret) {
        _cleanup_(run_child_freep) RunChild *c = NULL;
        uint64_t begin = clock_monotonic_usec();
        int r;

        if (!sb || !p || !ret || p->input_fd < 0)
                return -EINVAL;
        r = run_child_new(&c);
        if (r < 0)
                return r;
        r = p->start_hook ? p->start_hook(c->pid, c->pidfd, p->start_hook_userdata) : 0;
        if (r < 0) {
                /*
                 * Refused (no scope: fail closed); run_child_free() kills it. The hook's errno is
                 * the cause's (spawn:scope:<errno>), so a timeout reads apart from a manager's
                 * refusal.
                 */
                *ret = (RunResult){
                        .outcome = RUN_PLUGIN_ERROR,
                        .cause = RUN_CAUSE_SPAWN,
                        .spawn_stage = SPAWN_STAGE_SCOPE,
                        .spawn_errno = -r,
                        .landlock_abi = sb->landlock_abi,
                        .uid = p->drop_to_uid ? p->uid : getuid(),
                        .setup_usec = clock_monotonic_usec() - begin,
                };
                return 0;
        }
        /* The hook's part of the setup: the wait for the scope. */
        begin = clock_monotonic_usec() - begin;
        r = run_child_start(c, sb, p, ret);
        if (r >= 0) {
                ret->setup_usec += begin;
                ret->scope_wait_usec = begin;
        }
        return r;
}
