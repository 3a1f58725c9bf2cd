/* Loading a plugin for running: the verified bytes in a sealed memfd, the ruleset and the filter.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "landlock.h"
#include "elf-check.h"
#include "fd-util.h"
#include "macro.h"
#include "sandbox.h"

#define PLUGIN_BINARY_MAX (256 * MiB)

/* The fd number the binary has in the child until execve closes it (it is O_CLOEXEC there). */
#define CHILD_BINARY_FD 8

Sandbox *sandbox_free(Sandbox *sb) {
        if (!sb)
                return NULL;
        safe_close(sb->binary_fd);
        safe_close(sb->ruleset_fd);
        free(sb);
        return NULL;
}

/* Checks the limits and the protocol's extras: the runtime trusts nothing it did not check. */
static int spec_check(const SandboxSpec *spec) {
        if (spec->protocol != 1 && spec->protocol != 2)
                return -EINVAL;
        if (spec->protocol == 1 && (spec->inputs || spec->detail))
                return -EINVAL;
        if (spec->limits.cpu_s == 0 || spec->limits.cpu_s > 24 * 3600 ||
            spec->limits.timeout_s == 0 || spec->limits.timeout_s > 24 * 3600 ||
            spec->limits.memory_bytes < MiB || spec->limits.memory_bytes > 1024 * GiB)
                return -EINVAL;
        return 0;
}

int sandbox_new(int binary_fd, const SandboxSpec *spec, Sandbox **ret) {
        _cleanup_(sandbox_freep) Sandbox *sb = NULL;
        struct stat st;
        void *map;
        int r;

        r = spec_check(spec);
        if (r < 0)
                return r;

        sb = calloc(1, sizeof(*sb));
        if (!sb)
                return -ENOMEM;
        sb->binary_fd = sb->ruleset_fd = -1;
        sb->spec = *spec;

        /*
         * Run the bytes we read now, not whatever the path holds later: the sealed copy cannot be
         * written, grown, shrunk or unsealed, by us, the plugin or anyone who replaces the file.
         */
        if (lseek(binary_fd, 0, SEEK_SET) < 0 && errno != ESPIPE)
                return negative_errno();
        sb->binary_fd = memfd_snapshot(binary_fd, "lockd-plugin", PLUGIN_BINARY_MAX, true);
        if (sb->binary_fd < 0)
                return sb->binary_fd;

        if (fstat(sb->binary_fd, &st) < 0)
                return negative_errno();
        if (st.st_size == 0)
                return -ENOEXEC;
        map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, sb->binary_fd, 0);
        if (map == MAP_FAILED)
                return negative_errno();
        r = elf_check_static(map, (size_t)st.st_size);
        munmap(map, (size_t)st.st_size);
        if (r < 0)
                return r;

        sb->ruleset_fd = landlock_ruleset_new(&sb->landlock_abi);
        if (sb->ruleset_fd < 0)
                return sb->ruleset_fd;
        if (sb->landlock_abi < SANDBOX_LANDLOCK_ABI_MIN)
                return -EOPNOTSUPP;

        snprintf(sb->env_protocol, sizeof(sb->env_protocol), "LOCKFILE_PLUGIN_PROTOCOL=%u",
                 spec->protocol);
        snprintf(sb->exec_path, sizeof(sb->exec_path), "/proc/self/fd/%d", CHILD_BINARY_FD);

        *ret = TAKE_PTR(sb);
        return 0;
}

const char *sandbox_strerror(int r) {
        switch (r) {
        case -ENOEXEC:
                return "not a static x86-64 ELF executable";
        case -ELIBEXEC:
                return "the binary is dynamically linked (it has a PT_INTERP program header); "
                       "plugins must be static executables, since Landlock lets them open "
                       "nothing but themselves";
        case -EFBIG:
                return "the binary is larger than 256 MiB";
        case -EINVAL:
                return "invalid protocol or limits";
        case -EOPNOTSUPP:
        case -EPERM:
                /* sandbox_new() returns these only from Landlock. */
                return landlock_strerror(r);
        default:
                return strerror(-r);
        }
}
