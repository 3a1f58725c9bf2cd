/* Tests for lockctl console's pure parts: the ticket list and its screen lines
 * (client/lockctl-ticket-list) and the non-blocking WatchTickets feed (client/lockctl-watch) over
 * a socketpair standing in for lockd. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check-run.h"
#include "fd-util.h"
#include "lockctl-ticket-list.h"
#include "lockctl-watch.h"
#include "macro.h"

static json_t *ticket(const char *id, const char *state, const char *plugin, int n_steps) {
        json_t *steps = json_array();

        for (int i = 0; i < n_steps; i++)
                json_array_append_new(steps, json_pack("{s:s}", "plugin", plugin));
        return json_pack("{s:s, s:s, s:i, s:o, s:b}", "ticket", id, "state", state, "agent_uid",
                         61001, "steps", steps, "auto", false);
}

START_TEST(test_list_upsert) {
        TicketList l = {};
        json_t *a = ticket("t-aaaa", "pending", "p", 1), *b = ticket("t-bbbb", "pending", "p", 1);
        json_t *a2 = ticket("t-aaaa", "denied", "p", 1), *a3 = ticket("t-aaaa", "pending", "p", 1);
        json_t *bad = json_pack("{s:i}", "ticket", 3);

        ck_assert_ptr_null(ticket_list_selected_id(&l));
        ck_assert_int_eq(ticket_list_upsert(&l, a), 0);
        ck_assert_int_eq(ticket_list_upsert(&l, b), 0);
        ck_assert_uint_eq(l.n, 2);
        ck_assert_int_eq(ticket_list_upsert(&l, a2), 0);
        ck_assert_uint_eq(l.n, 2);
        ck_assert_ptr_eq(l.items[0], a2);
        /* An answer that overtook a newer one never moves the ticket back. */
        ck_assert_int_eq(ticket_list_upsert(&l, a3), 0);
        ck_assert_ptr_eq(l.items[0], a2);
        ck_assert_int_eq(ticket_list_upsert(&l, bad), -EINVAL);
        ck_assert_uint_eq(l.n, 2);

        ck_assert_str_eq(ticket_list_selected_id(&l), "t-aaaa");
        ticket_list_move(&l, 5);
        ck_assert_str_eq(ticket_list_selected_id(&l), "t-bbbb");
        ticket_list_move(&l, -7);
        ck_assert_str_eq(ticket_list_selected_id(&l), "t-aaaa");
        ticket_list_clear(&l);
        ck_assert_uint_eq(l.n, 0);
        ck_assert_ptr_null(ticket_list_selected_id(&l));
        json_decref(a), json_decref(b), json_decref(a2), json_decref(a3), json_decref(bad);
}
END_TEST

START_TEST(test_list_cap) {
        TicketList l = {};
        char id[32];

        for (int i = 0; i < TICKET_LIST_MAX + 3; i++) {
                json_t *t;

                snprintf(id, sizeof(id), "t-%d", i);
                t = ticket(id, "pending", "p", 1);
                ck_assert_int_eq(ticket_list_upsert(&l, t), 0);
                json_decref(t);
                if (i == 10)
                        ticket_list_move(&l, 5);
        }
        ck_assert_uint_eq(l.n, TICKET_LIST_MAX);
        /* The oldest three went; the selection stayed on its ticket while it could. */
        ck_assert_str_eq(json_string_value(json_object_get(l.items[0], "ticket")), "t-3");
        ck_assert_str_eq(ticket_list_selected_id(&l), "t-5");
        ticket_list_clear(&l);
}
END_TEST

START_TEST(test_line_format) {
        json_t *t = ticket("t-0123456789abcdef0123456789abcdef", "pending", "test.good-one", 2);
        json_t *evil = ticket("t-1\033[2J", "pen\nding", "x\033]0;owned\007", 1);
        char buf[512];
        size_t n;

        n = ticket_line_format(t, 200, buf, sizeof(buf));
        ck_assert_uint_eq(n, strlen(buf));
        ck_assert_str_eq(buf, "t-0123456789  uid 61001   pending    2 steps  test.good-one");
        n = ticket_line_format(t, 20, buf, sizeof(buf));
        ck_assert_uint_eq(n, 20);
        ck_assert_str_eq(buf, "t-0123456789  uid 61");
        n = ticket_line_format(t, 200, buf, 8);
        ck_assert_uint_eq(n, 7);

        ticket_line_format(evil, 200, buf, sizeof(buf));
        for (const char *p = buf; *p; p++)
                ck_assert(*p >= 0x20 && *p < 0x7f);
        ck_assert_ptr_nonnull(strstr(buf, "pen\\nding"));
        ck_assert_ptr_nonnull(strstr(buf, " 1 step   x\\x1b]0;owned\\x07"));
        json_decref(t);
        json_decref(evil);
}
END_TEST

/* A watch on one end of a socketpair; *peer is lockd's end. The call it sent is checked. */
static void watch_pair(Watch *w, int *peer) {
        VarlinkClient *c = NULL;
        char call[512];
        ssize_t k;
        int sp[2];

        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        ck_assert_int_eq(varlink_client_new_fd(sp[0], &c), 0);
        ck_assert_int_eq(watch_start(w, c), 0);
        k = read(sp[1], call, sizeof(call) - 1);
        ck_assert_int_gt(k, 0);
        call[k] = 0;
        ck_assert_uint_eq(strlen(call), (size_t)k - 1); /* one message, NUL-terminated */
        ck_assert_ptr_nonnull(strstr(call, "\"io.lockd.Console.WatchTickets\""));
        ck_assert_ptr_nonnull(strstr(call, "\"more\":true"));
        *peer = sp[1];
}

