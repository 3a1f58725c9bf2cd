/* Secure memory: locked, undumpable, wipe-on-fork arenas with guard pages, and SecBuf. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "secmem.h"

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

/*
 * One arena: [guard page][size usable bytes][guard page]. used has a bit per granule in use,
 * start a bit per granule that begins an allocation; an allocation runs from its start granule
 * to the next granule that is free or begins another one. Both bitmaps live in this struct, in
 * ordinary memory: they say nothing secret, and keeping them out of the arena means an overrun
 * of one secret cannot corrupt the allocator.
 */
typedef struct Arena {
        struct Arena *next;
        uint8_t *map;
        size_t map_size;
        uint8_t *base;
        size_t size;
        size_t n_granules;
        size_t n_used;
        uint64_t *used;
        uint64_t *start;
} Arena;

static pthread_mutex_t secmem_lock = PTHREAD_MUTEX_INITIALIZER;
static Arena *arenas;
static size_t mapped_bytes;
static size_t mapped_limit = SECMEM_LIMIT_DEFAULT;
static void (*wipe_hook)(const void *p, size_t size);

static bool bit_get(const uint64_t *map, size_t i) {
        return (map[i / 64] >> (i % 64)) & 1;
}

static void bit_set(uint64_t *map, size_t i, bool v) {
        if (v)
                map[i / 64] |= UINT64_C(1) << (i % 64);
        else
                map[i / 64] &= ~(UINT64_C(1) << (i % 64));
}

/* Unmaps a (wiped) arena and frees its bookkeeping. */
static void arena_free(Arena *a) {
        munmap(a->map, a->map_size);
        free(a);
}

/*
 * Maps a new arena of size usable bytes (a multiple of the page size): guard pages PROT_NONE,
 * the rest read-write, excluded from dumps, wiped on fork and locked, in that order. Any step
 * failing fails the whole (fail closed); a lock failure is -ENOMEM.
 */
static int arena_new(size_t size, Arena **ret) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size_t n_granules = size / SECMEM_GRANULE;
        size_t n_words = (n_granules + 63) / 64;
        Arena *a;
        int r;

        a = calloc(1, sizeof(Arena) + 2 * n_words * sizeof(uint64_t));
        if (!a)
                return -ENOMEM;
        a->used = (uint64_t *)(a + 1);
        a->start = a->used + n_words;
        a->size = size;
        a->n_granules = n_granules;
        a->map_size = size + 2 * page;
        a->map = mmap(NULL, a->map_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (a->map == MAP_FAILED) {
                r = negative_errno();
                free(a);
                return r;
        }
        a->base = a->map + page;

        if (mprotect(a->base, size, PROT_READ | PROT_WRITE) < 0 ||
            madvise(a->base, size, MADV_DONTDUMP) < 0 ||
            madvise(a->base, size, MADV_WIPEONFORK) < 0) {
                r = negative_errno();
                arena_free(a);
                return r;
        }
        /* Whatever the reason (RLIMIT_MEMLOCK, no CAP_IPC_LOCK with a zero limit), unlockable
         * memory is no memory for a secret. The system call itself, not mlock(): ASan's
         * interceptor makes mlock() a no-op that reports success, so a sanitized build would
         * fail open. */
        if (syscall(SYS_mlock, a->base, size) < 0) {
                arena_free(a);
                return -ENOMEM;
        }
        *ret = a;
        return 0;
}

/* Finds n free granules in a row in a, marks them and returns their first index, or -1. */
static ssize_t arena_take(Arena *a, size_t n) {
        size_t run = 0;

        if (a->n_granules - a->n_used < n)
                return -1;
        for (size_t i = 0; i < a->n_granules; i++) {
                if (bit_get(a->used, i)) {
                        run = 0;
                        continue;
                }
                if (++run < n)
                        continue;

                size_t first = i + 1 - n;
                for (size_t j = first; j <= i; j++)
                        bit_set(a->used, j, true);
                bit_set(a->start, first, true);
                a->n_used += n;
                return (ssize_t)first;
        }
        return -1;
}

