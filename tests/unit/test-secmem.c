/* Tests for common/secmem: locking, dump and fork exclusion, guard pages, wiping, the cap. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check-run.h"
#include "macro.h"
#include "secmem.h"

/* The value of a "Key:   N kB" line of /proc/self/status, in kB. */
static long status_kb(const char *key) {
        FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        long v = -1;

        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, key, strlen(key)) == 0 && line[strlen(key)] == ':') {
                        v = strtol(line + strlen(key) + 1, NULL, 10);
                        break;
                }
        fclose(f);
        ck_assert_int_ge(v, 0);
        return v;
}

/* The VmFlags line of the mapping holding p in /proc/self/smaps, into flags. */
static void smaps_flags(const void *p, char *flags, size_t size) {
        FILE *f = fopen("/proc/self/smaps", "re");
        char line[512];
        bool in = false;

        ck_assert_ptr_nonnull(f);
        flags[0] = 0;
        while (fgets(line, sizeof(line), f)) {
                unsigned long lo, hi;

                if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
                    strchr(line, '-') < strchr(line, ' ')) {
                        in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
                        continue;
                }
                if (in && strncmp(line, "VmFlags:", 8) == 0) {
                        snprintf(flags, size, "%.200s", line + 8);
                        break;
                }
        }
        fclose(f);
        ck_assert_msg(flags[0] != 0, "no mapping holds %p", p);
}

/* Whether the VmFlags text has the two-letter flag f. */
static bool has_flag(const char *flags, const char *f) {
        for (const char *s = flags; (s = strstr(s, f)); s++)
                if ((s == flags || s[-1] == ' ') && (s[2] == ' ' || s[2] == '\n' || s[2] == 0))
                        return true;
        return false;
}

/* Runs fn(arg) in a child and returns its wait status. */
static int in_child(void (*fn)(void *), void *arg) {
        pid_t pid = fork();
        int status;

        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                fn(arg);
                _exit(0);
        }
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        return status;
}

START_TEST(test_alloc_zeroed_aligned) {
        static const size_t sizes[] = {1, 15, 16, 17, 1000, 4096, 20000};
        void *p[ELEMENTSOF(sizes)];

        ck_assert_int_eq(secmem_alloc(0, &p[0]), -EINVAL);
        ck_assert_uint_eq(secmem_mapped_bytes(), 0);
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                ck_assert_int_eq(secmem_alloc(sizes[i], &p[i]), 0);
                ck_assert_uint_eq((uintptr_t)p[i] % SECMEM_GRANULE, 0);
                for (size_t j = 0; j < sizes[i]; j++)
                        ck_assert_uint_eq(((uint8_t *)p[i])[j], 0);
                memset(p[i], (int)i + 1, sizes[i]);
        }
        /* No two overlap: each still holds its own pattern. */
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++)
                for (size_t j = 0; j < sizes[i]; j++)
                        ck_assert_uint_eq(((uint8_t *)p[i])[j], i + 1);
        ck_assert_uint_eq(secmem_mapped_bytes(), SECMEM_ARENA_SIZE);
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++)
                ck_assert_ptr_null(secmem_free(p[i]));
        ck_assert_uint_eq(secmem_mapped_bytes(), 0);
        ck_assert_ptr_null(secmem_free(NULL));
}
END_TEST

START_TEST(test_locked_and_undumpable) {
        long before = status_kb("VmLck"), after;
        char flags[256];
        void *p;

        ck_assert_int_eq(secmem_alloc(100, &p), 0);
        after = status_kb("VmLck");
        ck_assert_int_ge(after - before, (long)(SECMEM_ARENA_SIZE / 1024));

        smaps_flags(p, flags, sizeof(flags));
        ck_assert_msg(has_flag(flags, "lo"), "not locked: %s", flags);
        ck_assert_msg(has_flag(flags, "dd"), "not MADV_DONTDUMP: %s", flags);
        ck_assert_msg(has_flag(flags, "wf"), "not MADV_WIPEONFORK: %s", flags);

        secmem_free(p);
        ck_assert_int_eq(status_kb("VmLck"), before);
}
END_TEST

static const uint8_t *wiped_p;
static size_t wiped_size;
static bool wiped_zero;

/* Records the last wiped range and whether all of it read zero at that moment. */
static void wipe_hook(const void *p, size_t size) {
        wiped_p = p;
        wiped_size = size;
        wiped_zero = true;
        for (size_t i = 0; i < size; i++)
                if (((const uint8_t *)p)[i] != 0)
                        wiped_zero = false;
}

