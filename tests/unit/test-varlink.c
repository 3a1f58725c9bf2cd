/* Unit tests of common/varlink: a server on an sd-event loop serving sockets in a temporary
 * directory, hostile peers as raw sockets, the blocking client from a forked child, and the pure
 * message and parameter checks. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check-run.h"
#include "fd-util.h"
#include "macro.h"
#include "varlink.h"

#define ROLE_A 1u
#define ROLE_B 2u

/* ---- The server under test ---- */

static sd_event *event;
static VarlinkServer *server;
static char sock_dir[PATH_MAX], sock_plain[PATH_MAX], sock_fds[PATH_MAX];
static int fd_plain = -1, fd_fds = -1; /* the listeners' fds, for their limits */
static unsigned next_roles = ROLE_A;
static unsigned n_accepted, n_disconnects, n_cancels, n_oneway, n_echo;
static const char *last_close_cause; /* varlink_conn_close_cause() at the last disconnect */
static char order[64];
static VarlinkCall *held;
static bool cancel_saw_conn;

/* Answers with a new reference, dropped. */
static int reply_new(VarlinkCall *call, json_t *params, bool continues) {
        int r = varlink_call_reply(call, params, continues);

        json_decref(params);
        return r;
}

static int method_echo(VarlinkCall *call, json_t *params, void *userdata) {
        n_echo++;
        if (varlink_call_is_oneway(call))
                n_oneway++;
        return varlink_call_reply(call, params, false);
}

/* Echo through varlink_call_reply_text(): the parameters' compact text, twice when more was
 * asked (the first continuing); text that is no object's is refused first. */
static int method_echo_text(VarlinkCall *call, json_t *params, void *userdata) {
        _cleanup_free_ char *text = json_dumps(params, JSON_COMPACT);
        int r;

        ck_assert_ptr_nonnull(text);
        ck_assert_int_eq(varlink_call_reply_text(call, "", 0, false), -EINVAL);
        ck_assert_int_eq(varlink_call_reply_text(call, "[1]", 3, false), -EINVAL);
        ck_assert_int_eq(varlink_call_reply_text(call, "{\"a\":1", 6, false), -EINVAL);
        ck_assert_int_eq(varlink_call_reply_text(call, "{\"a\0\":1}", 8, false), -EINVAL);
        if (varlink_call_wants_more(call)) {
                r = varlink_call_reply_text(call, text, strlen(text), true);
                if (r < 0)
                        return r;
        }
        return varlink_call_reply_text(call, text, strlen(text), false);
}

static int method_stream(VarlinkCall *call, json_t *params, void *userdata) {
        json_int_t n = json_integer_value(json_object_get(params, "n"));
        int r;

        for (json_int_t i = 0; varlink_call_wants_more(call) && i < n; i++) {
                r = reply_new(call, json_pack("{s:I}", "i", i), true);
                if (r < 0)
                        return r;
        }
        return reply_new(call, json_pack("{s:I}", "i", n), false);
}

static void on_cancel(VarlinkCall *call, void *userdata) {
        n_cancels++;
        strcat(order, "C");
        cancel_saw_conn = varlink_call_conn(call) != NULL;
}

static int method_async(VarlinkCall *call, json_t *params, void *userdata) {
        ck_assert_ptr_null(held);
        held = varlink_call_ref(call);
        varlink_call_set_cancel(call, on_cancel, NULL);
        return 0;
}

static int method_fds(VarlinkCall *call, json_t *params, void *userdata) {
        json_t *contents = json_array();

        for (size_t i = 0; i < varlink_call_n_fds(call); i++) {
                _cleanup_close_ int fd = varlink_call_take_fd(call, (int64_t)i);
                char buf[64];
                ssize_t n;

                ck_assert_int_ge(fd, 0);
                ck_assert_int_eq(varlink_call_take_fd(call, (int64_t)i), -EBADF);
                n = pread(fd, buf, sizeof(buf), 0);
                ck_assert_int_ge(n, 0);
                json_array_append_new(contents, json_stringn(buf, (size_t)n));
        }
        ck_assert_int_eq(varlink_call_take_fd(call, 99), -EBADF);
        return reply_new(call, json_pack("{s:o}", "contents", contents), false);
}

static int method_fds_ignore(VarlinkCall *call, json_t *params, void *userdata) {
        /* Untaken fds are closed with the call. */
        return varlink_call_reply(call, NULL, false);
}

static int method_fail(VarlinkCall *call, json_t *params, void *userdata) {
        return -EIO;
}

static int method_forget(VarlinkCall *call, json_t *params, void *userdata) {
        return 0;
}

static int method_close(VarlinkCall *call, json_t *params, void *userdata) {
        varlink_conn_close(varlink_call_conn(call));
        ck_assert_ptr_null(varlink_call_conn(call));
        ck_assert_int_eq(varlink_call_reply(call, NULL, false), -ENOTCONN);
        return 0;
}

static int method_big(VarlinkCall *call, json_t *params, void *userdata) {
        size_t n = (size_t)json_integer_value(json_object_get(params, "n"));
        _cleanup_free_ char *s = malloc(n);
        json_t *reply;
        int r;

        ck_assert_ptr_nonnull(s);
        memset(s, 'x', n);
        reply = json_pack("{s:s%}", "data", s, n);
        r = varlink_call_reply(call, reply, false);
        json_decref(reply);
        /* Dropped as too slow: the answer could not be queued. */
        return r == -ENOTCONN ? 0 : r;
}

static int method_ping(VarlinkCall *call, json_t *params, void *userdata) {
        return varlink_call_reply(call, NULL, false);
}

static const VarlinkParam echo_params[] = {
        {"s", VARLINK_STRING, true, 1, 16},
        {"i", VARLINK_INT, false, -5, 5},
        {"b", VARLINK_BOOL, false, 0, 0},
        {"m", VARLINK_STRING_MAP, false, 0, 2},
        {"a", VARLINK_ARRAY, false, 0, 3},
        {"o", VARLINK_OBJECT, false, 0, 0},
        {},
};
static const VarlinkParam stream_params[] = {{"n", VARLINK_INT, true, 0, 10}, {}};
static const VarlinkParam big_params[] = {{"n", VARLINK_INT, true, 1, 1024 * 1024}, {}};

static const VarlinkMethod test_methods[] = {
        {"Echo", method_echo, echo_params, 0},
        {"EchoText", method_echo_text, echo_params, VARLINK_METHOD_MORE},
        {"Stream", method_stream, stream_params, VARLINK_METHOD_MORE},
        {"Async", method_async, NULL, 0},
        {"Fds", method_fds, NULL, VARLINK_METHOD_ACCEPTS_FDS},
        {"FdsIgnore", method_fds_ignore, NULL, VARLINK_METHOD_ACCEPTS_FDS},
        {"Fail", method_fail, NULL, 0},
        {"Forget", method_forget, NULL, 0},
        {"Close", method_close, NULL, 0},
        {"Big", method_big, big_params, 0},
        {},
};
static const VarlinkMethod other_methods[] = {{"Ping", method_ping, NULL, 0}, {}};

static const VarlinkInterface test_interface = {
        .name = "io.lockd.Test",
        .description = "interface io.lockd.Test\nmethod Echo(s: string) -> (s: string)\n",
        .methods = test_methods,
        .role_mask = ROLE_A,
};
static const VarlinkInterface other_interface = {
        .name = "io.lockd.Other",
        .description = "interface io.lockd.Other\nmethod Ping() -> ()\n",
        .methods = other_methods,
        .role_mask = ROLE_B,
};

static int on_accept(VarlinkConn *c, void *userdata) {
        ck_assert_int_eq(varlink_conn_peer(c)->uid, getuid());
        ck_assert_int_gt(varlink_conn_peer(c)->pid, 0);
        /* SO_PEERPIDFD where the kernel has it (6.5), -1 otherwise. */
        ck_assert(varlink_conn_peer_pidfd(c) == -1 ||
                  fcntl(varlink_conn_peer_pidfd(c), F_GETFD) == FD_CLOEXEC);
        varlink_conn_set_roles(c, next_roles);
        ck_assert_uint_eq(varlink_conn_roles(c), next_roles);
        varlink_conn_set_userdata(c, &n_accepted);
        n_accepted++;
        return 0;
}

static void on_disconnect(VarlinkConn *c, void *userdata) {
        ck_assert_ptr_eq(varlink_conn_get_userdata(c), &n_accepted);
        n_disconnects++;
        last_close_cause = varlink_conn_close_cause(c);
        strcat(order, "D");
}

static int listen_at(const char *path) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        ck_assert_int_ge(fd, 0);
        ck_assert_uint_lt(strlen(path), sizeof(sa.sun_path));
        strcpy(sa.sun_path, path);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(fd, 64), 0);
        return fd;
}

static const VarlinkLimits test_limits = {
        .message_bytes = 4096,
        .pending_per_conn = 4,
        .conns_per_uid = 16,
        .conns_total = 32,
        .out_bytes_per_conn = 1024 * 1024,
        .stall_usec = 5 * 1000 * 1000,
};

static void server_start(const VarlinkLimits *limits) {
        const char *tmp = getenv("TMPDIR");

        snprintf(sock_dir, sizeof(sock_dir), "%s/test-varlink-XXXXXX", tmp ? tmp : "/tmp");
        ck_assert_ptr_nonnull(mkdtemp(sock_dir));
        ck_assert_int_lt(snprintf(sock_plain, sizeof(sock_plain) - 16, "%s", sock_dir), 256);
        strcpy(sock_fds, sock_plain);
        strcat(sock_plain, "/plain.sock");
        strcat(sock_fds, "/fds.sock");

        ck_assert_int_eq(sd_event_new(&event), 0);
        ck_assert_int_eq(varlink_server_new(event, limits ? limits : &test_limits, "lockd tests",
                                            "test-varlink", "1", "https://example.org", &server),
                         0);
        ck_assert_int_eq(varlink_server_add_interface(server, &test_interface), 0);
        ck_assert_int_eq(varlink_server_add_interface(server, &test_interface), -EEXIST);
        ck_assert_int_eq(varlink_server_add_interface(server, &other_interface), 0);
        fd_plain = listen_at(sock_plain);
        fd_fds = listen_at(sock_fds);
        ck_assert_int_eq(
                varlink_server_listen_fd(server, fd_plain, false, on_accept, on_disconnect, NULL),
                0);
        ck_assert_int_eq(
                varlink_server_listen_fd(server, fd_fds, true, on_accept, on_disconnect, NULL), 0);
}

