/* Unit tests of the plugins' seccomp filter: its shape, its pid patching, and the kernel's
 * verdicts. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check-run.h"
#include "engine-seccomp.h"
#include "macro.h"
#include "seccomp.h"

#define RET_EPERM  (SECCOMP_RET_ERRNO | EPERM)
#define RET_ENOSYS (SECCOMP_RET_ERRNO | ENOSYS)

static SeccompProgram *build_part(SeccompPart part) {
        SeccompProgram *p = NULL;
        int r = seccomp_program_new_part(part, &p);
        ck_assert_int_eq(r, 0);
        ck_assert_ptr_nonnull(p);
        return p;
}

static SeccompProgram *build(void) {
        SeccompProgram *p = NULL;
        int r = seccomp_program_new(&p);
        ck_assert_int_eq(r, 0);
        ck_assert_ptr_nonnull(p);
        return p;
}

START_TEST(test_shape) {
        SeccompProgram *p = build();

        ck_assert_uint_gt(p->n_insns, 0);
        ck_assert_uint_le(p->n_insns, SECCOMP_INSNS_MAX);
        ck_assert_uint_eq(BPF_CLASS(p->insns[p->n_insns - 1].code), BPF_RET);

        /* Every pid slot is a jeq on the placeholder, and every placeholder is a slot. */
        ck_assert_uint_gt(p->n_pid_slots, 0);
        size_t placeholders = 0;
        for (size_t i = 0; i < p->n_insns; i++)
                if (p->insns[i].k == SECCOMP_PID_PLACEHOLDER)
                        placeholders++;
        ck_assert_uint_eq(placeholders, p->n_pid_slots);
        for (size_t i = 0; i < p->n_pid_slots; i++) {
                ck_assert_uint_lt(p->pid_slots[i], p->n_insns);
                ck_assert_uint_eq(p->insns[p->pid_slots[i]].code, BPF_JMP | BPF_JEQ | BPF_K);
                ck_assert_uint_eq(p->insns[p->pid_slots[i]].k, SECCOMP_PID_PLACEHOLDER);
        }

        /* Every jump lands inside the program. */
        for (size_t i = 0; i < p->n_insns; i++) {
                const struct sock_filter *f = &p->insns[i];
                if (BPF_CLASS(f->code) != BPF_JMP)
                        continue;
                if (BPF_OP(f->code) == BPF_JA)
                        ck_assert_uint_lt(i + 1 + f->k, p->n_insns);
                else {
                        ck_assert_uint_lt(i + 1 + f->jt, p->n_insns);
                        ck_assert_uint_lt(i + 1 + f->jf, p->n_insns);
                }
        }

        fprintf(stderr, "seccomp program: %zu instructions, %zu pid slots\n", p->n_insns,
                p->n_pid_slots);
        seccomp_program_free(p);
}
END_TEST

START_TEST(test_instantiate) {
        SeccompProgram *p = build();
        static struct sock_filter dst[SECCOMP_INSNS_MAX];
        pid_t pid = getpid();

        size_t n = seccomp_program_instantiate(p, pid, dst);
        ck_assert_uint_eq(n, p->n_insns);
        for (size_t i = 0; i < p->n_pid_slots; i++)
                ck_assert_uint_eq(dst[p->pid_slots[i]].k, (uint32_t)pid);
        for (size_t i = 0; i < n; i++)
                ck_assert_uint_ne(dst[i].k, SECCOMP_PID_PLACEHOLDER);
        /* The template is untouched: it is built once and patched per child. */
        ck_assert_uint_eq(p->insns[p->pid_slots[0]].k, SECCOMP_PID_PLACEHOLDER);

        ck_assert_uint_eq(seccomp_program_instantiate(NULL, pid, dst), 0);
        seccomp_program_free(p);
}
END_TEST

