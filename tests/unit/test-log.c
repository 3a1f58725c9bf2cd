/* Tests for daemon/log: the stderr form, its escaping, the caps, the target choice, the journal. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "check-run.h"
#include "log.h"
#include "macro.h"

#define JOURNAL_SOCKET "/run/systemd/journal/socket"

/* Points fd 2 at a fresh memfd and chooses the stderr target; returns the memfd. */
static int capture_stderr(void) {
        int fd = memfd_create("stderr", MFD_CLOEXEC);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(dup2(fd, STDERR_FILENO), STDERR_FILENO);
        unsetenv("JOURNAL_STREAM");
        log_open(false);
        ck_assert_int_eq(log_get_target(), LOG_TARGET_STDERR);
        return fd;
}

/* Empties the captured stderr; fd 2 shares the memfd's offset, so that goes back to 0 too. */
static void reset(int fd) {
        ck_assert_int_eq(ftruncate(fd, 0), 0);
        ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
}

/* Everything written to the captured stderr so far, as a new string. */
static char *captured(int fd) {
        static char buf[65536];
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

        ck_assert_int_ge(n, 0);
        buf[n] = 0;
        return buf;
}

START_TEST(test_stderr_priority_prefix) {
        int fd = capture_stderr();

        ck_assert_int_eq(log_info(LOCKD_MESSAGE_STARTED, "started with %d sockets", 2), 0);
        ck_assert_int_eq(log_error(NULL, "bad"), 0);
        ck_assert_str_eq(captured(fd), "<6>started with 2 sockets\n<3>bad\n");
}
END_TEST

START_TEST(test_stderr_fields) {
        int fd = capture_stderr();

        log_struct(LOG_WARNING, LOCKD_MESSAGE_PLUGIN_SKIPPED,
                   LOG_FIELDS(LOG_FIELD("PLUGIN", "pdf.contains"), LOG_FIELD_U64("EXIT", 7),
                              LOG_FIELD("EMPTY", "")),
                   "skipped");
        ck_assert_str_eq(
                captured(fd),
                "<4>skipped LOCKD_PLUGIN=\"pdf.contains\" LOCKD_EXIT=\"7\" LOCKD_EMPTY=\"\"\n");
}
END_TEST

START_TEST(test_message_cannot_forge_a_line) {
        int fd = capture_stderr();

        log_info(NULL, "label %s end", "x\n<0>forged\r\x1b[2J");
        ck_assert_str_eq(captured(fd), "<6>label x\\x0a<0>forged\\x0d\\x1b[2J end\n");
}
END_TEST

START_TEST(test_value_cannot_forge_a_field) {
        int fd = capture_stderr();

        log_struct(LOG_INFO, NULL,
                   LOG_FIELDS(LOG_FIELD("LABEL", "a\" LOCKD_RESULT=\"1"),
                              LOG_FIELD("PATH", "back\\slash\ttab\n")),
                   "m");
        ck_assert_str_eq(captured(fd), "<6>m LOCKD_LABEL=\"a\\\" LOCKD_RESULT=\\\"1\" "
                                       "LOCKD_PATH=\"back\\\\slash\\x09tab\\x0a\"\n");
}
END_TEST

START_TEST(test_utf8) {
        int fd = capture_stderr();

        /* Kept: é, €, 😀. Escaped: U+0085 (C1), U+202E (bidi override), U+2028, a stray 0xff,
         * an overlong '/', a surrogate, a sequence cut short at the end. */
        log_info(NULL, "%s",
                 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80|\xc2\x85|\xe2\x80\xae|"
                 "\xe2\x80\xa8|\xff|\xc0\xaf|\xed\xa0\x80|\xe2\x82");
        ck_assert_str_eq(captured(fd),
                         "<6>caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80|\\xc2\\x85|\\xe2\\x80\\xae|"
                         "\\xe2\\x80\\xa8|\\xff|\\xc0\\xaf|\\xed\\xa0\\x80|\\xe2\\x82\n");
}
END_TEST

