/* The sandbox of one plugin: what is built once per plugin and applied in every run's child (the
 * seccomp filter, the same for every plugin, is the runner's). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "plugin-image.h"

/* A plugin ready to run: the verified bytes and the Landlock ruleset. */
typedef struct Sandbox {
        SandboxSpec spec;
        int binary_fd;  /* sealed memfd holding the plugin's bytes, exec'd by /proc/self/fd path */
        int ruleset_fd; /* Landlock ruleset: no rule, every handled right denied */
        int landlock_abi;
        char env_protocol[40]; /* "LOCKFILE_PLUGIN_PROTOCOL=<n>" */
        char exec_path[40];    /* "/proc/self/fd/<binary_fd>" */
} Sandbox;

/*
 * Loads a plugin for running. A binary_fd that is a memfd sealed against write, grow and shrink
 * (memfd_is_sealed()) and executable by others is used as it is, through a read-only open; any
 * other is copied (from offset 0) into a sealed memfd of our own. Refuses anything but a static
 * x86-64 ELF executable, builds the Landlock ruleset.
 * Returns 0, or a negative errno: -ENOEXEC not an ELF executable for this machine, -ELIBEXEC
 * dynamically linked (has PT_INTERP), -EFBIG over 256 MiB, -EINVAL a bad spec, -EOPNOTSUPP no
 * Landlock in this kernel.
 */
int sandbox_new(int binary_fd, const SandboxSpec *spec, Sandbox **ret);
Sandbox *sandbox_free(Sandbox *sb);
static inline void sandbox_freep(Sandbox **p) {
        if (*p)
                sandbox_free(*p);
}

/* Says in one sentence why sandbox_new() refused, for a negative errno it returned. */
const char *sandbox_strerror(int r);
