/*
 * Test plugin abort: Aborts: signal:SIGABRT.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "lockplugin.h"

int main(void) {
        abort();
}