START_TEST(test_bad_fields_dropped) {
        int fd = capture_stderr();
        const LogField fields[] = {
                {.key = "MESSAGE", .value = "forged"},
                {.key = "PRIORITY", .value = "0"},
                {.key = "_PID", .value = "1"},
                {.key = "LOCKD_", .value = "x"},
                {.key = "LOCKD_lower", .value = "x"},
                {.key = "LOCKD_A=B", .value = "x"},
                {.key = "LOCKD_"
                        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                 .value = "x"},
                {.key = "LOCKD_NULL", .value = NULL},
                {.key = "LOCKD_OK", .value = "y"},
                {.key = NULL},
        };

        log_struct(LOG_INFO, "not-an-id", fields, "m");
        ck_assert_str_eq(captured(fd), "<6>m LOCKD_OK=\"y\"\n");
}
END_TEST

START_TEST(test_errno_return_and_percent_m) {
        int fd = capture_stderr();
        char want[256];

        errno = ENOENT;
        ck_assert_int_eq(log_error_errno(-EACCES, NULL, "open: %m"), -EACCES);
        ck_assert_int_eq(errno, ENOENT);
        ck_assert_int_eq(log_warning_errno(EACCES, NULL, "again: %m"), -EACCES);
        ck_assert_int_eq(errno, ENOENT);
        snprintf(want, sizeof(want), "<3>open: %s\n<4>again: %s\n", strerror(EACCES),
                 strerror(EACCES));
        ck_assert_str_eq(captured(fd), want);
}
END_TEST

START_TEST(test_max_level) {
        int fd = capture_stderr();

        ck_assert_int_eq(log_get_max_level(), LOG_INFO);
        ck_assert_int_eq(log_debug_errno(-EIO, NULL, "hidden"), -EIO);
        log_set_max_level(LOG_DEBUG);
        log_debug(NULL, "shown");
        log_set_max_level(LOG_ERR);
        log_warning(NULL, "hidden");
        log_set_max_level(99);
        ck_assert_int_eq(log_get_max_level(), LOG_DEBUG);
        ck_assert_str_eq(captured(fd), "<7>shown\n");
}
END_TEST

START_TEST(test_caps) {
        int fd = capture_stderr();
        char big[5000], want_value[LOG_VALUE_MAX + 1];
        LogField many[LOG_FIELDS_MAX + 9];
        const char *out, *q;
        size_t count = 0;

        memset(big, 'a', sizeof(big) - 1);
        big[sizeof(big) - 1] = 0;
        log_info(NULL, "%s", big);
        out = captured(fd);
        ck_assert_uint_eq(strlen(out), 3 + (LOG_MESSAGE_MAX - 1) + 1);

        reset(fd);
        log_struct(LOG_INFO, NULL, LOG_FIELDS(LOG_FIELD("BIG", big)), "m");
        memset(want_value, 'a', LOG_VALUE_MAX);
        want_value[LOG_VALUE_MAX] = 0;
        out = captured(fd);
        q = strstr(out, "LOCKD_BIG=\"");
        ck_assert_ptr_nonnull(q);
        ck_assert_int_eq(strncmp(q + 11, want_value, LOG_VALUE_MAX), 0);
        ck_assert_str_eq(q + 11 + LOG_VALUE_MAX, "\"\n");

        reset(fd);
        for (size_t i = 0; i < ELEMENTSOF(many) - 1; i++)
                many[i] = LOG_FIELD("N", "v");
        many[ELEMENTSOF(many) - 1] = (LogField){.key = NULL};
        log_struct(LOG_INFO, NULL, many, "m");
        for (q = captured(fd); (q = strstr(q, " LOCKD_N=")); q++)
                count++;
        ck_assert_uint_eq(count, LOG_FIELDS_MAX);

        /* Fields whose escaped form does not fit the line are dropped whole, never cut. */
        reset(fd);
        memset(big, '\n', LOG_VALUE_MAX);
        big[LOG_VALUE_MAX] = 0;
        for (size_t i = 0; i < ELEMENTSOF(many) - 1; i++)
                many[i] = LOG_FIELD("NL", big);
        log_struct(LOG_INFO, NULL, many, "m");
        out = captured(fd);
        ck_assert_uint_le(strlen(out), 16384 + 1);
        ck_assert_str_eq(out + strlen(out) - 2, "\"\n");
        ck_assert_ptr_eq(strchr(out, '\n'), out + strlen(out) - 1);
}
END_TEST