static void server_stop(void) {
        server = varlink_server_free(server);
        event = sd_event_unref(event);
        unlink(sock_plain);
        unlink(sock_fds);
        rmdir(sock_dir);
}

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Runs the loop for usec. */
static void pump(uint64_t usec) {
        uint64_t end = now_usec() + usec;

        while (now_usec() < end)
                ck_assert_int_ge(sd_event_run(event, 2000), 0);
}

/* Runs the loop until expr holds, failing after five seconds. */
#define PUMP_UNTIL(expr)                                                                           \
        do {                                                                                       \
                uint64_t _end = now_usec() + 5 * 1000 * 1000;                                      \
                while (!(expr)) {                                                                  \
                        ck_assert_msg(now_usec() < _end, "timed out waiting for %s", #expr);       \
                        ck_assert_int_ge(sd_event_run(event, 2000), 0);                            \
                }                                                                                  \
        } while (0)

static bool readable(int fd) {
        struct pollfd p = {.fd = fd, .events = POLLIN};

        return poll(&p, 1, 0) > 0;
}

static VarlinkClient *connect_to(const char *path) {
        VarlinkClient *c = NULL;

        ck_assert_int_eq(varlink_client_connect(path, &c), 0);
        return c;
}

static void send_str(VarlinkClient *c, const char *s) {
        ck_assert_int_eq(varlink_client_send_raw(c, s, strlen(s) + 1, NULL, 0), 0);
}

/* Reads one message (or the hangup) while the loop keeps running: the client waits a
 * millisecond at a time, keeping what it got so far, and the server takes a turn in between. */
static int read_pumping(VarlinkClient *c, char **ret, size_t *ret_len) {
        uint64_t end = now_usec() + 5 * 1000 * 1000;
        int r;

        varlink_client_set_timeout(c, 1000);
        while ((r = varlink_client_read_raw(c, ret, ret_len)) == -ETIMEDOUT) {
                ck_assert_msg(now_usec() < end, "timed out waiting for an answer");
                ck_assert_int_ge(sd_event_run(event, 2000), 0);
        }
        varlink_client_set_timeout(c, 0);
        return r;
}

/* Runs the loop until an answer is there and returns it parsed. */
static json_t *answer(VarlinkClient *c) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        json_t *m;

        ck_assert_int_eq(read_pumping(c, &buf, &len), 0);
        ck_assert_uint_eq(strlen(buf), len);
        m = json_loads(buf, 0, NULL);
        ck_assert_msg(m != NULL, "not JSON: %s", buf);
        return m;
}

static json_t *call_str(VarlinkClient *c, const char *s) {
        send_str(c, s);
        return answer(c);
}

static void assert_reply(json_t *m) {
        ck_assert_msg(json_object_get(m, "error") == NULL, "error %s",
                      json_string_value(json_object_get(m, "error")));
        ck_assert(json_is_object(json_object_get(m, "parameters")));
}

static void assert_error(json_t *m, const char *error, const char *key, const char *value) {
        json_t *p = json_object_get(m, "parameters");

        ck_assert_str_eq(json_string_value(json_object_get(m, "error")), error);
        ck_assert(json_is_object(p));
        if (key)
                ck_assert_str_eq(json_string_value(json_object_get(p, key)), value);
        else
                ck_assert_uint_eq(json_object_size(p), 0);
}

/* The server hung up: EOF (or a reset) with no answer before it. */
static void assert_closed(VarlinkClient *c) {
        char *buf = NULL;
        int r;

        r = read_pumping(c, &buf, NULL);
        ck_assert_msg(r == -ECONNRESET, "expected a hangup, got %d (%s)", r, buf ? buf : "");
}

/* Nothing arrives within usec while the loop runs. */
static void assert_silent(VarlinkClient *c, uint64_t usec) {
        pump(usec);
        ck_assert(!readable(varlink_client_fd(c)));
}

static void assert_echo_works(VarlinkClient *c) {
        json_t *m =
                call_str(c, "{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"ok\"}}");

        assert_reply(m);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "parameters"), "s")),
                         "ok");
        json_decref(m);
}

static void reset_counters(void) {
        n_accepted = n_disconnects = n_cancels = n_oneway = n_echo = 0;
        last_close_cause = NULL;
        order[0] = 0;
        held = NULL;
        next_roles = ROLE_A;
}

/* ---- Round trips ---- */

START_TEST(test_echo) {
        VarlinkClient *c;
        json_t *m;

        reset_counters();
        server_start(NULL);
        c = connect_to(sock_plain);
        m = call_str(c, "{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"héllo\","
                        "\"i\":-5,\"b\":true,\"m\":{\"k\":\"v\"},\"a\":[1,2,3],\"o\":{\"x\":[]},"
                        "\"i\":null}}");
        /* Duplicate "i": refused before anything else, the connection is closed. */
        assert_error(m, VARLINK_ERROR_INVALID_PARAMETER, "parameter", "json");
        json_decref(m);
        assert_closed(c);
        varlink_client_free(c);

        c = connect_to(sock_plain);
        m = call_str(c, "{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"héllo\","
                        "\"i\":-5,\"b\":true,\"m\":{\"k\":\"v\"},\"a\":[1,2,3],\"o\":{\"x\":[]}}}");
        assert_reply(m);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "parameters"), "s")),
                         "héllo");
        ck_assert(json_object_get(m, "continues") == NULL);
        json_decref(m);
        PUMP_UNTIL(varlink_server_n_connections(server) == 1);
        ck_assert_uint_eq(n_accepted, 2);
        ck_assert_uint_eq(n_disconnects, 1);
        varlink_client_free(c);
        PUMP_UNTIL(n_disconnects == 2);
        ck_assert_uint_eq(varlink_server_n_connections(server), 0);
        server_stop();
}
END_TEST

/* One message that must be refused; closes: whether the connection ends after the answer. */
typedef struct ErrorCase {
        const char *message;
        const char *error;
        const char *key, *value;
        bool closes;
} ErrorCase;

