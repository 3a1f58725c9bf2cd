/* Tests for daemon/audit: append and verify, every kind of tampering, reopen and torn-write
 * recovery, refused fields, one fsync() per record, failed writes undone, the journal copy. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit.h"
#include "check-run.h"
#include "tmp-dir.h"
#include "fd-util.h"
#include "log.h"
#include "macro.h"

#define ZERO_HASH "0000000000000000000000000000000000000000000000000000000000000000"

/* The audit file's bytes below t. */
static char *read_log(const TmpDir *t, size_t *len) {
        int fd = openat(t->fd, AUDIT_DIR "/" AUDIT_FILE, O_RDONLY | O_CLOEXEC);
        char *buf = NULL;

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(read_full_fd(fd, 64 * MiB, &buf, len), 0);
        close(fd);
        return buf;
}

static void write_log(const TmpDir *t, const char *buf, size_t len) {
        int fd = openat(t->fd, AUDIT_DIR "/" AUDIT_FILE, O_WRONLY | O_TRUNC | O_CLOEXEC);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(loop_write(fd, buf, len), 0);
        close(fd);
}

static off_t log_size(const TmpDir *t) {
        struct stat st;

        ck_assert_int_eq(fstatat(t->fd, AUDIT_DIR "/" AUDIT_FILE, &st, 0), 0);
        return st.st_size;
}

/* Appends a run record of plugin "plugin-<i>"; 0 or the error. */
static int append_run_with(Audit *a, int i, bool sync) {
        char plugin[32], ticket[32];
        AuditRun run = {
                .plugin = plugin,
                .version = "1.2.3",
                .handle_sha256 = "ab54b9b8dc43c1f1f1bbcf8d32b1e8fa1ac8ab56cd8fdb6f71a4a7e0c2c1ef2d",
                .peer_uid = 4242,
                .peer_pid = 777,
                .outcome = i % 3 == 0 ? RUN_PLUGIN_ERROR
                           : i % 2    ? RUN_ONE
                                      : RUN_ZERO,
                .cause = i % 3 == 0 ? "signal:SIGSYS" : NULL,
                .stderr_bytes = (uint64_t)i * 10,
                .cpu_usec = 1500,
                .peak_memory_bytes = i % 4 == 0 ? 0 : 1 << 20, /* 0: unknown */
                .unit = "lockd-run-t1-0.scope",
                .ticket = ticket,
                .step = i,
        };

        snprintf(plugin, sizeof(plugin), "plugin-%d", i);
        snprintf(ticket, sizeof(ticket), "t%d", i);
        return sync ? audit_append_run(a, &run) : audit_append_run_nosync(a, &run);
}

static int append_run(Audit *a, int i) {
        return append_run_with(a, i, true);
}

static int append_run_nosync(Audit *a, int i) {
        return append_run_with(a, i, false);
}

/* A fresh log of n run records below t; returns the chain head. */
static void make_log(const TmpDir *t, int n, char head[static AUDIT_HASH_HEX + 1]) {
        Audit *a = NULL;

        ck_assert_int_eq(audit_open(t->fd, &a), 0);
        for (int i = 1; i <= n; i++)
                ck_assert_int_eq(append_run(a, i), 0);
        ck_assert_uint_eq(audit_get_seq(a), (uint64_t)n);
        memcpy(head, audit_get_head(a), AUDIT_HASH_HEX + 1);
        audit_close(a);
}

/* A log split into lines, each keeping its newline, for tampering. */
typedef struct Lines {
        char *v[64];
        size_t n;
} Lines;

static void lines_split(const char *buf, size_t len, Lines *l) {
        size_t off = 0;

        l->n = 0;
        while (off < len) {
                const char *nl = memchr(buf + off, '\n', len - off);
                size_t n = nl ? (size_t)(nl - (buf + off)) + 1 : len - off;

                ck_assert_uint_lt(l->n, ELEMENTSOF(l->v));
                l->v[l->n] = strndup(buf + off, n);
                ck_assert_ptr_nonnull(l->v[l->n]);
                l->n++;
                off += n;
        }
}

static char *lines_join(const Lines *l, size_t *len) {
        size_t n = 0;
        char *buf;

        for (size_t i = 0; i < l->n; i++)
                n += strlen(l->v[i]);
        buf = malloc(n + 1);
        ck_assert_ptr_nonnull(buf);
        *len = 0;
        for (size_t i = 0; i < l->n; i++) {
                memcpy(buf + *len, l->v[i], strlen(l->v[i]));
                *len += strlen(l->v[i]);
        }
        buf[*len] = 0;
        return buf;
}

static void lines_free(Lines *l) {
        for (size_t i = 0; i < l->n; i++)
                free(l->v[i]);
        l->n = 0;
}

static void lines_delete(Lines *l, size_t i) {
        free(l->v[i]);
        memmove(l->v + i, l->v + i + 1, (l->n - i - 1) * sizeof(l->v[0]));
        l->n--;
}

static void lines_insert(Lines *l, size_t i, const char *s) {
        ck_assert_uint_lt(l->n, ELEMENTSOF(l->v));
        memmove(l->v + i + 1, l->v + i, (l->n - i) * sizeof(l->v[0]));
        l->v[i] = strdup(s);
        l->n++;
}

/* Verifies l and expects a failure at line with error e; returns the result. */
static AuditVerifyResult expect_bad(const Lines *l, size_t line, AuditVerifyError e) {
        AuditVerifyResult res;
        size_t len;
        char *buf = lines_join(l, &len);

        ck_assert_int_eq(audit_verify_buffer(buf, len, &res), -EBADMSG);
        ck_assert_msg(res.line == line && res.error == e,
                      "expected line %zu: %s, got line %zu: %s: %s", line,
                      audit_verify_error_to_string(e), res.line,
                      audit_verify_error_to_string(res.error), res.message);
        ck_assert(res.message[0] != 0);
        free(buf);
        return res;
}

static void expect_ok(const char *buf, size_t len, size_t n) {
        AuditVerifyResult res;

        ck_assert_int_eq(audit_verify_buffer(buf, len, &res), 0);
        ck_assert_msg(res.error == AUDIT_VERIFY_OK && res.line == 0, "line %zu: %s", res.line,
                      res.message);
        ck_assert_uint_eq(res.n_records, n);
}

/* The canonical line (with newline) of a record with the given keys, for forging tests. */
static char *forge(uint64_t seq, const char *prev, const char *event, const char *key,
                   const char *value) {
        json_t *o = json_pack("{s:I, s:I, s:s, s:s}", "seq", (json_int_t)seq, "time",
                              (json_int_t)1700000000000000, "prev", prev, "event", event);
        char *s, *line;

        ck_assert_ptr_nonnull(o);
        if (key)
                json_object_set_new(o, key, json_string(value));
        s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
        ck_assert_ptr_nonnull(s);
        ck_assert_int_ge(asprintf(&line, "%s\n", s), 0);
        free(s);
        json_decref(o);
        return line;
}

START_TEST(test_append_verify) {
        TmpDir t;
        char head[AUDIT_HASH_HEX + 1];
        AuditVerifyResult res;
        struct stat st;
        size_t len;
        char *buf;
        Lines l;

        tmpdir_new(&t);
        make_log(&t, 20, head);
        buf = read_log(&t, &len);
        ck_assert_int_eq(audit_verify_buffer(buf, len, &res), 0);
        ck_assert_uint_eq(res.n_records, 20);
        ck_assert_uint_eq(res.first_seq, 1);
        ck_assert_uint_eq(res.last_seq, 20);
        ck_assert_str_eq(res.first_prev, ZERO_HASH);
        ck_assert_str_eq(res.head, head);
        ck_assert_str_ne(head, ZERO_HASH);

        /* One canonical line per record, the run's fields beside the record's own. */
        lines_split(buf, len, &l);
        ck_assert_uint_eq(l.n, 20);
#define FIRST_KEYS "{\"cause\":null,\"cpu_usec\":1500,\"event\":\"run\","
        ck_assert(strncmp(l.v[0], FIRST_KEYS, strlen(FIRST_KEYS)) == 0);
        ck_assert_ptr_nonnull(strstr(l.v[0], "\"prev\":\"" ZERO_HASH "\","));
        ck_assert_ptr_nonnull(strstr(l.v[0], ",\"seq\":1,"));
        ck_assert_ptr_nonnull(strstr(l.v[2], "\"cause\":\"signal:SIGSYS\""));
        ck_assert_ptr_nonnull(strstr(l.v[2], "\"outcome\":\"plugin_error\""));
        ck_assert_ptr_nonnull(strstr(l.v[0], "\"outcome\":\"1\""));
        ck_assert_ptr_nonnull(strstr(l.v[1], "\"outcome\":\"0\""));
        /* An unknown peak is null, never a number that is not the plugin's. */
        ck_assert_ptr_nonnull(strstr(l.v[0], "\"peak_memory_bytes\":1048576,"));
        ck_assert_ptr_nonnull(strstr(l.v[3], "\"peak_memory_bytes\":null,"));
        lines_free(&l);

        /* The directory and the file are lockd's alone. */
        ck_assert_int_eq(fstatat(t.fd, AUDIT_DIR, &st, 0), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0700);
        ck_assert_int_eq(fstatat(t.fd, AUDIT_DIR "/" AUDIT_FILE, &st, 0), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0600);

        /* An empty log verifies, with the zero head. */
        ck_assert_int_eq(audit_verify_buffer("", 0, &res), 0);
        ck_assert_uint_eq(res.n_records, 0);
        ck_assert_str_eq(res.head, ZERO_HASH);
        ck_assert_int_eq(audit_verify_buffer(NULL, 0, &res), 0);
        ck_assert_int_eq(audit_verify_buffer(NULL, 1, &res), -EINVAL);
        ck_assert_int_eq(audit_verify_buffer("", 0, NULL), -EINVAL);
        free(buf);
        tmpdir_done(&t);
}
END_TEST