/* A classic-BPF interpreter for the subset seccomp allows, to test paths the kernel test can't. */
static uint32_t emulate(const struct sock_filter *f, size_t n, const struct seccomp_data *d) {
        uint32_t A = 0;

        for (size_t pc = 0; pc < n; pc++) {
                const struct sock_filter *i = &f[pc];
                switch (i->code) {
                case BPF_LD | BPF_W | BPF_ABS:
                        ck_assert_uint_le(i->k + 4, sizeof(*d));
                        ck_assert_uint_eq(i->k % 4, 0);
                        memcpy(&A, (const uint8_t *)d + i->k, 4);
                        break;
                case BPF_ALU | BPF_AND | BPF_K:
                        A &= i->k;
                        break;
                case BPF_JMP | BPF_JA:
                        pc += i->k;
                        break;
                case BPF_JMP | BPF_JEQ | BPF_K:
                        pc += A == i->k ? i->jt : i->jf;
                        break;
                case BPF_JMP | BPF_JGT | BPF_K:
                        pc += A > i->k ? i->jt : i->jf;
                        break;
                case BPF_JMP | BPF_JGE | BPF_K:
                        pc += A >= i->k ? i->jt : i->jf;
                        break;
                case BPF_JMP | BPF_JSET | BPF_K:
                        pc += (A & i->k) ? i->jt : i->jf;
                        break;
                case BPF_RET | BPF_K:
                        return i->k;
                default:
                        ck_abort_msg("unexpected BPF opcode 0x%x at %zu", i->code, pc);
                }
        }
        ck_abort_msg("ran off the end of the program");
        return 0;
}

static uint32_t verdict(const struct sock_filter *f, size_t n, uint32_t arch, uint32_t nr,
                        uint64_t a0, uint64_t a1, uint64_t a3) {
        struct seccomp_data d = {
                .nr = (int)nr,
                .arch = arch,
                .args = {a0, a1, 0, a3, 0, 0},
        };
        return emulate(f, n, &d);
}

/* The verdict of two stacked filters, as the kernel picks it: the stricter action, and on a tie
 * the later filter's (it is evaluated first). */
static uint32_t stacked(uint32_t earlier, uint32_t later) {
        int32_t e = (int32_t)(earlier & SECCOMP_RET_ACTION_FULL),
                l = (int32_t)(later & SECCOMP_RET_ACTION_FULL);
        return e < l ? earlier : later;
}

