/* Landlock for plugins: the kernel's ABI and the ruleset every plugin gets. */
#pragma once

/* The Landlock ABI below which lockd refuses to run a plugin at all: there is no unsandboxed
 * fallback. */
#define SANDBOX_LANDLOCK_ABI_MIN 1

/*
 * Landlock: returns the kernel's ABI version (>= 1), or -EOPNOTSUPP where Landlock is absent
 * or disabled.
 */
int landlock_abi_version(void);

/*
 * Builds the ruleset every plugin gets: every filesystem right the ABI knows handled with no rule
 * (the binary is a memfd, which Landlock neither needs nor accepts a rule for), TCP bind and
 * connect handled with no rule at ABI >= 4, abstract unix sockets and signals scoped at ABI >= 6.
 * Returns the ruleset fd (O_CLOEXEC) and stores the ABI used in *ret_abi.
 */
int landlock_ruleset_new(int *ret_abi);
