/*
 * Test plugin semget: Creates a System V semaphore set: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        int id = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);

        if (id < 0)
                hostile_refused(errno);
        (void)semctl(id, 0, IPC_RMID);
        hostile_allowed();
}