static void send_str(int fd, const char *s) {
        ck_assert_int_eq(loop_write(fd, s, strlen(s) + 1), 0);
}

START_TEST(test_watch_stream) {
        static const char two[] = "{\"parameters\":{\"ticket\":{\"ticket\":\"t-1\"}},"
                                  "\"continues\":true}\0"
                                  "{\"parameters\":{\"ticket\":{\"ticket\":\"t-2\"}},"
                                  "\"continues\":true}";
        _cleanup_close_ int peer = -1;
        json_t *t = NULL;
        char *error = NULL;
        Watch w = {};

        watch_pair(&w, &peer);
        ck_assert_int_eq(watch_read(&w), 0);
        ck_assert_int_eq(watch_next(&w, &t, &error), 0);
        /* An answer in two pieces is taken only once whole. */
        ck_assert_int_eq(loop_write(peer, "{\"contin", 8), 0);
        ck_assert_int_eq(watch_read(&w), 0);
        ck_assert_int_eq(watch_next(&w, &t, &error), 0);
        send_str(peer, "ues\":true}");
        ck_assert_int_eq(watch_read(&w), 0);
        ck_assert_int_eq(watch_next(&w, &t, &error), 1);
        ck_assert_ptr_null(t);
        /* Two answers in one read. */
        ck_assert_int_eq(loop_write(peer, two, sizeof(two)), 0);
        ck_assert_int_eq(watch_read(&w), 0);
        ck_assert_int_eq(watch_next(&w, &t, &error), 1);
        ck_assert_str_eq(json_string_value(json_object_get(t, "ticket")), "t-1");
        json_decref(t);
        ck_assert_int_eq(watch_next(&w, &t, &error), 1);
        ck_assert_str_eq(json_string_value(json_object_get(t, "ticket")), "t-2");
        json_decref(t);
        ck_assert_int_eq(watch_next(&w, &t, &error), 0);
        /* An error ends the watch. */
        send_str(peer, "{\"error\":\"io.lockd.Console.PermissionDenied\"}");
        ck_assert_int_eq(watch_read(&w), 0);
        ck_assert_int_eq(watch_next(&w, &t, &error), -EREMOTEIO);
        ck_assert_str_eq(error, "io.lockd.Console.PermissionDenied");
        free(error);
        error = NULL;
        ck_assert_int_eq(watch_next(&w, &t, &error), -EREMOTEIO);
        ck_assert_ptr_null(error);
        /* lockd gone. */
        peer = safe_close(peer);
        ck_assert_int_eq(watch_read(&w), -ECONNRESET);
        watch_done(&w);
}
END_TEST

START_TEST(test_watch_refusals) {
        static const char *const bad[] = {
                "{\"parameters\":{\"ticket\":{\"id\":\"t-1\"}},\"continues\":true}",
                "{\"parameters\":{\"ticket\":\"t-1\"},\"continues\":true}",
                "not json",
                "{\"parameters\":{},\"continues\":true,\"extra\":1}",
        };
        _cleanup_close_ int peer = -1;
        json_t *t = NULL;
        char *error = NULL;
        Watch w = {};

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                watch_pair(&w, &peer);
                send_str(peer, bad[i]);
                ck_assert_int_eq(watch_read(&w), 0);
                ck_assert_int_eq(watch_next(&w, &t, &error), -EBADMSG);
                ck_assert_ptr_null(t);
                watch_done(&w);
                peer = safe_close(peer);
        }
        /* The end of the stream: an answer without continues. */
        watch_pair(&w, &peer);
        send_str(peer, "{\"parameters\":{}}");
        ck_assert_int_eq(watch_read(&w), 0);
        ck_assert_int_eq(watch_next(&w, &t, &error), -EREMOTEIO);
        ck_assert_ptr_null(error);
        watch_done(&w);
}
END_TEST

START_TEST(test_watch_too_long) {
        _cleanup_close_ int peer = -1;
        _cleanup_free_ char *chunk = malloc(64 * 1024);
        size_t sent = 0;
        Watch w = {};
        int r = 0;

        watch_pair(&w, &peer);
        ck_assert_int_eq(fcntl(peer, F_SETFL, O_NONBLOCK), 0);
        memset(chunk, ' ', 64 * 1024);
        /* An answer that never ends: refused once it passes the cap, not buffered for ever. */
        while (r == 0 && sent < 4 * WATCH_MESSAGE_MAX) {
                ssize_t k = write(peer, chunk, 64 * 1024);

                if (k > 0)
                        sent += (size_t)k;
                r = watch_read(&w);
        }
        ck_assert_int_eq(r, -EBADMSG);
        ck_assert_uint_le(w.len, WATCH_MESSAGE_MAX + 64 * 1024);
        watch_done(&w);
}
END_TEST

static Suite *tui_suite(void) {
        Suite *s = suite_create("lockctl-tui");
        const CaseOptions list_case = {.tags = "list"};

        suite_add_case(s, &list_case, test_list_upsert);
        suite_add_case(s, &list_case, test_list_cap);
        suite_add_case(s, &list_case, test_line_format);
        const CaseOptions watch_case = {.tags = "watch"};

        suite_add_case(s, &watch_case, test_watch_stream);
        suite_add_case(s, &watch_case, test_watch_refusals);
        suite_add_case(s, &watch_case, test_watch_too_long);
        return s;
}

int main(void) {
        return check_run(tui_suite());
}