START_TEST(test_journal_stream_detection) {
        int fd = memfd_create("stream", MFD_CLOEXEC);
        struct stat st;
        char v[64];

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(dup2(fd, STDERR_FILENO), STDERR_FILENO);
        ck_assert_int_eq(fstat(STDERR_FILENO, &st), 0);

        snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
                 (unsigned long long)st.st_ino);
        setenv("JOURNAL_STREAM", v, 1);
        log_open(false);
        ck_assert_int_eq(log_get_target(), LOG_TARGET_JOURNAL);

        /* The variable outlives the stream: another inode behind fd 2 is not the journal. */
        snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
                 (unsigned long long)st.st_ino + 1);
        setenv("JOURNAL_STREAM", v, 1);
        log_open(false);
        ck_assert_int_eq(log_get_target(), LOG_TARGET_STDERR);

        const char *bad[] = {
                "", ":", "1:", ":1", "a:b", "1:2:3", "-1:2", "1 :2", "99999999999999999999:1"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                setenv("JOURNAL_STREAM", bad[i], 1);
                log_open(false);
                ck_assert_msg(log_get_target() == LOG_TARGET_STDERR, "%s", bad[i]);
        }
        unsetenv("JOURNAL_STREAM");
        log_open(true);
        ck_assert_int_eq(log_get_target(), LOG_TARGET_JOURNAL);
}
END_TEST

/* A private mount namespace with an empty /run, so nothing reaches the host's journal. */
static void private_run(void) {
        ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
        ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
        ck_assert_int_eq(mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"), 0);
}

/* Binds the journal's socket path in the private /run; returns the socket. */
static int journal_socket(void) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX, .sun_path = JOURNAL_SOCKET};
        int s;

        ck_assert_int_eq(mkdir("/run/systemd", 0755), 0);
        ck_assert_int_eq(mkdir("/run/systemd/journal", 0755), 0);
        s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(s, 0);
        ck_assert_int_eq(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
        return s;
}

/*
 * A journal that refuses the entry (here: its socket exists and nobody reads it) sends it to
 * stderr instead. (No journal at all is not such a case: libsystemd drops entries silently then.)
 */
START_TEST(test_journal_refusing_falls_back) {
        int fd;

        private_run();
        safe_close(journal_socket());
        fd = capture_stderr();
        log_open(true);
        ck_assert_int_eq(log_error_errno(-EPIPE, LOCKD_MESSAGE_SCOPE_FAILED, "no journal"), -EPIPE);
        ck_assert_str_eq(captured(fd), "<3>no journal\n");
}
END_TEST

/*
 * Finds KEY in a datagram of journald's native protocol ("KEY=value\n", or "KEY\n", a 64-bit
 * little-endian length, the bytes and "\n"). Returns the value's length, or -1 when absent.
 */
static ssize_t native_field(const char *d, size_t n, const char *key, const char **ret) {
        size_t klen = strlen(key);

        for (size_t i = 0; i < n;) {
                const char *nl = memchr(d + i, '\n', n - i), *eq;
                size_t end;

                ck_assert_ptr_nonnull(nl);
                end = (size_t)(nl - d);
                eq = memchr(d + i, '=', end - i);
                if (eq) {
                        if ((size_t)(eq - d - i) == klen && memcmp(d + i, key, klen) == 0) {
                                *ret = eq + 1;
                                return nl - eq - 1;
                        }
                        i = end + 1;
                        continue;
                }
                uint64_t len = 0;
                ck_assert_uint_le(end + 1 + 8, n);
                for (int b = 7; b >= 0; b--)
                        len = len << 8 | (uint8_t)d[end + 1 + b];
                ck_assert_uint_le(end + 9 + len + 1, n);
                if (end - i == klen && memcmp(d + i, key, klen) == 0) {
                        *ret = d + end + 9;
                        return (ssize_t)len;
                }
                i = end + 9 + len + 1;
        }
        return -1;
}

