/*
 * Test plugin socket-unix: Creates a unix socket: seccomp refuses every socket with EPERM.
 */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
}