static const ErrorCase error_cases[] = {
        /* Message shape: answered, then the connection is closed. */
        {"not json", VARLINK_ERROR_INVALID_PARAMETER, "parameter", "json", true},
        {"", VARLINK_ERROR_INVALID_PARAMETER, "parameter", "json", true},
        {"[]", VARLINK_ERROR_INVALID_PARAMETER, "parameter", "json", true},
        {"\"io.lockd.Test.Echo\"", VARLINK_ERROR_INVALID_PARAMETER, "parameter", "json", true},
        {"{\"method\":\"io.lockd.Test.Echo\"} x", VARLINK_ERROR_INVALID_PARAMETER, "parameter",
         "json", true},
        {"{\"parameters\":{}}", VARLINK_ERROR_INVALID_PARAMETER, "parameter", "method", true},
        {"{\"method\":1}", VARLINK_ERROR_INVALID_PARAMETER, "parameter", "method", true},
        {"{\"method\":null}", VARLINK_ERROR_INVALID_PARAMETER, "parameter", "method", true},
        {"{\"method\":\"Echo\"}", VARLINK_ERROR_INVALID_PARAMETER, "parameter", "method", true},
        {"{\"method\":\"io.lockd.Test.Echo\",\"x\":1}", VARLINK_ERROR_INVALID_PARAMETER,
         "parameter", "message", true},
        {"{\"method\":\"io.lockd.Test.Echo\",\"upgrade\":1}", VARLINK_ERROR_INVALID_PARAMETER,
         "parameter", "upgrade", true},
        {"{\"method\":\"io.lockd.Test.Echo\",\"more\":1}", VARLINK_ERROR_INVALID_PARAMETER,
         "parameter", "more", true},
        {"{\"method\":\"io.lockd.Test.Echo\",\"oneway\":\"yes\"}", VARLINK_ERROR_INVALID_PARAMETER,
         "parameter", "oneway", true},
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":[]}", VARLINK_ERROR_INVALID_PARAMETER,
         "parameter", "parameters", true},
        {"{\"method\":\"io.lockd.Test.Echo\",\"method\":\"io.lockd.Test.Echo\"}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "json", true},
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"a\\u0000b\"}}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "json", true},
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"\xff\"}}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "json", true},
        /* Calls: answered, the connection stays. */
        {"{\"method\":\"com.example.Nope.Echo\"}", VARLINK_ERROR_INTERFACE_NOT_FOUND, "interface",
         "com.example.Nope", false},
        {"{\"method\":\"io.lockd.Test.Nope\"}", VARLINK_ERROR_METHOD_NOT_FOUND, "method",
         "io.lockd.Test.Nope", false},
        /* Whatever the member's spelling, a name not found is MethodNotFound. */
        {"{\"method\":\"io.lockd.Test.echo\"}", VARLINK_ERROR_METHOD_NOT_FOUND, "method",
         "io.lockd.Test.echo", false},
        {"{\"method\":\"io.lockd.Test.ECHO-1\"}", VARLINK_ERROR_METHOD_NOT_FOUND, "method",
         "io.lockd.Test.ECHO-1", false},
        {"{\"method\":\"io..Test.Echo\"}", VARLINK_ERROR_INTERFACE_NOT_FOUND, "interface",
         "io..Test", false},
        /* An interface this connection may not use answers like one that does not exist, before
         * the method and its parameters are looked at. */
        {"{\"method\":\"io.lockd.Other.Ping\"}", VARLINK_ERROR_INTERFACE_NOT_FOUND, "interface",
         "io.lockd.Other", false},
        {"{\"method\":\"io.lockd.Other.Nope\",\"parameters\":{\"x\":1}}",
         VARLINK_ERROR_INTERFACE_NOT_FOUND, "interface", "io.lockd.Other", false},
        /* "upgrade": true is refused with a declared error; the connection stays. */
        {"{\"method\":\"io.lockd.Test.Echo\",\"upgrade\":true,\"parameters\":{\"s\":\"a\"}}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "upgrade", false},
        /* "parameters": null is the same as absent. */
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":null}", VARLINK_ERROR_INVALID_PARAMETER,
         "parameter", "s", false},
        {"{\"method\":\"io.lockd.Test.Echo\"}", VARLINK_ERROR_INVALID_PARAMETER, "parameter", "s",
         false},
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":null}}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "s", false},
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"\"}}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "s", false},
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"0123456789abcdefg\"}}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "s", false},
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":1}}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "s", false},
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"a\",\"i\":6}}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "i", false},
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"a\",\"i\":-6}}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "i", false},
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"a\",\"i\":1.0}}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "i", false},
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"a\",\"i\":\"1\"}}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "i", false},
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"a\",\"b\":1}}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "b", false},
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"a\",\"m\":{\"k\":1}}}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "m", false},
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"a\","
         "\"m\":{\"a\":\"1\",\"b\":\"2\",\"c\":\"3\"}}}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "m", false},
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"a\",\"m\":[]}}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "m", false},
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"a\",\"a\":[1,2,3,4]}}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "a", false},
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"a\",\"a\":{}}}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "a", false},
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"a\",\"o\":[]}}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "o", false},
        {"{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"a\",\"z\":1}}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "z", false},
        {"{\"method\":\"org.varlink.service.GetInterfaceDescription\"}",
         VARLINK_ERROR_INVALID_PARAMETER, "parameter", "interface", false},
};

START_TEST(test_errors) {
        const ErrorCase *t = &error_cases[_i];
        VarlinkClient *c;
        json_t *m;

        reset_counters();
        server_start(NULL);
        c = connect_to(sock_plain);
        m = call_str(c, t->message);
        ck_assert_msg(json_is_string(json_object_get(m, "error")), "no error for %s", t->message);
        assert_error(m, t->error, t->key, t->value);
        json_decref(m);
        if (t->closes)
                assert_closed(c);
        else
                assert_echo_works(c);
        varlink_client_free(c);
        server_stop();
}
END_TEST

START_TEST(test_deep_nesting) {
        VarlinkClient *c;
        json_t *m;

        reset_counters();
        server_start(NULL);
        /* The call, its parameters and "o" are three levels; arrays fill the rest. */
        for (unsigned depth = VARLINK_JSON_DEPTH_MAX; depth <= VARLINK_JSON_DEPTH_MAX + 1;
             depth++) {
                char buf[512];
                size_t n = (size_t)sprintf(buf, "{\"method\":\"io.lockd.Test.Echo\",\"parameters\":"
                                                "{\"s\":\"a\",\"o\":{\"x\":");

                for (unsigned i = 3; i < depth; i++)
                        buf[n++] = '[';
                buf[n++] = '1';
                for (unsigned i = 3; i < depth; i++)
                        buf[n++] = ']';
                strcpy(buf + n, "}}}");
                c = connect_to(sock_plain);
                m = call_str(c, buf);
                if (depth <= VARLINK_JSON_DEPTH_MAX) {
                        assert_reply(m);
                        assert_echo_works(c);
                } else {
                        assert_error(m, VARLINK_ERROR_INVALID_PARAMETER, "parameter", "json");
                        assert_closed(c);
                }
                json_decref(m);
                varlink_client_free(c);
        }
        server_stop();
}
END_TEST

/* ---- Answers ---- */

START_TEST(test_more) {
        VarlinkClient *c;
        json_t *m;

        reset_counters();
        server_start(NULL);
        c = connect_to(sock_plain);
        send_str(c, "{\"method\":\"io.lockd.Test.Stream\",\"more\":true,\"parameters\":{\"n\":3}}");
        for (int i = 0; i <= 3; i++) {
                m = answer(c);
                assert_reply(m);
                ck_assert_int_eq(
                        json_integer_value(json_object_get(json_object_get(m, "parameters"), "i")),
                        i);
                ck_assert(i < 3 ? json_is_true(json_object_get(m, "continues"))
                                : json_object_get(m, "continues") == NULL);
                json_decref(m);
        }
        /* Without "more" the same method answers once. */
        m = call_str(c, "{\"method\":\"io.lockd.Test.Stream\",\"parameters\":{\"n\":3}}");
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(m, "parameters"), "i")),
                         3);
        ck_assert(json_object_get(m, "continues") == NULL);
        json_decref(m);
        varlink_client_free(c);
        server_stop();
}
END_TEST

START_TEST(test_oneway) {
        VarlinkClient *c;

        reset_counters();
        server_start(NULL);
        c = connect_to(sock_plain);
        send_str(
                c,
                "{\"method\":\"io.lockd.Test.Echo\",\"oneway\":true,\"parameters\":{\"s\":\"a\"}}");
        /* Errors are not answered either. */
        send_str(c, "{\"method\":\"io.lockd.Test.Nope\",\"oneway\":true}");
        send_str(c, "{\"method\":\"io.lockd.Test.Echo\",\"oneway\":true}");
        send_str(c, "{\"method\":\"io.lockd.Other.Ping\",\"oneway\":true}");
        send_str(c, "{\"method\":\"io.lockd.Test.Echo\",\"oneway\":true,\"upgrade\":true}");
        /* "more" with "oneway": a oneway call, not an error. */
        send_str(c, "{\"method\":\"io.lockd.Test.Stream\",\"more\":true,\"oneway\":true,"
                    "\"parameters\":{\"n\":2}}");
        assert_echo_works(c);
        ck_assert_uint_eq(n_oneway, 1);
        assert_silent(c, 50 * 1000);
        /* Not even a malformed message is answered when it says oneway; it still hangs up. */
        send_str(c, "{\"method\":\"io.lockd.Test.Echo\",\"oneway\":true,\"bogus\":1}");
        assert_closed(c);
        varlink_client_free(c);
        server_stop();
}
END_TEST

/* "more" on a method that never continues is answered once, as a plain call. */
START_TEST(test_more_on_plain_method) {
        VarlinkClient *c;
        json_t *m;

        reset_counters();
        server_start(NULL);
        c = connect_to(sock_plain);
        m = call_str(c, "{\"method\":\"io.lockd.Test.Echo\",\"more\":true,"
                        "\"parameters\":{\"s\":\"a\"}}");
        assert_reply(m);
        ck_assert(json_object_get(m, "continues") == NULL);
        json_decref(m);
        assert_echo_works(c);
        assert_silent(c, 50 * 1000);
        varlink_client_free(c);
        server_stop();
}
END_TEST

START_TEST(test_handler_failures) {
        VarlinkClient *c;

        reset_counters();
        server_start(NULL);
        /* A handler that fails without answering closes the connection. */
        c = connect_to(sock_plain);
        send_str(c, "{\"method\":\"io.lockd.Test.Fail\"}");
        assert_closed(c);
        varlink_client_free(c);
        /* So does one that neither answers nor keeps the call. */
        c = connect_to(sock_plain);
        send_str(c, "{\"method\":\"io.lockd.Test.Forget\"}");
        assert_closed(c);
        varlink_client_free(c);
        /* A handler closing its own connection: freed after it returned, callbacks once. */
        c = connect_to(sock_plain);
        send_str(c, "{\"method\":\"io.lockd.Test.Close\"}");
        assert_closed(c);
        varlink_client_free(c);
        PUMP_UNTIL(n_disconnects == 3);
        pump(20 * 1000);
        ck_assert_uint_eq(n_disconnects, 3);
        ck_assert_uint_eq(varlink_server_n_connections(server), 0);
        server_stop();
}
END_TEST

/* ---- org.varlink.service ---- */

static void assert_interfaces(unsigned roles, const char *expected) {
        _cleanup_free_ char *got = NULL;
        VarlinkClient *c;
        json_t *m, *list, *v;
        size_t i;

        next_roles = roles;
        c = connect_to(sock_plain);
        m = call_str(c, "{\"method\":\"org.varlink.service.GetInfo\"}");
        assert_reply(m);
        ck_assert_str_eq(
                json_string_value(json_object_get(json_object_get(m, "parameters"), "product")),
                "test-varlink");
        list = json_object_get(json_object_get(m, "parameters"), "interfaces");
        got = strdup("");
        json_array_foreach(list, i, v) {
                char *s = NULL;

                ck_assert_int_ge(asprintf(&s, "%s%s%s", got, i ? " " : "", json_string_value(v)),
                                 0);
                free(got);
                got = s;
        }
        ck_assert_str_eq(got, expected);
        json_decref(m);
        varlink_client_free(c);
}

START_TEST(test_get_info) {
        reset_counters();
        server_start(NULL);
        assert_interfaces(ROLE_A, "org.varlink.service io.lockd.Test");
        assert_interfaces(ROLE_B, "org.varlink.service io.lockd.Other");
        assert_interfaces(ROLE_A | ROLE_B, "org.varlink.service io.lockd.Test io.lockd.Other");
        assert_interfaces(0, "org.varlink.service");
        server_stop();
}
END_TEST

static void assert_description(VarlinkClient *c, const char *iface, const char *expected) {
        char buf[256];
        json_t *m;

        snprintf(buf, sizeof(buf),
                 "{\"method\":\"org.varlink.service.GetInterfaceDescription\","
                 "\"parameters\":{\"interface\":\"%s\"}}",
                 iface);
        m = call_str(c, buf);
        if (expected) {
                assert_reply(m);
                ck_assert_ptr_nonnull(
                        strstr(json_string_value(json_object_get(json_object_get(m, "parameters"),
                                                                 "description")),
                               expected));
        } else
                assert_error(m, VARLINK_ERROR_INTERFACE_NOT_FOUND, "interface", iface);
        json_decref(m);
}

