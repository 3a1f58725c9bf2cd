/* Small macros shared by every part of lockd: cleanup attributes, ownership transfer, sizes. */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f)         __attribute__((cleanup(f)))
#define _unused_             __attribute__((unused))
#define _noreturn_           __attribute__((noreturn))
#define _warn_unused_result_ __attribute__((warn_unused_result))

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define KiB           ((size_t)1024)
#define MiB           ((size_t)1024 * 1024)
#define GiB           ((size_t)1024 * 1024 * 1024)

/* The smaller and the larger of two values; each is evaluated twice (no side effects). */
#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif

/* Returns the pointer held in *p and leaves NULL behind, so a cleanup handler does not free it. */
#define TAKE_PTR(p)                                                                                \
        ({                                                                                         \
                __typeof__(p) _p_ = (p);                                                           \
                (p) = NULL;                                                                        \
                _p_;                                                                               \
        })

/* Returns the fd held in fd and leaves -1 behind. */
#define TAKE_FD(fd)                                                                                \
        ({                                                                                         \
                int _fd_ = (fd);                                                                   \
                (fd) = -1;                                                                         \
                _fd_;                                                                              \
        })

/* Closes fd if it is valid, keeping errno intact; always returns -1. */
static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                close(fd);
                errno = saved;
        }
        return -1;
}

static inline void closep(int *fd) {
        safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

/* Frees p and returns NULL, for `x = mfree(x);`. */
static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

static inline void freep(void *p) {
        free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

/* Declares name##p(type **) calling func on a non-NULL pointer, for _cleanup_(). */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                    \
        static inline void func##p(type *p) {                                                      \
                if (*p)                                                                            \
                        func(*p);                                                                  \
        }

/* Returns -errno of the last failed libc call, never 0 (EIO where errno was left at 0). */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}
