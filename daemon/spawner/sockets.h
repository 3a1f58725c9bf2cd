/* The daemon's two listening sockets: from systemd socket activation by name, or bound by lockd
 * itself at the policy's paths. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "listen-fds.h"
#include "policy.h"

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