START_TEST(test_free_wipes) {
        uint8_t *a, *b;
        SecBuf *s;

        secmem_set_wipe_hook(wipe_hook);
        ck_assert_int_eq(secmem_alloc(40, (void **)&a), 0);
        ck_assert_int_eq(secmem_alloc(40, (void **)&b), 0);
        memset(a, 0xa5, 40);
        memset(b, 0x5a, 40);

        /* a: the arena stays (b lives on), so read it back after the free as well. */
        secmem_free(a);
        ck_assert_ptr_eq(wiped_p, a);
        ck_assert_uint_eq(wiped_size, 48);
        ck_assert(wiped_zero);
        for (size_t i = 0; i < 48; i++)
                ck_assert_uint_eq(a[i], 0);
        for (size_t i = 0; i < 40; i++)
                ck_assert_uint_eq(b[i], 0x5a);

        /* b: the arena's last allocation; checked by the hook before the unmap. */
        secmem_free(b);
        ck_assert_ptr_eq(wiped_p, b);
        ck_assert(wiped_zero);
        ck_assert_uint_eq(secmem_mapped_bytes(), 0);

        /* A SecBuf: its header and its bytes are one wiped range. */
        ck_assert_int_eq(secbuf_new_copy("hunter2", 7, &s), 0);
        ck_assert_ptr_eq(wiped_p, b);
        const void *where = s;
        secbuf_free(s);
        ck_assert_ptr_eq(wiped_p, where);
        ck_assert_uint_ge(wiped_size, sizeof(SecBuf) + 8);
        ck_assert(wiped_zero);
        secmem_set_wipe_hook(NULL);
}
END_TEST

static void child_sees_zeros(void *arg) {
        const uint8_t *p = arg;

        for (size_t i = 0; i < 64; i++)
                if (p[i] != 0)
                        _exit(1);
        /* The child may still use (and free) the memory it sees as zero. */
        secmem_free(arg);
        _exit(0);
}

START_TEST(test_wipe_on_fork) {
        uint8_t *p;
        int status;

        ck_assert_int_eq(secmem_alloc(64, (void **)&p), 0);
        memset(p, 0x42, 64);
        status = in_child(child_sees_zeros, p);
        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 0);
        for (size_t i = 0; i < 64; i++)
                ck_assert_uint_eq(p[i], 0x42);
        secmem_free(p);
}
END_TEST

static void segv_exit(int sig) {
        _exit(42);
}

/* Reads one byte at arg; exits 42 on SIGSEGV (its own handler: a sanitizer would take it). */
static void touch(void *arg) {
        struct sigaction sa = {.sa_handler = segv_exit};
        volatile uint8_t *p = arg;

        ck_assert_int_eq(sigaction(SIGSEGV, &sa, NULL), 0);
        (void)*p;
}

START_TEST(test_guard_pages) {
        uint8_t *p;
        int status;

        /* An allocation of exactly one arena fills it: both of its ends are guard pages. */
        ck_assert_int_eq(secmem_alloc(SECMEM_ARENA_SIZE, (void **)&p), 0);
        ck_assert_uint_eq(secmem_mapped_bytes(), SECMEM_ARENA_SIZE);
        p[0] = p[SECMEM_ARENA_SIZE - 1] = 1;

        status = in_child(touch, p);
        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 0);
        status = in_child(touch, p - 1);
        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 42);
        status = in_child(touch, p + SECMEM_ARENA_SIZE);
        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 42);
        secmem_free(p);
}
END_TEST