START_TEST(test_get_interface_description) {
        VarlinkClient *c;

        reset_counters();
        server_start(NULL);
        next_roles = ROLE_A;
        c = connect_to(sock_plain);
        assert_description(c, "io.lockd.Test", "interface io.lockd.Test\n");
        assert_description(c, "org.varlink.service", "interface org.varlink.service\n");
        assert_description(c, "org.varlink.service", "error ExpectedMore ()\n");
        /* Not this role's: as if it did not exist. */
        assert_description(c, "io.lockd.Other", NULL);
        assert_description(c, "com.example.Nope", NULL);
        varlink_client_free(c);
        server_stop();
}
END_TEST

/* ---- Framing and caps ---- */

START_TEST(test_message_size) {
        char buf[5000];
        VarlinkClient *c;
        json_t *m;
        size_t head;

        reset_counters();
        server_start(NULL);
        /* Exactly the cap, NUL included: accepted. */
        snprintf(buf, sizeof(buf),
                 "{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"x\"}");
        head = strlen(buf);
        memset(buf + head, ' ', 4095 - head - 1);
        buf[4094] = '}';
        buf[4095] = 0;
        c = connect_to(sock_plain);
        m = call_str(c, buf);
        assert_reply(m);
        json_decref(m);
        /* One byte more: dropped without an answer. */
        memmove(buf + 1, buf, 4096);
        buf[0] = ' ';
        send_str(c, buf);
        assert_closed(c);
        varlink_client_free(c);

        /* Past the cap without a NUL at all: dropped while it is still coming. */
        c = connect_to(sock_plain);
        memset(buf, ' ', sizeof(buf));
        ck_assert_int_eq(varlink_client_send_raw(c, buf, sizeof(buf), NULL, 0), 0);
        assert_closed(c);
        varlink_client_free(c);
        PUMP_UNTIL(n_disconnects == 2);
        server_stop();
}
END_TEST

START_TEST(test_truncated_then_eof) {
        const char *partial = "{\"method\":\"io.lockd.Test.Echo\"";
        VarlinkClient *c;
        json_t *m;

        reset_counters();
        server_start(NULL);
        c = connect_to(sock_plain);
        ck_assert_int_eq(varlink_client_send_raw(c, partial, strlen(partial), NULL, 0), 0);
        ck_assert_int_eq(shutdown(varlink_client_fd(c), SHUT_WR), 0);
        assert_closed(c);
        varlink_client_free(c);
        PUMP_UNTIL(n_disconnects == 1);
        ck_assert_str_eq(last_close_cause, "the peer ended in the middle of a message");

        /* A complete call then the end of the stream: answered, then closed. */
        c = connect_to(sock_plain);
        send_str(c, "{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"a\"}}");
        ck_assert_int_eq(shutdown(varlink_client_fd(c), SHUT_WR), 0);
        m = answer(c);
        assert_reply(m);
        json_decref(m);
        assert_closed(c);
        varlink_client_free(c);
        PUMP_UNTIL(n_disconnects == 2);
        server_stop();
}
END_TEST

START_TEST(test_stall) {
        VarlinkLimits limits = test_limits;
        VarlinkClient *c;
        json_t *m;
        uint64_t start;

        reset_counters();
        /*
         * 1 s, against pieces 100 ms apart: a scheduling delay of up to 0.9 s on a loaded machine
         * leaves the trickle below the stall time (with 200 ms, CI once saw the connection
         * dropped between two pieces).
         */
        limits.stall_usec = 1000 * 1000;
        server_start(&limits);
        c = connect_to(sock_plain);
        /* Whole messages with pauses longer than the stall time between them are fine. */
        assert_echo_works(c);
        pump(1200 * 1000);
        assert_echo_works(c);
        /* A message trickling in faster than the stall time is not a stall. */
        {
                const char *slow =
                        "{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"slow\"}}";
                size_t len = strlen(slow);

                for (size_t off = 0; off < len; off += 8) {
                        ck_assert_int_eq(varlink_client_send_raw(
                                                 c, slow + off, MIN(len - off, (size_t)8), NULL, 0),
                                         0);
                        pump(100 * 1000);
                        ck_assert_uint_eq(n_disconnects, 0);
                }
        }
        ck_assert_int_eq(varlink_client_send_raw(c, "", 1, NULL, 0), 0);
        assert_reply(m = answer(c));
        json_decref(m);
        start = now_usec();
        ck_assert_int_eq(varlink_client_send_raw(c, "{\"method\"", 9, NULL, 0), 0);
        assert_closed(c);
        ck_assert_uint_ge(now_usec() - start, 750 * 1000);
        varlink_client_free(c);
        PUMP_UNTIL(n_disconnects == 1);
        server_stop();
}
END_TEST

START_TEST(test_conns_per_uid) {
        VarlinkLimits limits = test_limits;
        VarlinkClient *c[4];

        reset_counters();
        limits.conns_per_uid = 2;
        server_start(&limits);
        c[0] = connect_to(sock_plain);
        c[1] = connect_to(sock_fds);
        PUMP_UNTIL(n_accepted == 2);
        c[2] = connect_to(sock_plain);
        assert_closed(c[2]);
        ck_assert_uint_eq(n_accepted, 2);
        ck_assert_uint_eq(varlink_server_n_connections(server), 2);
        assert_echo_works(c[0]);
        varlink_client_free(c[0]);
        PUMP_UNTIL(varlink_server_n_connections(server) == 1);
        c[3] = connect_to(sock_plain);
        assert_echo_works(c[3]);
        ck_assert_uint_eq(n_accepted, 3);
        varlink_client_free(c[1]);
        varlink_client_free(c[2]);
        varlink_client_free(c[3]);
        server_stop();
}
END_TEST

START_TEST(test_conns_total) {
        VarlinkLimits limits = test_limits;
        VarlinkClient *c[3];

        reset_counters();
        limits.conns_total = 2;
        server_start(&limits);
        c[0] = connect_to(sock_plain);
        c[1] = connect_to(sock_plain);
        PUMP_UNTIL(n_accepted == 2);
        c[2] = connect_to(sock_fds);
        assert_closed(c[2]);
        ck_assert_uint_eq(n_accepted, 2);
        assert_echo_works(c[1]);
        /* New limits hold for connections from now on. */
        limits.conns_total = 3;
        varlink_server_set_limits(server, &limits);
        varlink_client_free(c[2]);
        c[2] = connect_to(sock_fds);
        assert_echo_works(c[2]);
        for (size_t i = 0; i < ELEMENTSOF(c); i++)
                varlink_client_free(c[i]);
        server_stop();
}
END_TEST

/*
 * A listener's own cap keeps a reserve the other listener's peers cannot take; a peer over a cap
 * is told which before the close (and a client reads that rather than the broken pipe); an idle
 * connection is closed after the listener's idle time, one with a call open is not.
 */
START_TEST(test_listener_limits) {
        VarlinkLimits limits = test_limits;
        VarlinkClient *c[4];
        json_t *reply = NULL;
        char *error = NULL;

        reset_counters();
        limits.conns_total = 10;
        server_start(&limits);
        ck_assert_int_eq(varlink_server_set_listener_limits(server, fd_plain, 2, 300 * 1000,
                                                            "io.lockd.Test.TooManyConnections"),
                         0);
        ck_assert_int_eq(varlink_server_set_listener_limits(server, 12345, 1, 0, NULL), -ENOENT);
        ck_assert_int_eq(varlink_server_set_listener_limits(server, fd_plain, 2, 0, "bad name"),
                         -EINVAL);
        c[0] = connect_to(sock_plain);
        c[1] = connect_to(sock_plain);
        PUMP_UNTIL(n_accepted == 2);
        c[2] = connect_to(sock_plain);
        pump(50 * 1000);
        ck_assert_uint_eq(n_accepted, 2);
        /* The other listener is not at its cap: its peers still get in. */
        c[3] = connect_to(sock_fds);
        PUMP_UNTIL(n_accepted == 3);
        assert_echo_works(c[3]);
        /* The refused peer reads why, even though its own call met a closed socket. */
        ck_assert_int_eq(
                varlink_client_call(c[2], "io.lockd.Test.Echo", NULL, NULL, 0, &reply, &error), 0);
        ck_assert_str_eq(error, "io.lockd.Test.TooManyConnections");
        ck_assert_str_eq(json_string_value(json_object_get(reply, "limit")), "socket");
        free(error);
        json_decref(reply);
        /* One connection keeps a call open; the idle one is closed after 300 ms. */
        send_str(c[0], "{\"method\":\"io.lockd.Test.Async\"}");
        PUMP_UNTIL(held != NULL);
        PUMP_UNTIL(n_disconnects == 1);
        assert_closed(c[1]);
        pump(500 * 1000);
        ck_assert_uint_eq(n_disconnects, 1);
        ck_assert_int_eq(varlink_call_reply(held, NULL, false), 0);
        held = varlink_call_unref(held);
        /* Its call answered, the first one goes idle too. */
        PUMP_UNTIL(n_disconnects == 2);
        for (size_t i = 0; i < ELEMENTSOF(c); i++)
                varlink_client_free(c[i]);
        server_stop();
}
END_TEST

/* The highest fd open in this process. */
static int highest_fd(void) {
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        int max = -1;

        ck_assert_ptr_nonnull(d);
        while ((de = readdir(d)))
                if (de->d_name[0] != '.' && atoi(de->d_name) > max)
                        max = atoi(de->d_name);
        closedir(d);
        return max;
}

