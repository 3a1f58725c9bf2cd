/* The plugins' seccomp filter: a hand-assembled classic BPF denylist with an own-pid placeholder.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "macro.h"
#include "seccomp.h"

/*
 * Syscalls newer than Debian 12's <asm/unistd_64.h> (which stops at 450). The numbers are the
 * x86-64 table's (arch/x86/entry/syscalls/syscall_64.tbl); only those the filter names are here.
 */
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#ifndef __NR_lsm_set_self_attr
#define __NR_lsm_set_self_attr 460
#endif
#ifndef __NR_setxattrat
#define __NR_setxattrat 463
#endif
#ifndef __NR_removexattrat
#define __NR_removexattrat 466
#endif
#ifndef __NR_open_tree_attr
#define __NR_open_tree_attr 467
#endif
#ifndef __NR_file_setattr
#define __NR_file_setattr 469
#endif

/*
 * The highest syscall number this filter knows: file_setattr, the last one of Linux 6.18. Every
 * number above it is denied, because a syscall added by a later kernel did not exist when this
 * denylist was reviewed and may well be one it would have denied (a new way to mount, to reach
 * another process, to change metadata). A denylist is only sound against the table it was
 * written for; raise this only after reviewing every syscall up to the new value.
 */
#define SECCOMP_NR_KNOWN_MAX 469U

/* Flags the kernel may not yet name in Debian 12's headers. */
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080U
#endif
#ifndef F_SETOWN_EX
#define F_SETOWN_EX 15
#endif
#ifndef F_SETSIG
#define F_SETSIG 10
#endif
#ifndef F_NOTIFY
#define F_NOTIFY 1026
#endif
#ifndef F_SETLEASE
#define F_SETLEASE 1024
#endif

/* ioctl requests, spelled out so no uapi header with conflicting definitions is needed. */
#define IOCTL_FIOSETOWN           0x8901U
#define IOCTL_SIOCSPGRP           0x8902U
#define IOCTL_FS_IOC_SETFLAGS     0x40086602U
#define IOCTL_FS_IOC32_SETFLAGS   0x40046602U
#define IOCTL_FS_IOC_FSSETXATTR   0x401c5820U
#define IOCTL_TIOCSTI             0x5412U
#define IOCTL_FS_IOC_SETVERSION   0x40087602U
#define IOCTL_FS_IOC32_SETVERSION 0x40047602U

#define RET_ALLOW  SECCOMP_RET_ALLOW
#define RET_EPERM  (SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))
#define RET_ENOSYS (SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA))

/* Where seccomp_data's fields are; args[] are u64 and x86-64 is little-endian: low word first. */
#define OFF_NR        ((uint32_t)offsetof(struct seccomp_data, nr))
#define OFF_ARCH      ((uint32_t)offsetof(struct seccomp_data, arch))
#define OFF_ARG_LO(i) ((uint32_t)(offsetof(struct seccomp_data, args) + 8 * (i)))
#define OFF_ARG_HI(i) ((uint32_t)(offsetof(struct seccomp_data, args) + 8 * (i) + 4))

/* ---- A small assembler: labels, forward jumps only (as BPF), offsets resolved at the end. ---- */

typedef unsigned Label;

/* The label meaning "the next instruction": a jump offset of 0. */
#define LABEL_NEXT 0U

#define ASM_LABELS_MAX    512
#define ASM_FIXUPS_MAX    (2 * SECCOMP_INSNS_MAX)
#define ASM_PID_SLOTS_MAX 64

enum {
        FIELD_JT,
        FIELD_JF,
};

typedef struct Fixup {
        size_t insn;
        Label label;
        int field;
} Fixup;

typedef struct Asm {
        struct sock_filter insns[SECCOMP_INSNS_MAX];
        size_t n_insns;
        size_t pid_slots[ASM_PID_SLOTS_MAX];
        size_t n_pid_slots;
        size_t labels[ASM_LABELS_MAX]; /* bound position, or SIZE_MAX */
        Label n_labels;
        Fixup fixups[ASM_FIXUPS_MAX];
        size_t n_fixups;
        int error; /* sticky: the first failure, reported by asm_resolve() */
} Asm;

static void asm_init(Asm *a) {
        *a = (Asm){};
        a->n_labels = 1; /* 0 is LABEL_NEXT */
}