START_TEST(test_large_and_reuse) {
        void *big, *small[SECMEM_ARENA_SIZE / SECMEM_GRANULE], *one;
        size_t n = ELEMENTSOF(small);

        /* Larger than an arena: an arena of its own, rounded up to pages. */
        ck_assert_int_eq(secmem_alloc(SECMEM_ARENA_SIZE + 1, &big), 0);
        ck_assert_uint_ge(secmem_mapped_bytes(), SECMEM_ARENA_SIZE + 4096);
        secmem_free(big);
        ck_assert_uint_eq(secmem_mapped_bytes(), 0);

        /* One arena holds exactly SECMEM_ARENA_SIZE / SECMEM_GRANULE granules. */
        for (size_t i = 0; i < n; i++)
                ck_assert_int_eq(secmem_alloc(1, &small[i]), 0);
        ck_assert_uint_eq(secmem_mapped_bytes(), SECMEM_ARENA_SIZE);
        ck_assert_int_eq(secmem_alloc(1, &one), 0);
        ck_assert_uint_eq(secmem_mapped_bytes(), 2 * SECMEM_ARENA_SIZE);
        secmem_free(one);
        ck_assert_uint_eq(secmem_mapped_bytes(), SECMEM_ARENA_SIZE);

        /* Every other granule freed: 16 bytes fit again, 17 need a new arena. */
        for (size_t i = 0; i < n; i += 2)
                small[i] = secmem_free(small[i]);
        ck_assert_int_eq(secmem_alloc(16, &one), 0);
        ck_assert_uint_eq(secmem_mapped_bytes(), SECMEM_ARENA_SIZE);
        ck_assert_int_eq(secmem_alloc(17, &big), 0);
        ck_assert_uint_eq(secmem_mapped_bytes(), 2 * SECMEM_ARENA_SIZE);
        secmem_free(big);
        secmem_free(one);
        for (size_t i = 1; i < n; i += 2)
                secmem_free(small[i]);
        ck_assert_uint_eq(secmem_mapped_bytes(), 0);
}
END_TEST

START_TEST(test_cap) {
        void *a, *b, *c;

        secmem_set_limit(2 * SECMEM_ARENA_SIZE);
        ck_assert_int_eq(secmem_alloc(SECMEM_ARENA_SIZE, &a), 0);
        ck_assert_int_eq(secmem_alloc(SECMEM_ARENA_SIZE, &b), 0);
        ck_assert_int_eq(secmem_alloc(1, &c), -ENOMEM);
        ck_assert_int_eq(secmem_alloc(3 * SECMEM_ARENA_SIZE, &c), -ENOMEM);
        secmem_free(a);
        ck_assert_int_eq(secmem_alloc(1, &c), 0);
        secmem_free(b);
        secmem_free(c);
        secmem_set_limit(0);
        ck_assert_int_eq(secmem_alloc(SECMEM_LIMIT_DEFAULT + 1, &c), -ENOMEM);
        ck_assert_uint_eq(secmem_mapped_bytes(), 0);
}
END_TEST

/* Without CAP_IPC_LOCK and with RLIMIT_MEMLOCK 0, nothing can be locked: no memory at all. */
static void unlockable(void *arg) {
        const struct rlimit zero = {0, 0};
        cap_t caps = cap_get_proc();
        cap_value_t lock = CAP_IPC_LOCK;
        void *p;

        if (!caps || cap_set_flag(caps, CAP_EFFECTIVE, 1, &lock, CAP_CLEAR) < 0 ||
            cap_set_proc(caps) < 0)
                _exit(2);
        cap_free(caps);
        if (setrlimit(RLIMIT_MEMLOCK, &zero) < 0)
                _exit(3);
        if (secmem_alloc(1, &p) != -ENOMEM || secmem_mapped_bytes() != 0)
                _exit(1);
        _exit(0);
}