START_TEST(test_accept_emfile) {
        struct rlimit saved, tight;
        int fillers[256];
        size_t n_fillers = 0;
        VarlinkClient *c;
        unsigned iterations = 0;
        uint64_t end;

        reset_counters();
        server_start(NULL);
        c = connect_to(sock_plain);
        /* No fd left for accept(): the listener must rest, not spin. */
        ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &saved), 0);
        tight = saved;
        tight.rlim_cur = (rlim_t)highest_fd() + 1;
        ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &tight), 0);
        /* Fill the holes below the limit. */
        while (n_fillers < ELEMENTSOF(fillers) && (fillers[n_fillers] = dup(0)) >= 0)
                n_fillers++;
        ck_assert_int_eq(errno, EMFILE);
        end = now_usec() + 300 * 1000;
        while (now_usec() < end) {
                ck_assert_int_ge(sd_event_run(event, 50 * 1000), 0);
                iterations++;
        }
        ck_assert_uint_eq(n_accepted, 0);
        ck_assert_msg(iterations < 50, "the loop spun %u times", iterations);
        /* Once fds are there again, the waiting peer is served. */
        ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &saved), 0);
        for (size_t i = 0; i < n_fillers; i++)
                safe_close(fillers[i]);
        assert_echo_works(c);
        ck_assert_uint_eq(n_accepted, 1);
        varlink_client_free(c);
        server_stop();
}
END_TEST

/* Answers leave in call order: an Echo and a refusal made while an older call is open wait for
 * it; a streamed answer of the older call goes first, then everything held, in order. */
START_TEST(test_answer_order) {
        VarlinkClient *c;
        json_t *m;

        reset_counters();
        server_start(NULL);
        c = connect_to(sock_plain);
        send_str(c, "{\"method\":\"io.lockd.Test.Async\"}");
        send_str(c, "{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"second\"}}");
        send_str(c, "{\"method\":\"io.lockd.Test.Nope\"}");
        send_str(c, "{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"fourth\"}}");
        PUMP_UNTIL(held != NULL);
        /* Answered already, but behind the open Async call. */
        pump(50 * 1000);
        assert_silent(c, 100 * 1000);
        ck_assert_int_eq(reply_new(held, json_pack("{s:s}", "s", "first"), false), 0);
        held = varlink_call_unref(held);
        m = answer(c);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "parameters"), "s")),
                         "first");
        json_decref(m);
        m = answer(c);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "parameters"), "s")),
                         "second");
        json_decref(m);
        m = answer(c);
        ck_assert_str_eq(json_string_value(json_object_get(m, "error")),
                         VARLINK_ERROR_METHOD_NOT_FOUND);
        json_decref(m);
        m = answer(c);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "parameters"), "s")),
                         "fourth");
        json_decref(m);
        /* Nothing held: the next call is answered at once. */
        assert_echo_works(c);
        varlink_client_free(c);
        server_stop();
}
END_TEST

START_TEST(test_pending_cap) {
        VarlinkLimits limits = test_limits;
        VarlinkClient *c;
        json_t *m;

        reset_counters();
        limits.pending_per_conn = 1;
        server_start(&limits);
        c = connect_to(sock_plain);
        send_str(c, "{\"method\":\"io.lockd.Test.Async\"}");
        send_str(c, "{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"later\"}}");
        PUMP_UNTIL(held != NULL);
        /* The Echo waits unread while the Async call is open. */
        assert_silent(c, 100 * 1000);
        ck_assert_int_eq(reply_new(held, json_pack("{s:s}", "s", "first"), false), 0);
        ck_assert_int_eq(varlink_call_reply(held, NULL, false), -ENOTCONN);
        held = varlink_call_unref(held);
        m = answer(c);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "parameters"), "s")),
                         "first");
        json_decref(m);
        m = answer(c);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "parameters"), "s")),
                         "later");
        json_decref(m);
        varlink_client_free(c);

        /* While the cap is reached nothing is read at all: bytes past message_bytes wait in the
         * socket, and only count once the open call is answered. */
        c = connect_to(sock_plain);
        send_str(c, "{\"method\":\"io.lockd.Test.Async\"}");
        PUMP_UNTIL(held != NULL);
        {
                char spaces[8000];

                memset(spaces, ' ', sizeof(spaces));
                ck_assert_int_eq(varlink_client_send_raw(c, spaces, sizeof(spaces), NULL, 0), 0);
        }
        assert_silent(c, 100 * 1000);
        ck_assert_uint_eq(n_disconnects, 1);
        ck_assert_int_eq(varlink_call_reply(held, NULL, false), 0);
        held = varlink_call_unref(held);
        assert_reply(m = answer(c));
        json_decref(m);
        assert_closed(c);
        varlink_client_free(c);
        server_stop();
}
END_TEST

/*
 * An open call with "more" (a Wait) and 20 000 calls pipelined behind it without reading: every
 * answer counts until it is written, so lockd dispatches fewer than the pending cap of them and
 * then stops reading; what it parked is bounded, and nothing is lost once the open call ends.
 */
START_TEST(test_pipelined_behind_open_call) {
        static const char echo[] =
                "{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"x\"}}";
        VarlinkLimits limits = test_limits;
        VarlinkClient *c;
        size_t sent = 0, total = 20000, got = 0;
        int fd, flags;

        reset_counters();
        limits.pending_per_conn = 16;
        server_start(&limits);
        c = connect_to(sock_plain);
        send_str(c, "{\"method\":\"io.lockd.Test.Async\"}");
        PUMP_UNTIL(held != NULL);
        fd = varlink_client_fd(c);
        flags = fcntl(fd, F_GETFL);
        ck_assert_int_ge(fcntl(fd, F_SETFL, flags | O_NONBLOCK), 0);
        /* Send what the socket takes, the server taking turns, until it takes no more. */
        for (int idle = 0; sent < total && idle < 50;) {
                ssize_t k = send(fd, echo, sizeof(echo), MSG_NOSIGNAL);

                if (k == (ssize_t)sizeof(echo)) {
                        sent++;
                        idle = 0;
                        continue;
                }
                ck_assert(k < 0 && errno == EAGAIN); /* whole messages only: they are small */
                pump(2000);
                idle++;
        }
        pump(100 * 1000);
        ck_assert_uint_lt(sent, total); /* the server stopped reading */
        ck_assert_uint_lt(n_echo, limits.pending_per_conn);
        ck_assert_uint_eq(n_disconnects, 0);
        /* The open call ends: everything comes, in order, and the rest is read and answered. */
        ck_assert_int_eq(reply_new(held, json_pack("{s:s}", "s", "first"), false), 0);
        held = varlink_call_unref(held);
        ck_assert_int_ge(fcntl(fd, F_SETFL, flags), 0);
        {
                json_t *m = answer(c);

                ck_assert_str_eq(
                        json_string_value(json_object_get(json_object_get(m, "parameters"), "s")),
                        "first");
                json_decref(m);
        }
        while (got < sent) {
                json_t *m = answer(c);

                assert_reply(m);
                json_decref(m);
                got++;
        }
        ck_assert_uint_eq(n_echo, sent);
        varlink_client_free(c);
        server_stop();
}
END_TEST

static void run_child(void (*fn)(void));

static void child_big(void) {
        VarlinkClient *c = NULL;
        json_t *params = json_pack("{s:i}", "n", 60000);

        if (varlink_client_connect(sock_plain, &c) < 0)
                _exit(1);
        for (int i = 0; i < 5; i++) {
                json_t *reply = NULL;
                char *error = NULL;

                if (varlink_client_call(c, "io.lockd.Test.Big", params, NULL, 0, &reply, &error) <
                            0 ||
                    error || strlen(json_string_value(json_object_get(reply, "data"))) != 60000)
                        _exit(1);
                json_decref(reply);
        }
        json_decref(params);
        varlink_client_free(c);
}

START_TEST(test_slow_reader) {
        VarlinkLimits limits = test_limits;
        VarlinkClient *c;

        reset_counters();
        limits.out_bytes_per_conn = 64 * 1024;
        limits.pending_per_conn = 64;
        server_start(&limits);
        c = connect_to(sock_plain);
        /* 40 answers of 50 KB each (each under the cap), never read: more than the socket and
         * the queue hold. */
        for (int i = 0; i < 40; i++)
                send_str(c, "{\"method\":\"io.lockd.Test.Big\",\"parameters\":{\"n\":50000}}");
        PUMP_UNTIL(n_disconnects == 1);
        ck_assert_uint_eq(varlink_server_n_connections(server), 0);
        /* Dropped, and the cause is there for the log. */
        ck_assert_str_eq(last_close_cause,
                         "the peer does not read its answers: past the output cap");
        varlink_client_free(c);

        /* A reader that keeps up gets big answers. */
        run_child(child_big);
        server_stop();
}
END_TEST

/* Reads one message and checks that its bytes, NUL included, are what json_dumps() makes of
 * {"parameters": params} (and "continues": true when continues). Takes params. */
static void assert_reply_bytes(VarlinkClient *c, json_t *params, bool continues) {
        _cleanup_(json_decrefp) json_t *want = json_pack("{s:o}", "parameters", params);
        _cleanup_free_ char *buf = NULL, *text = NULL;
        size_t len = 0;

        ck_assert_ptr_nonnull(want);
        if (continues)
                ck_assert_int_eq(json_object_set_new(want, "continues", json_true()), 0);
        text = json_dumps(want, JSON_COMPACT);
        ck_assert_ptr_nonnull(text);
        ck_assert_int_eq(read_pumping(c, &buf, &len), 0);
        ck_assert_str_eq(buf, text);
        ck_assert_uint_eq(len, strlen(text));
}

/* An answer is written around its parameters' own dump (or the caller's text of them:
 * varlink_call_reply_text()) when it may go out at once, and kept as an object when it waits
 * behind an older call: the same bytes either way, and the same as jansson's dump of the whole
 * message (escapes, non-ASCII, an empty object, "continues"). */
