/* The plugins' seccomp filter: a hand-assembled classic BPF denylist with an own-pid placeholder,
 * whole or in the two parts the child stacks. */
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
        FIELD_K, /* the offset of a ja */
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

/* An unconditional jump: its offset is 32 bits wide, so it reaches any later instruction. */
static void asm_ja(Asm *a, Label l) {
        size_t i = asm_emit(a, BPF_JMP | BPF_JA, 0);
        if (i == SIZE_MAX)
                return;
        asm_fixup(a, i, l, FIELD_K);
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
                case FIELD_K:
                        a->insns[x->insn].k = (uint32_t)off;
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

/* What the filter does with one syscall number: a return, or the body that checks arguments. */
typedef enum NrClass {
        CLS_ALLOW = 0, /* a denylist, as ARCHITECTURE.md (the sandbox) has it: what is not named is
                          allowed */
        CLS_EPERM,
        CLS_ENOSYS,
        CLS_MMAP,
        CLS_IOCTL,
        CLS_FCNTL,
        CLS_CLONE,
        CLS_OWN_PID,
        CLS_SELF_OR_OWN_PID,
        CLS_SETPRIORITY,
        _CLS_MAX,
} NrClass;

/* A run of consecutive syscall numbers that all get the same treatment. */
typedef struct NrRange {
        uint32_t first;
        NrClass cls;
} NrRange;

/*
 * Emits the search over the ranges [lo, hi) as a binary tree of jge on nr (A holds nr). A leaf
 * returns directly for allow and EPERM, or jumps to its class's body. A linear chain of jeq would
 * make every syscall, and the kernel's per-number cache emulation at load time, walk the whole
 * table: a tree costs log2(ranges) comparisons.
 */
static void emit_tree(Asm *a, const NrRange *r, size_t lo, size_t hi, const Label *body) {
        if (hi - lo == 1) {
                switch (r[lo].cls) {
                case CLS_ALLOW:
                        asm_ret(a, RET_ALLOW);
                        break;
                case CLS_EPERM:
                        asm_ret(a, RET_EPERM);
                        break;
                default:
                        asm_ja(a, body[r[lo].cls]);
                }
                return;
        }
        size_t mid = lo + (hi - lo) / 2;
        Label right = asm_label(a);

        asm_jmp(a, BPF_JGE, r[mid].first, right, LABEL_NEXT);
        emit_tree(a, r, lo, mid, body);
        asm_bind(a, right);
        emit_tree(a, r, mid, hi, body);
}

/* Emits "deny if any listed jeq matches A, else allow", for the request/cmd lists below. */
static void emit_deny_values(Asm *a, const uint32_t *values, size_t n) {
        Label deny = asm_label(a), allow = asm_label(a);

        for (size_t i = 0; i < n; i++)
                asm_jmp(a, BPF_JEQ, values[i], deny, i + 1 == n ? allow : LABEL_NEXT);
        asm_bind(a, deny);
        asm_ret(a, RET_EPERM);
        asm_bind(a, allow);
        asm_ret(a, RET_ALLOW);
}

/* The checks of the classes whose arguments name a process: every path jumps to deny or allow. */
static void emit_pid_check(Asm *a, NrClass cls, Label deny, Label allow) {
        switch (cls) {
        case CLS_OWN_PID:
                /* Signals and pidfds: arg0 must be the own pid, all 64 bits. */
                asm_ld(a, OFF_ARG_HI(0));
                asm_jmp(a, BPF_JEQ, 0, LABEL_NEXT, deny);
                asm_ld(a, OFF_ARG_LO(0));
                asm_jeq_pid(a, allow, deny);
                break;
        case CLS_SELF_OR_OWN_PID:
                /* Limits and scheduling: arg0 must be 0 (the caller) or the own pid. */
                asm_ld(a, OFF_ARG_HI(0));
                asm_jmp(a, BPF_JEQ, 0, LABEL_NEXT, deny);
                asm_ld(a, OFF_ARG_LO(0));
                asm_jmp(a, BPF_JEQ, 0, allow, LABEL_NEXT);
                asm_jeq_pid(a, allow, deny);
                break;
        default: /* CLS_SETPRIORITY */
                /*
                 * setpriority(which, who, prio): only PRIO_PROCESS of 0 or the own pid; a process
                 * group or a user reaches other processes. Both words of both arguments.
                 */
                asm_ld(a, OFF_ARG_HI(0));
                asm_jmp(a, BPF_JEQ, 0, LABEL_NEXT, deny);
                asm_ld(a, OFF_ARG_LO(0));
                asm_jmp(a, BPF_JEQ, PRIO_PROCESS, LABEL_NEXT, deny);
                asm_ld(a, OFF_ARG_HI(1));
                asm_jmp(a, BPF_JEQ, 0, LABEL_NEXT, deny);
                asm_ld(a, OFF_ARG_LO(1));
                asm_jmp(a, BPF_JEQ, 0, allow, LABEL_NEXT);
                asm_jeq_pid(a, allow, deny);
                break;
        }
}

/* Emits the body of a class that must look at the arguments; every path ends in a return. */
static void emit_body(Asm *a, NrClass cls) {
        Label deny = asm_label(a), allow = asm_label(a);

        switch (cls) {
        case CLS_ENOSYS:
                /*
                 * clone3 passes its flags in memory, which seccomp cannot read, so it cannot be
                 * checked: refuse it whole. With ENOSYS, not EPERM: glibc (2.34+) and Go treat
                 * ENOSYS as "this kernel has no clone3" and fall back to clone(), which is
                 * inspected below; EPERM would be final and no thread could be made.
                 */
                asm_ret(a, RET_ENOSYS);
                return;
        case CLS_MMAP:
                /*
                 * Flags are arg3. Every MAP_* bit lives in the low word, and high bits do not
                 * change what the low ones mean. Shared anonymous memory is refused: any map type
                 * with the MAP_SHARED bit (MAP_SHARED 0x01, MAP_SHARED_VALIDATE 0x03; other types
                 * with that bit are EINVAL), so a plugin cannot make memory that outlives its
                 * address-space accounting or is shared with a child. MAP_GROWSDOWN is refused.
                 */
                asm_ld(a, OFF_ARG_LO(3));
                asm_jmp(a, BPF_JSET, MAP_GROWSDOWN, deny, LABEL_NEXT);
                asm_and(a, MAP_SHARED | MAP_ANONYMOUS);
                asm_jmp(a, BPF_JEQ, MAP_SHARED | MAP_ANONYMOUS, deny, allow);
                break;
        case CLS_IOCTL:
                /*
                 * The request is arg1, and the kernel declares it unsigned int: it uses the low
                 * word only. So compare the low word and ignore the high one. A 64-bit compare
                 * would be bypassed by FIOSETOWN | 0xffffffff00000000, which the filter would not
                 * recognise and the kernel would run as FIOSETOWN.
                 */
                asm_ld(a, OFF_ARG_LO(1));
                emit_deny_values(a,
                                 (const uint32_t[]){IOCTL_FIOSETOWN, IOCTL_SIOCSPGRP, IOCTL_TIOCSTI,
                                                    IOCTL_FS_IOC_SETFLAGS, IOCTL_FS_IOC32_SETFLAGS,
                                                    IOCTL_FS_IOC_FSSETXATTR,
                                                    IOCTL_FS_IOC_SETVERSION,
                                                    IOCTL_FS_IOC32_SETVERSION},
                                 8);
                return;
        case CLS_FCNTL:
                /* cmd is arg1, unsigned int in the kernel: low word only, as for ioctl. */
                asm_ld(a, OFF_ARG_LO(1));
                emit_deny_values(
                        a,
                        (const uint32_t[]){F_SETOWN, F_SETOWN_EX, F_SETSIG, F_NOTIFY, F_SETLEASE},
                        5);
                return;
        case CLS_CLONE:
                /*
                 * Flags are arg0. The legacy clone() keeps only lower_32_bits(flags), so the low
                 * word is the whole of what the kernel uses. Without CLONE_THREAD the result is a
                 * new process; CLONE_NEWTIME (0x80) overlaps the exit-signal byte here, refusing
                 * it costs nothing.
                 */
                asm_ld(a, OFF_ARG_LO(0));
                asm_jmp(a, BPF_JSET, CLONE_THREAD, LABEL_NEXT, deny);
                asm_jmp(a, BPF_JSET,
                        CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                                CLONE_NEWUTS | CLONE_NEWCGROUP | CLONE_NEWTIME,
                        deny, allow);
                break;
        case CLS_OWN_PID:
        case CLS_SELF_OR_OWN_PID:
        case CLS_SETPRIORITY:
                emit_pid_check(a, cls, deny, allow);
                break;
        default:
                a->error = a->error ?: -EINVAL;
                return;
        }
        asm_bind(a, deny);
        asm_ret(a, RET_EPERM);
        asm_bind(a, allow);
        asm_ret(a, RET_ALLOW);
}

/*
 * What the child still calls between its release and execve, after the AHEAD part is loaded and
 * before the LAST one is: it takes the release's fds (recvmsg), then becomes the run's uid and
 * drops its capabilities. The whole policy denies each of them, so the AHEAD part leaves them to
 * the LAST part; nothing else the child does then is one the policy restricts (runner.c).
 */
static const uint16_t for_the_setup[] = {
        __NR_recvmsg, __NR_setgroups, __NR_setresgid, __NR_setresuid, __NR_capset,
};

static bool in_setup(uint32_t nr) {
        for (size_t i = 0; i < ELEMENTSOF(for_the_setup); i++)
                if (for_the_setup[i] == nr)
                        return true;
        return false;
}

static void classify_nrs(uint8_t *cls, const uint16_t *nrs, size_t n, NrClass c) {
        for (size_t i = 0; i < n; i++)
                cls[nrs[i]] = (uint8_t)c;
}

/*
 * Emits the policy, or one part of it: every known number classified, the numbers the part does
 * not rule on allowed, runs of equal class merged into ranges, a binary search over the ranges,
 * then the bodies of the classes that check arguments and that the part uses.
 */
static void emit_policy(Asm *a, SeccompPart part) {
        uint8_t cls[SECCOMP_NR_KNOWN_MAX + 1] = {};
        NrRange ranges[SECCOMP_NR_KNOWN_MAX + 1];
        Label body[_CLS_MAX] = {};
        bool used[_CLS_MAX] = {};
        size_t n = 0;

        classify_nrs(cls, deny_always, ELEMENTSOF(deny_always), CLS_EPERM);
        classify_nrs(cls, own_pid_arg0, ELEMENTSOF(own_pid_arg0), CLS_OWN_PID);
        classify_nrs(cls, self_or_own_pid_arg0, ELEMENTSOF(self_or_own_pid_arg0),
                     CLS_SELF_OR_OWN_PID);
        cls[__NR_mmap] = CLS_MMAP;
        cls[__NR_ioctl] = CLS_IOCTL;
        cls[__NR_fcntl] = CLS_FCNTL;
        cls[__NR_clone] = CLS_CLONE;
        cls[__NR_clone3] = CLS_ENOSYS;
        cls[__NR_setpriority] = CLS_SETPRIORITY;

        /*
         * The split is sound only if each number is ruled on by exactly one part and the other
         * allows it: then the stacked verdict, the stricter of the two, is the whole policy's.
         */
        for (uint32_t nr = 0; nr <= SECCOMP_NR_KNOWN_MAX; nr++)
                if ((part == SECCOMP_PART_AHEAD && in_setup(nr)) ||
                    (part == SECCOMP_PART_LAST && !in_setup(nr)))
                        cls[nr] = CLS_ALLOW;

        for (uint32_t nr = 0; nr <= SECCOMP_NR_KNOWN_MAX; nr++) {
                if (n == 0 || ranges[n - 1].cls != (NrClass)cls[nr])
                        ranges[n++] = (NrRange){.first = nr, .cls = (NrClass)cls[nr]};
                used[cls[nr]] = true;
        }

        for (int c = CLS_ENOSYS; c < _CLS_MAX; c++)
                if (used[c])
                        body[c] = asm_label(a);
        emit_tree(a, ranges, 0, n, body);
        for (int c = CLS_ENOSYS; c < _CLS_MAX; c++)
                if (used[c]) {
                        asm_bind(a, body[c]);
                        emit_body(a, (NrClass)c);
                }
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
        /* A holds nr from here on, for the binary search over the ranges. */
}

int seccomp_program_new(SeccompProgram **ret) {
        return seccomp_program_new_part(SECCOMP_PART_WHOLE, ret);
}

int seccomp_program_new_part(SeccompPart part, SeccompProgram **ret) {
        _cleanup_free_ Asm *a = NULL;
        _cleanup_free_ struct sock_filter *insns = NULL;
        _cleanup_free_ size_t *slots = NULL;
        SeccompProgram *p;
        int r;

        if (!ret || part < 0 || part >= _SECCOMP_PART_MAX)
                return -EINVAL;

        r = check_tables();
        if (r < 0)
                return r;

        a = malloc(sizeof(*a));
        if (!a)
                return -ENOMEM;
        asm_init(a);

        emit_prelude(a);
        emit_policy(a, part);
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
