/*
 * Test plugin good-one: answers 1 when its input (fd 3) holds at least one byte, 0 when it is
 * empty. It reads through the SDK's fd-3 reader.
 */
#include <stdlib.h>

#include "lockplugin.h"

int main(void) {
        size_t len;
        char *data = lp_read_all(1024 * 1024, &len);

        if (!data)
                lp_fail("cannot read the input");
        lp_answer(len > 0);
}
