/*
 * Test plugin good-inputs: answers whether its input (fd 3) contains the typed value of the input
 * "needle" (fd 6), and writes the offset of the first match as its detail (fd 7).
 */
#include <string.h>

#include "lockplugin.h"

int main(void) {
        char needle[65], *json, *data;
        size_t json_len, len;
        ssize_t n;
        const char *hit;

        json = lp_inputs(&json_len);
        if (!json)
                lp_fail("no inputs on fd 6");
        n = lp_input_get(json, "needle", needle, sizeof(needle));
        if (n <= 0)
                lp_fail("no needle in the inputs");

        data = lp_read_all(64 * 1024 * 1024, &len);
        if (!data)
                lp_fail("cannot read the input");

        hit = memmem(data, len, needle, (size_t)n);
        if (!hit) {
                lp_detail("not found");
                lp_answer(false);
        }
        lp_detail("offset=%zu", (size_t)(hit - data));
        lp_answer(true);
}
