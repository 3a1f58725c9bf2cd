/* Tests for daemon/handle-store: grants stored durably and read back with everything they had,
 * removals, what an interrupted write leaves, damaged and expired records, and the byte cap. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check-run.h"
#include "fd-util.h"
#include "handle-store.h"
#include "handles.h"
#include "macro.h"
#include "tmp-dir.h"

static int file_with(const char *text) {
        int fd = memfd_from_buffer(text, strlen(text), "test");

        ck_assert_int_ge(fd, 0);
        return fd;
}

static bool exists_at(int dfd, const char *name) {
        struct stat st;

        return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static const Handle *grant(Handles *hs, const char *text, const char *label, uint64_t expires) {
        _cleanup_close_ int fd = file_with(text);
        const Handle *h = NULL;

        ck_assert_int_eq(handles_grant(hs,
                                       &(HandleSpec){.fd = fd,
                                                     .max_bytes = 1 << 20,
                                                     .label = label,
                                                     .agent = 61001,
                                                     .expires_usec = expires,
                                                     .budget = 5,
                                                     .auto_run = true},
                                       &h),
                         0);
        return h;
}

START_TEST(test_round_trip) {
        _cleanup_(handles_freep) Handles *hs = NULL, *again = NULL;
        _cleanup_(handle_store_freep) HandleStore *s = NULL, *s2 = NULL;
        _cleanup_close_ int dfd = -1;
        char id[HANDLE_ID_LEN + 1], gone[HANDLE_ID_LEN + 1], name[128], buf[64] = "";
        const Handle *h, *r;
        unsigned dropped = 99;
        TmpDir t;

        tmpdir_new(&t);
        ck_assert_int_eq(handle_store_open(t.fd, 1 << 20, &s), 0);
        ck_assert_int_eq(handles_new(NULL, NULL, NULL, &hs), 0);
        handles_set_store(hs, s);
        h = grant(hs, "the granted bytes", "q3 report \xc3\xa9",
                  handles_now_usec() + 3600000000ULL);
        memcpy(id, h->id, sizeof(id));
        memcpy(gone, grant(hs, "revoked soon", NULL, 0)->id, sizeof(gone));
        dfd = openat(t.fd, HANDLE_STORE_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        snprintf(name, sizeof(name), "%s.meta", id);
        ck_assert(exists_at(dfd, name));
        {
                struct stat st;

                ck_assert_int_eq(fstatat(dfd, name, &st, 0), 0);
                ck_assert_uint_eq(st.st_mode & 0777, 0600);
        }
        ck_assert_int_eq(handles_revoke(hs, gone), 0);
        snprintf(name, sizeof(name), "%s.data", gone);
        ck_assert(!exists_at(dfd, name));

        /* A restart: everything comes back as it was granted, the revoked one does not. */
        ck_assert_int_eq(handle_store_open(t.fd, 1 << 20, &s2), 0);
        ck_assert_int_eq(handles_new(NULL, NULL, NULL, &again), 0);
        ck_assert_int_eq(handle_store_load(s2, again, 1 << 20, &dropped), 1);
        ck_assert_uint_eq(dropped, 0);
        r = handles_get(again, id);
        ck_assert_ptr_nonnull(r);
        ck_assert_ptr_null(handles_get(again, gone));
        ck_assert_str_eq(r->sha256, h->sha256);
        ck_assert_str_eq(r->label, "q3 report \xc3\xa9");
        ck_assert_uint_eq(r->bytes, strlen("the granted bytes"));
        ck_assert_uint_eq(r->expires_usec, h->expires_usec);
        ck_assert_uint_eq(r->granted_usec, h->granted_usec);
        ck_assert_uint_eq(r->budget, 5);
        ck_assert(r->auto_run);
        ck_assert_uint_eq(r->agent, 61001);
        {
                _cleanup_close_ int fd = handle_open_for_run(r);

                ck_assert_int_ge(fd, 0);
                ck_assert_int_eq(loop_read(fd, buf, sizeof(buf) - 1), 17);
                ck_assert_str_eq(buf, "the granted bytes");
        }
        tmpdir_done(&t);
}
END_TEST

