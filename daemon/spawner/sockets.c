/* The daemon's listening sockets: socket activation by name, or bound at the policy's paths. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "macro.h"
#include "sockets.h"

/* Whether something listens at the socket path: a stale file from a dead lockd does not. */
static bool socket_alive(const struct sockaddr_un *sa, socklen_t len) {
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

        if (fd < 0)
                return true; /* cannot tell: do not remove */
        if (connect(fd, (const struct sockaddr *)sa, len) == 0)
                return true;
        return errno != ECONNREFUSED;
}

int socket_bind_listen(const ListenSpec *spec, int backlog) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *dir = NULL;
        struct stat st;
        socklen_t len;
        mode_t old;
        char *slash;
        int r;

        if (!spec || !spec->path || spec->path[0] != '/' ||
            strlen(spec->path) >= sizeof(sa.sun_path))
                return -EINVAL;
        strcpy(sa.sun_path, spec->path);
        len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(spec->path) + 1);

        dir = strdup(spec->path);
        if (!dir)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        if (slash && slash != dir) {
                *slash = 0;
                /* 0755 whatever the caller's umask: the agents and consoles must reach in. */
                if (mkdir(dir, 0755) == 0) {
                        if (chmod(dir, 0755) < 0)
                                return negative_errno();
                } else if (errno != EEXIST)
                        return negative_errno();
        }

        if (lstat(spec->path, &st) == 0) {
                /* Replace only our own kind of leftover: a socket nobody listens on. */
                if (!S_ISSOCK(st.st_mode) || socket_alive(&sa, len))
                        return -EEXIST;
                if (unlink(spec->path) < 0)
                        return negative_errno();
        } else if (errno != ENOENT)
                return negative_errno();

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return negative_errno();
        /* Born 0600 (umask 0177) so nobody connects before the mode and group are final. */
        old = umask(0177);
        r = bind(fd, (struct sockaddr *)&sa, len);
        umask(old);
        if (r < 0)
                return negative_errno();
        if (spec->gid != (gid_t)-1 && chown(spec->path, 0, spec->gid) < 0)
                goto fail;
        if (chmod(spec->path, spec->mode) < 0)
                goto fail;
        if (listen(fd, backlog) < 0)
                goto fail;
        return TAKE_FD(fd);
fail:
        r = negative_errno();
        (void)unlink(spec->path);
        return r;
}

/* The socket's group id: (gid_t)-1 for none, (gid_t)-2 for a name NSS does not know. */
gid_t socket_policy_gid(const PolicySocket *s) {
        struct group gr, *res = NULL;
        char buf[4096];

        if (!s->has_group)
                return (gid_t)-1;
        if (s->group.numeric)
                return (gid_t)s->group.id;
        if (getgrnam_r(s->group.name, &gr, buf, sizeof(buf), &res) != 0 || !res)
                return (gid_t)-2;
        return res->gr_gid;
}
