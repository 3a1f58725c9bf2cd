/*
 * Test plugin socket-inet: Creates a TCP socket: seccomp refuses every socket with EPERM.
 */
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
}
