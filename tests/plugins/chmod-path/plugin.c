/*
 * Test plugin chmod-path: Sets the mode of its own binary by path (chmod of /proc/self/exe, to the
 * mode it already has): seccomp refuses with EPERM.
 */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        struct stat st;

        if (stat("/proc/self/exe", &st) < 0)
                st.st_mode = 0555;
        hostile_check(chmod("/proc/self/exe", st.st_mode & 07777));
}
