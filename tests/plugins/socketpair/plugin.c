/*
 * Test plugin socketpair: Creates a unix socket pair: seccomp refuses every socket with EPERM.
 */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        int sv[2];

        hostile_check(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
}
