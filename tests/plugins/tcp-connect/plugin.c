/*
 * Test plugin tcp-connect: Connects to 127.0.0.1:9 over TCP. seccomp already refuses the socket
 * with EPERM (at=socket); were sockets allowed, Landlock (ABI 4) would refuse the connect with
 * EACCES (at=connect).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        struct sockaddr_in sa = {
                .sin_family = AF_INET,
                .sin_port = htons(9),
                .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
        };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
                hostile_refused_at(errno, "socket");
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != ECONNREFUSED)
                hostile_refused_at(errno, "connect");
        hostile_allowed();
}