START_TEST(test_journal_entry) {
        static char d[65536];
        _cleanup_close_ int s = -1;
        const char *v;
        ssize_t n;

        private_run();
        s = journal_socket();

        log_open(true);
        ck_assert_int_eq(log_struct_errno(LOG_NOTICE, -ENOENT, LOCKD_MESSAGE_RUN_FINISHED,
                                          LOG_FIELDS(LOG_FIELD("TICKET", "t1"),
                                                     LOG_FIELD("LABEL", "two\nlines"),
                                                     {.key = "PRIORITY", .value = "0"}),
                                          "run %s: %m", "t1"),
                         -ENOENT);
        n = recv(s, d, sizeof(d), MSG_DONTWAIT);
        ck_assert_int_gt(n, 0);

#define FIELD_EQ(key, want)                                                                        \
        do {                                                                                       \
                ssize_t l = native_field(d, (size_t)n, key, &v);                                   \
                ck_assert_msg(l == (ssize_t)strlen(want) && memcmp(v, want, (size_t)l) == 0, "%s", \
                              key);                                                                \
        } while (0)
        FIELD_EQ("PRIORITY", "5");
        FIELD_EQ("MESSAGE_ID", LOCKD_MESSAGE_RUN_FINISHED);
        FIELD_EQ("ERRNO", "2");
        FIELD_EQ("SYSLOG_IDENTIFIER", "lockd");
        FIELD_EQ("LOCKD_TICKET", "t1");
        /* The journal's protocol is binary-safe: the value arrives unchanged. */
        FIELD_EQ("LOCKD_LABEL", "two\nlines");
        FIELD_EQ("CODE_FILE", __FILE__);
        FIELD_EQ("CODE_FUNC", "test_journal_entry_fn");
        char want[128];
        snprintf(want, sizeof(want), "run t1: %s", strerror(ENOENT));
        FIELD_EQ("MESSAGE", want);
#undef FIELD_EQ
        /* Exactly one PRIORITY: the caller's "PRIORITY" field was dropped. */
        ck_assert_ptr_null(strstr(strstr(d, "PRIORITY=5\n") + 1, "PRIORITY="));
}
END_TEST

static Suite *log_suite(void) {
        Suite *s = suite_create("log");
        const CaseOptions stderr_case = {.tags = "stderr"};

        suite_add_case(s, &stderr_case, test_stderr_priority_prefix);
        suite_add_case(s, &stderr_case, test_stderr_fields);
        suite_add_case(s, &stderr_case, test_message_cannot_forge_a_line);
        suite_add_case(s, &stderr_case, test_value_cannot_forge_a_field);
        suite_add_case(s, &stderr_case, test_utf8);
        suite_add_case(s, &stderr_case, test_bad_fields_dropped);
        suite_add_case(s, &stderr_case, test_errno_return_and_percent_m);
        suite_add_case(s, &stderr_case, test_max_level);
        suite_add_case(s, &stderr_case, test_caps);
        suite_add_case(s, &stderr_case, test_journal_stream_detection);

        /* These need a mount namespace of their own (root), so they never touch a real journal. */
        if (geteuid() == 0) {
                const CaseOptions journal_case = {.tags = "journal"};

                suite_add_case(s, &journal_case, test_journal_refusing_falls_back);
                suite_add_case(s, &journal_case, test_journal_entry);
        }
        return s;
}

int main(void) {
        return check_run(log_suite());
}