static Label asm_label(Asm *a) {
        if (a->n_labels >= ASM_LABELS_MAX) {
                a->error = a->error ?: -E2BIG;
                return LABEL_NEXT;
        }
        a->labels[a->n_labels] = SIZE_MAX;
        return a->n_labels++;
}

/* Binds label l to the next instruction emitted. */
static void asm_bind(Asm *a, Label l) {
        if (l == LABEL_NEXT || l >= a->n_labels || a->labels[l] != SIZE_MAX) {
                a->error = a->error ?: -EINVAL;
                return;
        }
        a->labels[l] = a->n_insns;
}

static void asm_fixup(Asm *a, size_t insn, Label l, int field) {
        if (l == LABEL_NEXT)
                return; /* offset 0, already there */
        if (a->n_fixups >= ASM_FIXUPS_MAX) {
                a->error = a->error ?: -E2BIG;
                return;
        }
        a->fixups[a->n_fixups++] = (Fixup){.insn = insn, .label = l, .field = field};
}

/* Appends one instruction and returns its index (or SIZE_MAX, recording -E2BIG, when full). */
static size_t asm_emit(Asm *a, uint16_t code, uint32_t k) {
        if (a->n_insns >= SECCOMP_INSNS_MAX) {
                a->error = a->error ?: -E2BIG;
                return SIZE_MAX;
        }
        a->insns[a->n_insns] = (struct sock_filter)BPF_STMT(code, k);
        return a->n_insns++;
}

static void asm_ld(Asm *a, uint32_t off) {
        asm_emit(a, BPF_LD | BPF_W | BPF_ABS, off);
}

static void asm_ret(Asm *a, uint32_t action) {
        asm_emit(a, BPF_RET | BPF_K, action);
}

static void asm_and(Asm *a, uint32_t k) {
        asm_emit(a, BPF_ALU | BPF_AND | BPF_K, k);
}

/* A conditional jump: op is BPF_JEQ, BPF_JGT, BPF_JGE or BPF_JSET against the constant k. */
static size_t asm_jmp(Asm *a, uint16_t op, uint32_t k, Label jt, Label jf) {
        size_t i = asm_emit(a, BPF_JMP | op | BPF_K, k);
        if (i == SIZE_MAX)
                return i;
        asm_fixup(a, i, jt, FIELD_JT);
        asm_fixup(a, i, jf, FIELD_JF);
        return i;
}

/* "A == own pid": a jeq on the placeholder, recorded so the child can patch the real pid in. */
static void asm_jeq_pid(Asm *a, Label jt, Label jf) {
        size_t i = asm_jmp(a, BPF_JEQ, SECCOMP_PID_PLACEHOLDER, jt, jf);
        if (i == SIZE_MAX)
                return;
        if (a->n_pid_slots >= ASM_PID_SLOTS_MAX) {
                a->error = a->error ?: -E2BIG;
                return;
        }
        a->pid_slots[a->n_pid_slots++] = i;
}

/*
 * Fills in every jump offset. Returns 0, or a negative errno: the first error recorded while
 * emitting, -EINVAL for an unbound label or a backward jump (BPF has none), -ERANGE for a
 * conditional jump farther than 255 instructions (the code below is laid out so that none is;
 * this is the check that it stays so), -ENOEXEC when the program does not end in a return.
 */
static int asm_resolve(Asm *a) {
        if (a->error < 0)
                return a->error;
        if (a->n_insns == 0 || BPF_CLASS(a->insns[a->n_insns - 1].code) != BPF_RET)
                return -ENOEXEC;

        for (size_t f = 0; f < a->n_fixups; f++) {
                const Fixup *x = &a->fixups[f];
                size_t target = a->labels[x->label];

                if (target == SIZE_MAX || target <= x->insn || target >= a->n_insns)
                        return -EINVAL;

                size_t off = target - x->insn - 1;
                switch (x->field) {
                case FIELD_JT:
                case FIELD_JF:
                        if (off > UINT8_MAX)
                                return -ERANGE;
                        if (x->field == FIELD_JT)
                                a->insns[x->insn].jt = (uint8_t)off;
                        else
                                a->insns[x->insn].jf = (uint8_t)off;
                        break;
                default:
                        return -EINVAL;
                }
        }
        return 0;
}

/* ---- The policy. ---- */

