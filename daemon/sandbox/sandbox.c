/* Loading a plugin for running: the verified bytes in a sealed memfd (the caller's when it is
 * sealed already, else a copy of our own) and the Landlock ruleset (the seccomp filter, the same
 * for every plugin, is the runner's). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "landlock.h"
#include "fd-util.h"
#include "macro.h"
#include "sandbox.h"

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

int sandbox_new(int binary_fd, const SandboxSpec *spec, Sandbox **ret) {
        _cleanup_(sandbox_freep) Sandbox *sb = NULL;
        struct stat st;
        int r;

        r = plugin_image_spec_check(spec);
        if (r < 0)
                return r;

        sb = calloc(1, sizeof(*sb));
        if (!sb)
                return -ENOMEM;
        sb->binary_fd = sb->ruleset_fd = -1;
        sb->spec = *spec;

        /*
         * Run the bytes we check now, not whatever the path holds later. A memfd sealed against
         * write, grow and shrink (the engine's: a release's binary, ARCHITECTURE.md) is such bytes
         * already: nobody, its maker included, can change them any more, so it is run as it is,
         * through a read-only open of our own, and a run whose sandbox is built anew costs no
         * copy (when the run's uid, an "other" to its owner, may execute it). Anything else (a
         * file, an unsealed memfd) is copied into a memfd of our own, sealed so that it cannot be
         * written, grown, shrunk or unsealed by us, the plugin or anyone who replaces the file.
         */
        if (memfd_is_sealed(binary_fd) && fstat(binary_fd, &st) == 0 && (st.st_mode & S_IXOTH))
                sb->binary_fd = fd_reopen_readonly(binary_fd);
        else {
                if (lseek(binary_fd, 0, SEEK_SET) < 0 && errno != ESPIPE)
                        return negative_errno();
                sb->binary_fd = memfd_snapshot(binary_fd, "lockd-plugin", PLUGIN_BINARY_MAX, true);
        }
        if (sb->binary_fd < 0)
                return sb->binary_fd;

        r = plugin_image_binary_check(sb->binary_fd);
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
        /* sandbox_new() returns these two only from Landlock. */
        if (r == -EOPNOTSUPP || r == -EPERM)
                return landlock_strerror(r);
        return plugin_image_strerror(r);
}