START_TEST(test_tampering) {
        TmpDir t;
        char head[AUDIT_HASH_HEX + 1], *buf, *p;
        AuditVerifyResult res, good;
        size_t len;
        Lines l;

        tmpdir_new(&t);
        make_log(&t, 6, head);
        buf = read_log(&t, &len);
        ck_assert_int_eq(audit_verify_buffer(buf, len, &good), 0);

        /* One byte of a field of record 3 changed: record 4's prev gives it away. */
        lines_split(buf, len, &l);
        p = strstr(l.v[2], "plugin-3");
        ck_assert_ptr_nonnull(p);
        p[7] = '4';
        res = expect_bad(&l, 3, AUDIT_VERIFY_CHANGED);
        ck_assert_uint_eq(res.n_records, 2);
        ck_assert_uint_eq(res.last_seq, 2);
        lines_free(&l);

        /* The same change to a number. */
        lines_split(buf, len, &l);
        p = strstr(l.v[3], "\"cpu_usec\":1500");
        ck_assert_ptr_nonnull(p);
        p[11] = '6';
        expect_bad(&l, 4, AUDIT_VERIFY_CHANGED);
        lines_free(&l);

        /* A change to the last record breaks no prev: only the head shows it (the journal copy
         * carries each record's hash to compare with). */
        lines_split(buf, len, &l);
        p = strstr(l.v[5], "plugin-6");
        p[7] = '7';
        {
                size_t blen;
                char *b = lines_join(&l, &blen);
                ck_assert_int_eq(audit_verify_buffer(b, blen, &res), 0);
                ck_assert_str_ne(res.head, good.head);
                free(b);
        }
        lines_free(&l);

        /* A change that breaks the JSON, or only its canonical spelling. */
        lines_split(buf, len, &l);
        l.v[2][0] = '[';
        expect_bad(&l, 3, AUDIT_VERIFY_JSON);
        lines_free(&l);
        lines_split(buf, len, &l);
        p = strstr(l.v[2], ",\"event\"");
        ck_assert_ptr_nonnull(p);
        {
                char *spaced = NULL;
                ck_assert_int_ge(asprintf(&spaced, "%.*s, %s", (int)(p - l.v[2]), l.v[2], p + 1),
                                 0);
                free(l.v[2]);
                l.v[2] = spaced;
        }
        expect_bad(&l, 3, AUDIT_VERIFY_NOT_CANONICAL);
        lines_free(&l);

        /* A record removed: the first, one in the middle, two in the middle. */
        lines_split(buf, len, &l);
        lines_delete(&l, 0);
        res = expect_bad(&l, 1, AUDIT_VERIFY_REMOVED);
        ck_assert_uint_eq(res.n_records, 0);
        lines_free(&l);
        lines_split(buf, len, &l);
        lines_delete(&l, 2);
        expect_bad(&l, 3, AUDIT_VERIFY_REMOVED);
        lines_free(&l);
        lines_split(buf, len, &l);
        lines_delete(&l, 2);
        lines_delete(&l, 2);
        expect_bad(&l, 3, AUDIT_VERIFY_REMOVED);
        lines_free(&l);

        /* Two records swapped, neighbours or not. */
        lines_split(buf, len, &l);
        p = l.v[2], l.v[2] = l.v[3], l.v[3] = p;
        expect_bad(&l, 3, AUDIT_VERIFY_REORDERED);
        lines_free(&l);
        lines_split(buf, len, &l);
        p = l.v[1], l.v[1] = l.v[4], l.v[4] = p;
        expect_bad(&l, 2, AUDIT_VERIFY_REORDERED);
        lines_free(&l);
        lines_split(buf, len, &l);
        p = l.v[0], l.v[0] = l.v[1], l.v[1] = p;
        expect_bad(&l, 1, AUDIT_VERIFY_REORDERED);
        lines_free(&l);
        /* The last record moved to the start. */
        lines_split(buf, len, &l);
        p = l.v[5];
        memmove(l.v + 1, l.v, 5 * sizeof(l.v[0]));
        l.v[0] = p;
        expect_bad(&l, 1, AUDIT_VERIFY_REORDERED);
        lines_free(&l);

        /* A record duplicated in place, and at the end. */
        lines_split(buf, len, &l);
        lines_insert(&l, 3, l.v[2]);
        expect_bad(&l, 4, AUDIT_VERIFY_DUPLICATED);
        lines_free(&l);
        lines_split(buf, len, &l);
        lines_insert(&l, 6, l.v[5]);
        expect_bad(&l, 7, AUDIT_VERIFY_DUPLICATED);
        lines_free(&l);
        /* An earlier record copied to the end goes back in seq. */
        lines_split(buf, len, &l);
        lines_insert(&l, 6, l.v[1]);
        expect_bad(&l, 7, AUDIT_VERIFY_REORDERED);
        lines_free(&l);

        /* The last line cut short, or only its newline gone. */
        lines_split(buf, len, &l);
        l.v[5][strlen(l.v[5]) - 20] = 0;
        res = expect_bad(&l, 6, AUDIT_VERIFY_TRUNCATED);
        ck_assert_uint_eq(res.n_records, 5);
        lines_free(&l);
        lines_split(buf, len, &l);
        l.v[5][strlen(l.v[5]) - 1] = 0;
        expect_bad(&l, 6, AUDIT_VERIFY_TRUNCATED);
        lines_free(&l);

        /* Garbage appended, with or without a newline; an empty line; a bare object. */
        lines_split(buf, len, &l);
        lines_insert(&l, 6, "garbage\n");
        res = expect_bad(&l, 7, AUDIT_VERIFY_JSON);
        ck_assert_uint_eq(res.n_records, 6);
        ck_assert_str_eq(res.head, good.head);
        lines_free(&l);
        lines_split(buf, len, &l);
        lines_insert(&l, 6, "garbage");
        expect_bad(&l, 7, AUDIT_VERIFY_TRUNCATED);
        lines_free(&l);
        lines_split(buf, len, &l);
        lines_insert(&l, 6, "\n");
        expect_bad(&l, 7, AUDIT_VERIFY_JSON);
        lines_free(&l);
        lines_split(buf, len, &l);
        lines_insert(&l, 6, "{}\n");
        expect_bad(&l, 7, AUDIT_VERIFY_BAD_FIELD);
        lines_free(&l);
        lines_split(buf, len, &l);
        lines_insert(&l, 3, "\r\n");
        expect_bad(&l, 4, AUDIT_VERIFY_JSON);
        lines_free(&l);

        free(buf);
        tmpdir_done(&t);
}
END_TEST

