/* The engine's seccomp filter: a short deny list on top of its lack of privilege, so that a
 * memory bug in a parser cannot reach the kernel's administrative interfaces either. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
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

#define N_DENIED  ELEMENTSOF(denied)
#define INSNS_MAX (4 + N_DENIED * 2 + 1)

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
        for (size_t i = 0; i < N_DENIED; i++) {
                f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                                                      (unsigned)denied[i], 0, 1);
                f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
                                                      SECCOMP_RET_ERRNO | (EPERM & 0xffff));
        }
        f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

        struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) < 0)
                return negative_errno();
        return 0;
}
