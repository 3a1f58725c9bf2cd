/* The seccomp filter every plugin runs under: built once per plugin, patched with the pid in the
 * child. */
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

/* Builds the program. Returns 0 or a negative errno; *ret is untouched on failure. */
int seccomp_program_new(SeccompProgram **ret);
SeccompProgram *seccomp_program_free(SeccompProgram *p);

/*
 * Async-signal-safe, for the child: copies p into dst (room for SECCOMP_INSNS_MAX instructions)
 * with every pid slot set to pid, and returns the instruction count.
 */
size_t seccomp_program_instantiate(const SeccompProgram *p, pid_t pid, struct sock_filter *dst);