/* Records that chain correctly but that lockd never writes. */
START_TEST(test_forged_records) {
        TmpDir t;
        char head[AUDIT_HASH_HEX + 1], *buf, *line;
        size_t len;
        Lines l;

        tmpdir_new(&t);
        make_log(&t, 3, head);
        buf = read_log(&t, &len);

        /* A detail (or a typed value) must never be in the file, wherever it came from. */
        static const char *const forbidden[] = {"detail", "value", "values", "input", "inputs"};
        for (size_t i = 0; i < ELEMENTSOF(forbidden); i++) {
                lines_split(buf, len, &l);
                line = forge(4, head, "run", forbidden[i], "secret");
                lines_insert(&l, 3, line);
                expect_bad(&l, 4, AUDIT_VERIFY_FORBIDDEN_FIELD);
                free(line);
                lines_free(&l);
        }

        /* An event lockd does not know; names and values it never writes. */
        lines_split(buf, len, &l);
        line = forge(4, head, "exfiltrate", NULL, NULL);
        lines_insert(&l, 3, line);
        expect_bad(&l, 4, AUDIT_VERIFY_UNKNOWN_EVENT);
        free(line);
        lines_free(&l);
        lines_split(buf, len, &l);
        line = forge(4, head, "grant", "Bad-Name", "x");
        lines_insert(&l, 3, line);
        expect_bad(&l, 4, AUDIT_VERIFY_BAD_FIELD);
        free(line);
        lines_free(&l);
        lines_split(buf, len, &l);
        line = forge(4, "ABC", "grant", NULL, NULL);
        lines_insert(&l, 3, line);
        expect_bad(&l, 4, AUDIT_VERIFY_BAD_FIELD);
        free(line);
        lines_free(&l);

        /* The chain's anchor: the first prev is zero, a rotation comes only first. */
        lines_split(buf, len, &l);
        line = forge(4, head, "rotated", NULL, NULL);
        lines_insert(&l, 3, line);
        expect_bad(&l, 4, AUDIT_VERIFY_ANCHOR);
        free(line);
        lines_free(&l);
        {
                Lines one = {};
                line = forge(1, head, "grant", NULL, NULL);
                lines_insert(&one, 0, line);
                expect_bad(&one, 1, AUDIT_VERIFY_ANCHOR);
                free(line);
                lines_free(&one);
        }
        {
                /* A file that continues another chain from its head. */
                AuditVerifyResult res;
                char *rot = forge(4, head, "rotated", NULL, NULL), *next, h[AUDIT_HASH_HEX + 1];
                char *all;

                /* The rotation's own hash is the next prev: take it from a one-line verify. */
                ck_assert_int_eq(audit_verify_buffer(rot, strlen(rot), &res), 0);
                ck_assert_str_eq(res.first_prev, head);
                ck_assert_uint_eq(res.first_seq, 4);
                memcpy(h, res.head, sizeof(h));
                next = forge(5, h, "grant", "handle", "h1");
                ck_assert_int_ge(asprintf(&all, "%s%s", rot, next), 0);
                expect_ok(all, strlen(all), 2);
                free(all);
                /* The same with the wrong seq after the rotation. */
                free(next);
                next = forge(6, h, "grant", "handle", "h1");
                ck_assert_int_ge(asprintf(&all, "%s%s", rot, next), 0);
                ck_assert_int_eq(audit_verify_buffer(all, strlen(all), &res), -EBADMSG);
                ck_assert_int_eq(res.error, AUDIT_VERIFY_REMOVED);
                ck_assert_uint_eq(res.line, 2);
                free(all);
                free(next);
                free(rot);
        }

        /* A line over the cap. */
        {
                AuditVerifyResult res;
                size_t n = AUDIT_LINE_MAX + 2;
                char *big = malloc(n);

                memset(big, ' ', n - 1);
                big[n - 1] = '\n';
                ck_assert_int_eq(audit_verify_buffer(big, n, &res), -EBADMSG);
                ck_assert_int_eq(res.error, AUDIT_VERIFY_TOO_LONG);
                ck_assert_uint_eq(res.line, 1);
                free(big);
        }
        free(buf);
        tmpdir_done(&t);
}
END_TEST