START_TEST(test_parts_emulated) {
        SeccompProgram *whole = build(), *ahead = build_part(SECCOMP_PART_AHEAD),
                       *last = build_part(SECCOMP_PART_LAST);
        static struct sock_filter fw[SECCOMP_INSNS_MAX], fa[SECCOMP_INSNS_MAX],
                fl[SECCOMP_INSNS_MAX];
        const uint64_t pid = 4242;
        const uint64_t thread = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                                CLONE_SYSVSEM | CLONE_SETTLS;
        const uint64_t a0s[] = {0,
                                pid,
                                pid | (1ULL << 32),
                                1,
                                (uint64_t)-1,
                                thread,
                                SIGCHLD,
                                thread | CLONE_NEWUSER,
                                PRIO_PROCESS,
                                PRIO_USER};
        const uint64_t a1s[] = {0, pid, 0x8901, FIONREAD, F_SETOWN, F_GETFL, 1ULL << 32 | F_SETOWN};
        const uint64_t a3s[] = {0, MAP_SHARED | MAP_ANONYMOUS, MAP_PRIVATE | MAP_ANONYMOUS,
                                MAP_PRIVATE | MAP_GROWSDOWN};
        const uint32_t arches[] = {AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, 0};
        size_t nw = seccomp_program_instantiate(whole, (pid_t)pid, fw),
               na = seccomp_program_instantiate(ahead, (pid_t)pid, fa),
               nl = seccomp_program_instantiate(last, (pid_t)pid, fl);
        unsigned ruled_by_last = 0;

        ck_assert_uint_gt(nw, 0);
        ck_assert_uint_gt(na, 0);
        ck_assert_uint_gt(nl, 0);
        /* Every own-pid rule is AHEAD's; LAST is small, the part loaded on the run's path. */
        ck_assert_uint_eq(ahead->n_pid_slots, whole->n_pid_slots);
        ck_assert_uint_eq(last->n_pid_slots, 0);
        ck_assert_uint_lt(nl, 32);

        /*
         * Stacked, the two parts give the whole policy's verdict for every number; every argument
         * pattern for the numbers with a rule on arguments, three for the others (Check's asserts
         * are slow enough that the full product for all 480 numbers would take seconds).
         */
        const long ruled[] = {SYS_mmap,
                              SYS_ioctl,
                              SYS_fcntl,
                              SYS_clone,
                              SYS_kill,
                              SYS_tkill,
                              SYS_tgkill,
                              SYS_rt_sigqueueinfo,
                              SYS_rt_tgsigqueueinfo,
                              SYS_pidfd_open,
                              SYS_prlimit64,
                              SYS_sched_setaffinity,
                              SYS_sched_setscheduler,
                              SYS_sched_setparam,
                              SYS_sched_setattr,
                              SYS_setpriority};
        for (size_t ai = 0; ai < ELEMENTSOF(arches); ai++)
                for (uint32_t nr = 0; nr < 480; nr++) {
                        bool all = false;
                        for (size_t q = 0; q < ELEMENTSOF(ruled); q++)
                                all = all || (uint32_t)ruled[q] == nr;
                        for (size_t i = 0; i < ELEMENTSOF(a0s); i++)
                                for (size_t j = 0; j < ELEMENTSOF(a1s); j++)
                                        for (size_t k = 0; k < ELEMENTSOF(a3s); k++) {
                                                if (!all && !(i == j && j == k && i < 3))
                                                        continue;
                                                uint32_t w, a, l;
                                                w = verdict(fw, nw, arches[ai], nr, a0s[i], a1s[j],
                                                            a3s[k]);
                                                a = verdict(fa, na, arches[ai], nr, a0s[i], a1s[j],
                                                            a3s[k]);
                                                l = verdict(fl, nl, arches[ai], nr, a0s[i], a1s[j],
                                                            a3s[k]);
                                                ck_assert_msg(stacked(a, l) == w,
                                                              "arch %x nr %u: ahead %x last %x "
                                                              "whole %x",
                                                              arches[ai], nr, a, l, w);
                                                if (arches[ai] == AUDIT_ARCH_X86_64 && nr < 470 &&
                                                    l != SECCOMP_RET_ALLOW && i + j + k == 0)
                                                        ruled_by_last++;
                                        }
                }
        /* x32 numbers, by both parts. */
        ck_assert_uint_eq(verdict(fa, na, AUDIT_ARCH_X86_64, 0x40000000U | 39, 0, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(fl, nl, AUDIT_ARCH_X86_64, 0x40000000U | 39, 0, 0, 0), RET_EPERM);

        /* LAST rules on exactly the five the child's setup makes after AHEAD is loaded. */
        ck_assert_uint_eq(ruled_by_last, 5);
        for (const long *nr = (const long[]){SYS_recvmsg, SYS_setgroups, SYS_setresgid,
                                             SYS_setresuid, SYS_capset, -1};
             *nr >= 0; nr++) {
                ck_assert_uint_eq(verdict(fa, na, AUDIT_ARCH_X86_64, (uint32_t)*nr, 0, 0, 0),
                                  SECCOMP_RET_ALLOW);
                ck_assert_uint_eq(verdict(fl, nl, AUDIT_ARCH_X86_64, (uint32_t)*nr, 0, 0, 0),
                                  RET_EPERM);
        }

        seccomp_program_free(whole);
        seccomp_program_free(ahead);
        seccomp_program_free(last);
}
END_TEST

START_TEST(test_emulated) {
        SeccompProgram *p = build();
        static struct sock_filter f[SECCOMP_INSNS_MAX];
        const uint32_t X = AUDIT_ARCH_X86_64;
        const uint64_t pid = 4242;
        size_t n = seccomp_program_instantiate(p, (pid_t)pid, f);
        ck_assert_uint_gt(n, 0);

        /* Prelude. */
        ck_assert_uint_eq(verdict(f, n, AUDIT_ARCH_I386, 20, 0, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, 0x40000000U | 39, 0, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, 470, 0, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, 0xffffffffU, 0, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, 469, 0, 0, 0), RET_EPERM);         /* file_setattr */
        ck_assert_uint_eq(verdict(f, n, X, 468, 0, 0, 0), SECCOMP_RET_ALLOW); /* file_getattr */
        ck_assert_uint_eq(verdict(f, n, X, SYS_read, 0, 0, 0), SECCOMP_RET_ALLOW);
        ck_assert_uint_eq(verdict(f, n, X, 335, 0, 0, 0), SECCOMP_RET_ALLOW); /* a hole */

        /* Own pid: exactly, all 64 bits. */
        ck_assert_uint_eq(verdict(f, n, X, SYS_kill, pid, 0, 0), SECCOMP_RET_ALLOW);
        ck_assert_uint_eq(verdict(f, n, X, SYS_kill, pid | (1ULL << 32), 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_kill, 0, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_kill, (uint64_t)-1, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_tgkill, pid, 7, 0), SECCOMP_RET_ALLOW);
        ck_assert_uint_eq(verdict(f, n, X, SYS_tgkill, 1, 1, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_pidfd_open, pid, 0, 0), SECCOMP_RET_ALLOW);
        ck_assert_uint_eq(verdict(f, n, X, SYS_pidfd_open, 1, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_prlimit64, 0, 0, 0), SECCOMP_RET_ALLOW);
        ck_assert_uint_eq(verdict(f, n, X, SYS_prlimit64, pid, 0, 0), SECCOMP_RET_ALLOW);
        ck_assert_uint_eq(verdict(f, n, X, SYS_prlimit64, 1ULL << 32, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_sched_setaffinity, 1, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_setpriority, PRIO_PROCESS, pid, 0),
                          SECCOMP_RET_ALLOW);
        ck_assert_uint_eq(verdict(f, n, X, SYS_setpriority, PRIO_PROCESS, 0, 0), SECCOMP_RET_ALLOW);
        ck_assert_uint_eq(verdict(f, n, X, SYS_setpriority, PRIO_PROCESS, 1, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_setpriority, PRIO_USER, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_setpriority, PRIO_PROCESS | (1ULL << 32), 0, 0),
                          RET_EPERM);

        /* Low word only for ioctl and fcntl commands. */
        ck_assert_uint_eq(verdict(f, n, X, SYS_ioctl, 0, 0x8901, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_ioctl, 0, 0xffffffff00008901ULL, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_ioctl, 0, 0x40086602, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_ioctl, 0, 0x5412, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_ioctl, 0, FIONREAD, 0), SECCOMP_RET_ALLOW);
        ck_assert_uint_eq(verdict(f, n, X, SYS_fcntl, 0, 1ULL << 32 | F_SETOWN, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_fcntl, 0, 1024, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_fcntl, 0, F_GETFL, 0), SECCOMP_RET_ALLOW);

        /* clone, clone3, mmap. */
        const uint64_t thread = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                                CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID |
                                CLONE_CHILD_CLEARTID;
        ck_assert_uint_eq(verdict(f, n, X, SYS_clone, thread, 0, 0), SECCOMP_RET_ALLOW);
        ck_assert_uint_eq(verdict(f, n, X, SYS_clone, SIGCHLD, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_clone, thread | CLONE_NEWUSER, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_clone, thread | 0x80, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_clone3, 0, 0, 0), RET_ENOSYS);
        ck_assert_uint_eq(verdict(f, n, X, SYS_mmap, 0, 0, MAP_SHARED | MAP_ANONYMOUS), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_mmap, 0, 0, 0x03 | MAP_ANONYMOUS), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_mmap, 0, 0, MAP_PRIVATE | MAP_GROWSDOWN), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_mmap, 0, 0, MAP_PRIVATE | MAP_ANONYMOUS),
                          SECCOMP_RET_ALLOW);
        ck_assert_uint_eq(verdict(f, n, X, SYS_mmap, 0, 0, MAP_SHARED), SECCOMP_RET_ALLOW);

        /* A sample of the outright denials. */
        ck_assert_uint_eq(verdict(f, n, X, SYS_socket, 0, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_ptrace, 0, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_io_uring_setup, 0, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_setuid, 0, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_capset, 0, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_fork, 0, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_execveat, 0, 0, 0), RET_EPERM);
        ck_assert_uint_eq(verdict(f, n, X, SYS_execve, 0, 0, 0), SECCOMP_RET_ALLOW);
        ck_assert_uint_eq(verdict(f, n, X, SYS_seccomp, 0, 0, 0), SECCOMP_RET_ALLOW);

        seccomp_program_free(p);
}
END_TEST

