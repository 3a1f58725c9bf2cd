/* A text formatted piece by piece into one buffer (text-buf.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "macro.h"
#include "text-buf.h"

int text_buf_vprintf(TextBuf *b, const char *fmt, va_list ap) {
        for (;;) {
                va_list aq;
                size_t want;
                char *q;
                int n;

                /* A second try after growing formats again, from a copy of the arguments. */
                va_copy(aq, ap);
                n = vsnprintf(b->p + b->len, b->size - b->len, fmt, aq);
                va_end(aq);
                if (n < 0 || (size_t)n >= b->max - b->len)
                        return -E2BIG;
                if ((size_t)n < b->size - b->len) {
                        b->len += (size_t)n;
                        return 0;
                }
                want = MIN(MAX(b->size * 2, b->len + (size_t)n + 1), b->max);
                q = realloc(b->p, want);
                if (!q)
                        return -ENOMEM;
                b->p = q;
                b->size = want;
        }
}

int text_buf_printf(TextBuf *b, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = text_buf_vprintf(b, fmt, ap);
        va_end(ap);
        return r;
}