START_TEST(test_refused_fields) {
        static const char *const refused[] = {
                "detail",
                "value",
                "values",
                "input",
                "inputs",
                "seq",
                "time",
                "prev",
                "event",
                "audit_hash",
                "audit_seq",
                "Plugin",
                "a-b",
                "1abc",
                "",
                "_x",
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        };
        TmpDir t;
        Audit *a = NULL;
        json_t *f;
        off_t size;

        tmpdir_new(&t);
        ck_assert_int_eq(audit_open(t.fd, &a), 0);
        ck_assert_int_eq(append_run(a, 1), 0);
        size = log_size(&t);

        for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
                f = json_pack("{s:s}", refused[i], "x");
                ck_assert_int_eq(audit_append(a, AUDIT_GRANT, f), -EINVAL);
                ck_assert_msg(!audit_field_name_allowed(refused[i]), "%s", refused[i]);
                json_decref(f);
                /* Whatever the value's type. */
                f = json_pack("{s:i}", refused[i], 1);
                ck_assert_int_eq(audit_append(a, AUDIT_GRANT, f), -EINVAL);
                json_decref(f);
        }
        ck_assert(audit_field_name_allowed("detail_bytes"));
        ck_assert(audit_field_name_allowed("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));

        /* Values: only scalars, strings capped and without NUL. */
        f = json_pack("{s:{s:s}}", "handle", "detail", "x");
        ck_assert_int_eq(audit_append(a, AUDIT_GRANT, f), -EINVAL);
        json_decref(f);
        f = json_pack("{s:[s]}", "handle", "x");
        ck_assert_int_eq(audit_append(a, AUDIT_GRANT, f), -EINVAL);
        json_decref(f);
        f = json_pack("{s:f}", "handle", 1.5);
        ck_assert_int_eq(audit_append(a, AUDIT_GRANT, f), -EINVAL);
        json_decref(f);
        f = json_object();
        json_object_set_new(f, "handle", json_stringn("a\0b", 3));
        ck_assert_int_eq(audit_append(a, AUDIT_GRANT, f), -EINVAL);
        json_decref(f);
        {
                char *s = malloc(AUDIT_STRING_MAX + 2);
                memset(s, 'x', AUDIT_STRING_MAX + 1);
                s[AUDIT_STRING_MAX + 1] = 0;
                f = json_pack("{s:s}", "handle", s);
                ck_assert_int_eq(audit_append(a, AUDIT_GRANT, f), -EINVAL);
                json_decref(f);
                s[AUDIT_STRING_MAX] = 0;
                f = json_pack("{s:s}", "handle", s);
                ck_assert_int_eq(audit_append(a, AUDIT_GRANT, f), 0);
                json_decref(f);
                free(s);
        }
        size = log_size(&t);

        /* Too many fields; a line over the cap (control bytes take six each once escaped). */
        f = json_object();
        for (int i = 0; i <= AUDIT_FIELDS_MAX; i++) {
                char k[16];
                snprintf(k, sizeof(k), "f%d", i);
                json_object_set_new(f, k, json_integer(i));
        }
        ck_assert_int_eq(audit_append(a, AUDIT_GRANT, f), -EINVAL);
        json_decref(f);
        f = json_object();
        for (int i = 0; i < 4; i++) {
                char k[16], v[AUDIT_STRING_MAX + 1];
                snprintf(k, sizeof(k), "f%d", i);
                memset(v, 1, AUDIT_STRING_MAX);
                v[AUDIT_STRING_MAX] = 0;
                json_object_set_new(f, k, json_string(v));
        }
        ck_assert_int_eq(audit_append(a, AUDIT_GRANT, f), -E2BIG);
        json_decref(f);

        /* Not an object, an event out of range, no log. */
        f = json_string("x");
        ck_assert_int_eq(audit_append(a, AUDIT_GRANT, f), -EINVAL);
        json_decref(f);
        ck_assert_int_eq(audit_append(a, _AUDIT_EVENT_MAX, NULL), -EINVAL);
        ck_assert_int_eq(audit_append(a, (AuditEvent)-1, NULL), -EINVAL);
        ck_assert_int_eq(audit_append(NULL, AUDIT_GRANT, NULL), -EINVAL);
        ck_assert_int_eq(audit_append_run(a, NULL), -EINVAL);

        /* Nothing of that reached the file; the log goes on. */
        ck_assert_int_eq(log_size(&t), size);
        ck_assert_uint_eq(audit_get_seq(a), 2);
        ck_assert_int_eq(audit_append(a, AUDIT_SESSION_END, NULL), 0);
        audit_close(a);
        {
                size_t len;
                char *buf = read_log(&t, &len);
                expect_ok(buf, len, 3);
                free(buf);
        }
        tmpdir_done(&t);
}
END_TEST

START_TEST(test_reopen) {
        TmpDir t;
        char head[AUDIT_HASH_HEX + 1], *buf;
        Audit *a = NULL, *b = NULL;
        size_t len;

        tmpdir_new(&t);
        make_log(&t, 3, head);
        ck_assert_int_eq(audit_open(t.fd, &a), 0);
        ck_assert_uint_eq(audit_get_seq(a), 3);
        ck_assert_str_eq(audit_get_head(a), head);

        /* One writer at a time. */
        ck_assert_int_eq(audit_open(t.fd, &b), -EBUSY);
        ck_assert_ptr_null(b);

        ck_assert_int_eq(append_run(a, 4), 0);
        audit_close(a);
        buf = read_log(&t, &len);
        expect_ok(buf, len, 4);
        free(buf);

        /* A last complete line that is not a record: refused, and nothing is written. */
        buf = read_log(&t, &len);
        buf[len - 2] = 'X'; /* the closing brace */
        write_log(&t, buf, len);
        a = NULL;
        ck_assert_int_eq(audit_open(t.fd, &a), -EBADMSG);
        ck_assert_ptr_null(a);
        ck_assert_int_eq(log_size(&t), (off_t)len);
        free(buf);
        tmpdir_done(&t);
}
END_TEST

START_TEST(test_torn_write) {
        static const char torn[] = "{\"cause\":null,\"cpu_usec\":15";
        TmpDir t;
        char head[AUDIT_HASH_HEX + 1], *buf;
        AuditVerifyResult res;
        Audit *a = NULL;
        json_t *o;
        size_t len;
        Lines l;
        int fd;

        tmpdir_new(&t);
        make_log(&t, 4, head);
        buf = read_log(&t, &len);
        free(buf);

        /* A crash in the middle of a write() leaves a tail without a newline. */
        fd = openat(t.fd, AUDIT_DIR "/" AUDIT_FILE, O_WRONLY | O_APPEND | O_CLOEXEC);
        ck_assert_int_eq(loop_write(fd, torn, strlen(torn)), 0);
        close(fd);
        buf = read_log(&t, &len);
        ck_assert_int_eq(audit_verify_buffer(buf, len, &res), -EBADMSG);
        ck_assert_int_eq(res.error, AUDIT_VERIFY_TRUNCATED);
        ck_assert_uint_eq(res.line, 5);
        free(buf);

        /* Reopening cuts it away and says so in the chain. */
        ck_assert_int_eq(audit_open(t.fd, &a), 0);
        ck_assert_uint_eq(audit_get_seq(a), 5);
        ck_assert_int_eq(append_run(a, 6), 0);
        audit_close(a);
        buf = read_log(&t, &len);
        expect_ok(buf, len, 6);
        lines_split(buf, len, &l);
        o = json_loads(l.v[4], 0, NULL);
        ck_assert_ptr_nonnull(o);
        ck_assert_str_eq(json_string_value(json_object_get(o, "event")), "recovered");
        ck_assert_int_eq(json_integer_value(json_object_get(o, "truncated_bytes")),
                         (json_int_t)strlen(torn));
        ck_assert_str_eq(json_string_value(json_object_get(o, "prev")), head);
        {
                /* The digest of what was cut, for whoever wants to match it. */
                char *cmd = NULL, out[80] = "";
                FILE *p;
                ck_assert_int_ge(asprintf(&cmd, "printf '%%s' '%s' | sha256sum", torn), 0);
                p = popen(cmd, "r");
                ck_assert_ptr_nonnull(p);
                ck_assert_ptr_nonnull(fgets(out, sizeof(out), p));
                pclose(p);
                out[AUDIT_HASH_HEX] = 0;
                ck_assert_str_eq(json_string_value(json_object_get(o, "truncated_sha256")), out);
                free(cmd);
        }
        json_decref(o);
        lines_free(&l);
        free(buf);

        /* A first record torn: the file becomes a chain that starts with the recovery. */
        write_log(&t, torn, strlen(torn));
        ck_assert_int_eq(audit_open(t.fd, &a), 0);
        ck_assert_uint_eq(audit_get_seq(a), 1);
        audit_close(a);
        buf = read_log(&t, &len);
        expect_ok(buf, len, 1);
        ck_assert_ptr_nonnull(strstr(buf, "\"event\":\"recovered\""));
        free(buf);

        /* A tail longer than any record is no torn write: refused, the file left alone. */
        {
                size_t n = AUDIT_LINE_MAX + 10;
                char *junk = malloc(n);
                memset(junk, 'x', n);
                write_log(&t, junk, n);
                a = NULL;
                ck_assert_int_eq(audit_open(t.fd, &a), -EBADMSG);
                ck_assert_ptr_null(a);
                ck_assert_int_eq(log_size(&t), (off_t)n);
                free(junk);
        }
        tmpdir_done(&t);
}
END_TEST

typedef struct SyncCount {
        unsigned calls;
        int fail_at; /* the call that fails with -EIO; 0 for none */
        struct stat file;
        bool same_file;
} SyncCount;

static int count_sync(int fd, void *userdata) {
        SyncCount *c = userdata;
        struct stat st;

        c->calls++;
        ck_assert_int_eq(fstat(fd, &st), 0);
        c->same_file = c->same_file && st.st_ino == c->file.st_ino && st.st_dev == c->file.st_dev;
        if (c->fail_at > 0 && c->calls == (unsigned)c->fail_at)
                return -EIO;
        return fsync(fd);
}

/* Group commit: records written without a sync wait for one fsync() that covers them all; a
 * synced append covers the waiting ones too; the list of waiting records is bounded. */
START_TEST(test_group_commit) {
        TmpDir t;
        SyncCount c = {.same_file = true};
        Audit *a = NULL;
        _cleanup_(json_decrefp) json_t *f = json_pack("{s:s}", "ticket", "t-1");
        size_t len;
        char *buf;

        tmpdir_new(&t);
        ck_assert_int_eq(audit_open(t.fd, &a), 0);
        ck_assert_int_eq(fstatat(t.fd, AUDIT_DIR "/" AUDIT_FILE, &c.file, 0), 0);
        audit_set_sync_function(a, count_sync, &c);
        ck_assert_int_eq(audit_sync(a), 0); /* nothing waits: no fsync() */
        ck_assert_uint_eq(c.calls, 0);
        for (int i = 0; i < 3; i++)
                ck_assert_int_eq(audit_append_nosync(a, AUDIT_SUBMIT, f), 0);
        ck_assert_uint_eq(c.calls, 0);
        ck_assert_uint_eq(audit_get_seq(a), 3);
        ck_assert_int_eq(audit_sync(a), 0);
        ck_assert_uint_eq(c.calls, 1);
        ck_assert_int_eq(audit_sync(a), 0);
        ck_assert_uint_eq(c.calls, 1);
        /* A synced append after waiting ones: one fsync() for both. */
        ck_assert_int_eq(audit_append_nosync(a, AUDIT_SUBMIT, f), 0);
        ck_assert_int_eq(append_run(a, 5), 0);
        ck_assert_uint_eq(c.calls, 2);
        /* A full list is synced before the next record. */
        for (int i = 0; i < AUDIT_PENDING_MAX + 1; i++)
                ck_assert_int_eq(audit_append_nosync(a, AUDIT_SUBMIT, f), 0);
        ck_assert_uint_eq(c.calls, 3);
        audit_close(a); /* syncs the one left */
        ck_assert_uint_eq(c.calls, 4);
        buf = read_log(&t, &len);
        expect_ok(buf, len, 5 + AUDIT_PENDING_MAX + 1);
        free(buf);
        tmpdir_done(&t);
}
END_TEST

/* The group commit off the loop: a job covers the records written before it was prepared, not
 * those after; an audit_sync() in between is fine; a failed job breaks the log. */
START_TEST(test_sync_job) {
        TmpDir t;
        SyncCount c = {.same_file = true};
        Audit *a = NULL;
        _cleanup_(json_decrefp) json_t *f = json_pack("{s:s}", "ticket", "t-1");
        AuditSyncJob j, k;
        size_t len;
        char *buf;

        tmpdir_new(&t);
        ck_assert_int_eq(audit_open(t.fd, &a), 0);
        ck_assert_int_eq(fstatat(t.fd, AUDIT_DIR "/" AUDIT_FILE, &c.file, 0), 0);
        audit_set_sync_function(a, count_sync, &c);
        ck_assert_int_eq(audit_sync_prepare(a, &j), 0); /* nothing to do */
        for (int i = 0; i < 3; i++)
                ck_assert_int_eq(audit_append_nosync(a, AUDIT_SUBMIT, f), 0);
        ck_assert_uint_eq(audit_get_durable_seq(a), 0);
        ck_assert_int_eq(audit_sync_prepare(a, &j), 1);
        ck_assert_uint_eq(j.seq, 3);
        /* Written while the job is out: not covered by it. */
        ck_assert_int_eq(append_run_nosync(a, 4), 0);
        ck_assert_int_eq(audit_sync_job_run(&j), 0);
        ck_assert_uint_eq(c.calls, 1);
        ck_assert(c.same_file);
        ck_assert_int_eq(audit_sync_complete(a, &j, 0), 0);
        ck_assert_int_lt(j.fd, 0);
        ck_assert_uint_eq(audit_get_durable_seq(a), 3);
        /* The next job, overtaken by a synced append: the seqs say what is durable. */
        ck_assert_int_eq(audit_sync_prepare(a, &j), 1);
        ck_assert_uint_eq(j.seq, 4);
        ck_assert_int_eq(audit_append_nosync(a, AUDIT_SUBMIT, f), 0);
        ck_assert_int_eq(audit_sync(a), 0);
        ck_assert_uint_eq(audit_get_durable_seq(a), 5);
        ck_assert_int_eq(audit_sync_complete(a, &j, audit_sync_job_run(&j)), 0);
        ck_assert_uint_eq(audit_get_durable_seq(a), 5);
        /* A failed fsync() breaks the log, as a failed audit_sync() does. */
        ck_assert_int_eq(audit_append_nosync(a, AUDIT_SUBMIT, f), 0);
        ck_assert_int_eq(audit_sync_prepare(a, &j), 1);
        ck_assert_int_eq(audit_sync_prepare(a, &k), 1);
        ck_assert_int_eq(audit_sync_complete(a, &k, -ENOSPC), -ENOSPC);
        ck_assert_int_eq(audit_sync_complete(a, &j, 0), -ENOSPC);
        ck_assert_uint_eq(audit_get_durable_seq(a), 5);
        ck_assert_int_eq(audit_sync_prepare(a, &j), -ENOSPC);
        ck_assert_int_eq(audit_append_nosync(a, AUDIT_SUBMIT, f), -ENOSPC);
        audit_close(a);
        buf = read_log(&t, &len);
        expect_ok(buf, len, 6);
        free(buf);
        tmpdir_done(&t);
}
END_TEST

START_TEST(test_sync_per_record) {
        TmpDir t;
        SyncCount c = {.same_file = true};
        Audit *a = NULL;
        size_t len;
        char *buf;

        tmpdir_new(&t);
        ck_assert_int_eq(audit_open(t.fd, &a), 0);
        ck_assert_int_eq(fstatat(t.fd, AUDIT_DIR "/" AUDIT_FILE, &c.file, 0), 0);
        audit_set_sync_function(a, count_sync, &c);
        for (int i = 1; i <= 5; i++) {
                ck_assert_int_eq(append_run(a, i), 0);
                ck_assert_uint_eq(c.calls, (unsigned)i);
        }
        ck_assert(c.same_file);

        /* A refused record syncs nothing. */
        ck_assert_int_eq(audit_append(a, _AUDIT_EVENT_MAX, NULL), -EINVAL);
        ck_assert_uint_eq(c.calls, 5);

        /* A failed fsync(): nothing is known about the disk, so nothing more is written. */
        c.fail_at = 6;
        ck_assert_int_eq(append_run(a, 6), -EIO);
        ck_assert_uint_eq(audit_get_seq(a), 5);
        ck_assert_int_eq(append_run(a, 7), -EIO);
        ck_assert_uint_eq(c.calls, 6);
        audit_close(a);

        /* A reopen recovers from what the file holds (here the record was written). */
        ck_assert_int_eq(audit_open(t.fd, &a), 0);
        ck_assert_uint_eq(audit_get_seq(a), 6);
        ck_assert_int_eq(append_run(a, 7), 0);
        audit_close(a);
        buf = read_log(&t, &len);
        expect_ok(buf, len, 7);
        free(buf);
        tmpdir_done(&t);
}
END_TEST

/* The real system calls, seen by strace: one write() and one fsync() per record on the log, and
 * an fsync() of the state directory and of the audit directory when they gain an entry. */
START_TEST(test_sync_strace) {
        TmpDir t;
        char *cmd = NULL, *trace = NULL, line[1024];
        unsigned writes = 0, fsyncs = 0, dir_fsyncs = 0;
        FILE *f;

        if (access("/usr/bin/strace", X_OK) != 0)
                return; /* test_sync_per_record counts them through the sync function */
        tmpdir_new(&t);
        ck_assert_int_ge(asprintf(&trace, "%s.trace", t.path), 0);
        ck_assert_int_ge(asprintf(&cmd,
                                  /* LeakSanitizer cannot run under ptrace. */
                                  "ASAN_OPTIONS=detect_leaks=0 "
                                  "strace -f -qq -y -o %s -e trace=write,fsync "
                                  "/proc/%d/exe --append-records %s 5 >/dev/null 2>&1",
                                  trace, (int)getpid(), t.path),
                         0);
        ck_assert_int_eq(system(cmd), 0);
        f = fopen(trace, "re");
        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof(line), f)) {
                /* -y prints each fd's path: "write(3</…/audit/audit.jsonl>, "{…"". */
                if (strstr(line, "write(") && strstr(line, "/" AUDIT_DIR "/" AUDIT_FILE ">, "))
                        writes++;
                else if (strstr(line, "fsync(") &&
                         strstr(line, "/" AUDIT_DIR "/" AUDIT_FILE ">) = 0"))
                        fsyncs++;
                else if (strstr(line, "fsync(") &&
                         (strstr(line, "/" AUDIT_DIR ">) = 0") || strstr(line, t.path + 1)))
                        dir_fsyncs++;
        }
        fclose(f);
        ck_assert_uint_eq(writes, 5);
        ck_assert_uint_eq(fsyncs, 5);
        ck_assert_uint_eq(dir_fsyncs, 2);
        unlink(trace);
        free(trace);
        free(cmd);
        tmpdir_done(&t);
}
END_TEST