static void *thread_main(void *arg) {
        *(int *)arg = 1;
        return NULL;
}

/* The child's checks: exits with 0, or with the number of the first check that failed. */
#define EXPECT_ERRNO(step, e, expr)                                                                \
        do {                                                                                       \
                errno = 0;                                                                         \
                long _r_ = (long)(expr);                                                           \
                if (_r_ != -1 || errno != (e))                                                     \
                        _exit(step);                                                               \
        } while (0)
#define EXPECT_OK(step, expr)                                                                      \
        do {                                                                                       \
                if ((long)(expr) < 0)                                                              \
                        _exit(step);                                                               \
        } while (0)

static void load(const struct sock_filter *f, size_t n) {
        struct sock_fprog prog = {.len = (unsigned short)n, .filter = (struct sock_filter *)f};

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                _exit(101);
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                _exit(102);
}

/* The checks, under the whole policy (loaded whole or in its two parts). */
_noreturn_ static void child_checks(void) {
        struct rlimit rl;
        int fds[2], x = 0;
        pid_t pid = getpid();

        if (pipe2(fds, O_CLOEXEC) < 0)
                _exit(100);

        EXPECT_ERRNO(1, EPERM, socket(AF_UNIX, SOCK_STREAM, 0));
        EXPECT_ERRNO(2, ENOSYS, syscall(SYS_clone3, NULL, 0));
        EXPECT_ERRNO(3, EPERM, kill(1, 0));
        EXPECT_OK(4, kill(pid, 0));
        EXPECT_ERRNO(5, EPERM, syscall(SYS_kill, (long)pid | (1L << 32), 0));
        EXPECT_ERRNO(6, EPERM, fcntl(fds[0], F_SETOWN, pid));
        EXPECT_OK(7, fcntl(fds[0], F_GETFL));
        EXPECT_ERRNO(8, EPERM, syscall(SYS_ioctl, fds[0], 0xffffffff00000000UL | FIOSETOWN, &pid));
        EXPECT_OK(9, ioctl(fds[0], FIONREAD, &x));
        EXPECT_ERRNO(10, EPERM, syscall(500));
        EXPECT_ERRNO(11, EPERM, syscall(470));
        EXPECT_ERRNO(12, EPERM, syscall(0x40000000 | 39));

        void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED || errno != EPERM)
                _exit(13);
        m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED || errno != EPERM)
                _exit(14);
        m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_GROWSDOWN,
                 -1, 0);
        if (m != MAP_FAILED || errno != EPERM)
                _exit(15);
        m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
                _exit(16);
        *(volatile char *)m = 1;

        EXPECT_OK(17, syscall(SYS_tgkill, pid, gettid(), 0));
        EXPECT_ERRNO(18, EPERM, syscall(SYS_tgkill, 1, 1, 0));
        EXPECT_OK(19, prlimit(0, RLIMIT_NOFILE, NULL, &rl));
        EXPECT_OK(20, prlimit(pid, RLIMIT_NOFILE, NULL, &rl));
        EXPECT_ERRNO(21, EPERM, prlimit(1, RLIMIT_NOFILE, NULL, &rl));
        EXPECT_ERRNO(22, EPERM, unshare(0));
        EXPECT_ERRNO(23, EPERM, syscall(SYS_io_uring_setup, 1, NULL));
        EXPECT_OK(24, syscall(SYS_pidfd_open, pid, 0));
        EXPECT_ERRNO(25, EPERM, syscall(SYS_pidfd_open, 1, 0));
        EXPECT_ERRNO(26, EPERM, setpriority(PRIO_PGRP, 0, 0));
        EXPECT_ERRNO(27, EPERM, fchmod(fds[0], 0600));
        EXPECT_ERRNO(28, EPERM, syscall(SYS_setuid, 0));
        EXPECT_ERRNO(32, EPERM, syscall(SYS_setresuid, -1, -1, -1));
        EXPECT_ERRNO(33, EPERM, syscall(SYS_setgroups, 0, NULL));
        EXPECT_ERRNO(34, EPERM, syscall(SYS_recvmsg, fds[0], NULL, MSG_DONTWAIT));
        EXPECT_ERRNO(35, EPERM, syscall(SYS_capset, NULL, NULL));

        /* glibc tries clone3, gets ENOSYS, falls back to clone with CLONE_THREAD. */
        pthread_t t;
        x = 0;
        if (pthread_create(&t, NULL, thread_main, &x) != 0)
                _exit(29);
        if (pthread_join(t, NULL) != 0 || x != 1)
                _exit(30);

        pid_t c = fork();
        if (c == 0)
                _exit(98); /* the filter let a process through: fail loudly */
        if (c != -1 || errno != EPERM)
                _exit(31);

        _exit(0);
}