START_TEST(test_reply_bytes) {
        static const char *const calls[] = {
                "{\"s\":\"plain\"}",
                "{\"s\":\"h\\u00e9llo \\u2603 \\ud83d\\ude00\"}",
                "{\"s\":\"q\\\"b\\\\n\\n\\t\\u0001/\",\"i\":-5,\"b\":false}",
                "{\"s\":\"x\",\"m\":{\"k\":\"v\",\"\":\"\"},\"a\":[1,[2],{}],"
                "\"o\":{\"deep\":{\"er\":[null,true,0.5]}}}",
        };
        VarlinkClient *c;

        reset_counters();
        server_start(NULL);
        c = connect_to(sock_plain);
        for (size_t i = 0; i < 2 * ELEMENTSOF(calls); i++) {
                _cleanup_free_ char *call = NULL;
                json_t *params = json_loads(calls[i / 2], 0, NULL);

                ck_assert_ptr_nonnull(params);
                ck_assert_int_ge(asprintf(&call,
                                          "{\"method\":\"io.lockd.Test.%s\","
                                          "\"parameters\":%s}",
                                          i % 2 ? "EchoText" : "Echo", calls[i / 2]),
                                 0);
                /* At once. */
                send_str(c, call);
                assert_reply_bytes(c, json_incref(params), false);
                /* Behind an open call, then let go with it. */
                send_str(c, "{\"method\":\"io.lockd.Test.Async\"}");
                send_str(c, call);
                PUMP_UNTIL(held != NULL);
                pump(20 * 1000);
                ck_assert_int_eq(reply_new(held, json_pack("{s:s}", "s", "first"), false), 0);
                held = varlink_call_unref(held);
                assert_reply_bytes(c, json_pack("{s:s}", "s", "first"), false);
                assert_reply_bytes(c, params, false);
        }
        /* Text that continues, at once and behind an open call. */
        send_str(c, "{\"method\":\"io.lockd.Test.EchoText\",\"more\":true,"
                    "\"parameters\":{\"s\":\"t\"}}");
        assert_reply_bytes(c, json_pack("{s:s}", "s", "t"), true);
        assert_reply_bytes(c, json_pack("{s:s}", "s", "t"), false);
        send_str(c, "{\"method\":\"io.lockd.Test.Async\"}");
        send_str(c, "{\"method\":\"io.lockd.Test.EchoText\",\"more\":true,"
                    "\"parameters\":{\"s\":\"u\"}}");
        PUMP_UNTIL(held != NULL);
        pump(20 * 1000);
        ck_assert_int_eq(reply_new(held, NULL, false), 0);
        held = varlink_call_unref(held);
        assert_reply_bytes(c, json_object(), false);
        assert_reply_bytes(c, json_pack("{s:s}", "s", "u"), true);
        assert_reply_bytes(c, json_pack("{s:s}", "s", "u"), false);
        /* No parameters: an empty object. */
        send_str(c, "{\"method\":\"io.lockd.Test.FdsIgnore\"}");
        assert_reply_bytes(c, json_object(), false);
        /* Answers that continue, then the last one. */
        send_str(c, "{\"method\":\"io.lockd.Test.Stream\",\"more\":true,\"parameters\":{\"n\":2}}");
        for (json_int_t i = 0; i < 2; i++)
                assert_reply_bytes(c, json_pack("{s:I}", "i", i), true);
        assert_reply_bytes(c, json_pack("{s:I}", "i", (json_int_t)2), false);
        varlink_client_free(c);
        server_stop();
}
END_TEST

/* One answer the output cap could never hold: the call ends with the interface's ReplyTooLarge,
 * the connection stays and serves the next call, and an ordinary hang-up has no cause. (lockd
 * used to queue it, then drop the peer without a word.) */
START_TEST(test_reply_too_large) {
        VarlinkLimits limits = test_limits;
        VarlinkClient *c;
        json_t *m, *p;

        reset_counters();
        limits.out_bytes_per_conn = 64 * 1024;
        server_start(&limits);
        c = connect_to(sock_plain);
        send_str(c, "{\"method\":\"io.lockd.Test.Big\",\"parameters\":{\"n\":100000}}");
        m = answer(c);
        ck_assert_str_eq(json_string_value(json_object_get(m, "error")),
                         "io.lockd.Test.ReplyTooLarge");
        p = json_object_get(m, "parameters");
        /* The whole message's size, its NUL included: {"parameters":{"data":"x..."}}. */
        ck_assert_int_eq(json_integer_value(json_object_get(p, "bytes")), 100000 + 27);
        ck_assert_int_eq(json_integer_value(json_object_get(p, "limit")), 64 * 1024);
        json_decref(m);
        /* Just under the cap still goes. */
        send_str(c, "{\"method\":\"io.lockd.Test.Big\",\"parameters\":{\"n\":60000}}");
        m = answer(c);
        assert_reply(m);
        json_decref(m);
        send_str(c, "{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"a\"}}");
        m = answer(c);
        assert_reply(m);
        json_decref(m);
        varlink_client_free(c);
        PUMP_UNTIL(n_disconnects == 1);
        ck_assert_ptr_null(last_close_cause);
        server_stop();
}
END_TEST

START_TEST(test_cancel_on_disconnect) {
        VarlinkClient *c;

        reset_counters();
        server_start(NULL);
        c = connect_to(sock_plain);
        send_str(c, "{\"method\":\"io.lockd.Test.Async\"}");
        PUMP_UNTIL(held != NULL);
        ck_assert_ptr_nonnull(varlink_call_conn(held));
        ck_assert_str_eq(varlink_call_method(held), "io.lockd.Test.Async");
        ck_assert(!varlink_call_wants_more(held));
        ck_assert(!varlink_call_is_oneway(held));
        varlink_client_free(c);
        PUMP_UNTIL(n_cancels == 1);
        ck_assert_str_eq(order, "DC");
        ck_assert(!cancel_saw_conn);
        ck_assert_ptr_null(varlink_call_conn(held));
        ck_assert_int_eq(varlink_call_reply(held, NULL, false), -ENOTCONN);
        ck_assert_int_eq(varlink_call_error(held, "io.lockd.Test.Gone", NULL), -ENOTCONN);
        pump(20 * 1000);
        ck_assert_uint_eq(n_cancels, 1);
        ck_assert_uint_eq(n_disconnects, 1);
        held = varlink_call_unref(held);

        /* Freeing the server ends open calls the same way. */
        c = connect_to(sock_plain);
        send_str(c, "{\"method\":\"io.lockd.Test.Async\"}");
        PUMP_UNTIL(held != NULL);
        server_stop();
        ck_assert_uint_eq(n_cancels, 2);
        ck_assert_uint_eq(n_disconnects, 2);
        ck_assert_str_eq(order, "DCDC");
        held = varlink_call_unref(held);
        varlink_client_free(c);
}
END_TEST

/* ---- File descriptors ---- */

/* sendmsg() with any number of fds, for peers that break the rules. */
static void send_with_fds(int sock, const char *buf, size_t len, const int *fds, size_t n_fds) {
        char control[CMSG_SPACE(sizeof(int) * 16)] = {};
        struct iovec iov = {(char *)buf, len};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
        struct cmsghdr *cm;

        ck_assert_uint_le(n_fds, 16);
        if (n_fds > 0) {
                mh.msg_control = control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                cm = CMSG_FIRSTHDR(&mh);
                cm->cmsg_level = SOL_SOCKET;
                cm->cmsg_type = SCM_RIGHTS;
                cm->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                memcpy(CMSG_DATA(cm), fds, sizeof(int) * n_fds);
        }
        ck_assert_int_eq(sendmsg(sock, &mh, MSG_NOSIGNAL), (ssize_t)len);
}

/* A pipe whose write end goes to the server: the read end sees EOF once every copy is closed. */
static bool write_end_closed(int read_end) {
        char ch;

        return read(read_end, &ch, 1) == 0;
}

static const char fds_call[] = "{\"method\":\"io.lockd.Test.Fds\"}";
static const char ignore_call[] = "{\"method\":\"io.lockd.Test.FdsIgnore\"}";
static const char nope_call[] = "{\"method\":\"io.lockd.Test.Nope\"}";

START_TEST(test_fds_refused) {
        int p[2];
        VarlinkClient *c;
        json_t *m;

        reset_counters();
        server_start(NULL);
        c = connect_to(sock_plain);
        ck_assert_int_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        ck_assert_int_eq(varlink_client_send_raw(c, fds_call, sizeof(fds_call), &p[1], 1), 0);
        p[1] = safe_close(p[1]);
        m = answer(c);
        assert_error(m, "io.lockd.Test.InvalidRequest", "reason",
                     "file descriptors are not accepted on this socket");
        json_decref(m);
        ck_assert(write_end_closed(p[0]));
        safe_close(p[0]);
        /* The connection stays for calls without fds. */
        assert_echo_works(c);
        m = call_str(c, fds_call);
        assert_reply(m);
        ck_assert_uint_eq(
                json_array_size(json_object_get(json_object_get(m, "parameters"), "contents")), 0);
        json_decref(m);
        varlink_client_free(c);
        server_stop();
}
END_TEST

