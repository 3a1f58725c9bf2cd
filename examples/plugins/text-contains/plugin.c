/* Example plugin (protocol 2): does the text contain the human-typed needle? Reports where. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE    /* memmem() is a GNU extension: without this it is undeclared, and its      \
                          pointer would be cut to an int */
#endif
#include <stdlib.h>
#include <string.h>

#include "lockplugin.h"

int main(void) {
        char needle[257];
        size_t len, jlen;
        char *json = lp_inputs(&jlen);
        char *text;
        ssize_t n;

        if (!json)
                lp_fail("no inputs");
        n = lp_input_get(json, "needle", needle, sizeof(needle));
        if (n <= 0)
                lp_fail("no needle");
        text = lp_read_all(64u << 20, &len);
        if (!text)
                lp_fail("cannot read the input");
        char *hit = memmem(text, len, needle, (size_t)n);
        if (hit)
                lp_detail("first match at byte offset %zu", (size_t)(hit - text));
        lp_answer(hit != NULL);
}
