/* Landlock for plugins: the kernel's ABI and the ruleset every plugin gets. */
#pragma once

/* The Landlock ABI below which lockd refuses to run a plugin at all: there is no unsandboxed
 * fallback. */
#define SANDBOX_LANDLOCK_ABI_MIN 1

/*
 * Landlock: returns the kernel's ABI version (>= 1), -EOPNOTSUPP where Landlock is absent or
 * disabled, -EPERM where a seccomp filter around this process refuses the system call, or
 * another negative errno.
 */
int landlock_abi_version(void);
/* What to tell an administrator about r, a landlock_abi_version() or landlock_ruleset_new()
 * failure: a sentence naming the cause and the cure, or NULL for an errno without one. */
const char *landlock_strerror(int r);

/*
 * Builds the ruleset every plugin gets: every filesystem right the ABI knows handled with no rule
 * (the binary is a memfd, which Landlock neither needs nor accepts a rule for), TCP bind and
 * connect handled with no rule at ABI >= 4, abstract unix sockets and signals scoped at ABI >= 6.
 * Returns the ruleset fd (O_CLOEXEC) and stores the ABI used in *ret_abi.
 */
int landlock_ruleset_new(int *ret_abi);
