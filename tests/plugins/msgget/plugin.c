/*
 * Test plugin msgget: Creates a System V message queue: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        int id = msgget(IPC_PRIVATE, IPC_CREAT | 0600);

        if (id < 0)
                hostile_refused(errno);
        (void)msgctl(id, IPC_RMID, NULL);
        hostile_allowed();
}
