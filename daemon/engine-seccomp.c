/* The engine's seccomp filter: a short deny list on top of its lack of privilege, so that a
 * memory bug in a parser cannot reach the kernel's administrative interfaces either, nor make
 * a namespace or a socket of any family but AF_UNIX. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine-seccomp.h"
#include "macro.h"

/*
 * What an engine never calls. Its children (lockd-verify, file copies) inherit the filter. Under
 * AddressSanitizer, LeakSanitizer stops the threads with ptrace(2) at exit: that build (a test
 * build, never shipped) keeps ptrace.
 */
#if defined(__SANITIZE_ADDRESS__)
#define DENY_PTRACE
#else
#define DENY_PTRACE __NR_ptrace,
#endif
static const int denied[] = {
        DENY_PTRACE __NR_process_vm_readv,
        __NR_process_vm_writev,
        __NR_mount,
        __NR_umount2,
        __NR_pivot_root,
        __NR_chroot,
        __NR_swapon,
        __NR_swapoff,
        __NR_reboot,
        __NR_kexec_load,
        __NR_kexec_file_load,
        __NR_init_module,
        __NR_finit_module,
        __NR_delete_module,
        __NR_bpf,
        __NR_perf_event_open,
        __NR_keyctl,
        __NR_add_key,
        __NR_request_key,
        __NR_userfaultfd,
        __NR_unshare,
        __NR_setns,
        __NR_open_tree,
        __NR_move_mount,
        __NR_fsopen,
        __NR_fsconfig,
        __NR_fsmount,
        __NR_fspick,
        __NR_mount_setattr,
        __NR_settimeofday,
        __NR_clock_settime,
        __NR_clock_adjtime,
        __NR_adjtimex,
        __NR_acct,
        __NR_quotactl,
        __NR_open_by_handle_at,
        __NR_name_to_handle_at,
        __NR_iopl,
        __NR_ioperm,
        __NR_syslog,
        __NR_vhangup,
        __NR_mknod,
        __NR_mknodat,
        __NR_io_uring_setup,
        __NR_io_uring_enter,
        __NR_io_uring_register,
        __NR_fanotify_init,
        __NR_setuid,
        __NR_setgid,
        __NR_setreuid,
        __NR_setregid,
        __NR_setresuid,
        __NR_setresgid,
        __NR_setgroups,
        __NR_setfsuid,
        __NR_setfsgid,
        __NR_personality,
};

/*
 * Namespaces (ARCHITECTURE.md, two processes): unshare and setns are denied above, and clone may
 * not ask for a new one either. A user namespace would give the engine every capability inside
 * it, and a network namespace of its own with it. Only the low 32 bits of clone's flags count
 * (the kernel truncates them); CLONE_NEWTIME is not among them, since clone's low byte is the
 * exit signal (only clone3 and unshare take it).
 */
#define CLONE_NS_FLAGS                                                                             \
        (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |             \
         CLONE_NEWPID | CLONE_NEWNET)
/* x32's system calls are x86-64's numbers with this bit: another table, killed like another
 * architecture's (a deny list keyed on x86-64's numbers would not see them). */
#define X32_SYSCALL_BIT 0x40000000U

#define N_DENIED  ELEMENTSOF(denied)
/* arch (3) + x32 (2) + nr (1) + denied (2 each) + clone3 (2) + clone (5) + socket, socketpair
 * (2 x 5) + allow (1). */
#define INSNS_MAX (3 + 2 + 1 + N_DENIED * 2 + 2 + 5 + 10 + 1)

int engine_confine(void) {
        struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct data[2] = {};
        struct sock_filter f[INSNS_MAX];
        size_t n = 0;

        /* Nothing to lose: no capability in any set (the spawner's uid change cleared them). */
        if (syscall(SYS_capget, &hdr, data) < 0)
                return negative_errno();
        for (int i = 0; i < 2; i++)
                if (data[i].effective || data[i].permitted || data[i].inheritable)
                        return -EPERM;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return negative_errno();

        /* Another architecture's system call numbers mean something else: killed. */
        f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                              offsetof(struct seccomp_data, arch));
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
        f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
        f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                              offsetof(struct seccomp_data, nr));
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 1);
        f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
        for (size_t i = 0; i < N_DENIED; i++) {
                f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                                                      (unsigned)denied[i], 0, 1);
                f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
                                                      SECCOMP_RET_ERRNO | (EPERM & 0xffff));
        }
        /*
         * clone3 passes its flags in memory, which seccomp cannot read: refused whole, with
         * ENOSYS as the plugins' filter does, so that glibc (pthread_create, posix_spawn) falls
         * back to clone, whose flags are checked here.
         */
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1);
        f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
                                              SECCOMP_RET_ERRNO | (ENOSYS & 0xffff));
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4);
        f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                              offsetof(struct seccomp_data, args[0]));
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NS_FLAGS, 0, 1);
        f[n++] =
                (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & 0xffff));
        f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        /*
         * Sockets: AF_UNIX only (its sockets, the spawner's channel, journald, lockd-verify's
         * pipes are not sockets). The engine needs no AF_NETLINK: it asks the manager nothing
         * itself (the spawner does), and nothing it links opens one. An AF_INET socket or a
         * netlink one would be a way out that a parser's memory bug should not find open; the
         * unit's RestrictAddressFamilies=AF_UNIX is the second wall, where the unit applies.
         */
        for (int k = 0; k < 2; k++) {
                f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                                                      k == 0 ? __NR_socket : __NR_socketpair, 0, 4);
                f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                                      offsetof(struct seccomp_data, args[0]));
                f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 1, 0);
                f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
                                                      SECCOMP_RET_ERRNO | (EAFNOSUPPORT & 0xffff));
                f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        }
        f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

        struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) < 0)
                return negative_errno();
        return 0;
}
