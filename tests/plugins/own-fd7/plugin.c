/*
 * Test plugin own-fd7: a plugin without detail puts a pipe of its own at fd 7, then calls
 * lp_detail(). The SDK decided at start that this run has no detail pipe, so nothing may reach
 * the plugin's own pipe: it answers 1 when the pipe is empty, 0 when lp_detail() wrote into it.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "lockplugin.h"

int main(void) {
        int p[2];
        char c;

        if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
                lp_fail("pipe2");
        if (p[1] != LP_DETAIL_FD) {
                if (dup2(p[1], LP_DETAIL_FD) < 0)
                        lp_fail("dup2");
                close(p[1]);
        }
        if (lp_has_detail())
                lp_answer(false);
        if (lp_detail("this must not reach the plugin's own fd 7") != 0)
                lp_answer(false);
        if (read(p[0], &c, 1) >= 0 || errno != EAGAIN)
                lp_answer(false);
        lp_answer(true);
}