int secmem_alloc(size_t size, void **ret) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size_t n, arena_size;
        Arena *a;
        ssize_t g;
        int r;

        if (size == 0 || !ret)
                return -EINVAL;
        if (size > SIZE_MAX / 2)
                return -ENOMEM;
        n = (size + SECMEM_GRANULE - 1) / SECMEM_GRANULE;

        pthread_mutex_lock(&secmem_lock);
        for (a = arenas; a; a = a->next) {
                g = arena_take(a, n);
                if (g >= 0)
                        goto found;
        }

        arena_size = n * SECMEM_GRANULE;
        arena_size = arena_size < SECMEM_ARENA_SIZE ? SECMEM_ARENA_SIZE
                                                    : (arena_size + page - 1) / page * page;
        if (arena_size > mapped_limit || mapped_bytes > mapped_limit - arena_size) {
                r = -ENOMEM;
                goto fail;
        }
        r = arena_new(arena_size, &a);
        if (r < 0)
                goto fail;
        a->next = arenas;
        arenas = a;
        mapped_bytes += arena_size;
        g = arena_take(a, n);

found:
        pthread_mutex_unlock(&secmem_lock);
        /* Granules are zero: fresh pages are, and every free wipes what it returns. */
        *ret = a->base + (size_t)g * SECMEM_GRANULE;
        return 0;

fail:
        pthread_mutex_unlock(&secmem_lock);
        return r;
}

void *secmem_free(void *p) {
        Arena **pa, *a;
        size_t g, j, off;

        if (!p)
                return NULL;

        pthread_mutex_lock(&secmem_lock);
        for (pa = &arenas; *pa; pa = &(*pa)->next)
                if ((uint8_t *)p >= (*pa)->base && (uint8_t *)p < (*pa)->base + (*pa)->size)
                        break;
        a = *pa;
        if (!a)
                abort();
        off = (size_t)((uint8_t *)p - a->base);
        g = off / SECMEM_GRANULE;
        if (off % SECMEM_GRANULE != 0 || !bit_get(a->start, g))
                abort();

        bit_set(a->start, g, false);
        j = g;
        do {
                bit_set(a->used, j, false);
                j++;
        } while (j < a->n_granules && bit_get(a->used, j) && !bit_get(a->start, j));

        explicit_bzero(p, (j - g) * SECMEM_GRANULE);
        if (wipe_hook)
                wipe_hook(p, (j - g) * SECMEM_GRANULE);
        a->n_used -= j - g;

        if (a->n_used == 0) {
                *pa = a->next;
                mapped_bytes -= a->size;
                arena_free(a);
        }
        pthread_mutex_unlock(&secmem_lock);
        return NULL;
}

size_t secmem_mapped_bytes(void) {
        size_t n;

        pthread_mutex_lock(&secmem_lock);
        n = mapped_bytes;
        pthread_mutex_unlock(&secmem_lock);
        return n;
}

void secmem_set_limit(size_t limit) {
        pthread_mutex_lock(&secmem_lock);
        mapped_limit = limit ? limit : SECMEM_LIMIT_DEFAULT;
        pthread_mutex_unlock(&secmem_lock);
}

void secmem_set_wipe_hook(void (*hook)(const void *p, size_t size)) {
        pthread_mutex_lock(&secmem_lock);
        wipe_hook = hook;
        pthread_mutex_unlock(&secmem_lock);
}

int secmem_harden_process(void) {
        const struct rlimit none = {0, 0};

        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return negative_errno();
        if (setrlimit(RLIMIT_CORE, &none) < 0)
                return negative_errno();
        return 0;
}

int secbuf_new(size_t len, SecBuf **ret) {
        SecBuf *b;
        void *p;
        int r;

        if (!ret)
                return -EINVAL;
        /* The header, the bytes and a NUL after them, in one allocation. */
        if (len > SIZE_MAX / 2)
                return -ENOMEM;
        r = secmem_alloc(sizeof(SecBuf) + len + 1, &p);
        if (r < 0)
                return r;
        b = p;
        b->data = (uint8_t *)(b + 1);
        b->len = len;
        *ret = b;
        return 0;
}

int secbuf_new_copy(const void *p, size_t len, SecBuf **ret) {
        SecBuf *b;
        int r;

        if (!p && len > 0)
                return -EINVAL;
        r = secbuf_new(len, &b);
        if (r < 0)
                return r;
        if (len > 0)
                memcpy(b->data, p, len);
        *ret = b;
        return 0;
}

SecBuf *secbuf_free(SecBuf *b) {
        return secmem_free(b);
}
