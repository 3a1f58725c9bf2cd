/*
 * Test plugin file-setattr: Sets inode attributes of fd 3 with file_setattr (syscall 469,
 * Linux 6.17): seccomp refuses with EPERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        /* struct file_attr as Linux 6.17 defines it: fa_xflags, fa_extsize, fa_nextents, fa_projid,
         * fa_cowextsize. */
        uint64_t fa[3] = {};

        hostile_check(syscall(469, 3, "", fa, sizeof(fa), AT_EMPTY_PATH));
}
