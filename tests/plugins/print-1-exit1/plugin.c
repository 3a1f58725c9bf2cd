/*
 * Test plugin print-1-exit1: Prints 1 and exits with status 1: exit:1.
 */
#include <errno.h>
#include <unistd.h>

#include "lockplugin.h"

int main(void) {
        if (write(1, "1", 1) != 1)
                _exit(2);
        _exit(1);
}