/* Waits for the checking child: it must exit 0, else the number it exited with names the check. */
static void child_passed(pid_t c) {
        int status;

        ck_assert_int_eq(waitpid(c, &status, 0), c);
        ck_assert_msg(WIFEXITED(status), "child died of signal %d", WTERMSIG(status));
        ck_assert_msg(WEXITSTATUS(status) == 0, "child check %d failed", WEXITSTATUS(status));
}

START_TEST(test_kernel) {
        SeccompProgram *p = build();
        static struct sock_filter f[SECCOMP_INSNS_MAX];

        /* Instantiate in the child, as the runner does, for the child's own pid. */
        pid_t c = fork();
        ck_assert_int_ge(c, 0);
        if (c == 0) {
                size_t n = seccomp_program_instantiate(p, getpid(), f);
                if (n == 0)
                        _exit(103);
                load(f, n);
                child_checks();
        }
        child_passed(c);
        seccomp_program_free(p);
}
END_TEST

/* The runner's way: AHEAD, then the setup's five calls still pass, then LAST; the same checks. */
START_TEST(test_kernel_parts) {
        SeccompProgram *ahead = build_part(SECCOMP_PART_AHEAD),
                       *last = build_part(SECCOMP_PART_LAST);
        static struct sock_filter f[SECCOMP_INSNS_MAX];

        pid_t c = fork();
        ck_assert_int_ge(c, 0);
        if (c == 0) {
                int sp[2];
                char b;
                struct iovec iov = {.iov_base = &b, .iov_len = 1};
                struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

                if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
                        _exit(104);
                size_t n = seccomp_program_instantiate(ahead, getpid(), f);
                if (n == 0)
                        _exit(103);
                load(f, n);
                /* What the setup does between the two parts is not refused by the first. */
                EXPECT_ERRNO(40, EAGAIN, recvmsg(sp[0], &mh, MSG_DONTWAIT));
                EXPECT_OK(41, syscall(SYS_setresuid, -1, -1, -1));
                EXPECT_OK(42, syscall(SYS_setresgid, -1, -1, -1));
                /* ... but the rest of the policy already holds. */
                EXPECT_ERRNO(43, EPERM, socket(AF_UNIX, SOCK_STREAM, 0));
                EXPECT_ERRNO(44, EPERM, kill(1, 0));
                n = seccomp_program_instantiate(last, getpid(), f);
                if (n == 0)
                        _exit(103);
                load(f, n);
                child_checks();
        }
        child_passed(c);
        seccomp_program_free(ahead);
        seccomp_program_free(last);
}
END_TEST

