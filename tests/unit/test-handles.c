/* Tests for daemon/handles: the snapshot stays as granted whatever happens to the file, its
 * SHA-256, ids, labels, expiry (on lookup and by the loop's timer), the caps, revocation, and
 * the fresh read-only open each run gets. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check-run.h"
#include "fd-util.h"
#include "handles.h"
#include "codec.h"
#include "macro.h"

#define SHA256_ABC   "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define SHA256_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* A temporary regular file holding len bytes of buf; its path in path (64 bytes). */
static int tmpfile_with(const void *buf, size_t len, char path[64]) {
        const char *base = getenv("TMPDIR");
        int fd;

        snprintf(path, 64, "%s/test-handles-XXXXXX", base ? base : "/tmp");
        fd = mkstemp(path);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(loop_write(fd, buf, len), 0);
        return fd;
}

/* A grant of fd to agent: 1 MiB at most, a budget of 8, no label, no expiry. */
#define SPEC(fd_, agent_)                                                                          \
        (&(HandleSpec){.fd = (fd_), .max_bytes = 1024 * 1024, .agent = (agent_), .budget = 8})

static void assert_reads(int fd, const char *want) {
        char buf[256] = "";
        ssize_t n = loop_read(fd, buf, sizeof(buf) - 1);

        ck_assert_int_eq(n, (ssize_t)strlen(want));
        ck_assert_mem_eq(buf, want, strlen(want));
}

START_TEST(test_snapshot_immutable) {
        _cleanup_(handles_freep) Handles *hs = NULL;
        char path[64];
        _cleanup_close_ int fd = tmpfile_with("original bytes", 14, path), run = -1, rw = -1;
        const Handle *h;
        struct stat st;
        char proc[64];
        int seals;

        ck_assert_int_eq(handles_new(NULL, NULL, NULL, &hs), 0);
        /* The offset of the human's fd does not matter: the grant reads from the start. */
        ck_assert_int_eq(handles_grant(hs, SPEC(fd, 61001), &h), 0);
        ck_assert_uint_eq(h->bytes, 14);

        /* The file changes in every way after the grant: the snapshot does not. */
        ck_assert_int_eq(pwrite(fd, "CHANGED", 7, 0), 7);
        ck_assert_int_eq(ftruncate(fd, 3), 0);
        ck_assert_int_eq(unlink(path), 0);
        run = handle_open_for_run(h);
        ck_assert_int_ge(run, 0);
        assert_reads(run, "original bytes");

        seals = fcntl(h->memfd, F_GET_SEALS);
        ck_assert_int_ge(seals, 0);
        ck_assert_int_eq(seals & MEMFD_SEALS_IMMUTABLE, MEMFD_SEALS_IMMUTABLE);
        /* Not even a writable reopen through /proc (what a plugin could try on its fd 3) can
         * change it: the seals refuse the write, the growth and the shrink. */
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", run);
        rw = open(proc, O_RDWR | O_CLOEXEC);
        if (rw >= 0) {
                ck_assert_int_lt(pwrite(rw, "x", 1, 0), 0);
                ck_assert_int_eq(errno, EPERM);
                ck_assert_int_lt(ftruncate(rw, 0), 0);
                ck_assert_int_lt(ftruncate(rw, 100), 0);
        }
        ck_assert_int_lt(fcntl(h->memfd, F_ADD_SEALS, F_SEAL_WRITE), 0);
        safe_close(run);
        run = handle_open_for_run(h);
        assert_reads(run, "original bytes");
        /* Never executable, and it cannot be made so. */
        ck_assert_int_eq(fstat(h->memfd, &st), 0);
        ck_assert_int_eq(st.st_mode & 0111, 0);
        ck_assert_int_lt(fchmod(h->memfd, 0755), 0);
}
END_TEST

