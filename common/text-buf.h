/* A text formatted piece by piece into one buffer: a fixed one, or one that grows up to a cap. */
#pragma once

#include <stdarg.h>
#include <stddef.h>

/*
 * len bytes used of size at p, kept NUL-terminated. With max > size, p is the caller's malloc()ed
 * buffer and grows (realloc()) up to max bytes; with max == size it never grows, and p may be any
 * memory (a stack buffer).
 */
typedef struct TextBuf {
        char *p;
        size_t len;
        size_t size;
        size_t max;
} TextBuf;

/* Appends the formatted text to b. 0; -E2BIG when it would pass b->max (counting the NUL), and
 * then nothing is appended; -ENOMEM when growing failed (b->p stays valid and owned by b). */
int text_buf_printf(TextBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int text_buf_vprintf(TextBuf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
