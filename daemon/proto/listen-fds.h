/* The daemon's two listening sockets as systemd passes them (sd_listen_fds_with_names()): what
 * socket activation gives lockd, and what the spawner gives the engine (engine-fds.h). */
#pragma once

#include <stddef.h>
#include <sys/types.h>

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