START_TEST(test_sha256) {
        _cleanup_(handles_freep) Handles *hs = NULL;
        char path[64];
        _cleanup_close_ int abc = tmpfile_with("abc", 3, path), empty = -1, big = -1;
        _cleanup_free_ uint8_t *buf = NULL;
        const size_t big_len = 300 * 1024 + 17; /* several hashing chunks and a partial one */
        uint8_t d[32];
        char hex[65];
        const Handle *h;

        unlink(path);
        empty = tmpfile_with("", 0, path);
        unlink(path);
        buf = malloc(big_len);
        ck_assert_ptr_nonnull(buf);
        for (size_t i = 0; i < big_len; i++)
                buf[i] = (uint8_t)(i * 7 + i / 251);
        big = tmpfile_with(buf, big_len, path);
        unlink(path);

        ck_assert_int_eq(handles_new(NULL, NULL, NULL, &hs), 0);
        ck_assert_int_eq(handles_grant(hs, SPEC(abc, 61001), &h), 0);
        ck_assert_str_eq(h->sha256, SHA256_ABC);
        ck_assert_int_eq(handles_grant(hs, SPEC(empty, 61001), &h), 0);
        ck_assert_str_eq(h->sha256, SHA256_EMPTY);
        ck_assert_uint_eq(h->bytes, 0);
        ck_assert_int_eq(handles_grant(hs, SPEC(big, 61001), &h), 0);
        sha256(buf, big_len, d);
        hex_encode(d, 32, hex);
        ck_assert_str_eq(h->sha256, hex);
        ck_assert_mem_eq(h->digest, d, 32);
        ck_assert_uint_eq(h->bytes, big_len);
}
END_TEST

START_TEST(test_ids) {
        _cleanup_(handles_freep) Handles *hs = NULL;
        char path[64];
        _cleanup_close_ int fd = tmpfile_with("x", 1, path);
        const Handle *h;

        unlink(path);
        ck_assert_int_eq(handles_new(NULL, NULL, NULL, &hs), 0);
        for (int i = 0; i < 200; i++)
                ck_assert_int_eq(handles_grant(hs, SPEC(fd, 61001 + i % 4), &h), 0);
        ck_assert_uint_eq(handles_n(hs), 200);
        for (size_t i = 0; i < 200; i++) {
                const Handle *a = handles_at(hs, i);

                ck_assert(handle_id_valid(a->id));
                ck_assert_uint_eq(strlen(a->id), 34);
                ck_assert_ptr_eq(handles_get(hs, a->id), a);
                for (size_t k = 0; k < i; k++)
                        ck_assert_str_ne(handles_at(hs, k)->id, a->id);
        }
        ck_assert_ptr_null(handles_at(hs, 200));

        ck_assert(!handle_id_valid(NULL));
        ck_assert(!handle_id_valid(""));
        ck_assert(!handle_id_valid("h-"));
        ck_assert(!handle_id_valid("h-0123456789abcdef0123456789abcde"));   /* 31 digits */
        ck_assert(!handle_id_valid("h-0123456789abcdef0123456789abcdef0")); /* 33 */
        ck_assert(!handle_id_valid("h-0123456789ABCDEF0123456789abcdef"));  /* upper case */
        ck_assert(!handle_id_valid("x-0123456789abcdef0123456789abcdef"));
        ck_assert(!handle_id_valid("h-0123456789abcdef0123456789abcdeg"));
        ck_assert(handle_id_valid("h-0123456789abcdef0123456789abcdef"));
        /* A well-formed id nobody was given. */
        ck_assert_ptr_null(handles_get(hs, "h-0123456789abcdef0123456789abcdef"));
        ck_assert_ptr_null(handles_get(hs, "../../etc/passwd"));
}
END_TEST

START_TEST(test_agents) {
        _cleanup_(handles_freep) Handles *hs = NULL;
        char path[64];
        _cleanup_close_ int fd = tmpfile_with("x", 1, path);
        const Handle *h;

        unlink(path);
        ck_assert_int_eq(handles_new(NULL, NULL, NULL, &hs), 0);
        ck_assert_int_eq(handles_grant(hs, SPEC(fd, 61001), &h), 0);
        ck_assert_ptr_eq(handles_get_for_agent(hs, h->id, 61001), h);
        /* Another agent gets exactly what a handle that does not exist gets. */
        ck_assert_ptr_null(handles_get_for_agent(hs, h->id, 61004));
        ck_assert_ptr_null(handles_get_for_agent(hs, "h-00000000000000000000000000000000", 61001));
        ck_assert_uint_eq(handles_n_agent(hs, 61001), 1);
        ck_assert_uint_eq(handles_n_agent(hs, 61004), 0);
}
END_TEST

static unsigned expired_calls;
static char expired_id[HANDLE_ID_LEN + 1];

