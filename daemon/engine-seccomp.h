/* The engine's own confinement, applied at its start: no privilege left to lose, and a seccomp
 * filter that refuses what an engine never needs (ARCHITECTURE.md, Processes and privileges). */
#pragma once

/*
 * Checks that the engine holds no capability in any set and runs with no_new_privs (it sets it
 * again if not), then loads its seccomp filter: the system calls of the kernel's administration
 * (mounts, modules, kexec, clocks, swap, reboot, keyrings, BPF, perf, ptrace and the reading of
 * other processes' memory, namespaces, io_uring, identity changes) fail with EPERM, and so does
 * clone with any namespace flag; clone3 fails with ENOSYS (glibc falls back to clone); socket and
 * socketpair of any family but AF_UNIX fail with EAFNOSUPPORT; an x32 or another architecture's
 * system call kills the process; every other one passes (capset() too: lockd-verify empties its
 * sets, which gains nothing). 0 or a negative errno; the caller must not serve on failure.
 */
int engine_confine(void);