/* Denied with EPERM whatever their arguments. */
static const uint16_t deny_always[] = {
        /* Other processes, the kernel's state, mounts, code other than the plugin's own. */
        __NR_ptrace,
        __NR_process_vm_readv,
        __NR_process_vm_writev,
        __NR_mount,
        __NR_umount2,
        __NR_mount_setattr,
        __NR_move_mount,
        __NR_open_tree,
        __NR_open_tree_attr,
        __NR_fsopen,
        __NR_fsconfig,
        __NR_fsmount,
        __NR_fspick,
        __NR_pivot_root,
        __NR_chroot,
        __NR_bpf,
        __NR_keyctl,
        __NR_add_key,
        __NR_request_key,
        __NR_perf_event_open,
        /* Only its own binary executes (Landlock); execveat is also how fexecve() runs a memfd. */
        __NR_execveat,
        __NR_memfd_create,
        __NR_memfd_secret,

        /* System V IPC and POSIX message queues: channels to other processes. */
        __NR_shmget,
        __NR_shmat,
        __NR_shmdt,
        __NR_shmctl,
        __NR_msgget,
        __NR_msgsnd,
        __NR_msgrcv,
        __NR_msgctl,
        __NR_semget,
        __NR_semop,
        __NR_semctl,
        __NR_semtimedop,
        __NR_mq_open,
        __NR_mq_unlink,
        __NR_mq_timedsend,
        __NR_mq_timedreceive,
        __NR_mq_notify,
        __NR_mq_getsetattr,

        /* No network, no unix sockets: every socket call, also on a descriptor it was given. */
        __NR_socket,
        __NR_socketpair,
        __NR_connect,
        __NR_bind,
        __NR_listen,
        __NR_accept,
        __NR_accept4,
        __NR_sendto,
        __NR_recvfrom,
        __NR_sendmsg,
        __NR_recvmsg,
        __NR_sendmmsg,
        __NR_recvmmsg,
        __NR_shutdown,
        __NR_getsockopt,
        __NR_setsockopt,
        __NR_getsockname,
        __NR_getpeername,

        /* Other processes' scheduling, descriptors and process groups. */
        __NR_ioprio_set,
        __NR_pidfd_getfd,
        __NR_setpgid,
        __NR_setsid,

        /* Child processes: threads only (clone is checked below, clone3 fails with ENOSYS). */
        __NR_fork,
        __NR_vfork,

        /* File metadata of every kind (Landlock denies most of these too; defence in depth). */
        __NR_chmod,
        __NR_fchmod,
        __NR_fchmodat,
        __NR_fchmodat2,
        __NR_chown,
        __NR_fchown,
        __NR_lchown,
        __NR_fchownat,
        __NR_setxattr,
        __NR_lsetxattr,
        __NR_fsetxattr,
        __NR_removexattr,
        __NR_lremovexattr,
        __NR_fremovexattr,
        __NR_setxattrat,
        __NR_removexattrat,
        __NR_utime,
        __NR_utimes,
        __NR_utimensat,
        __NR_futimesat,
        __NR_truncate,
        __NR_ftruncate,
        __NR_fallocate,
        __NR_file_setattr,
        __NR_rename,
        __NR_renameat,
        __NR_renameat2,
        __NR_link,
        __NR_linkat,
        __NR_symlink,
        __NR_symlinkat,
        __NR_unlink,
        __NR_unlinkat,
        __NR_mkdir,
        __NR_mkdirat,
        __NR_rmdir,
        __NR_mknod,
        __NR_mknodat,
        __NR_fanotify_init,
        __NR_fanotify_mark,
        __NR_name_to_handle_at,
        __NR_open_by_handle_at,

        /* Other processes' memory and layout. */
        __NR_move_pages,
        __NR_migrate_pages,
        __NR_get_robust_list,
        __NR_process_madvise,
        __NR_process_mrelease,
        __NR_kcmp,

        /* io_uring performs what it is submitted without passing through seccomp. */
        __NR_io_uring_setup,
        __NR_io_uring_enter,
        __NR_io_uring_register,
        __NR_userfaultfd,
        __NR_unshare,
        __NR_setns,
        __NR_personality,

        /* The machine's state: kernel, modules, time, names, swap, quotas, I/O ports. */
        __NR_kexec_load,
        __NR_kexec_file_load,
        __NR_init_module,
        __NR_finit_module,
        __NR_delete_module,
        __NR_reboot,
        __NR_swapon,
        __NR_swapoff,
        __NR_acct,
        __NR_quotactl,
        __NR_quotactl_fd,
        __NR_syslog,
        __NR_iopl,
        __NR_ioperm,
        __NR_modify_ldt,
        __NR_lookup_dcookie,
        __NR_nfsservctl,
        __NR_vhangup,
        __NR_settimeofday,
        __NR_clock_settime,
        __NR_clock_adjtime,
        __NR_adjtimex,
        __NR_sethostname,
        __NR_setdomainname,
        __NR_uselib,
        __NR_ustat,
        __NR_sysfs,
        __NR__sysctl,
        __NR_lsm_set_self_attr,

        /* Credentials: the run's ephemeral uid is final. */
        __NR_setuid,
        __NR_setgid,
        __NR_setreuid,
        __NR_setregid,
        __NR_setresuid,
        __NR_setresgid,
        __NR_setgroups,
        __NR_setfsuid,
        __NR_setfsgid,
        __NR_capset,
};