static void on_expired(const Handle *h, void *userdata) {
        expired_calls++;
        snprintf(expired_id, sizeof(expired_id), "%s", h->id);
        ck_assert_ptr_eq(userdata, &expired_calls);
}

START_TEST(test_expiry_on_lookup) {
        _cleanup_(handles_freep) Handles *hs = NULL;
        char path[64], id[HANDLE_ID_LEN + 1];
        _cleanup_close_ int fd = tmpfile_with("x", 1, path);
        HandleSpec s = *SPEC(fd, 61001);
        const Handle *h, *forever;

        unlink(path);
        expired_calls = 0;
        ck_assert_int_eq(handles_new(NULL, on_expired, &expired_calls, &hs), 0);
        /* An expiry in the past is refused outright. */
        s.expires_usec = handles_now_usec() - 1;
        ck_assert_int_eq(handles_grant(hs, &s, &h), -EINVAL);
        ck_assert_int_eq(handles_grant(hs, SPEC(fd, 61001), &forever), 0);
        s.expires_usec = handles_now_usec() + 150 * 1000;
        ck_assert_int_eq(handles_grant(hs, &s, &h), 0);
        snprintf(id, sizeof(id), "%s", h->id);
        ck_assert_ptr_eq(handles_get(hs, id), h);
        ck_assert_uint_eq(handles_n(hs), 2);
        usleep(200 * 1000);
        /* No timer here: the lookup itself removes it, and says so once. */
        ck_assert_ptr_null(handles_get(hs, id));
        ck_assert_uint_eq(expired_calls, 1);
        ck_assert_str_eq(expired_id, id);
        ck_assert_uint_eq(handles_n(hs), 1);
        ck_assert_ptr_eq(handles_at(hs, 0), forever);
        ck_assert_int_eq(handles_revoke(hs, id), -ENOENT);
        ck_assert_uint_eq(handles_expire(hs, UINT64_MAX - 1), 0);
        ck_assert_uint_eq(expired_calls, 1);
}
END_TEST

START_TEST(test_expiry_timer) {
        _cleanup_(handles_freep) Handles *hs = NULL;
        sd_event *e = NULL;
        char path[64];
        _cleanup_close_ int fd = tmpfile_with("x", 1, path);
        HandleSpec s = *SPEC(fd, 61001);
        const Handle *h;
        uint64_t deadline;

        unlink(path);
        expired_calls = 0;
        ck_assert_int_ge(sd_event_new(&e), 0);
        ck_assert_int_eq(handles_new(e, on_expired, &expired_calls, &hs), 0);
        s.expires_usec = handles_now_usec() + 300 * 1000;
        ck_assert_int_eq(handles_grant(hs, &s, &h), 0);
        s.expires_usec = handles_now_usec() + 100 * 1000;
        ck_assert_int_eq(handles_grant(hs, &s, &h), 0);
        /* Nobody looks the handles up: the loop's timer alone removes both, earliest first. */
        deadline = handles_now_usec() + 3 * 1000 * 1000;
        while (expired_calls < 2 && handles_now_usec() < deadline)
                ck_assert_int_ge(sd_event_run(e, 100 * 1000), 0);
        ck_assert_uint_eq(expired_calls, 2);
        hs = handles_free(hs);
        sd_event_unref(e);
}
END_TEST

START_TEST(test_caps) {
        _cleanup_(handles_freep) Handles *hs = NULL;
        char path[64];
        _cleanup_close_ int fd = tmpfile_with("x", 1, path);
        struct rlimit rl;
        const Handle *h;

        unlink(path);
        /* Each handle holds a memfd: the test needs more than the usual 1024 fds. */
        ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
        if (rl.rlim_cur < 4096) {
                rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
                ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
        }
        ck_assert_uint_ge(rl.rlim_cur, HANDLES_MAX + 64);

        ck_assert_int_eq(handles_new(NULL, NULL, NULL, &hs), 0);
        for (int i = 0; i < HANDLES_PER_AGENT_MAX; i++)
                ck_assert_int_eq(handles_grant(hs, SPEC(fd, 61001), &h), 0);
        ck_assert_int_eq(handles_grant(hs, SPEC(fd, 61001), &h), -EUSERS);
        /* One agent's cap leaves the others theirs. */
        for (uid_t a = 61002; handles_n(hs) < HANDLES_MAX; a++)
                for (int i = 0; i < HANDLES_PER_AGENT_MAX && handles_n(hs) < HANDLES_MAX; i++)
                        ck_assert_int_eq(handles_grant(hs, SPEC(fd, a), &h), 0);
        ck_assert_int_eq(handles_grant(hs, SPEC(fd, 70000), &h), -EMFILE);
        /* A revocation makes room again. */
        ck_assert_int_eq(handles_revoke(hs, handles_at(hs, 0)->id), 0);
        ck_assert_int_eq(handles_grant(hs, SPEC(fd, 61001), &h), 0);
        ck_assert_uint_eq(handles_n(hs), HANDLES_MAX);
}
END_TEST

