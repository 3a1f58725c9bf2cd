/* The Landlock ruleset every plugin runs under, built once per plugin and applied in the child. */
#include <errno.h>
#include <linux/landlock.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock.h"
#include "macro.h"

/* Debian 12's <linux/landlock.h> stops at ABI 2: the newer rights are defined here. */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#define LL_ACCESS_NET_BIND_TCP        (1ULL << 0)
#define LL_ACCESS_NET_CONNECT_TCP     (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LL_SCOPE_SIGNAL               (1ULL << 1)

/* The ruleset attribute as of ABI 6; older kernels get the prefix they know. */
struct ll_ruleset_attr {
        uint64_t handled_access_fs;
        uint64_t handled_access_net; /* ABI >= 4 */
        uint64_t scoped;             /* ABI >= 6 */
};

#define LL_ACCESS_FS_ABI1                                                                          \
        (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |                              \
         LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |                              \
         LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |                          \
         LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |                              \
         LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |                              \
         LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |                            \
         LANDLOCK_ACCESS_FS_MAKE_SYM)

int landlock_abi_version(void) {
        long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

        /* ENOSYS: not built in; EOPNOTSUPP: built in but not enabled at boot. EPERM is neither:
         * the kernel has Landlock, but a seccomp filter around lockd (a container manager's, say)
         * refuses the call, and the cure is elsewhere: the caller says which. */
        if (abi < 0)
                return errno == ENOSYS || errno == EOPNOTSUPP ? -EOPNOTSUPP : negative_errno();
        if (abi < 1)
                return -EOPNOTSUPP;
        return (int)abi;
}

const char *landlock_strerror(int r) {
        switch (r) {
        case -EOPNOTSUPP:
                return "this kernel has no Landlock, or it is not enabled (it needs "
                       "CONFIG_SECURITY_LANDLOCK=y and landlock in the lsm= boot list): lockd "
                       "refuses to run plugins without it";
        case -EPERM:
                return "the kernel has Landlock, but a seccomp filter around lockd refuses its "
                       "system calls (EPERM), as systemd-nspawn 252 and some container runtimes "
                       "do: allow landlock_create_ruleset, landlock_add_rule and "
                       "landlock_restrict_self to lockd (systemd-nspawn "
                       "--system-call-filter=\"landlock_create_ruleset landlock_add_rule "
                       "landlock_restrict_self\"), or run lockd outside that container";
        default:
                return NULL;
        }
}

int landlock_ruleset_new(int *ret_abi) {
        struct ll_ruleset_attr attr = {};
        size_t size;
        int abi, fd;

        abi = landlock_abi_version();
        if (abi < 0)
                return abi; /* no Landlock at all: the caller fails closed */

        /*
         * Handle every right this ABI knows and add no rule: nothing on any filesystem can be read,
         * written, executed or created. The plugin's own binary is a sealed memfd, which Landlock
         * does not restrict (an internal filesystem) and refuses a rule for; it is exec'd through
         * /proc/self/fd before the plugin gets control, so "read and execute its own binary only"
         * holds without a rule. Below a given ABI the right it adds is left to seccomp and the
         * ephemeral uid (best effort); the ABI used is reported to the caller.
         */
        attr.handled_access_fs = LL_ACCESS_FS_ABI1;
        size = sizeof(uint64_t);
        if (abi >= 2)
                attr.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
        if (abi >= 3)
                attr.handled_access_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
        if (abi >= 4) {
                /* TCP bind and connect denied even though seccomp already refuses socket(). */
                attr.handled_access_net = LL_ACCESS_NET_BIND_TCP | LL_ACCESS_NET_CONNECT_TCP;
                size = 2 * sizeof(uint64_t);
        }
        if (abi >= 5)
                attr.handled_access_fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
        if (abi >= 6) {
                /* No abstract unix socket and no signal can reach outside the plugin's domain. */
                attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
                size = sizeof(attr);
        }

        fd = (int)syscall(__NR_landlock_create_ruleset, &attr, size, 0);
        if (fd < 0)
                return negative_errno();
        *ret_abi = abi;
        return fd;
}