START_TEST(test_fail_closed_without_mlock) {
        int status = in_child(unlockable, NULL);

        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

/*
 * Without CAP_IPC_LOCK (as lockd runs after its capability cut) under the usual 8 MiB
 * RLIMIT_MEMLOCK: the cap, not the kernel, is what ends the allocations, at exactly 4 MiB.
 */
static void default_memlock(void *arg) {
        const struct rlimit eight = {8 * MiB, 8 * MiB};
        cap_t caps = cap_get_proc();
        cap_value_t lock = CAP_IPC_LOCK;
        void *p;
        int r;

        if (!caps || cap_set_flag(caps, CAP_EFFECTIVE, 1, &lock, CAP_CLEAR) < 0 ||
            cap_set_proc(caps) < 0)
                _exit(2);
        cap_free(caps);
        if (setrlimit(RLIMIT_MEMLOCK, &eight) < 0)
                _exit(3);
        while ((r = secmem_alloc(SECMEM_ARENA_SIZE, &p)) == 0)
                ;
        if (r != -ENOMEM || secmem_mapped_bytes() != SECMEM_LIMIT_DEFAULT)
                _exit(1);
        _exit(0);
}

START_TEST(test_cap_below_default_memlock) {
        int status = in_child(default_memlock, NULL);

        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

static void bad_free(void *arg) {
        uint8_t *p;

        if (secmem_alloc(64, (void **)&p) < 0)
                _exit(2);
        if (arg)
                secmem_free(p + 16); /* Inside an allocation, not its start. */
        else {
                secmem_free(p);
                secmem_alloc(1, (void **)&p); /* Keeps the arena mapped. */
                secmem_free(p + 16);          /* A granule no longer allocated. */
        }
        _exit(0);
}

START_TEST(test_bad_free_aborts) {
        int status = in_child(bad_free, (void *)1);

        ck_assert(WIFSIGNALED(status));
        ck_assert_int_eq(WTERMSIG(status), SIGABRT);
        status = in_child(bad_free, NULL);
        ck_assert(WIFSIGNALED(status));
        ck_assert_int_eq(WTERMSIG(status), SIGABRT);
}
END_TEST

static void hardened(void *arg) {
        struct rlimit rl;

        if (secmem_harden_process() != 0)
                _exit(2);
        if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0)
                _exit(1);
        if (getrlimit(RLIMIT_CORE, &rl) < 0 || rl.rlim_cur != 0 || rl.rlim_max != 0)
                _exit(1);
        _exit(0);
}

START_TEST(test_harden_process) {
        int status;

        ck_assert_int_eq(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 1);
        status = in_child(hardened, NULL);
        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

START_TEST(test_secbuf) {
        _cleanup_secbuf_ SecBuf *e = NULL, *c = NULL;

        ck_assert_int_eq(secbuf_new(0, &e), 0);
        ck_assert_uint_eq(e->len, 0);
        ck_assert_uint_eq(e->data[0], 0);
        ck_assert_int_eq(secbuf_new_copy("secret", 6, &c), 0);
        ck_assert_uint_eq(c->len, 6);
        ck_assert_str_eq((const char *)c->data, "secret");
        ck_assert_int_eq(secbuf_new_copy(NULL, 1, &c), -EINVAL);
        ck_assert_int_eq(secbuf_new(SIZE_MAX, &c), -ENOMEM);
        ck_assert_str_eq((const char *)c->data, "secret");
        ck_assert_ptr_null(secbuf_free(NULL));
}
END_TEST

/* Each thread allocates, fills, checks and frees buffers of changing sizes. */
static void *churn(void *arg) {
        unsigned seed = (unsigned)(uintptr_t)arg;
        SecBuf *held[16] = {0};

        for (int round = 0; round < 3000; round++) {
                size_t slot = (size_t)rand_r(&seed) % ELEMENTSOF(held);

                if (held[slot]) {
                        for (size_t i = 0; i < held[slot]->len; i++)
                                if (held[slot]->data[i] != (uint8_t)(slot + (uintptr_t)arg))
                                        return (void *)1;
                        held[slot] = secbuf_free(held[slot]);
                        continue;
                }
                if (secbuf_new((size_t)rand_r(&seed) % 1100, &held[slot]) < 0)
                        return (void *)2;
                memset(held[slot]->data, (int)(slot + (uintptr_t)arg), held[slot]->len);
        }
        for (size_t i = 0; i < ELEMENTSOF(held); i++)
                secbuf_free(held[i]);
        return NULL;
}

START_TEST(test_threads) {
        pthread_t t[4];

        for (uintptr_t i = 0; i < ELEMENTSOF(t); i++)
                ck_assert_int_eq(pthread_create(&t[i], NULL, churn, (void *)(i * 40 + 1)), 0);
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                void *r;

                ck_assert_int_eq(pthread_join(t[i], &r), 0);
                ck_assert_ptr_null(r);
        }
        ck_assert_uint_eq(secmem_mapped_bytes(), 0);
}
END_TEST

static Suite *secmem_suite(void) {
        Suite *s = suite_create("secmem");

        suite_add_case(s, NULL, test_alloc_zeroed_aligned);
        suite_add_case(s, NULL, test_locked_and_undumpable);
        suite_add_case(s, NULL, test_free_wipes);
        suite_add_case(s, NULL, test_wipe_on_fork);
        suite_add_case(s, NULL, test_guard_pages);
        suite_add_case(s, NULL, test_large_and_reuse);
        suite_add_case(s, NULL, test_cap);
        suite_add_case(s, NULL, test_fail_closed_without_mlock);
        suite_add_case(s, NULL, test_cap_below_default_memlock);
        suite_add_case(s, NULL, test_bad_free_aborts);
        suite_add_case(s, NULL, test_harden_process);
        suite_add_case(s, NULL, test_secbuf);
        suite_add_case(s, NULL, test_threads);
        return s;
}

int main(void) {
        return check_run(secmem_suite());
}