/* In a child (the test harness's own files must not meet the limit): a write() cut short by
 * RLIMIT_FSIZE, or refused by it, is undone and the file keeps whole records only. Returns the
 * number of the first check that failed, 0 when all held. */
static int short_write_child(const TmpDir *t, off_t size) {
        struct rlimit rl;
        Audit *a = NULL;
        struct stat st;

        if (signal(SIGXFSZ, SIG_IGN) == SIG_ERR || getrlimit(RLIMIT_FSIZE, &rl) < 0 ||
            audit_open(t->fd, &a) < 0)
                return 1;
        rl.rlim_cur = (rlim_t)size + 10;
        if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
                return 2;
        /* 10 bytes written, then the next write() names the real cause; all cut back. */
        if (append_run(a, 2) != -EFBIG)
                return 3;
        if (fstatat(t->fd, AUDIT_DIR "/" AUDIT_FILE, &st, 0) < 0 || st.st_size != size)
                return 4;
        rl.rlim_cur = (rlim_t)size;
        if (setrlimit(RLIMIT_FSIZE, &rl) < 0 || append_run(a, 2) != -EFBIG)
                return 5;
        if (fstatat(t->fd, AUDIT_DIR "/" AUDIT_FILE, &st, 0) < 0 || st.st_size != size ||
            audit_get_seq(a) != 1)
                return 6;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_FSIZE, &rl) < 0 || append_run(a, 2) != 0)
                return 7;
        audit_close(a);
        return 0;
}

START_TEST(test_short_write_undone) {
        TmpDir t;
        Audit *a = NULL;
        int status;
        off_t size;
        size_t len;
        pid_t pid;
        char *buf;

        tmpdir_new(&t);
        ck_assert_int_eq(audit_open(t.fd, &a), 0);
        ck_assert_int_eq(append_run(a, 1), 0);
        audit_close(a);
        size = log_size(&t);

        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0)
                _exit(short_write_child(&t, size));
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "check %d failed",
                      WEXITSTATUS(status));
        buf = read_log(&t, &len);
        expect_ok(buf, len, 2);
        free(buf);
        tmpdir_done(&t);
}
END_TEST