START_TEST(test_damage_and_leftovers) {
        _cleanup_(handles_freep) Handles *hs = NULL, *again = NULL;
        _cleanup_(handle_store_freep) HandleStore *s = NULL, *s2 = NULL;
        _cleanup_close_ int dfd = -1;
        char bad[HANDLE_ID_LEN + 1], old[HANDLE_ID_LEN + 1], ok[HANDLE_ID_LEN + 1], name[128];
        unsigned dropped = 0;
        TmpDir t;

        tmpdir_new(&t);
        ck_assert_int_eq(handle_store_open(t.fd, 100, &s), 0);
        ck_assert_int_eq(handles_new(NULL, NULL, NULL, &hs), 0);
        handles_set_store(hs, s);
        memcpy(ok, grant(hs, "fine", NULL, 0)->id, sizeof(ok));
        memcpy(bad, grant(hs, "will be changed", NULL, 0)->id, sizeof(bad));
        memcpy(old, grant(hs, "expires", NULL, handles_now_usec() + 200000)->id, sizeof(old));
        /* The byte cap: 100 bytes in all. */
        {
                char big[120];
                _cleanup_close_ int fd = -1;
                const Handle *h = NULL;

                memset(big, 'x', sizeof(big) - 1);
                big[sizeof(big) - 1] = 0;
                fd = file_with(big);
                ck_assert_int_eq(handles_grant(hs,
                                               &(HandleSpec){.fd = fd,
                                                             .max_bytes = 1 << 20,
                                                             .agent = 61001,
                                                             .budget = 1},
                                               &h),
                                 -ENOBUFS);
        }
        dfd = openat(t.fd, HANDLE_STORE_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        /* Other bytes under a stored digest; a snapshot without metadata; a temporary file. */
        snprintf(name, sizeof(name), "%s.data", bad);
        {
                _cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CLOEXEC);

                ck_assert_int_ge(fd, 0);
                ck_assert_int_eq(pwrite(fd, "W", 1, 0), 1);
        }
        {
                _cleanup_close_ int fd = openat(dfd, "h-0123456789abcdef0123456789abcdef.data",
                                                O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
                _cleanup_close_ int tmp = openat(dfd, ".#h-x.meta.0123456789abcdef",
                                                 O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

                ck_assert_int_ge(fd, 0);
                ck_assert_int_ge(tmp, 0);
        }
        usleep(300000); /* the third one expires */
        ck_assert_int_eq(handle_store_open(t.fd, 100, &s2), 0);
        ck_assert(!exists_at(dfd, "h-0123456789abcdef0123456789abcdef.data"));
        ck_assert(!exists_at(dfd, ".#h-x.meta.0123456789abcdef"));
        ck_assert_int_eq(handles_new(NULL, NULL, NULL, &again), 0);
        ck_assert_int_eq(handle_store_load(s2, again, 1 << 20, &dropped), 1);
        ck_assert_uint_eq(dropped, 1);
        ck_assert_ptr_nonnull(handles_get(again, ok));
        ck_assert_ptr_null(handles_get(again, bad));
        ck_assert_ptr_null(handles_get(again, old));
        snprintf(name, sizeof(name), "%s.meta", bad);
        ck_assert(!exists_at(dfd, name));
        snprintf(name, sizeof(name), "%s.meta", old);
        ck_assert(!exists_at(dfd, name));
        /* A damaged metadata file is dropped the same way. */
        snprintf(name, sizeof(name), "%s.meta", ok);
        {
                _cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_APPEND | O_CLOEXEC);

                ck_assert_int_eq(write(fd, "extra 1\n", 8), 8);
        }
        again = handles_free(again);
        s2 = handle_store_free(s2);
        ck_assert_int_eq(handle_store_open(t.fd, 100, &s2), 0);
        ck_assert_int_eq(handles_new(NULL, NULL, NULL, &again), 0);
        ck_assert_int_eq(handle_store_load(s2, again, 1 << 20, &dropped), 0);
        ck_assert_uint_eq(dropped, 1);
        tmpdir_done(&t);
}
END_TEST

static Suite *handle_store_suite(void) {
        Suite *s = suite_create("handle-store");

        suite_add_case(s, NULL, test_round_trip);
        suite_add_case(s, NULL, test_damage_and_leftovers);
        return s;
}

int main(void) {
        return check_run(handle_store_suite());
}
