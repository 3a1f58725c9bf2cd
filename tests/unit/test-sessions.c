/* Tests for daemon/sessions: keys per uid and session, replay, replacement, the idle and absolute
 * timeouts, wiping on request and at the end, eviction, and the announcements for the audit. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check-run.h"
#include "macro.h"
#include "sessions.h"

#define SEC 1000000ULL

typedef struct Ended {
        unsigned n;
        SessionEnd last;
        size_t last_values;
        uid_t last_uid;
} Ended;

static void on_ended(const SessionId *id, SessionEnd why, size_t n_values, void *userdata) {
        Ended *e = userdata;

        e->n++;
        e->last = why;
        e->last_values = n_values;
        e->last_uid = id->uid;
}

static SecBuf *value(const char *s) {
        SecBuf *b = NULL;

        ck_assert_int_eq(secbuf_new_copy(s, strlen(s) + 1, &b), 0);
        b->len = strlen(s);
        return b;
}

static SessionId sid(uid_t uid, const char *name) {
        SessionId id = {.uid = uid};

        snprintf(id.name, sizeof(id.name), "%s", name);
        return id;
}

START_TEST(test_keys_and_replay) {
        _cleanup_(sessions_freep) Sessions *ss = NULL;
        Ended ended = {};
        SessionId a = sid(0, "audit:3"), b = sid(0, "audit:4"), c = sid(1000, "audit:3");
        const SecBuf *v;

        ck_assert_int_eq(sessions_new(NULL, 60 * SEC, 600 * SEC, on_ended, &ended, &ss), 0);
        ck_assert_int_eq(sessions_put(ss, &a, "email", value("me@example.org")), 1);
        ck_assert_int_eq(sessions_put(ss, &a, "word", value("lock")), 0);
        v = sessions_get(ss, &a, "email", true);
        ck_assert_ptr_nonnull(v);
        ck_assert_mem_eq(v->data, "me@example.org", v->len);
        /* Another login session of the same uid, or another uid in a session of that number,
         * holds nothing. */
        ck_assert_ptr_null(sessions_get(ss, &b, "email", false));
        ck_assert_ptr_null(sessions_get(ss, &c, "email", false));
        ck_assert_ptr_null(sessions_get(ss, &a, "absent", false));
        /* A new value replaces the old one. */
        ck_assert_int_eq(sessions_put(ss, &a, "email", value("you@example.org")), 0);
        v = sessions_get(ss, &a, "email", false);
        ck_assert_mem_eq(v->data, "you@example.org", v->len);
        /* Names are placeholder names; the value is taken even when refused. */
        ck_assert_int_eq(sessions_put(ss, &a, "Email", value("x")), -EINVAL);
        ck_assert_int_eq(sessions_put(ss, &a, "", value("x")), -EINVAL);
        ck_assert_int_eq(sessions_put(ss, &a, "a23456789012345678901234567890123", value("x")),
                         -EINVAL);
        ck_assert_int_eq(sessions_put(ss, &a, "ok", NULL), -EINVAL);
        ck_assert_uint_eq(sessions_n(ss), 1);
        /* EndSession: the count, one announcement, nothing left. */
        ck_assert_uint_eq(sessions_end(ss, &a, SESSION_END_REQUESTED), 2);
        ck_assert_uint_eq(ended.n, 1);
        ck_assert_int_eq(ended.last, SESSION_END_REQUESTED);
        ck_assert_uint_eq(ended.last_values, 2);
        ck_assert_ptr_null(sessions_get(ss, &a, "email", false));
        ck_assert_uint_eq(sessions_end(ss, &a, SESSION_END_REQUESTED), 0);
        ck_assert_uint_eq(ended.n, 1);
        /* The stop wipes and announces every session. */
        ck_assert_int_eq(sessions_put(ss, &c, "word", value("x")), 1);
        ss = sessions_free(ss);
        ck_assert_uint_eq(ended.n, 2);
        ck_assert_int_eq(ended.last, SESSION_END_STOP);
        ck_assert_uint_eq(ended.last_uid, 1000);
}
END_TEST

