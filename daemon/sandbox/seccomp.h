/* The seccomp filter every plugin runs under, whole or in its two stacked parts: built once,
 * patched with the pid in the child. */
#pragma once

#include <linux/filter.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct SeccompProgram {
        struct sock_filter *insns;
        size_t n_insns;
        size_t *pid_slots; /* indexes of instructions whose k is the own-pid placeholder */
        size_t n_pid_slots;
} SeccompProgram;

/* The placeholder for the plugin's own pid in a built program, replaced in the child. */
#define SECCOMP_PID_PLACEHOLDER 0x7eadbeefU

/* Upper bound on a program's length, so the child can copy it onto its own stack. */
#define SECCOMP_INSNS_MAX 1024

/*
 * Which syscalls a program rules on. The child loads the policy in two parts (ARCHITECTURE.md, the
 * sandbox): AHEAD while it waits for its run, ruling on every syscall but the few the child itself
 * still needs between the release and execve (recvmsg, setgroups, setresgid, setresuid, capset),
 * which it allows; LAST just before execve, ruling on exactly those and allowing the rest. Stacked,
 * the kernel applies the most restrictive verdict of the two, which is WHOLE's for every syscall.
 */
typedef enum SeccompPart {
        SECCOMP_PART_WHOLE,
        SECCOMP_PART_AHEAD,
        SECCOMP_PART_LAST,
        _SECCOMP_PART_MAX,
} SeccompPart;

/* Builds the whole program. Returns 0 or a negative errno; *ret is untouched on failure. */
int seccomp_program_new(SeccompProgram **ret);

/* Builds one part of it (above). Returns 0 or a negative errno; *ret is untouched on failure. */
int seccomp_program_new_part(SeccompPart part, SeccompProgram **ret);
SeccompProgram *seccomp_program_free(SeccompProgram *p);

/*
 * Async-signal-safe, for the child: copies p into dst (room for SECCOMP_INSNS_MAX instructions)
 * with every pid slot set to pid, and returns the instruction count.
 */
size_t seccomp_program_instantiate(const SeccompProgram *p, pid_t pid, struct sock_filter *dst);
