/*
 * Test plugin shmget: Creates a System V shared memory segment: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);

        if (id < 0)
                hostile_refused(errno);
        (void)shmctl(id, IPC_RMID, NULL);
        hostile_allowed();
}
