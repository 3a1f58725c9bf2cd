/*
 * Test plugin fail: Gives up with lp_fail(): exit:1.
 */
#include <errno.h>
#include <unistd.h>

#include "lockplugin.h"

int main(void) {
        lp_fail("giving up on purpose");
}