static const char *const labels_valid[] = {
        "tax return 2025",
        "Steuererklärung — Entwurf",
        "契約書",
        "emoji 🔒 ok",
        "1234567890123456789012345678901234567890123456789012345678901234", /* 64 bytes */
};

static const char *const labels_invalid[] = {
        "",
        "12345678901234567890123456789012345678901234567890123456789012345", /* 65 bytes */
        "line\nbreak",
        "tab\tinside",
        "carriage\rreturn",
        "escape \x1b[31m red",
        "del\x7f",
        "nel \xc2\x85",              /* U+0085, a C1 control */
        "csi \xc2\x9b",              /* U+009B */
        "rlo \xe2\x80\xae txt.exe",  /* U+202E RIGHT-TO-LEFT OVERRIDE */
        "lre \xe2\x80\xaa",          /* U+202A */
        "isolate \xe2\x81\xa6",      /* U+2066 */
        "pdi \xe2\x81\xa9",          /* U+2069 */
        "rlm \xe2\x80\x8f",          /* U+200F */
        "lrm \xe2\x80\x8e",          /* U+200E */
        "alm \xd8\x9c",              /* U+061C */
        "ls \xe2\x80\xa8",           /* U+2028 */
        "bom \xef\xbb\xbf",          /* U+FEFF */
        "bad \xff",                  /* not UTF-8 */
        "overlong \xc0\xaf",         /* '/' in two bytes */
        "overlong \xe0\x80\xaf",     /* '/' in three bytes */
        "surrogate \xed\xa0\x80",    /* U+D800 */
        "too high \xf4\x90\x80\x80", /* U+110000 */
        "cut \xe2\x82",              /* a truncated sequence */
        "stray \x80 continuation",
};

START_TEST(test_labels) {
        _cleanup_(handles_freep) Handles *hs = NULL;
        char path[64];
        _cleanup_close_ int fd = tmpfile_with("x", 1, path);
        HandleSpec s = *SPEC(fd, 61001);
        const Handle *h;

        unlink(path);
        ck_assert_int_eq(handles_new(NULL, NULL, NULL, &hs), 0);
        for (size_t i = 0; i < ELEMENTSOF(labels_valid); i++) {
                ck_assert_msg(handle_label_valid(labels_valid[i], strlen(labels_valid[i])),
                              "valid label %zu refused", i);
                s.label = labels_valid[i];
                ck_assert_int_eq(handles_grant(hs, &s, &h), 0);
                ck_assert_str_eq(h->label, labels_valid[i]);
        }
        for (size_t i = 0; i < ELEMENTSOF(labels_invalid); i++) {
                ck_assert_msg(!handle_label_valid(labels_invalid[i], strlen(labels_invalid[i])),
                              "invalid label %zu accepted", i);
                s.label = labels_invalid[i];
                ck_assert_int_eq(handles_grant(hs, &s, &h), -EINVAL);
        }
        /* A NUL inside the bytes is refused too (the length says there is more). */
        ck_assert(!handle_label_valid("a\0b", 3));
        ck_assert(!handle_label_valid(NULL, 0));
        s.label = NULL;
        ck_assert_int_eq(handles_grant(hs, &s, &h), 0);
        ck_assert_ptr_null(h->label);
        ck_assert_uint_eq(handles_n(hs), ELEMENTSOF(labels_valid) + 1);
}
END_TEST

