/*
 * Test plugin print-1nn: Prints 1 and two newlines: bad_output.
 */
#include <errno.h>
#include <unistd.h>

#include "lockplugin.h"

int main(void) {
        if (write(1, "1\n\n", 3) != 3)
                _exit(2);
        _exit(0);
}
