/*
 * Test plugin personality: Changes its execution domain with personality: seccomp refuses with
 * EPERM.
 */
#include <errno.h>
#include <sys/personality.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        hostile_check(personality(READ_IMPLIES_EXEC));
}
