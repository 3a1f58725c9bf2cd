/* The listening sockets as systemd passes them: how the spawner hands the engine its two sockets
 * (LISTEN_FDS, named), and how lockd finds them under socket activation. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include "fd-util.h"
#include "listen-fds.h"
#include "macro.h"

int sockets_from_systemd(const ListenSpec *specs, size_t n, int *ret_fds) {
        char **names = NULL;
        int k, r = 0;

        for (size_t i = 0; i < n; i++)
                ret_fds[i] = -1;
        k = sd_listen_fds_with_names(true, &names);
        if (k <= 0) {
                free(names);
                return k;
        }
        for (int i = 0; i < k; i++) {
                int fd = SD_LISTEN_FDS_START + i;
                size_t j;

                for (j = 0; j < n; j++)
                        if (names && names[i] && strcmp(names[i], specs[j].name) == 0)
                                break;
                /* Only what we know how to serve, once each, and only listening unix streams. */
                if (j == n || ret_fds[j] >= 0 ||
                    sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0) {
                        safe_close(fd);
                        r = -EBADMSG;
                        continue;
                }
                ret_fds[j] = fd;
        }
        for (int i = 0; names && i < k; i++)
                free(names[i]);
        free(names);
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        ret_fds[i] = safe_close(ret_fds[i]);
                return r;
        }
        return k;
}