static void *engine_thread(void *arg) {
        return arg;
}

/*
 * clone(flags) as a compromised engine would call it, raw: 0 in a child it made (which leaves at
 * once), the child's pid, or -1 with errno.
 */
static long raw_clone(unsigned long flags) {
        long r = syscall(SYS_clone, flags | SIGCHLD, 0, NULL, NULL, 0);

        if (r == 0)
                _exit(98); /* a namespace was made: the filter let it through */
        if (r > 0)
                (void)waitpid((pid_t)r, NULL, 0);
        return r;
}

/*
 * The engine's own filter (engine-seccomp.c), loaded by engine_confine() in a child that holds
 * no capability (as the engine): clone with each namespace flag fails with EPERM (each asked
 * together with CLONE_NEWUSER, which an unprivileged process may otherwise create, and inside
 * which every other kind follows), clone3 with ENOSYS, sockets of any family but AF_UNIX with
 * EAFNOSUPPORT; fork, threads and AF_UNIX sockets still work.
 */
START_TEST(test_engine_filter) {
        static const unsigned long ns[] = {CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWCGROUP,
                                           CLONE_NEWUTS,  CLONE_NEWIPC, CLONE_NEWPID,
                                           CLONE_NEWNET};
        static const int families[] = {AF_INET, AF_INET6, AF_NETLINK, AF_PACKET, AF_VSOCK};

        pid_t c = fork();
        ck_assert_int_ge(c, 0);
        if (c == 0) {
                struct {
                        uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack,
                                stack_size, tls;
                } ca = {.flags = CLONE_NEWUSER, .exit_signal = SIGCHLD};
                pthread_t t;
                int sp[2];

                if (getuid() == 0 &&
                    (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
                     setresuid(65534, 65534, 65534) < 0))
                        _exit(120);
                if (engine_confine() < 0)
                        _exit(121);
                for (size_t i = 0; i < ELEMENTSOF(ns); i++)
                        EXPECT_ERRNO(122 + (int)i, EPERM, raw_clone(CLONE_NEWUSER | ns[i]));
                EXPECT_ERRNO(130, ENOSYS, syscall(SYS_clone3, &ca, sizeof(ca)));
                EXPECT_ERRNO(131, EPERM, unshare(CLONE_NEWUSER));
                for (size_t i = 0; i < ELEMENTSOF(families); i++) {
                        EXPECT_ERRNO(132 + (int)i, EAFNOSUPPORT,
                                     socket(families[i], SOCK_DGRAM, 0));
                        EXPECT_ERRNO(140 + (int)i, EAFNOSUPPORT,
                                     socketpair(families[i], SOCK_DGRAM, 0, sp));
                }
                /* What the engine does use still works. */
                EXPECT_OK(150, socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp));
                EXPECT_OK(151, socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
                pid_t f = fork();
                if (f == 0)
                        _exit(0);
                if (f < 0 || waitpid(f, NULL, 0) != f)
                        _exit(152);
                if (pthread_create(&t, NULL, engine_thread, NULL) != 0 ||
                    pthread_join(t, NULL) != 0)
                        _exit(153);
                _exit(0);
        }
        child_passed(c);
}
END_TEST

static Suite *seccomp_suite(void) {
        Suite *s = suite_create("seccomp");

        suite_add_case(s, NULL, test_shape);
        suite_add_case(s, NULL, test_instantiate);
        suite_add_case(s, NULL, test_emulated);
        suite_add_case(s, NULL, test_kernel);
        suite_add_case(s, NULL, test_parts_emulated);
        suite_add_case(s, NULL, test_kernel_parts);
        suite_add_case(s, NULL, test_engine_filter);
        return s;
}

int main(void) {
        return check_run(seccomp_suite());
}
