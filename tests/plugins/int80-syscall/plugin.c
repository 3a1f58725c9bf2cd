/*
 * Test plugin int80-syscall: Calls getpid through the i386 ABI (int $0x80, eax 20): the filter
 * refuses the foreign architecture with EPERM.
 */
#include <errno.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        long ret;

        /* The i386 entry clobbers nothing but eax here; r8 to r11 are preserved, as on syscall. */
        __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
        if ((int)ret < 0)
                hostile_refused(-(int)ret);
        hostile_allowed();
}
