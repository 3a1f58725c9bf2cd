/*
 * Test plugin sleep-timeout: Sleeps 10 s past its 1 s timeout: lockd kills it (timeout).
 */
#include <errno.h>
#include <unistd.h>

#include "lockplugin.h"

int main(void) {
        sleep(10);
        lp_answer(true);
}
