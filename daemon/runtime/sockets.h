/* The daemon's two listening sockets: from systemd socket activation by name, or bound by lockd
 * itself at the policy's paths. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "policy.h"

typedef struct ListenSpec {
        const char *name; /* "agent" or "console": the FileDescriptorName= under activation */
        const char *path; /* where lockd binds it when started by hand */
        mode_t mode;      /* its file mode */
        gid_t gid;        /* its group, or (gid_t)-1 to leave root's */
} ListenSpec;

/*
 * Collects the sockets systemd passed (sd_listen_fds_with_names()): for each spec, the fd named
 * spec->name, checked to be a listening AF_UNIX stream socket, or -1 when none was passed.
 * Unknown names are refused (-EBADMSG) and closed. Returns the number of fds passed (0 when not
 * socket-activated) or a negative errno; fds in ret_fds are O_CLOEXEC.
 */
int sockets_from_systemd(const ListenSpec *specs, size_t n, int *ret_fds);

/*
 * Binds and listens on spec->path: a stale socket left by an earlier lockd is replaced, anything
 * else at the path (a file, a live socket of another process) is refused with -EEXIST. The
 * parent directory is created (0755) if missing. The socket is created with a umask that keeps it
 * private until its mode and group are set, so no peer can connect in between. Returns the fd or
 * a negative errno.
 */
int socket_bind_listen(const ListenSpec *spec, int backlog);

/* A policy socket's group id: (gid_t)-1 for none, (gid_t)-2 for a name NSS does not know. */
gid_t socket_policy_gid(const PolicySocket *s);