/*
 * Allowed only when arg0 is exactly the plugin's own pid, all 64 bits. The kernel takes these
 * pids as int (the low word), so demanding a zero high word refuses more than the kernel would
 * read, never less: a high word the kernel ignores cannot smuggle another target past the check.
 * tkill takes a tid, so only the main thread can be its target; glibc and Go use tgkill.
 */
static const uint16_t own_pid_arg0[] = {
        __NR_kill,       __NR_tkill, __NR_rt_sigqueueinfo, __NR_tgkill, __NR_rt_tgsigqueueinfo,
        __NR_pidfd_open,
};

/* Allowed only when arg0 is exactly 0 (the caller) or the own pid, checked as above. */
static const uint16_t self_or_own_pid_arg0[] = {
        __NR_prlimit64,      __NR_sched_setaffinity, __NR_sched_setscheduler,
        __NR_sched_setparam, __NR_sched_setattr,
};

/*
 * Emits the dispatch of a group: "if nr is one of nrs[], go to body, else to skip". A holds nr.
 * n must be small enough that the first jeq reaches body (the callers keep groups under 64).
 */
static void emit_match(Asm *a, const uint16_t *nrs, size_t n, Label body, Label skip) {
        for (size_t i = 0; i < n; i++)
                asm_jmp(a, BPF_JEQ, nrs[i], body, i + 1 == n ? skip : LABEL_NEXT);
}

/*
 * Emits every group: a run of jeq on nr followed by the group's body, which ends in returns on
 * every path, so the skip label after it is only reached with A still holding nr. Keeping each
 * body next to its own dispatch keeps every conditional jump short (well under 255) however long
 * the whole program grows, with no trampolines needed.
 */