START_TEST(test_fds_accepted) {
        int fds[2], p[2];
        VarlinkClient *c;
        json_t *m, *contents;
        const char *echo = "{\"method\":\"io.lockd.Test.Echo\",\"parameters\":{\"s\":\"a\"}}";

        reset_counters();
        server_start(NULL);
        fds[0] = memfd_from_buffer("hello", 5, "a");
        fds[1] = memfd_from_buffer("world", 5, "b");
        ck_assert_int_ge(fds[0], 0);
        ck_assert_int_ge(fds[1], 0);
        c = connect_to(sock_fds);
        ck_assert_int_eq(varlink_client_send_raw(c, fds_call, sizeof(fds_call), fds, 2), 0);
        m = answer(c);
        assert_reply(m);
        contents = json_object_get(json_object_get(m, "parameters"), "contents");
        ck_assert_uint_eq(json_array_size(contents), 2);
        ck_assert_str_eq(json_string_value(json_array_get(contents, 0)), "hello");
        ck_assert_str_eq(json_string_value(json_array_get(contents, 1)), "world");
        json_decref(m);

        /* A call and then, in a separate send, a call with fds: they go to the second. */
        send_with_fds(varlink_client_fd(c), echo, strlen(echo) + 1, NULL, 0);
        send_with_fds(varlink_client_fd(c), fds_call, sizeof(fds_call), fds, 1);
        m = answer(c);
        assert_reply(m);
        json_decref(m);
        m = answer(c);
        ck_assert_uint_eq(
                json_array_size(json_object_get(json_object_get(m, "parameters"), "contents")), 1);
        json_decref(m);

        /* A method not flagged for fds refuses them, and closes them; on a socket that takes
         * fds the answer names the method, not the socket. */
        ck_assert_int_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        ck_assert_int_eq(varlink_client_send_raw(c, echo, strlen(echo) + 1, &p[1], 1), 0);
        p[1] = safe_close(p[1]);
        m = answer(c);
        assert_error(m, "io.lockd.Test.InvalidRequest", "reason",
                     "io.lockd.Test.Echo takes no file descriptors");
        json_decref(m);
        ck_assert(write_end_closed(p[0]));
        safe_close(p[0]);

        /* Fds a handler leaves are closed with the call. */
        ck_assert_int_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        ck_assert_int_eq(varlink_client_send_raw(c, ignore_call, sizeof(ignore_call), &p[1], 1), 0);
        p[1] = safe_close(p[1]);
        assert_reply(m = answer(c));
        json_decref(m);
        ck_assert(write_end_closed(p[0]));
        safe_close(p[0]);

        /* fds belong to the message holding the last byte of the read they came with: two
         * messages whose fds ride on sends that straddle the boundary between them. */
        send_with_fds(varlink_client_fd(c), fds_call, 10, fds, 2);
        {
                char straddle[sizeof(fds_call) - 10 + 5];

                memcpy(straddle, fds_call + 10, sizeof(fds_call) - 10);
                memcpy(straddle + sizeof(fds_call) - 10, fds_call, 5);
                send_with_fds(varlink_client_fd(c), straddle, sizeof(straddle), fds, 1);
        }
        send_with_fds(varlink_client_fd(c), fds_call + 5, sizeof(fds_call) - 5, NULL, 0);
        for (size_t want = 2; want >= 1; want--) {
                m = answer(c);
                ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(m, "parameters"),
                                                                  "contents")),
                                  want);
                json_decref(m);
        }

        /* An unknown method with fds. */
        ck_assert_int_eq(varlink_client_send_raw(c, nope_call, sizeof(nope_call), fds, 1), 0);
        m = answer(c);
        assert_error(m, VARLINK_ERROR_INVALID_PARAMETER, "parameter", "method");
        json_decref(m);
        assert_echo_works(c);
        varlink_client_free(c);
        safe_close(fds[0]);
        safe_close(fds[1]);
        server_stop();
}
END_TEST

START_TEST(test_fds_over_cap) {
        int fds[10];
        VarlinkClient *c;

        reset_counters();
        server_start(NULL);
        for (size_t i = 0; i < ELEMENTSOF(fds); i++) {
                fds[i] = memfd_from_buffer("x", 1, "x");
                ck_assert_int_ge(fds[i], 0);
        }
        /* Nine in one go: more than the cmsg buffer holds. */
        c = connect_to(sock_fds);
        send_with_fds(varlink_client_fd(c), fds_call, sizeof(fds_call), fds, 9);
        assert_closed(c);
        varlink_client_free(c);
        /* Five and five for one message. */
        c = connect_to(sock_fds);
        send_with_fds(varlink_client_fd(c), fds_call, 10, fds, 5);
        send_with_fds(varlink_client_fd(c), fds_call + 10, sizeof(fds_call) - 10, fds + 5, 5);
        assert_closed(c);
        varlink_client_free(c);
        /* Eight is fine. */
        c = connect_to(sock_fds);
        send_with_fds(varlink_client_fd(c), fds_call, sizeof(fds_call), fds, 8);
        {
                json_t *m = answer(c);

                ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(m, "parameters"),
                                                                  "contents")),
                                  8);
                json_decref(m);
        }
        varlink_client_free(c);
        PUMP_UNTIL(n_disconnects == 3);
        for (size_t i = 0; i < ELEMENTSOF(fds); i++)
                safe_close(fds[i]);
        server_stop();
}
END_TEST

/* ---- The blocking client, from a child ---- */

#define CHILD_ASSERT(x)                                                                            \
        do {                                                                                       \
                if (!(x)) {                                                                        \
                        fprintf(stderr, "child: line %d: %s\n", __LINE__, #x);                     \
                        _exit(1);                                                                  \
                }                                                                                  \
        } while (0)

static int count_answers(json_t *params, const char *error, bool continues, void *userdata) {
        int *n = userdata;

        if (error)
                return -EBADE;
        if (json_integer_value(json_object_get(params, "i")) != *n)
                return -EBADE;
        (*n)++;
        return 0;
}

static int stop_after_one(json_t *params, const char *error, bool continues, void *userdata) {
        return 7;
}

/* Runs fn in a child while the parent's loop serves it; the child's exit status must be 0. */
static void run_child(void (*fn)(void)) {
        pid_t pid = fork();
        int status = 0;
        pid_t r = 0;

        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                fn();
                _exit(0);
        }
        PUMP_UNTIL((r = waitpid(pid, &status, WNOHANG)) != 0);
        ck_assert_int_eq(r, pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed: %d", status);
}

static void child_calls(void) {
        VarlinkClient *c = NULL;
        json_t *params = json_pack("{s:s}", "s", "abc"), *reply = NULL;
        char *error = NULL;
        int n = 0, fd;

        CHILD_ASSERT(varlink_client_connect(sock_plain, &c) == 0);
        CHILD_ASSERT(
                varlink_client_call(c, "io.lockd.Test.Echo", params, NULL, 0, &reply, &error) == 0);
        CHILD_ASSERT(!error);
        CHILD_ASSERT(strcmp(json_string_value(json_object_get(reply, "s")), "abc") == 0);
        json_decref(reply);

        CHILD_ASSERT(varlink_client_call(c, "io.lockd.Test.Nope", NULL, NULL, 0, &reply, &error) ==
                     0);
        CHILD_ASSERT(error && strcmp(error, VARLINK_ERROR_METHOD_NOT_FOUND) == 0);
        CHILD_ASSERT(strcmp(json_string_value(json_object_get(reply, "method")),
                            "io.lockd.Test.Nope") == 0);
        free(error);
        json_decref(reply);
        CHILD_ASSERT(varlink_client_call(c, "io.lockd.Test.Nope", NULL, NULL, 0, NULL, NULL) ==
                     -EREMOTEIO);

        CHILD_ASSERT(varlink_client_call(c, "not a method", NULL, NULL, 0, &reply, &error) ==
                     -EINVAL);
        CHILD_ASSERT(varlink_client_call_oneway(c, "io.lockd.Test.Echo", params) == 0);
        json_decref(params);
        params = json_pack("{s:i}", "n", 4);
        CHILD_ASSERT(varlink_client_call_more(c, "io.lockd.Test.Stream", params, NULL, 0,
                                              count_answers, &n) == 0);
        CHILD_ASSERT(n == 5);
        CHILD_ASSERT(varlink_client_call(c, "org.varlink.service.GetInfo", NULL, NULL, 0, &reply,
                                         &error) == 0);
        CHILD_ASSERT(!error);
        CHILD_ASSERT(json_array_size(json_object_get(reply, "interfaces")) == 2);
        json_decref(reply);
        /* A callback that stops early leaves the client unusable. */
        CHILD_ASSERT(varlink_client_call_more(c, "io.lockd.Test.Stream", params, NULL, 0,
                                              stop_after_one, NULL) == 7);
        CHILD_ASSERT(varlink_client_call(c, "io.lockd.Test.Echo", NULL, NULL, 0, &reply, &error) ==
                     -ENOTCONN);
        json_decref(params);
        varlink_client_free(c);

        /* fds ride with the call. */
        CHILD_ASSERT(varlink_client_connect(sock_fds, &c) == 0);
        fd = memfd_from_buffer("data", 4, "d");
        CHILD_ASSERT(fd >= 0);
        CHILD_ASSERT(varlink_client_call(c, "io.lockd.Test.Fds", NULL, &fd, 1, &reply, &error) ==
                     0);
        CHILD_ASSERT(!error);
        CHILD_ASSERT(
                strcmp(json_string_value(json_array_get(json_object_get(reply, "contents"), 0)),
                       "data") == 0);
        json_decref(reply);
        close(fd);
        varlink_client_free(c);

        CHILD_ASSERT(varlink_client_connect(sock_dir, &c) < 0);
}

START_TEST(test_client) {
        reset_counters();
        server_start(NULL);
        run_child(child_calls);
        PUMP_UNTIL(n_disconnects == 2);
        ck_assert_uint_eq(n_oneway, 1);
        server_stop();
}
END_TEST

static void child_timeout(void) {
        VarlinkClient *c = NULL;
        json_t *reply = NULL;
        char *error = NULL;
        uint64_t start = now_usec();

        CHILD_ASSERT(varlink_client_connect(sock_plain, &c) == 0);
        varlink_client_set_timeout(c, 200 * 1000);
        CHILD_ASSERT(varlink_client_call(c, "io.lockd.Test.Async", NULL, NULL, 0, &reply, &error) ==
                     -ETIMEDOUT);
        CHILD_ASSERT(now_usec() - start >= 190 * 1000);
        CHILD_ASSERT(now_usec() - start < 2 * 1000 * 1000);
        varlink_client_free(c);
}

static void child_hangup(void) {
        VarlinkClient *c = NULL;
        json_t *reply = NULL;
        char *error = NULL;

        CHILD_ASSERT(varlink_client_connect(sock_plain, &c) == 0);
        CHILD_ASSERT(varlink_client_call(c, "io.lockd.Test.Fail", NULL, NULL, 0, &reply, &error) ==
                     -ECONNRESET);
        varlink_client_free(c);
}

START_TEST(test_client_timeout) {
        reset_counters();
        server_start(NULL);
        run_child(child_timeout);
        PUMP_UNTIL(n_cancels == 1);
        held = varlink_call_unref(held);
        run_child(child_hangup);
        server_stop();
}
END_TEST

/* ---- Pure functions ---- */

START_TEST(test_parse_call) {
        static const struct {
                const char *text;
                const char *bad; /* NULL: valid */
        } cases[] = {
                {"{\"method\":\"a.b.C\"}", NULL},
                {"{\"method\":\"a.b.C\",\"parameters\":{},\"more\":true,\"oneway\":false}", NULL},
                {"{\"method\":\"a-1.b.C9\"}", NULL},
                {"{\"method\":\"a.C\"}", NULL},
                {"{\"method\":\"a.b.c-d\",\"upgrade\":false,\"parameters\":null}", NULL},
                {"{\"method\":\".C\"}", "method"},
                {"{\"method\":\"C\"}", "method"},
                {"{\"method\":\"a.b.\"}", "method"},
                {"{\"method\":\"a.b.C\",\"more\":null}", "more"},
                {"{\"method\":\"a.b.C\",\"oneway\":0}", "oneway"},
                {"{\"method\":\"a.b.C\",\"upgrade\":null}", "upgrade"},
                {"{\"method\":\"a.b.C\",\"Method\":\"x\"}", "message"},
                {"{}", "method"},
                {"null", "json"},
                {"{\"method\":\"a.b.C\"", "json"},
        };
        json_t *m;
        const char *bad;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                m = NULL;
                bad = NULL;
                int r = varlink_message_parse_call(cases[i].text, strlen(cases[i].text), &m, &bad);

                if (!cases[i].bad) {
                        ck_assert_msg(r == 0, "%s: %d %s", cases[i].text, r, bad);
                        ck_assert_ptr_nonnull(m);
                        json_decref(m);
                } else {
                        ck_assert_msg(r == -EBADMSG, "%s: %d", cases[i].text, r);
                        ck_assert_ptr_null(m);
                        ck_assert_str_eq(bad, cases[i].bad);
                }
        }
}
END_TEST

