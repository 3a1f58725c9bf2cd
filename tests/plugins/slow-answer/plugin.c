/*
 * Test plugin slow-answer: answers 1 after sleeping 3 s, well inside its 10 s timeout, so a test
 * can look at its transient scope while it runs.
 */
#include <unistd.h>

#include "lockplugin.h"

int main(void) {
        sleep(3);
        lp_answer(true);
}
