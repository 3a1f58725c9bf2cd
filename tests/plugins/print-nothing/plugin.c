/*
 * Test plugin print-nothing: Exits with status 0 without printing: no_output.
 */
#include <errno.h>
#include <unistd.h>

#include "lockplugin.h"

int main(void) {
        _exit(0);
}