START_TEST(test_open_refusals) {
        TmpDir t;
        Audit *a = NULL;
        int dfd;

        ck_assert_int_eq(audit_open(-1, &a), -EINVAL);
        tmpdir_new(&t);
        ck_assert_int_eq(audit_open(t.fd, NULL), -EINVAL);

        /* A directory others may write. */
        ck_assert_int_eq(mkdirat(t.fd, AUDIT_DIR, 0700), 0);
        ck_assert_int_eq(fchmodat(t.fd, AUDIT_DIR, 0777, 0), 0);
        ck_assert_int_eq(audit_open(t.fd, &a), -EPERM);
        ck_assert_int_eq(fchmodat(t.fd, AUDIT_DIR, 0700, 0), 0);
        dfd = openat(t.fd, AUDIT_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(dfd, 0);

        /* A symlink, a directory, a FIFO, a file others may write. */
        ck_assert_int_eq(symlinkat("/etc/passwd", dfd, AUDIT_FILE), 0);
        ck_assert_int_eq(audit_open(t.fd, &a), -ELOOP);
        ck_assert_int_eq(unlinkat(dfd, AUDIT_FILE, 0), 0);
        ck_assert_int_eq(mkdirat(dfd, AUDIT_FILE, 0700), 0);
        ck_assert_int_eq(audit_open(t.fd, &a), -EISDIR);
        ck_assert_int_eq(unlinkat(dfd, AUDIT_FILE, AT_REMOVEDIR), 0);
        ck_assert_int_eq(mkfifoat(dfd, AUDIT_FILE, 0600), 0);
        ck_assert_int_eq(audit_open(t.fd, &a), -EINVAL);
        ck_assert_int_eq(unlinkat(dfd, AUDIT_FILE, 0), 0);
        close(openat(dfd, AUDIT_FILE, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
        ck_assert_int_eq(fchmodat(dfd, AUDIT_FILE, 0622, 0), 0);
        ck_assert_int_eq(audit_open(t.fd, &a), -EPERM);
        ck_assert_ptr_null(a);
        ck_assert_int_eq(fchmodat(dfd, AUDIT_FILE, 0600, 0), 0);
        ck_assert_int_eq(audit_open(t.fd, &a), 0);
        audit_close(a);
        close(dfd);
        tmpdir_done(&t);
}
END_TEST

/* A memfd as stderr, and the log set to write there: what was logged is read back from it. */
static int capture_stderr(void) {
        int fd = memfd_create("stderr", MFD_CLOEXEC);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(dup2(fd, STDERR_FILENO), STDERR_FILENO);
        unsetenv("JOURNAL_STREAM");
        log_open(false);
        return fd;
}

START_TEST(test_journal_copy) {
        int fd = capture_stderr();
        char buf[8192], *want = NULL;
        TmpDir t;
        Audit *a = NULL;
        json_t *f;
        ssize_t n;

        tmpdir_new(&t);
        /* The copy is the record: written whatever lockd's own level, a run's too. */
        log_set_max_level(LOG_WARNING);
        ck_assert_int_eq(audit_open(t.fd, &a), 0);
        f = json_pack("{s:s, s:I, s:b, s:n}", "handle", "h1", "budget", (json_int_t)8, "auto", 1,
                      "label");
        ck_assert_int_eq(audit_append(a, AUDIT_GRANT, f), 0);
        json_decref(f);
        ck_assert_int_eq(append_run(a, 3), 0);

        n = pread(fd, buf, sizeof(buf) - 1, 0);
        ck_assert_int_gt(n, 0);
        buf[n] = 0;
        ck_assert_ptr_nonnull(
                strstr(buf, "<6>audit record 1 (grant): a console granted a file to an agent "
                            "LOCKD_AUDIT_RECORD="));
        ck_assert_ptr_nonnull(strstr(buf, "\" LOCKD_AUDIT_SEQ=\"1\" LOCKD_AUDIT_EVENT=\"grant\""));
        ck_assert_ptr_nonnull(strstr(buf, " LOCKD_AUTO=\"true\""));
        ck_assert_ptr_nonnull(strstr(buf, " LOCKD_BUDGET=\"8\""));
        ck_assert_ptr_nonnull(strstr(buf, " LOCKD_HANDLE=\"h1\""));
        ck_assert_ptr_nonnull(strstr(buf, " LOCKD_LABEL=\"null\""));
        ck_assert_ptr_nonnull(strstr(buf, " LOCKD_AUDIT_PREV=\"" AUDIT_ZERO_HASH "\""));
        ck_assert_ptr_nonnull(strstr(buf, " LOCKD_AUDIT_TIME=\""));
        /* The first record's exact line, as the file holds it (quotes escaped on stderr). */
        {
                char line[4096], esc[8192];
                size_t k = 0;
                int lfd = openat(t.fd, AUDIT_DIR "/" AUDIT_FILE, O_RDONLY | O_CLOEXEC);
                ssize_t m;

                ck_assert_int_ge(lfd, 0);
                m = pread(lfd, line, sizeof(line) - 1, 0);
                ck_assert_int_gt(m, 0);
                line[m] = 0;
                *strchr(line, '\n') = 0;
                k = (size_t)snprintf(esc, sizeof(esc),
                                     "<6>audit record 1 (grant): a console "
                                     "granted a file to an agent "
                                     "LOCKD_AUDIT_RECORD=\"");
                for (const char *q = line; *q; q++) {
                        if (*q == '"' || *q == '\\')
                                esc[k++] = '\\';
                        esc[k++] = *q;
                }
                esc[k++] = '"';
                esc[k] = 0;
                ck_assert_ptr_nonnull(strstr(buf, esc));
                close(lfd);
        }
        ck_assert_int_ge(asprintf(&want, "LOCKD_AUDIT_HASH=\"%s\"", audit_get_head(a)), 0);
        ck_assert_ptr_nonnull(strstr(buf, want));
        ck_assert_ptr_nonnull(strstr(buf, "LOCKD_PLUGIN=\"plugin-3\""));
        ck_assert_ptr_nonnull(strstr(buf, "LOCKD_CAUSE=\"signal:SIGSYS\""));
        ck_assert_ptr_nonnull(strstr(buf, "LOCKD_OUTCOME=\"plugin_error\""));
        ck_assert_ptr_nonnull(strstr(buf, "LOCKD_PEAK_MEMORY_BYTES=\"1048576\""));
        free(want);
        audit_close(a);
        close(fd);
        tmpdir_done(&t);
}
END_TEST

/* Counts the occurrences of needle in the memfd fd's text. */
static unsigned count_in(int fd, const char *needle) {
        static char buf[256 * 1024];
        unsigned k = 0;
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

        ck_assert_int_ge(n, 0);
        buf[n] = 0;
        for (const char *p = buf; (p = strstr(p, needle)); p++)
                k++;
        return k;
}

START_TEST(test_agent_copies_limited) {
        int fd = capture_stderr();
        TmpDir t;
        Audit *a = NULL;

        tmpdir_new(&t);
        ck_assert_int_eq(audit_open(t.fd, &a), 0);
        /* An agent submitting in a loop: every record in the file, a burst of copies in the
         * journal's messages; another agent's are its own. Consoles' records are never
         * limited. Every copy is at info level at least, stored by journald by default. */
        log_set_max_level(LOG_INFO);
        for (int i = 0; i < 50; i++) {
                json_t *f = json_pack("{s:s, s:i}", "ticket", "t1", "agent_uid", 61001);

                ck_assert_int_eq(audit_append(a, i % 2 ? AUDIT_CANCEL : AUDIT_SUBMIT, f), 0);
                json_decref(f);
        }
        for (int i = 0; i < 3; i++) {
                json_t *f = json_pack("{s:s, s:i}", "ticket", "t2", "agent_uid", 61004);

                ck_assert_int_eq(audit_append(a, AUDIT_SUBMIT, f), 0);
                json_decref(f);
        }
        for (int i = 0; i < 30; i++)
                ck_assert_int_eq(append_run(a, i), 0);
        ck_assert_uint_eq(audit_get_seq(a), 83);
        /* Every record's copy is written, whole; only the MESSAGE text is limited. */
        ck_assert_uint_eq(count_in(fd, "LOCKD_AGENT_UID=\"61001\""), 50);
        ck_assert_uint_eq(count_in(fd, "LOCKD_AUDIT_RECORD="), 83);
        ck_assert_uint_eq(count_in(fd, "(submit): an agent submitted a ticket"), 10 + 3);
        ck_assert_uint_eq(count_in(fd, "(cancel): an agent cancelled a ticket"), 10);
        ck_assert_uint_eq(count_in(fd, " (submit) LOCKD_AUDIT_RECORD="), 15);
        ck_assert_uint_eq(count_in(fd, " (cancel) LOCKD_AUDIT_RECORD="), 15);
        ck_assert_uint_eq(count_in(fd, "LOCKD_AGENT_UID=\"61004\""), 3);
        ck_assert_uint_eq(count_in(fd, " (run): "), 30);
        audit_close(a);
        close(fd);
        tmpdir_done(&t);
}
END_TEST

/* Runs cmd through the shell; returns its exit status and its stdout in out. */
static int run_capture(const char *cmd, char *out, size_t size) {
        FILE *p = popen(cmd, "r");
        size_t n;
        int status;

        ck_assert_ptr_nonnull(p);
        n = fread(out, 1, size - 1, p);
        out[n] = 0;
        status = pclose(p);
        ck_assert(WIFEXITED(status));
        return WEXITSTATUS(status);
}

/* lockctl audit verify: its output and exit status, the state directory and the file forms. */
START_TEST(test_lockctl_verify) {
        const char *lockctl = getenv("LOCKD_LOCKCTL");
        char head[AUDIT_HASH_HEX + 1], *cmd = NULL, *want = NULL, out[1024], *buf;
        TmpDir t;
        size_t len;
        Lines l;

        ck_assert_msg(lockctl, "LOCKD_LOCKCTL is not set");
        tmpdir_new(&t);
        make_log(&t, 3, head);
        /* The state directory: every segment and the current file (here only that one). */
        ck_assert_int_ge(asprintf(&want, "ok: 3 records in 1 file(s), head %s\n", head), 0);
        ck_assert_int_ge(asprintf(&cmd, "%s audit verify --state-dir %s", lockctl, t.path), 0);
        ck_assert_int_eq(run_capture(cmd, out, sizeof(out)), 0);
        ck_assert_str_eq(out, want);
        free(cmd);
        free(want);
        ck_assert_int_ge(asprintf(&want, "ok: 3 records, head %s\n", head), 0);
        ck_assert_int_ge(
                asprintf(&cmd, "%s audit verify %s/" AUDIT_DIR "/" AUDIT_FILE, lockctl, t.path), 0);
        ck_assert_int_eq(run_capture(cmd, out, sizeof(out)), 0);
        ck_assert_str_eq(out, want);

        buf = read_log(&t, &len);
        lines_split(buf, len, &l);
        lines_delete(&l, 1);
        free(buf);
        buf = lines_join(&l, &len);
        write_log(&t, buf, len);
        ck_assert_int_eq(run_capture(cmd, out, sizeof(out)), 1);
        ck_assert_str_eq(out, "audit: line 2: removed: seq 2 is missing before this record\n");
        free(cmd);
        free(buf);
        lines_free(&l);

        ck_assert_int_ge(
                asprintf(&cmd, "%s audit verify %s/nonexistent 2>/dev/null", lockctl, t.path), 0);
        ck_assert_int_eq(run_capture(cmd, out, sizeof(out)), 1);
        free(cmd);
        ck_assert_int_ge(
                asprintf(&cmd, "%s audit verify --state-dir %s x 2>/dev/null", lockctl, t.path), 0);
        ck_assert_int_eq(run_capture(cmd, out, sizeof(out)), 2);
        free(cmd);
        ck_assert_int_ge(asprintf(&cmd, "%s audit 2>/dev/null", lockctl), 0);
        ck_assert_int_eq(run_capture(cmd, out, sizeof(out)), 2);
        free(cmd);
        free(want);
        tmpdir_done(&t);
}
END_TEST

START_TEST(test_event_names) {
        for (int e = 0; e < _AUDIT_EVENT_MAX; e++) {
                const char *s = audit_event_to_string(e);
                ck_assert_ptr_nonnull(s);
                ck_assert_int_eq(audit_event_from_string(s), e);
        }
        ck_assert_str_eq(audit_event_to_string(AUDIT_SESSION_START), "session_start");
        ck_assert_ptr_null(audit_event_to_string(_AUDIT_EVENT_MAX));
        ck_assert_int_eq(audit_event_from_string("Grant"), -EINVAL);
        ck_assert_int_eq(audit_event_from_string(NULL), -EINVAL);
        for (int e = 0; e < _AUDIT_VERIFY_MAX; e++)
                ck_assert_ptr_nonnull(audit_verify_error_to_string(e));
        ck_assert_ptr_null(audit_verify_error_to_string(_AUDIT_VERIFY_MAX));
}
END_TEST

/* The strace test's helper: appends n run records to a new log below dir. */
static int append_records(const char *dir, int n) {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        Audit *a = NULL;

        if (dfd < 0 || audit_open(dfd, &a) < 0)
                return 1;
        for (int i = 1; i <= n; i++)
                if (append_run(a, i) < 0)
                        return 1;
        audit_close(a);
        return 0;
}


/* Verifies dir/name into *res (0 or the verifier's error). */
static int verify_at(int dfd, const char *name, AuditVerifyResult *res) {
        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(read_full_fd(fd, 64 * 1024 * 1024, &buf, &len), 0);
        return audit_verify_buffer(buf, len, res);
}

/*
 * Segments: a full file is closed beside the current one, the new file's first record continues
 * the chain, past the retention the oldest goes after a segment_removed record, and a switch cut
 * short by a crash (a second name for the current file, a new file not in place) is tidied away
 * at the next open.
 */
START_TEST(test_segments) {
        _cleanup_(audit_closep) Audit *a = NULL;
        _cleanup_close_ int dfd = -1;
        struct dirent **list = NULL;
        char path[256], last_seg[300] = "";
        AuditVerifyResult prev = {}, res;
        size_t n_segments = 0, removed = 0;
        TmpDir t;
        int k;

        tmpdir_new(&t);
        ck_assert_int_eq(audit_open(t.fd, &a), 0);
        audit_set_segments(a, 2048, 2);
        for (int i = 0; i < 200; i++) {
                _cleanup_(json_decrefp) json_t *f = json_pack("{s:s, s:i}", "plugin", "p", "n", i);

                ck_assert_int_eq(audit_append(a, AUDIT_RUN, f), 0);
        }
        a = audit_close(a);
        dfd = openat(t.fd, AUDIT_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(dfd, 0);
        snprintf(path, sizeof(path), "%s/%s", t.path, AUDIT_DIR);
        k = scandir(path, &list, NULL, alphasort);
        ck_assert_int_gt(k, 0);
        /* Oldest first, then the current file: each continues the one before. */
        for (int i = 0; i <= k; i++) {
                const char *name = i < k ? list[i]->d_name : AUDIT_FILE;

                if (i < k && !audit_segment_name_valid(name))
                        continue;
                if (i < k) {
                        n_segments++;
                        snprintf(last_seg, sizeof(last_seg), "%s", name);
                }
                ck_assert_int_eq(verify_at(dfd, name, &res), 0);
                ck_assert_msg(strspn(res.first_prev, "0") != AUDIT_HASH_HEX,
                              "%s does not begin with a rotation", name);
                if (prev.n_records > 0) {
                        ck_assert_str_eq(res.first_prev, prev.head);
                        ck_assert_uint_eq(res.first_seq, prev.last_seq + 1);
                }
                prev = res;
                {
                        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
                        _cleanup_free_ char *buf = NULL;
                        size_t len = 0;

                        ck_assert_int_eq(read_full_fd(fd, 1 << 26, &buf, &len), 0);
                        for (const char *p = buf; (p = strstr(p, "\"segment_removed\"")); p++)
                                removed++;
                }
        }
        for (int i = 0; i < k; i++)
                free(list[i]);
        free(list);
        ck_assert_uint_eq(n_segments, 2);
        ck_assert_uint_gt(removed, 0);

        /* A switch cut short: the current file under a segment's name too, and a new file. */
        ck_assert_int_eq(linkat(dfd, AUDIT_FILE, dfd, "audit-99999999999999999999.jsonl", 0), 0);
        {
                _cleanup_close_ int fd = openat(dfd, ".audit.jsonl.new",
                                                O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

                ck_assert_int_ge(fd, 0);
                ck_assert_int_eq(write(fd, "{\"half", 6), 6);
        }
        ck_assert_int_eq(audit_open(t.fd, &a), 0);
        ck_assert_int_eq(faccessat(dfd, "audit-99999999999999999999.jsonl", F_OK, 0), -1);
        ck_assert_int_eq(faccessat(dfd, ".audit.jsonl.new", F_OK, 0), -1);
        ck_assert_int_eq(faccessat(dfd, last_seg, F_OK, 0), 0);
        ck_assert_int_eq(audit_append(a, AUDIT_RUN, NULL), 0);
        a = audit_close(a);
        ck_assert_int_eq(verify_at(dfd, AUDIT_FILE, &res), 0);
        ck_assert_uint_eq(res.first_seq, prev.first_seq);
        tmpdir_done(&t);
}

/* A random UTF-8 string of at most max bytes: every class jansson escapes differently. */
static void random_string(unsigned *seed, char *out, size_t max) {
        static const char *const pieces[] = {
                "a",
                "Z",
                "0",
                " ",
                "/",
                "\"",
                "\\",
                "\b",
                "\f",
                "\n",
                "\r",
                "\t",
                "\x01",
                "\x1f",
                "\x7f",
                "~",
                "\xc3\xa9",
                "\xc2\x80",
                "\xdf\xbf",
                "\xe2\x80\xa8",
                "\xe2\x80\xae",
                "\xef\xbf\xbd",
                "\xef\xbf\xbf",
                "\xf0\x9f\x98\x80",
                "\xf4\x8f\xbf\xbf",
                "\xf0\x90\x80\x80",
                "plugin-1.2.3",
        };
        size_t len = 0, want = (size_t)rand_r(seed) % 40;

        out[0] = 0;
        for (size_t i = 0; i < want; i++) {
                const char *p = pieces[(size_t)rand_r(seed) % ELEMENTSOF(pieces)];
                size_t n = strlen(p);

                if (len + n > max)
                        break;
                memcpy(out + len, p, n + 1);
                len += n;
        }
}

/*
 * The line written without JSON objects is byte for byte what json_dumps() with
 * AUDIT_JSON_FLAGS makes of the same record (the canonical form the verifier demands), for random
 * fields of every kind and strings of every escape class; and the journal's text of each field.
 */
START_TEST(test_line_matches_jansson) {
        static const char *const names[] = {"a",      "ab",      "agent_uid", "b0",     "cause",
                                            "handle", "outcome", "peer_pid",  "plugin", "step",
                                            "ticket", "unit",    "version",   "z",      "z_9",
                                            "seq_no", "timer",   "events",    "prevent"};
        static char strings[AUDIT_FIELDS_MAX][AUDIT_STRING_MAX + 1];
        unsigned seed = 31;

        for (int iter = 0; iter < 20000; iter++) {
                AuditField f[AUDIT_FIELDS_MAX];
                bool used[ELEMENTSOF(names)] = {};
                size_t n = (size_t)rand_r(&seed) % (ELEMENTSOF(names) + 1);
                uint64_t seq = (uint64_t)rand_r(&seed) * 7919 + 1, time = (uint64_t)rand_r(&seed)
                                                                          << 20;
                AuditEvent ev = (AuditEvent)((unsigned)rand_r(&seed) % _AUDIT_EVENT_MAX);
                json_t *o = json_pack("{s:I, s:I, s:s, s:s}", "seq", (json_int_t)seq, "time",
                                      (json_int_t)time, "prev", AUDIT_ZERO_HASH, "event",
                                      audit_event_to_string(ev));
                char *want;
                AuditLine line;
                const char *p;

                if (n > AUDIT_FIELDS_MAX)
                        n = AUDIT_FIELDS_MAX;
                for (size_t i = 0; i < n; i++) {
                        size_t k;

                        do
                                k = (size_t)rand_r(&seed) % ELEMENTSOF(names);
                        while (used[k]);
                        used[k] = true;
                        switch (rand_r(&seed) % 5) {
                        case 0:
                                random_string(&seed, strings[i], AUDIT_STRING_MAX);
                                f[i] = audit_field_string(names[k], strings[i]);
                                json_object_set_new(o, names[k], json_string(strings[i]));
                                break;
                        case 1: {
                                /* Shifted as unsigned: a negative value is no left operand. */
                                int64_t v =
                                        (int64_t)((uint64_t)rand_r(&seed) << (rand_r(&seed) % 32));

                                if (rand_r(&seed) % 2)
                                        v = -v;
                                if (rand_r(&seed) % 10 == 0)
                                        v = rand_r(&seed) % 2 ? INT64_MAX : INT64_MIN;
                                f[i] = audit_field_integer(names[k], v);
                                json_object_set_new(o, names[k], json_integer(v));
                                break;
                        }
                        case 2:
                                f[i] = audit_field_bool(names[k], true);
                                json_object_set_new(o, names[k], json_true());
                                break;
                        case 3:
                                f[i] = audit_field_bool(names[k], false);
                                json_object_set_new(o, names[k], json_false());
                                break;
                        default:
                                f[i] = audit_field_null(names[k]);
                                json_object_set_new(o, names[k], json_null());
                                break;
                        }
                }
                want = json_dumps(o, AUDIT_JSON_FLAGS);
                ck_assert_ptr_nonnull(want);
                ck_assert_int_eq(audit_line_format(seq, time, AUDIT_ZERO_HASH, ev, f, n, &line), 0);
                ck_assert_msg(line.len == strlen(want) && memcmp(line.buf, want, line.len) == 0,
                              "iteration %d:\n%.*s\n%s", iter, (int)line.len, line.buf, want);
                ck_assert_int_eq(line.buf[line.len], '\n');
                ck_assert_uint_eq(line.n_text, n);
                /* The journal's text: each field's name, then its value as the copy shows it. */
                p = line.buf + line.len + 2;
                for (size_t i = 0; i < n; i++) {
                        json_t *v = json_object_get(o, f[i].name);
                        char num[32];
                        const char *text = json_is_string(v)  ? json_string_value(v)
                                           : json_is_true(v)  ? "true"
                                           : json_is_false(v) ? "false"
                                           : json_is_null(v)  ? "null"
                                                              : num;

                        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
                                 json_is_integer(v) ? json_integer_value(v) : 0);
                        ck_assert_str_eq(p, f[i].name);
                        p += strlen(p) + 1;
                        ck_assert_str_eq(p, text);
                        p += strlen(p) + 1;
                }
                free(line.buf);
                free(want);
                json_decref(o);
        }
}
END_TEST

/* What the field array refuses, as the JSON path does: and *ret stays untouched. */
START_TEST(test_line_refusals) {
        static char big[AUDIT_STRING_MAX + 2], escaped[AUDIT_STRING_MAX + 1];
        AuditLine line = {.buf = (char *)"untouched"};
        AuditField f[AUDIT_FIELDS_MAX + 1];
        char name[AUDIT_FIELDS_MAX][8];

        memset(big, 'x', sizeof(big) - 1);
        memset(escaped, '\x01', sizeof(escaped) - 1);
#define REFUSED(want, ...)                                                                         \
        do {                                                                                       \
                AuditField g[] = {__VA_ARGS__};                                                    \
                ck_assert_int_eq(audit_line_format(1, 1, AUDIT_ZERO_HASH, AUDIT_GRANT, g,          \
                                                   ELEMENTSOF(g), &line),                          \
                                 want);                                                            \
                ck_assert_str_eq(line.buf, "untouched");                                           \
        } while (0)
        REFUSED(-EINVAL, audit_field_string("handle", "\xc3"));         /* truncated UTF-8 */
        REFUSED(-EINVAL, audit_field_string("handle", "\xed\xa0\x80")); /* a surrogate */
        REFUSED(-EINVAL, audit_field_string("handle", "\xc0\xaf"));     /* overlong */
        REFUSED(-EINVAL, audit_field_string("handle", big));
        REFUSED(-EINVAL, audit_field_integer("seq", 1));
        REFUSED(-EINVAL, audit_field_integer("value", 1));
        REFUSED(-EINVAL, audit_field_integer("audit_x", 1));
        REFUSED(-EINVAL, audit_field_integer("Handle", 1));
        REFUSED(-EINVAL, audit_field_integer("handle", 1), audit_field_null("handle"));
        REFUSED(-EINVAL, ((AuditField){.name = "handle", .kind = _AUDIT_VALUE_KIND_MAX}));
        REFUSED(-EINVAL, ((AuditField){.name = "handle", .kind = AUDIT_VALUE_STRING}));
        for (size_t i = 0; i < ELEMENTSOF(f); i++) {
                snprintf(name[i % AUDIT_FIELDS_MAX], sizeof(name[0]), "f%zu", i % AUDIT_FIELDS_MAX);
                f[i] = audit_field_string(name[i % AUDIT_FIELDS_MAX], escaped);
        }
        /* 24 strings of 1024 controls, 6 bytes each escaped: past the line's bound. */
        ck_assert_int_eq(
                audit_line_format(1, 1, AUDIT_ZERO_HASH, AUDIT_GRANT, f, AUDIT_FIELDS_MAX, &line),
                -E2BIG);
        ck_assert_int_eq(audit_line_format(1, 1, AUDIT_ZERO_HASH, AUDIT_GRANT, f,
                                           AUDIT_FIELDS_MAX + 1, &line),
                         -EINVAL);
        ck_assert_int_eq(audit_line_format(1, 1, AUDIT_ZERO_HASH, _AUDIT_EVENT_MAX, f, 0, &line),
                         -EINVAL);
        ck_assert_int_eq(audit_line_format((uint64_t)INT64_MAX + 1, 1, AUDIT_ZERO_HASH, AUDIT_GRANT,
                                           f, 0, &line),
                         -EINVAL);
        ck_assert_str_eq(line.buf, "untouched");
#undef REFUSED
}
END_TEST

END_TEST

static Suite *audit_suite(void) {
        Suite *s = suite_create("audit");

        suite_add_case(s, NULL, test_append_verify);
        suite_add_case(s, NULL, test_tampering);
        suite_add_case(s, NULL, test_forged_records);
        suite_add_case(s, NULL, test_refused_fields);
        suite_add_case(s, NULL, test_reopen);
        suite_add_case(s, NULL, test_torn_write);
        suite_add_case(s, NULL, test_sync_per_record);
        suite_add_case(s, NULL, test_group_commit);
        suite_add_case(s, NULL, test_sync_job);
        suite_add_case(s, NULL, test_sync_strace);
        suite_add_case(s, NULL, test_short_write_undone);
        suite_add_case(s, NULL, test_open_refusals);
        suite_add_case(s, NULL, test_journal_copy);
        suite_add_case(s, NULL, test_lockctl_verify);
        suite_add_case(s, NULL, test_segments);
        suite_add_case(s, NULL, test_event_names);
        suite_add_case(s, NULL, test_agent_copies_limited);
        /* 20 000 random records against jansson: 3.4 s alone under ASan, past Check's default 4 s
         * when CI runs it beside the other suites. */
        suite_add_case(s, &(const CaseOptions){.timeout = 60}, test_line_matches_jansson);
        suite_add_case(s, NULL, test_line_refusals);
        return s;
}

int main(int argc, char **argv) {
        if (argc == 4 && strcmp(argv[1], "--append-records") == 0)
                return append_records(argv[2], atoi(argv[3]));
        return check_run(audit_suite());
}