START_TEST(test_timeouts) {
        _cleanup_(sessions_freep) Sessions *ss = NULL;
        Ended ended = {};
        SessionId a = sid(0, "uid"), b = sid(5, "uid");
        uint64_t now;

        ck_assert_int_eq(sessions_new(NULL, 0, 1, NULL, NULL, &ss), -EINVAL);
        ck_assert_int_eq(sessions_new(NULL, 10 * SEC, 100 * SEC, on_ended, &ended, &ss), 0);
        ck_assert_int_eq(sessions_put(ss, &a, "x", value("1")), 1);
        ck_assert_int_eq(sessions_put(ss, &b, "x", value("2")), 1);
        now = sessions_now_usec();
        ck_assert_uint_eq(sessions_expire(ss, now + 5 * SEC), 0);
        ck_assert_uint_eq(sessions_expire(ss, now + 11 * SEC), 2);
        ck_assert_int_eq(ended.last, SESSION_END_IDLE);
        ck_assert_uint_eq(sessions_n(ss), 0);

        /* Shorter timeouts from a reload apply at once. */
        ck_assert_int_eq(sessions_put(ss, &a, "x", value("1")), 1);
        usleep(20000);
        sessions_set_timeouts(ss, 10000, 10000);
        ck_assert_uint_eq(sessions_n(ss), 0);
        ck_assert_int_eq(ended.last, SESSION_END_ABSOLUTE);
        ck_assert_ptr_null(sessions_get(ss, &a, "x", true));
}
END_TEST

START_TEST(test_caps) {
        _cleanup_(sessions_freep) Sessions *ss = NULL;
        Ended ended = {};
        char name[16];

        ck_assert_int_eq(sessions_new(NULL, 60 * SEC, 600 * SEC, on_ended, &ended, &ss), 0);
        for (uid_t u = 0; u < SESSIONS_MAX; u++) {
                SessionId id = sid(u, "uid");
                ck_assert_int_eq(sessions_put(ss, &id, "x", value("v")), 1);
        }
        ck_assert_uint_eq(sessions_n(ss), SESSIONS_MAX);
        /* One more session: the idlest (uid 0, the first) is wiped to make room. */
        {
                SessionId id = sid(9999, "uid"), first = sid(0, "uid"), second = sid(1, "uid");
                ck_assert_int_eq(sessions_put(ss, &id, "x", value("v")), 1);
                ck_assert_int_eq(ended.last, SESSION_END_EVICTED);
                ck_assert_uint_eq(ended.last_uid, 0);
                ck_assert_ptr_null(sessions_get(ss, &first, "x", false));
                ck_assert_ptr_nonnull(sessions_get(ss, &second, "x", false));
        }
        /* One session's values: the oldest goes past the cap. */
        {
                SessionId id = sid(4242, "uid");
                for (unsigned i = 0; i <= SESSION_VALUES_MAX; i++) {
                        snprintf(name, sizeof(name), "v%u", i);
                        ck_assert_int_ge(sessions_put(ss, &id, name, value("v")), 0);
                }
                ck_assert_ptr_null(sessions_get(ss, &id, "v0", false));
                ck_assert_ptr_nonnull(sessions_get(ss, &id, "v1", false));
                snprintf(name, sizeof(name), "v%u", SESSION_VALUES_MAX);
                ck_assert_ptr_nonnull(sessions_get(ss, &id, name, false));
        }
}
END_TEST

START_TEST(test_peer_id) {
        SessionId id;

        /* This process: some session (logind's, the audit one, or the uid's), always the uid. */
        session_id_of_peer(getpid(), 4321, &id);
        ck_assert_uint_eq(id.uid, 4321);
        ck_assert(strncmp(id.name, "logind:", 7) == 0 || strncmp(id.name, "audit:", 6) == 0 ||
                  strcmp(id.name, "uid") == 0);
        /* No such process: the uid's session. */
        session_id_of_peer(0, 7, &id);
        ck_assert_str_eq(id.name, "uid");
        ck_assert_str_eq(session_end_name(SESSION_END_LOGOUT), "logout");
        ck_assert_ptr_null(session_end_name(_SESSION_END_MAX));
}
END_TEST

static Suite *sessions_suite(void) {
        Suite *s = suite_create("sessions");
        const CaseOptions each = {.timeout = 30};

        suite_add_case(s, &each, test_keys_and_replay);
        suite_add_case(s, &each, test_timeouts);
        suite_add_case(s, &each, test_caps);
        suite_add_case(s, &each, test_peer_id);
        return s;
}

int main(void) {
        return check_run(sessions_suite());
}