static void emit_policy(Asm *a) {
        Label body, skip, deny, allow;

        /* mmap first: by far the most frequent call that has to look at its arguments. */
        body = asm_label(a), skip = asm_label(a), deny = asm_label(a), allow = asm_label(a);
        emit_match(a, (const uint16_t[]){__NR_mmap}, 1, body, skip);
        asm_bind(a, body);
        /*
         * Flags are arg3. Every MAP_* bit lives in the low word, and high bits do not change what
         * the low ones mean. Shared anonymous memory is refused: any map type with the MAP_SHARED
         * bit (MAP_SHARED 0x01, MAP_SHARED_VALIDATE 0x03; other types with that bit are EINVAL),
         * so a plugin cannot make memory that outlives its address-space accounting or is shared
         * with a child. MAP_GROWSDOWN is refused outright.
         */
        asm_ld(a, OFF_ARG_LO(3));
        asm_jmp(a, BPF_JSET, MAP_GROWSDOWN, deny, LABEL_NEXT);
        asm_and(a, MAP_SHARED | MAP_ANONYMOUS);
        asm_jmp(a, BPF_JEQ, MAP_SHARED | MAP_ANONYMOUS, deny, allow);
        asm_bind(a, deny);
        asm_ret(a, RET_EPERM);
        asm_bind(a, allow);
        asm_ret(a, RET_ALLOW);
        asm_bind(a, skip);

        /* ioctl: requests that hand the descriptor's signals to another process or set metadata. */
        body = asm_label(a), skip = asm_label(a), deny = asm_label(a), allow = asm_label(a);
        emit_match(a, (const uint16_t[]){__NR_ioctl}, 1, body, skip);
        asm_bind(a, body);
        /*
         * The request is arg1, and the kernel declares it unsigned int: it uses the low word only.
         * So compare the low word and ignore the high one. A 64-bit compare would be bypassed by
         * FIOSETOWN | 0xffffffff00000000, which the filter would not recognise and the kernel
         * would run as FIOSETOWN.
         */
        asm_ld(a, OFF_ARG_LO(1));
        asm_jmp(a, BPF_JEQ, IOCTL_FIOSETOWN, deny, LABEL_NEXT);
        asm_jmp(a, BPF_JEQ, IOCTL_SIOCSPGRP, deny, LABEL_NEXT);
        asm_jmp(a, BPF_JEQ, IOCTL_TIOCSTI, deny, LABEL_NEXT);
        asm_jmp(a, BPF_JEQ, IOCTL_FS_IOC_SETFLAGS, deny, LABEL_NEXT);
        asm_jmp(a, BPF_JEQ, IOCTL_FS_IOC32_SETFLAGS, deny, LABEL_NEXT);
        asm_jmp(a, BPF_JEQ, IOCTL_FS_IOC_FSSETXATTR, deny, LABEL_NEXT);
        asm_jmp(a, BPF_JEQ, IOCTL_FS_IOC_SETVERSION, deny, LABEL_NEXT);
        asm_jmp(a, BPF_JEQ, IOCTL_FS_IOC32_SETVERSION, deny, allow);
        asm_bind(a, deny);
        asm_ret(a, RET_EPERM);
        asm_bind(a, allow);
        asm_ret(a, RET_ALLOW);
        asm_bind(a, skip);

        /* fcntl (x86-64 has no fcntl64): a descriptor's owner, signal, notifications, leases. */
        body = asm_label(a), skip = asm_label(a), deny = asm_label(a), allow = asm_label(a);
        emit_match(a, (const uint16_t[]){__NR_fcntl}, 1, body, skip);
        asm_bind(a, body);
        /* cmd is arg1, unsigned int in the kernel: low word only, for the reason given at ioctl. */
        asm_ld(a, OFF_ARG_LO(1));
        asm_jmp(a, BPF_JEQ, F_SETOWN, deny, LABEL_NEXT);
        asm_jmp(a, BPF_JEQ, F_SETOWN_EX, deny, LABEL_NEXT);
        asm_jmp(a, BPF_JEQ, F_SETSIG, deny, LABEL_NEXT);
        asm_jmp(a, BPF_JEQ, F_NOTIFY, deny, LABEL_NEXT);
        asm_jmp(a, BPF_JEQ, F_SETLEASE, deny, allow);
        asm_bind(a, deny);
        asm_ret(a, RET_EPERM);
        asm_bind(a, allow);
        asm_ret(a, RET_ALLOW);
        asm_bind(a, skip);

        /* clone: threads only, and no new namespace. */
        body = asm_label(a), skip = asm_label(a), deny = asm_label(a), allow = asm_label(a);
        emit_match(a, (const uint16_t[]){__NR_clone}, 1, body, skip);
        asm_bind(a, body);
        /*
         * Flags are arg0. The legacy clone() keeps only lower_32_bits(flags), so the low word is
         * the whole of what the kernel uses. Without CLONE_THREAD the result is a new process;
         * CLONE_NEWTIME (0x80) overlaps the exit-signal byte here, refusing it costs nothing.
         */
        asm_ld(a, OFF_ARG_LO(0));
        asm_jmp(a, BPF_JSET, CLONE_THREAD, LABEL_NEXT, deny);
        asm_jmp(a, BPF_JSET,
                CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                        CLONE_NEWUTS | CLONE_NEWCGROUP | CLONE_NEWTIME,
                deny, allow);
        asm_bind(a, deny);
        asm_ret(a, RET_EPERM);
        asm_bind(a, allow);
        asm_ret(a, RET_ALLOW);
        asm_bind(a, skip);

        /*
         * clone3 passes its flags in memory, which seccomp cannot read, so it cannot be checked:
         * refuse it whole. With ENOSYS, not EPERM: glibc (2.34+) and Go treat ENOSYS as "this
         * kernel has no clone3" and fall back to clone(), which the check above does inspect;
         * EPERM would be final and no thread could be made.
         */
        body = asm_label(a), skip = asm_label(a);
        emit_match(a, (const uint16_t[]){__NR_clone3}, 1, body, skip);
        asm_bind(a, body);
        asm_ret(a, RET_ENOSYS);
        asm_bind(a, skip);

        /* Signals and pidfds: arg0 must be the own pid. */
        body = asm_label(a), skip = asm_label(a), deny = asm_label(a), allow = asm_label(a);
        emit_match(a, own_pid_arg0, ELEMENTSOF(own_pid_arg0), body, skip);
        asm_bind(a, body);
        asm_ld(a, OFF_ARG_HI(0));
        asm_jmp(a, BPF_JEQ, 0, LABEL_NEXT, deny);
        asm_ld(a, OFF_ARG_LO(0));
        asm_jeq_pid(a, allow, deny);
        asm_bind(a, deny);
        asm_ret(a, RET_EPERM);
        asm_bind(a, allow);
        asm_ret(a, RET_ALLOW);
        asm_bind(a, skip);

        /* Limits and scheduling: arg0 must be 0 (the caller) or the own pid. */
        body = asm_label(a), skip = asm_label(a), deny = asm_label(a), allow = asm_label(a);
        emit_match(a, self_or_own_pid_arg0, ELEMENTSOF(self_or_own_pid_arg0), body, skip);
        asm_bind(a, body);
        asm_ld(a, OFF_ARG_HI(0));
        asm_jmp(a, BPF_JEQ, 0, LABEL_NEXT, deny);
        asm_ld(a, OFF_ARG_LO(0));
        asm_jmp(a, BPF_JEQ, 0, allow, LABEL_NEXT);
        asm_jeq_pid(a, allow, deny);
        asm_bind(a, deny);
        asm_ret(a, RET_EPERM);
        asm_bind(a, allow);
        asm_ret(a, RET_ALLOW);
        asm_bind(a, skip);

        /*
         * setpriority(which, who, prio): only PRIO_PROCESS of 0 or the own pid; a process group
         * or a user reaches other processes. Both words of both arguments, as for the signals.
         */
        body = asm_label(a), skip = asm_label(a), deny = asm_label(a), allow = asm_label(a);
        emit_match(a, (const uint16_t[]){__NR_setpriority}, 1, body, skip);
        asm_bind(a, body);
        asm_ld(a, OFF_ARG_HI(0));
        asm_jmp(a, BPF_JEQ, 0, LABEL_NEXT, deny);
        asm_ld(a, OFF_ARG_LO(0));
        asm_jmp(a, BPF_JEQ, PRIO_PROCESS, LABEL_NEXT, deny);
        asm_ld(a, OFF_ARG_HI(1));
        asm_jmp(a, BPF_JEQ, 0, LABEL_NEXT, deny);
        asm_ld(a, OFF_ARG_LO(1));
        asm_jmp(a, BPF_JEQ, 0, allow, LABEL_NEXT);
        asm_jeq_pid(a, allow, deny);
        asm_bind(a, deny);
        asm_ret(a, RET_EPERM);
        asm_bind(a, allow);
        asm_ret(a, RET_ALLOW);
        asm_bind(a, skip);

        /* Everything denied outright, in groups of 64 so each group's jeq reach its own return. */
        for (size_t i = 0; i < ELEMENTSOF(deny_always); i += 64) {
                size_t n = ELEMENTSOF(deny_always) - i;
                if (n > 64)
                        n = 64;
                body = asm_label(a), skip = asm_label(a);
                emit_match(a, deny_always + i, n, body, skip);
                asm_bind(a, body);
                asm_ret(a, RET_EPERM);
                asm_bind(a, skip);
        }

        /* A denylist, as DESIGN.md §4 has it: what is not named above is allowed. */
        asm_ret(a, RET_ALLOW);
}

