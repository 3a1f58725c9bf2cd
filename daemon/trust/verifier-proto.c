/* The fixed string fields of the engine's request to lockd-verify and of its reply: one writer and
 * one check, for both processes (verifier-proto.h). */
#include <errno.h>
#include <string.h>

#include "verifier-proto.h"

int verifier_field_set(char *dst, size_t size, const char *s) {
        size_t n = s ? strlen(s) : 0;

        if (n >= size)
                return -EINVAL;
        memset(dst, 0, size);
        if (n > 0)
                memcpy(dst, s, n);
        return 0;
}

bool verifier_field_valid(const char *s, size_t size, char lo) {
        const char *end = memchr(s, 0, size);

        if (!end)
                return false;
        for (const char *p = s; p < end; p++)
                if (*p < lo || *p > 0x7e)
                        return false;
        for (const char *p = end; p < s + size; p++)
                if (*p != 0)
                        return false;
        return true;
}
