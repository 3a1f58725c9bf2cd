/*
 * Test plugin raise-sigsegv: Raises SIGSEGV at itself (tgkill of its own pid, which is allowed):
 * signal:SIGSEGV.
 */
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "lockplugin.h"

int main(void) {
        raise(SIGSEGV);
        lp_answer(true);
}
