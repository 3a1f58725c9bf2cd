/*
 * Test plugin print-11: Prints 11: bad_output.
 */
#include <errno.h>
#include <unistd.h>

#include "lockplugin.h"

int main(void) {
        if (write(1, "11", 2) != 2)
                _exit(2);
        _exit(0);
}