START_TEST(test_reopen_own_offset) {
        _cleanup_(handles_freep) Handles *hs = NULL;
        char path[64], buf[8];
        _cleanup_close_ int fd = tmpfile_with("0123456789", 10, path), a = -1, b = -1;
        const Handle *h;
        int fl;

        unlink(path);
        ck_assert_int_eq(handles_new(NULL, NULL, NULL, &hs), 0);
        ck_assert_int_eq(handles_grant(hs, SPEC(fd, 61001), &h), 0);
        a = handle_open_for_run(h);
        b = handle_open_for_run(h);
        ck_assert_int_ge(a, 0);
        ck_assert_int_ge(b, 0);
        ck_assert_int_eq(read(a, buf, 4), 4);
        ck_assert_mem_eq(buf, "0123", 4);
        /* b starts at 0 whatever a did, and the handle's own fd stays at 0 too. */
        ck_assert_int_eq(read(b, buf, 2), 2);
        ck_assert_mem_eq(buf, "01", 2);
        ck_assert_int_eq(read(a, buf, 2), 2);
        ck_assert_mem_eq(buf, "45", 2);
        ck_assert_int_eq(lseek(h->memfd, 0, SEEK_CUR), 0);
        fl = fcntl(a, F_GETFL);
        ck_assert_int_eq(fl & O_ACCMODE, O_RDONLY);
        ck_assert_int_ne(fcntl(a, F_GETFD) & FD_CLOEXEC, 0);
        ck_assert_int_lt(write(a, "x", 1), 0);
        ck_assert_int_eq(errno, EBADF);

        /* A revocation takes the handle away; a run that holds its fd finishes on it. */
        ck_assert_int_eq(handles_revoke(hs, h->id), 0);
        ck_assert_int_eq(handles_n(hs), 0);
        ck_assert_int_eq(read(b, buf, 3), 3);
        ck_assert_mem_eq(buf, "234", 3);
        ck_assert_int_eq(handle_open_for_run(NULL), -EBADF);
}
END_TEST

START_TEST(test_refused_grants) {
        _cleanup_(handles_freep) Handles *hs = NULL;
        char path[64];
        _cleanup_close_ int fd = tmpfile_with("0123456789", 10, path), wo = -1, dfd = -1, pfd = -1;
        HandleSpec s = *SPEC(fd, 61001);
        int pipefd[2];
        const Handle *h = NULL;

        ck_assert_int_eq(handles_new(NULL, NULL, NULL, &hs), 0);
        s.max_bytes = 9;
        ck_assert_int_eq(handles_grant(hs, &s, &h), -EFBIG);
        s.max_bytes = 10;
        ck_assert_int_eq(handles_grant(hs, &s, &h), 0);
        s.budget = 0;
        ck_assert_int_eq(handles_grant(hs, &s, &h), -EINVAL);

        wo = open(path, O_WRONLY | O_CLOEXEC);
        ck_assert_int_ge(wo, 0);
        ck_assert_int_eq(handles_grant(hs, SPEC(wo, 61001), &h), -EINVAL);
        pfd = open(path, O_PATH | O_CLOEXEC);
        ck_assert_int_ge(pfd, 0);
        ck_assert_int_eq(handles_grant(hs, SPEC(pfd, 61001), &h), -EINVAL);
        unlink(path);

        dfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_eq(handles_grant(hs, SPEC(dfd, 61001), &h), -EINVAL);
        ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
        ck_assert_int_eq(handles_grant(hs, SPEC(pipefd[0], 61001), &h), -EINVAL);
        close(pipefd[0]);
        close(pipefd[1]);
        ck_assert_int_eq(handles_grant(hs, SPEC(-1, 61001), &h), -EINVAL);
        ck_assert_uint_eq(handles_n(hs), 1);
}
END_TEST

static Suite *handles_suite(void) {
        Suite *s = suite_create("handles");
        const CaseOptions each = {.timeout = 60};

        suite_add_case(s, &each, test_snapshot_immutable);
        suite_add_case(s, &each, test_sha256);
        suite_add_case(s, &each, test_ids);
        suite_add_case(s, &each, test_agents);
        suite_add_case(s, &each, test_expiry_on_lookup);
        suite_add_case(s, &each, test_expiry_timer);
        suite_add_case(s, &each, test_caps);
        suite_add_case(s, &each, test_labels);
        suite_add_case(s, &each, test_reopen_own_offset);
        suite_add_case(s, &each, test_refused_grants);
        return s;
}

int main(void) {
        return check_run(handles_suite());
}
