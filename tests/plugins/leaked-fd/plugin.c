/*
 * Test plugin leaked-fd: Reads fds 4, 5 and 8 and looks for any descriptor below 1024 but 0, 1, 2,
 * 3 and 7: none is open, so each read fails with EBADF.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        static const int probe[] = {4, 5, 8};
        char c;

        for (int fd = 0; fd < 1024; fd++) {
                if (fd <= 3 || fd == 7)
                        continue;
                if (fcntl(fd, F_GETFD) >= 0) {
                        lp_detail("allowed fd=%d", fd);
                        lp_answer(false);
                }
        }
        for (size_t i = 0; i < sizeof(probe) / sizeof(probe[0]); i++)
                if (read(probe[i], &c, 1) >= 0 || errno != EBADF) {
                        lp_detail("allowed fd=%d errno=%d", probe[i], errno);
                        lp_answer(false);
                }
        hostile_refused(EBADF);
}
