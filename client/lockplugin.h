/*
 * lockplugin.h: the header-only C SDK for lockd plugins (the contract's Runtime and Answer).
 *
 * A plugin reads the file it is asked about from fd 3 (lp_read_all(), lp_mmap_input()), the
 * values a human typed for its inputs from fd 6 (lp_inputs(), lp_input_get(), protocol 2), may
 * write a human-only detail to fd 7 (lp_detail(), protocol 2 with detail = true), and ends with
 * exactly one of lp_answer(true), lp_answer(false) or lp_fail().
 *
 * The answer is only what lp_answer() writes on stdout: "1\n" or "0\n" followed by exit status
 * 0. There is deliberately no function that answers through the exit status: lockd reads a
 * plugin that exits without writing an answer, or with a non-zero status, as plugin_error and
 * never as a 0, so a crash, an abort or lp_fail() can not be mistaken for an answer. Returning
 * from main() without calling lp_answer() is a failure in the same way. Do not print anything
 * else on stdout: lp_answer() does not flush stdio, so buffered output is dropped, and output
 * that did reach the pipe makes the run bad_output.
 *
 * Everything here is async-signal-safe except lp_read_all(), lp_inputs() and lp_detail(), which
 * allocate or format. It needs POSIX (the default gnu11 of gcc, or _POSIX_C_SOURCE 200809L
 * defined before any include). Link the plugin statically (gcc -static): lockd refuses a binary
 * with an interpreter.
 */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* _Noreturn in C, its C++ spelling in C++. */
#ifdef __cplusplus
#define LP_NORETURN [[noreturn]]
#else
#define LP_NORETURN _Noreturn
#endif

#define LP_INPUT_FD      3               /* the file asked about, read-only */
#define LP_INPUTS_FD     6               /* the canonical JSON of the typed inputs (protocol 2) */
#define LP_DETAIL_FD     7               /* the detail pipe (protocol 2 with detail = true) */
#define LP_INPUTS_MAX    ((size_t)65536) /* lp_inputs() refuses a larger fd 6 */
#define LP_DETAIL_MAX    ((size_t)4096)  /* lp_detail() writes at most this much per process */
#define LP_INPUT_KEY_MAX 64              /* longer keys never match an input name */

/* Returns the descriptor of the input file. Its offset is the plugin's own. */
static inline int lp_input_fd(void) {
        return LP_INPUT_FD;
}

/* Writes all of buf to fd, retrying short writes and EINTR. Returns 0, or -1 with errno set. */
static inline int lp__write_all(int fd, const void *buf, size_t len) {
        const char *p = (const char *)buf;

        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -1;
                }
                if (n == 0) {
                        errno = EIO;
                        return -1;
                }
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

/* Says whether fd is open in this process. */
static inline bool lp__fd_open(int fd) {
        return fcntl(fd, F_GETFD) >= 0;
}

/*
 * Reads fd from its current offset to the end into a new buffer, NUL-terminated (the NUL is not
 * counted in *len). Returns NULL with errno EFBIG when there are more than max bytes, or with the
 * errno of the failed call.
 */
static inline void *lp_read_fd_all(int fd, size_t max, size_t *len) {
        size_t size = 0, used = 0;
        char *buf = NULL;
        struct stat st;

        if (max > SIZE_MAX / 4)
                max = SIZE_MAX / 4;
        if (fstat(fd, &st) >= 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
            (uint64_t)st.st_size <= max)
                size = (size_t)st.st_size + 1;
        if (size < 4096)
                size = max < 4096 ? max + 1 : 4096;

        buf = (char *)malloc(size);
        if (!buf)
                return NULL;

        for (;;) {
                ssize_t n;

                if (used + 1 >= size) {
                        size_t nsize;
                        char *nbuf;

                        if (used > max) {
                                free(buf);
                                errno = EFBIG;
                                return NULL;
                        }
                        nsize = size > max / 2 ? max + 2 : size * 2;
                        nbuf = (char *)realloc(buf, nsize);
                        if (!nbuf) {
                                free(buf);
                                errno = ENOMEM;
                                return NULL;
                        }
                        buf = nbuf;
                        size = nsize;
                }

                n = read(fd, buf + used, size - used - 1);
                if (n < 0) {
                        int saved;

                        if (errno == EINTR)
                                continue;
                        saved = errno;
                        free(buf);
                        errno = saved;
                        return NULL;
                }
                if (n == 0)
                        break;
                used += (size_t)n;
                if (used > max) {
                        free(buf);
                        errno = EFBIG;
                        return NULL;
                }
        }

        buf[used] = '\0';
        if (len)
                *len = used;
        return buf;
}

