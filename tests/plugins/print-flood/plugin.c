/*
 * Test plugin print-flood: Prints a mebibyte of 1: bad_output, and lockd drains it without hanging.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "lockplugin.h"

int main(void) {
        static char buf[65536];

        memset(buf, '1', sizeof(buf));
        for (int i = 0; i < 16; i++)
                if (write(1, buf, sizeof(buf)) < 0)
                        _exit(2);
        _exit(0);
}