START_TEST(test_parse_depth) {
        char buf[256];
        json_t *m;
        const char *bad;

        for (unsigned depth = VARLINK_JSON_DEPTH_MAX - 2; depth <= VARLINK_JSON_DEPTH_MAX + 1;
             depth++) {
                size_t n = 0;

                /* {"method":"a.b.C","parameters":{"x":[[...]]}}: depth + 2 levels in all. */
                n += (size_t)sprintf(buf, "{\"method\":\"a.b.C\",\"parameters\":{\"x\":");
                for (unsigned i = 0; i < depth; i++)
                        buf[n++] = '[';
                /* Brackets in strings do not count. */
                n += (size_t)sprintf(buf + n, "\"[[[[\\\"[[[\"");
                for (unsigned i = 0; i < depth; i++)
                        buf[n++] = ']';
                n += (size_t)sprintf(buf + n, "}}");
                m = NULL;
                bad = NULL;
                if (depth + 2 <= VARLINK_JSON_DEPTH_MAX) {
                        ck_assert_int_eq(varlink_message_parse_call(buf, n, &m, &bad), 0);
                        json_decref(m);
                } else {
                        ck_assert_int_eq(varlink_message_parse_call(buf, n, &m, &bad), -EBADMSG);
                        ck_assert_str_eq(bad, "json");
                }
        }
}
END_TEST

START_TEST(test_params_check) {
        static const VarlinkParam table[] = {
                {"s", VARLINK_STRING, true, 0, 0},
                {"n", VARLINK_INT, false, 0, 0},
                {"m", VARLINK_STRING_MAP, false, 0, 0},
                {},
        };
        json_t *p;
        const char *bad = NULL;

        p = json_pack("{s:s, s:I, s:{s:s}}", "s", "x", "n", (json_int_t)INT64_MIN, "m", "k", "v");
        ck_assert_int_eq(varlink_params_check(p, table, &bad), 0);
        /* An embedded NUL in a string or a map value. */
        json_object_set_new(p, "s", json_stringn("a\0b", 3));
        ck_assert_int_eq(varlink_params_check(p, table, &bad), -EINVAL);
        ck_assert_str_eq(bad, "s");
        json_object_set_new(p, "s", json_string("ok"));
        json_object_set_new(json_object_get(p, "m"), "k", json_stringn("a\0b", 3));
        ck_assert_int_eq(varlink_params_check(p, table, &bad), -EINVAL);
        ck_assert_str_eq(bad, "m");
        json_object_set_new(json_object_get(p, "m"), "k", json_string("v"));
        /* A key with an embedded NUL is no known key. */
        json_object_setn_new(p, "s\0x", 3, json_string("v"));
        ck_assert_int_eq(varlink_params_check(p, table, &bad), -EINVAL);
        ck_assert_str_eq(bad, "s");
        json_object_deln(p, "s\0x", 3);
        ck_assert_int_eq(varlink_params_check(p, table, &bad), 0);
        /* Not an object; no table: no parameter at all. */
        ck_assert_int_eq(varlink_params_check(json_object_get(p, "s"), table, &bad), -EINVAL);
        ck_assert_str_eq(bad, "parameters");
        ck_assert_int_eq(varlink_params_check(p, NULL, &bad), -EINVAL);
        ck_assert_str_eq(bad, "s");
        json_decref(p);
        p = json_object();
        ck_assert_int_eq(varlink_params_check(p, NULL, &bad), 0);
        ck_assert_int_eq(varlink_params_check(p, table, &bad), -EINVAL);
        ck_assert_str_eq(bad, "s");
        json_decref(p);
}
END_TEST

START_TEST(test_parse_reply) {
        json_t *p = NULL;
        char *e = NULL;
        bool more = false;
        const char *t;

        t = "{\"parameters\":{\"a\":1},\"continues\":true}";
        ck_assert_int_eq(varlink_message_parse_reply(t, strlen(t), &p, &e, &more), 0);
        ck_assert(more);
        ck_assert_ptr_null(e);
        ck_assert_int_eq(json_integer_value(json_object_get(p, "a")), 1);
        json_decref(p);
        t = "{\"error\":\"a.b.Failed\"}";
        ck_assert_int_eq(varlink_message_parse_reply(t, strlen(t), &p, &e, &more), 0);
        ck_assert_str_eq(e, "a.b.Failed");
        ck_assert_uint_eq(json_object_size(p), 0);
        ck_assert(!more);
        free(e);
        json_decref(p);
        t = "{\"error\":\"a.b.Failed\",\"continues\":true}";
        ck_assert_int_eq(varlink_message_parse_reply(t, strlen(t), &p, &e, &more), -EBADMSG);
        t = "{\"error\":1}";
        ck_assert_int_eq(varlink_message_parse_reply(t, strlen(t), &p, &e, &more), -EBADMSG);
        t = "{\"parameters\":[]}";
        ck_assert_int_eq(varlink_message_parse_reply(t, strlen(t), &p, &e, &more), -EBADMSG);
        t = "{\"extra\":1}";
        ck_assert_int_eq(varlink_message_parse_reply(t, strlen(t), &p, &e, &more), -EBADMSG);
}
END_TEST

static Suite *varlink_suite(void) {
        Suite *s = suite_create("varlink");
        const CaseOptions server_case = {.timeout = 30, .tags = "server"};

        suite_add_case(s, &server_case, test_echo);
        suite_add_loop_case(s, &server_case, test_errors, 0, (int)ELEMENTSOF(error_cases));
        suite_add_case(s, &server_case, test_deep_nesting);
        suite_add_case(s, &server_case, test_more);
        suite_add_case(s, &server_case, test_oneway);
        suite_add_case(s, &server_case, test_more_on_plain_method);
        suite_add_case(s, &server_case, test_handler_failures);
        suite_add_case(s, &server_case, test_get_info);
        suite_add_case(s, &server_case, test_get_interface_description);
        suite_add_case(s, &server_case, test_message_size);
        suite_add_case(s, &server_case, test_truncated_then_eof);
        suite_add_case(s, &server_case, test_stall);
        suite_add_case(s, &server_case, test_conns_per_uid);
        suite_add_case(s, &server_case, test_conns_total);
        suite_add_case(s, &server_case, test_listener_limits);
        suite_add_case(s, &server_case, test_accept_emfile);
        suite_add_case(s, &server_case, test_pending_cap);
        suite_add_case(s, &server_case, test_pipelined_behind_open_call);
        suite_add_case(s, &server_case, test_answer_order);
        suite_add_case(s, &server_case, test_slow_reader);
        suite_add_case(s, &server_case, test_reply_too_large);
        suite_add_case(s, &server_case, test_reply_bytes);
        suite_add_case(s, &server_case, test_cancel_on_disconnect);
        suite_add_case(s, &server_case, test_fds_refused);
        suite_add_case(s, &server_case, test_fds_accepted);
        suite_add_case(s, &server_case, test_fds_over_cap);
        suite_add_case(s, &server_case, test_client);
        suite_add_case(s, &server_case, test_client_timeout);

        const CaseOptions message_case = {.tags = "message"};

        suite_add_case(s, &message_case, test_parse_call);
        suite_add_case(s, &message_case, test_parse_depth);
        suite_add_case(s, &message_case, test_params_check);
        suite_add_case(s, &message_case, test_parse_reply);
        return s;
}

int main(void) {
        /* The children of run_child() must not inherit a SIGPIPE death. */
        signal(SIGPIPE, SIG_IGN);
        return check_run(varlink_suite());
}