/* Reads the whole input (fd 3, from its current offset) into a new NUL-terminated buffer. */
static inline void *lp_read_all(size_t max, size_t *len) {
        return lp_read_fd_all(LP_INPUT_FD, max, len);
}

/*
 * Maps the whole input read-only and privately. Returns the mapping and its size in *len, a
 * pointer to an empty string with *len 0 for an empty input (do not unmap it: use
 * lp_munmap_input()), or NULL with errno set when fd 3 can not be mapped (fall back to
 * lp_read_all()).
 */
static inline const void *lp_mmap_input(size_t *len) {
        struct stat st;
        void *p;

        if (fstat(LP_INPUT_FD, &st) < 0)
                return NULL;
        if (!S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t)st.st_size > SIZE_MAX) {
                errno = ENODEV;
                return NULL;
        }
        *len = (size_t)st.st_size;
        if (*len == 0)
                return "";

        p = mmap(NULL, *len, PROT_READ, MAP_PRIVATE, LP_INPUT_FD, 0);
        if (p == MAP_FAILED)
                return NULL;
        return p;
}

/* Unmaps what lp_mmap_input() returned. */
static inline void lp_munmap_input(const void *p, size_t len) {
        if (p && len > 0)
                (void)munmap((void *)p, len);
}

/*
 * Answers and ends the process: writes exactly "1\n" or "0\n" on stdout and exits with status 0.
 * When the answer can not be written whole, exits with status 1, which lockd reads as
 * plugin_error, so a half-written answer is never taken for one.
 */
LP_NORETURN static inline void lp_answer(bool one) {
        if (lp__write_all(STDOUT_FILENO, one ? "1\n" : "0\n", 2) < 0)
                _exit(1);
        _exit(0);
}

/*
 * Gives up: writes why and a newline on stderr (which lockd drains unread; only its size is
 * audited) and exits with status 1. The agent sees plugin_error.
 */
LP_NORETURN static inline void lp_fail(const char *why) {
        if (why) {
                (void)lp__write_all(STDERR_FILENO, why, strlen(why));
                (void)lp__write_all(STDERR_FILENO, "\n", 1);
        }
        _exit(1);
}

/*
 * Returns the canonical JSON of the typed inputs ({"name":"value",...}, keys sorted) read from
 * fd 6, in a new NUL-terminated buffer (free() it), with its length in *len if len is not NULL.
 * Returns NULL with errno EBADF when there is no fd 6 (protocol 1, or no inputs declared), EFBIG
 * when it is larger than 64 KiB, or the errno of the failed read. Call it before opening anything
 * else, so that fd 6 can only be lockd's.
 */
static inline char *lp_inputs(size_t *len) {
        if (!lp__fd_open(LP_INPUTS_FD)) {
                errno = EBADF;
                return NULL;
        }
        if (lseek(LP_INPUTS_FD, 0, SEEK_SET) < 0 && errno != ESPIPE)
                return NULL;
        return (char *)lp_read_fd_all(LP_INPUTS_FD, LP_INPUTS_MAX, len);
}

