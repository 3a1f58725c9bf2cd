/* Secure memory for the secrets lockd holds: locked, undumpable, wiped on fork and on free. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/*
 * Secrets live in arenas: anonymous mappings with a PROT_NONE guard page on each side, locked
 * into RAM (mlock), excluded from core dumps (MADV_DONTDUMP) and zero-filled in a forked child
 * (MADV_WIPEONFORK). Allocations are carved out of an arena in 16-byte granules; the allocator's
 * bookkeeping lives in ordinary memory, so no header next to a secret can be overwritten.
 *
 * Failing closed: when the kernel refuses to lock or mark the pages (RLIMIT_MEMLOCK reached,
 * an old kernel), the allocation fails. A secret that might be swapped or dumped is worse than a
 * refused question. The total of all arenas is capped at SECMEM_LIMIT_DEFAULT (4 MiB, half of
 * the usual 8 MiB RLIMIT_MEMLOCK, leaving room for anything else that locks memory) and beyond
 * it allocations fail with -ENOMEM. lockd's secrets are small (32-byte ticket keys, input values
 * of at most 1 KiB), so 4 MiB holds tens of thousands of them.
 */

/* The usable size of one arena; a larger allocation gets an arena of its own, rounded to pages. */
#define SECMEM_ARENA_SIZE ((size_t)64 * 1024)
/* The default cap on the total usable size of all arenas. */
#define SECMEM_LIMIT_DEFAULT ((size_t)4 * 1024 * 1024)
/* Every allocation is aligned to (and rounded up to a multiple of) this many bytes. */
#define SECMEM_GRANULE ((size_t)16)

/*
 * Returns size bytes (size ≥ 1) of zeroed secure memory in *ret, or a negative errno: -EINVAL
 * for size 0, -ENOMEM past the cap or when the memory cannot be locked, another errno when the
 * kernel refuses a mapping or an madvise(). *ret is untouched on failure. Thread-safe.
 */
int secmem_alloc(size_t size, void **ret);

/*
 * Wipes (explicit_bzero) and releases an allocation of secmem_alloc(); NULL is a no-op. An empty
 * arena is unmapped. A pointer that is not the start of a live allocation aborts the process,
 * like a double free would. Returns NULL. Thread-safe.
 */
void *secmem_free(void *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(void *, secmem_free)

/* The total usable size of all arenas now mapped (and locked), in bytes. */
size_t secmem_mapped_bytes(void);

/* Sets the cap on secmem_mapped_bytes() (0: SECMEM_LIMIT_DEFAULT); arenas already mapped stay. */
void secmem_set_limit(size_t limit);

/*
 * Makes this process unfit to leak secrets through the kernel's debugging doors: not dumpable
 * (PR_SET_DUMPABLE 0: no core file, no ptrace or /proc/PID/mem by the same uid without
 * CAP_SYS_PTRACE) and RLIMIT_CORE 0 (soft and hard), so no core is written even if something
 * makes it dumpable again. lockd calls it first thing at start. Returns 0 or a negative errno.
 */
int secmem_harden_process(void);

/* A secret byte string in secure memory; data[len] is always 0, so text can be used as such. */
typedef struct SecBuf {
        uint8_t *data;
        size_t len;
} SecBuf;

/* Returns a new zeroed SecBuf of len bytes (len may be 0) in *ret; 0 or a negative errno. */
int secbuf_new(size_t len, SecBuf **ret);

/* Like secbuf_new(), holding a copy of the len bytes at p. */
int secbuf_new_copy(const void *p, size_t len, SecBuf **ret);

/* Wipes and releases b (its header and its bytes, one allocation); NULL is a no-op. NULL. */
SecBuf *secbuf_free(SecBuf *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(SecBuf *, secbuf_free)
#define _cleanup_secbuf_ _cleanup_(secbuf_freep)

/*
 * Test hook: when set, called with each wiped range (after the wipe, before the granules are
 * reused or the arena unmapped), under the allocator's lock. NULL turns it off. Not for lockd.
 */
void secmem_set_wipe_hook(void (*hook)(const void *p, size_t size));
