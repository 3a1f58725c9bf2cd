/*
 * Test plugin cpu-spin: Spins past its 1 s CPU limit: RLIMIT_CPU kills it with SIGXCPU.
 */
#include <errno.h>
#include <unistd.h>

#include "lockplugin.h"

int main(void) {
        for (volatile unsigned long i = 0;; i++)
                ;
}