/*
 * Every number the policy names must be unique (else a later rule would silently never apply)
 * and within the known table (else the prelude would deny it before its rule is reached).
 */
static const uint16_t with_rule[] = {
        __NR_mmap, __NR_ioctl, __NR_fcntl, __NR_clone, __NR_clone3, __NR_setpriority,
};

static int check_tables(void) {
        static const struct {
                const uint16_t *nrs;
                size_t n;
        } tables[] = {
                {deny_always, ELEMENTSOF(deny_always)},
                {own_pid_arg0, ELEMENTSOF(own_pid_arg0)},
                {self_or_own_pid_arg0, ELEMENTSOF(self_or_own_pid_arg0)},
                {with_rule, ELEMENTSOF(with_rule)}, /* each has its own block in emit_policy() */
        };
        bool seen[SECCOMP_NR_KNOWN_MAX + 1] = {};

        for (size_t t = 0; t < ELEMENTSOF(tables); t++)
                for (size_t i = 0; i < tables[t].n; i++) {
                        uint16_t nr = tables[t].nrs[i];
                        if (nr > SECCOMP_NR_KNOWN_MAX || seen[nr])
                                return -EINVAL;
                        seen[nr] = true;
                }
        return 0;
}

/*
 * The prelude: a wrong architecture, an x32 number or a number past the known table is denied
 * before any rule is looked at.
 */
