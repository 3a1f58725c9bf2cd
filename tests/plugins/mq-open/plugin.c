/*
 * Test plugin mq-open: Creates a POSIX message queue: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        mqd_t q = mq_open("/lockd-hostile", O_CREAT | O_RDWR, 0600, NULL);

        if (q == (mqd_t)-1)
                hostile_refused(errno);
        (void)mq_unlink("/lockd-hostile");
        hostile_allowed();
}