static inline int lp__hex(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

static inline int lp__hex4(const char *p, uint32_t *ret) {
        uint32_t v = 0;

        for (int i = 0; i < 4; i++) {
                int h = lp__hex(p[i]);
                if (h < 0)
                        return -1;
                v = v << 4 | (uint32_t)h;
        }
        *ret = v;
        return 0;
}

/* Stores byte c at out[*n] if it fits in size - 1 bytes, and counts it either way. */
static inline void lp__put(char *out, size_t size, size_t *n, char c) {
        if (out && *n + 1 < size)
                out[*n] = c;
        (*n)++;
}

static inline void lp__put_utf8(char *out, size_t size, size_t *n, uint32_t cp) {
        if (cp < 0x80)
                lp__put(out, size, n, (char)cp);
        else if (cp < 0x800) {
                lp__put(out, size, n, (char)(0xc0 | cp >> 6));
                lp__put(out, size, n, (char)(0x80 | (cp & 0x3f)));
        } else if (cp < 0x10000) {
                lp__put(out, size, n, (char)(0xe0 | cp >> 12));
                lp__put(out, size, n, (char)(0x80 | (cp >> 6 & 0x3f)));
                lp__put(out, size, n, (char)(0x80 | (cp & 0x3f)));
        } else {
                lp__put(out, size, n, (char)(0xf0 | cp >> 18));
                lp__put(out, size, n, (char)(0x80 | (cp >> 12 & 0x3f)));
                lp__put(out, size, n, (char)(0x80 | (cp >> 6 & 0x3f)));
                lp__put(out, size, n, (char)(0x80 | (cp & 0x3f)));
        }
}

/*
 * Parses the JSON string starting at the quote *p points to, unescaping it into out (at most
 * size - 1 bytes, NUL-terminated when size > 0; out may be NULL to skip). Stores the full length
 * of the unescaped string in *len and moves *p past the closing quote. Returns 0, or -1 for
 * malformed JSON or an escaped NUL.
 */
static inline int lp__json_string(const char **p, char *out, size_t size, size_t *len) {
        const char *s = *p;
        size_t n = 0;

        if (*s != '"')
                return -1;
        s++;

        for (;;) {
                unsigned char c = (unsigned char)*s;

                if (c == '\0' || c < 0x20)
                        return -1;
                if (c == '"') {
                        s++;
                        break;
                }
                if (c != '\\') {
                        lp__put(out, size, &n, (char)c);
                        s++;
                        continue;
                }

                s++;
                switch (*s) {
                case '"':
                case '\\':
                case '/':
                        lp__put(out, size, &n, *s);
                        break;
                case 'b':
                        lp__put(out, size, &n, '\b');
                        break;
                case 'f':
                        lp__put(out, size, &n, '\f');
                        break;
                case 'n':
                        lp__put(out, size, &n, '\n');
                        break;
                case 'r':
                        lp__put(out, size, &n, '\r');
                        break;
                case 't':
                        lp__put(out, size, &n, '\t');
                        break;
                case 'u': {
                        uint32_t cp, lo;

                        if (lp__hex4(s + 1, &cp) < 0)
                                return -1;
                        s += 4;
                        if (cp >= 0xdc00 && cp <= 0xdfff)
                                return -1;
                        if (cp >= 0xd800 && cp <= 0xdbff) {
                                if (s[1] != '\\' || s[2] != 'u' || lp__hex4(s + 3, &lo) < 0 ||
                                    lo < 0xdc00 || lo > 0xdfff)
                                        return -1;
                                s += 6;
                                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                        }
                        if (cp == 0)
                                return -1;
                        lp__put_utf8(out, size, &n, cp);
                        break;
                }
                default:
                        return -1;
                }
                s++;
        }

        if (out && size > 0)
                out[n < size ? n : size - 1] = '\0';
        *len = n;
        *p = s;
        return 0;
}

static inline const char *lp__json_space(const char *s) {
        while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
                s++;
        return s;
}

/*
 * Looks up input name in json, a flat object of strings as lp_inputs() returns it, and copies its
 * unescaped value into buf (size bytes, NUL-terminated). Returns the value's length, or -1 with
 * errno ENOENT when there is no such key, ERANGE when the value (and its NUL) does not fit in
 * size, EINVAL when json is not a flat object of strings.
 */
static inline ssize_t lp_input_get(const char *json, const char *name, char *buf, size_t size) {
        const char *s;
        size_t name_len;
        bool found = false;
        ssize_t ret = -1;

        if (!json || !name || (!buf && size > 0)) {
                errno = EINVAL;
                return -1;
        }
        name_len = strlen(name);

        s = lp__json_space(json);
        if (*s != '{') {
                errno = EINVAL;
                return -1;
        }
        s = lp__json_space(s + 1);
        if (*s == '}')
                goto end;

        for (;;) {
                char key[LP_INPUT_KEY_MAX + 1];
                size_t key_len, value_len;
                bool match;

                if (lp__json_string(&s, key, sizeof(key), &key_len) < 0)
                        goto invalid;
                match = key_len == name_len && key_len <= LP_INPUT_KEY_MAX &&
                        memcmp(key, name, name_len) == 0;

                s = lp__json_space(s);
                if (*s != ':')
                        goto invalid;
                s = lp__json_space(s + 1);

                if (match && !found) {
                        if (lp__json_string(&s, buf, size, &value_len) < 0)
                                goto invalid;
                        found = true;
                        if (value_len >= size || value_len > SIZE_MAX / 2)
                                ret = -2;
                        else
                                ret = (ssize_t)value_len;
                } else if (lp__json_string(&s, NULL, 0, &value_len) < 0)
                        goto invalid;

                s = lp__json_space(s);
                if (*s == '}')
                        break;
                if (*s != ',')
                        goto invalid;
                s = lp__json_space(s + 1);
        }

end:
        if (*lp__json_space(s + 1) != '\0')
                goto invalid;
        if (!found) {
                errno = ENOENT;
                return -1;
        }
        if (ret == -2) {
                errno = ERANGE;
                return -1;
        }
        return ret;

invalid:
        errno = EINVAL;
        return -1;
}

/* Bytes lp_detail() wrote so far: one counter per process, however many files include this. */
__attribute__((weak)) size_t lp__detail_used;

/*
 * Whether this process has lockd's detail pipe: 1 yes, -1 no, 0 not decided yet. One value per
 * process, however many files include this header.
 */
__attribute__((weak)) int lp__detail_state;

/*
 * Decides once, before main() runs, whether fd 7 is lockd's detail pipe: the run is protocol 2
 * (lockd's environment says so), and fd 7 is open, a pipe, and open for writing only. lockd opens
 * nothing else at 7, and the plugin has not opened anything yet, so a descriptor the plugin later
 * puts at 7 itself (a pipe, a socket of its own) is never taken for the detail pipe. Deciding this
 * when lp_detail() is called instead would send the detail into whatever the plugin opened there.
 */
__attribute__((constructor)) static void lp__detail_decide(void) {
        const char *protocol;
        struct stat st;
        int saved = errno, flags;

        if (__atomic_load_n(&lp__detail_state, __ATOMIC_RELAXED) != 0)
                return;
        protocol = getenv("LOCKFILE_PLUGIN_PROTOCOL");
        flags = fcntl(LP_DETAIL_FD, F_GETFL);
        if (protocol && strcmp(protocol, "2") == 0 && flags >= 0 &&
            (flags & O_ACCMODE) == O_WRONLY && fstat(LP_DETAIL_FD, &st) == 0 &&
            S_ISFIFO(st.st_mode))
                __atomic_store_n(&lp__detail_state, 1, __ATOMIC_RELAXED);
        else
                __atomic_store_n(&lp__detail_state, -1, __ATOMIC_RELAXED);
        errno = saved;
}

/* Says whether this process has lockd's detail pipe, as decided at its start. */
static inline bool lp_has_detail(void) {
        if (__atomic_load_n(&lp__detail_state, __ATOMIC_RELAXED) == 0)
                lp__detail_decide(); /* a constructor of the plugin's own ran first */
        return __atomic_load_n(&lp__detail_state, __ATOMIC_RELAXED) > 0;
}

/*
 * Writes a human-only detail (printf-style) on fd 7 when the plugin has one (protocol 2 with
 * detail = true, decided once at the process's start: lp_has_detail()), and nothing otherwise. All
 * calls of a process together write at most LP_DETAIL_MAX bytes, which is what lockd keeps; the
 * rest is cut off. Returns the number of bytes written, 0 when there is no fd 7 or the cap is
 * reached, or -1 with errno set.
 */
__attribute__((format(printf, 1, 2))) static inline ssize_t lp_detail(const char *fmt, ...) {
        char text[LP_DETAIL_MAX + 1];
        size_t used, take;
        va_list ap;
        int saved = errno, n;

        if (!lp_has_detail()) {
                errno = saved;
                return 0;
        }

        va_start(ap, fmt);
        n = vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        if (n < 0)
                return -1;
        take = (size_t)n < LP_DETAIL_MAX ? (size_t)n : LP_DETAIL_MAX;

        /* Reserve the bytes, so that threads writing at once still stay under the cap. */
        used = __atomic_load_n(&lp__detail_used, __ATOMIC_RELAXED);
        do {
                if (used >= LP_DETAIL_MAX) {
                        errno = saved;
                        return 0;
                }
                if (take > LP_DETAIL_MAX - used)
                        take = LP_DETAIL_MAX - used;
        } while (!__atomic_compare_exchange_n(&lp__detail_used, &used, used + take, false,
                                              __ATOMIC_RELAXED, __ATOMIC_RELAXED));

        if (take == 0) {
                errno = saved;
                return 0;
        }
        if (lp__write_all(LP_DETAIL_FD, text, take) < 0)
                return -1;
        errno = saved;
        return (ssize_t)take;
}