static void emit_prelude(Asm *a) {
        Label deny = asm_label(a), ok = asm_label(a);

        /*
         * Syscall numbers mean different things per ABI: an i386 int 0x80 call arrives with
         * AUDIT_ARCH_I386 and i386 numbers, which this table does not describe.
         */
        asm_ld(a, OFF_ARCH);
        asm_jmp(a, BPF_JEQ, AUDIT_ARCH_X86_64, LABEL_NEXT, deny);
        asm_ld(a, OFF_NR);
        /*
         * x32 calls share AUDIT_ARCH_X86_64 and are marked only by this bit in nr; their numbers
         * (512+ for some) are another table. The bound check below would catch them too; this
         * says why.
         */
        asm_jmp(a, BPF_JSET, __X32_SYSCALL_BIT, deny, LABEL_NEXT);
        /* Unknown numbers are denied: see SECCOMP_NR_KNOWN_MAX. */
        asm_jmp(a, BPF_JGT, SECCOMP_NR_KNOWN_MAX, deny, ok);
        asm_bind(a, deny);
        asm_ret(a, RET_EPERM);
        asm_bind(a, ok);
        /* A holds nr from here on, for every group's dispatch. */
}

int seccomp_program_new(SeccompProgram **ret) {
        _cleanup_free_ Asm *a = NULL;
        _cleanup_free_ struct sock_filter *insns = NULL;
        _cleanup_free_ size_t *slots = NULL;
        SeccompProgram *p;
        int r;

        if (!ret)
                return -EINVAL;

        r = check_tables();
        if (r < 0)
                return r;

        a = malloc(sizeof(*a));
        if (!a)
                return -ENOMEM;
        asm_init(a);

        emit_prelude(a);
        emit_policy(a);
        r = asm_resolve(a);
        if (r < 0)
                return r;

        insns = malloc(a->n_insns * sizeof(*insns));
        if (!insns)
                return -ENOMEM;
        memcpy(insns, a->insns, a->n_insns * sizeof(*insns));

        if (a->n_pid_slots > 0) {
                slots = malloc(a->n_pid_slots * sizeof(*slots));
                if (!slots)
                        return -ENOMEM;
                memcpy(slots, a->pid_slots, a->n_pid_slots * sizeof(*slots));
        }

        p = malloc(sizeof(*p));
        if (!p)
                return -ENOMEM;
        *p = (SeccompProgram){
                .insns = TAKE_PTR(insns),
                .n_insns = a->n_insns,
                .pid_slots = TAKE_PTR(slots),
                .n_pid_slots = a->n_pid_slots,
        };
        *ret = p;
        return 0;
}

SeccompProgram *seccomp_program_free(SeccompProgram *p) {
        if (!p)
                return NULL;
        free(p->insns);
        free(p->pid_slots);
        free(p);
        return NULL;
}

/*
 * Async-signal-safe (runs in the child between fork/vfork and execve): no allocation, no libc,
 * plain loops only. Copies at most SECCOMP_INSNS_MAX instructions; returns 0 for a NULL or
 * oversized program, so the caller's load fails rather than running unfiltered or overflowing.
 */
size_t seccomp_program_instantiate(const SeccompProgram *p, pid_t pid, struct sock_filter *dst) {
        if (!p || !dst || !p->insns || p->n_insns == 0 || p->n_insns > SECCOMP_INSNS_MAX)
                return 0;

        for (size_t i = 0; i < p->n_insns; i++)
                dst[i] = p->insns[i];

        for (size_t i = 0; i < p->n_pid_slots; i++) {
                size_t s = p->pid_slots[i];
                /* A slot that is not a placeholder jeq means a corrupt program: refuse it. */
                if (s >= p->n_insns || dst[s].code != (BPF_JMP | BPF_JEQ | BPF_K) ||
                    dst[s].k != SECCOMP_PID_PLACEHOLDER)
                        return 0;
                dst[s].k = (uint32_t)pid;
        }
        return p->n_insns;
}
