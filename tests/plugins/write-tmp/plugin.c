/*
 * Test plugin write-tmp: Creates a file in /tmp; Landlock refuses it with EACCES.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        char path[64];
        int fd;

        /* A name of its own, so that a file left behind by anyone else can not answer EEXIST. */
        snprintf(path, sizeof(path), "/tmp/lockd-hostile-plugin-%d", (int)getpid());
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
                hostile_refused(errno);
        (void)unlink(path);
        hostile_allowed();
}
