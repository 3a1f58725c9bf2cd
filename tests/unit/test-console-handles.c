/*
 * The handle methods over a real Varlink connection: a server thread runs them on a Manager with a
 * test policy, a temporary state directory and a real audit log; the test grants, lists and
 * revokes, checks the records, makes the audit log fail (a grant is then undone and refused, a
 * revocation still happens), and asks ListHandles as an agent uid.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit.h"
#include "check-run.h"
#include "agent-handles.h"
#include "console-handles.h"
#include "fd-util.h"
#include "handles.h"
#include "macro.h"
#include "manager.h"
#include "policy.h"
#include "roles.h"
#include "test-server.h"

#define AGENT       61001
#define OTHER_AGENT 61004
#define POLICY_TEXT                                                                                \
        "agents:\n  users: [61001, 61004]\nconsoles:\n  users: [61003]\nlimits:\n"                 \
        "  max_handle_bytes: 1KiB\n  max_plugins_per_handle: 4\n"

static char top[] = "/tmp/lockd-test-console-handles-XXXXXX";
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

static TestServer server;

static void setup(void) {
        PolicyDiag diag = {};
        char path[512], why[256] = "";
        Manager *m = &server.manager;

        ck_assert_ptr_nonnull(mkdtemp(top));
        ck_assert_int_eq(chmod(top, 0755), 0);
        snprintf(path, sizeof(path), "%s/state", top);
        ck_assert_int_eq(mkdir(path, 0700), 0);

        server = (TestServer){};
        ck_assert_int_eq(policy_parse(POLICY_TEXT, strlen(POLICY_TEXT), &m->policy, &diag), 0);
        ck_assert_msg(roles_resolve(m->policy, &m->roles, why, sizeof(why)) == 0, "%s", why);
        m->state_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(m->state_fd, 0);
        ck_assert_int_eq(audit_open(m->state_fd, &m->audit), 0);
        ck_assert_int_ge(sd_event_new(&m->event), 0);
        ck_assert_int_eq(handles_new(m->event, console_handle_expired, m, &m->handles), 0);
        /* Mode 0666: a test connects as an agent uid. */
        snprintf(sock_path, sizeof(sock_path), "%s/sock", top);
        test_server_start(&server, console_handle_methods, agent_handle_methods, sock_path, 0666);
}

static void teardown(void) {
        Manager *m = &server.manager;
        char cmd[256];

        test_server_stop(&server);
        handles_free(m->handles);
        audit_close(m->audit);
        sd_event_unref(m->event);
        roles_free(m->roles);
        policy_free(m->policy);
        safe_close(m->state_fd);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
        ck_assert_int_eq(system(cmd), 0);
        strcpy(top, "/tmp/lockd-test-console-handles-XXXXXX");
}

/* A file of len bytes 'x' below top, open for reading. */
static int file_of(size_t len) {
        char path[512], buf[2048];
        int fd;

        ck_assert_uint_le(len, sizeof(buf));
        memset(buf, 'x', len);
        snprintf(path, sizeof(path), "%s/file-%zu", top, len);
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(loop_write(fd, buf, len), 0);
        return fd;
}

/* Calls method with params (taken, may be NULL) and fd (-1 for none); returns the error name (""
 * for a reply) and the answer's parameters in *ret (may be NULL). */
static char *call(VarlinkClient *c, const char *method, json_t *params, int fd, json_t **ret) {
        char *error = NULL;
        json_t *answer = NULL;

        ck_assert_int_eq(
                varlink_client_call(c, method, params, &fd, fd >= 0 ? 1 : 0, &answer, &error), 0);
        json_decref(params);
        if (ret)
                *ret = answer;
        else
                json_decref(answer);
        return error ? error : strdup("");
}

static void expect(VarlinkClient *c, const char *method, json_t *params, int fd, const char *want,
                   json_t **ret) {
        _cleanup_free_ char *error = call(c, method, params, fd, ret);

        ck_assert_msg(strcmp(error, want) == 0, "%s: got '%s', wanted '%s'", method, error, want);
}

/* The audit log's records, as one string. */
static char *audit_text(void) {
        char path[512], *buf = NULL;
        size_t len;

        snprintf(path, sizeof(path), "%s/state/" AUDIT_DIR "/" AUDIT_FILE, top);
        ck_assert_int_eq(read_full_file(path, 1024 * 1024, &buf, &len), 0);
        return buf;
}

START_TEST(test_grant_list_revoke) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(json_decrefp) json_t *g = NULL, *list = NULL;
        _cleanup_close_ int fd = file_of(3);
        _cleanup_free_ char *log = NULL, *id = NULL;
        json_t *h;

        ck_assert_int_eq(varlink_client_connect(sock_path, &c), 0);
        expect(c, "io.lockd.Console.Grant",
               json_pack("{s:i, s:s, s:s, s:i}", "file_fd", 0, "agent", "61001", "label", "three",
                         "ttl_sec", 3600),
               fd, "", &g);
        id = strdup(json_string_value(json_object_get(g, "handle")));
        ck_assert(handle_id_valid(id));
        /* SHA-256 of "xxx". */
        ck_assert_str_eq(json_string_value(json_object_get(g, "sha256")),
                         "cd2eb0837c9b4c962c22d2ff8b5441b7b45805887f051d39bf133b583baf6860");
        ck_assert_int_eq(json_integer_value(json_object_get(g, "bytes")), 3);
        ck_assert(json_is_integer(json_object_get(g, "expires_usec")));

        expect(c, "io.lockd.Console.ListHandles", NULL, -1, "", &list);
        ck_assert_uint_eq(json_array_size(json_object_get(list, "handles")), 1);
        h = json_array_get(json_object_get(list, "handles"), 0);
        ck_assert_str_eq(json_string_value(json_object_get(h, "handle")), id);
        ck_assert_int_eq(json_integer_value(json_object_get(h, "agent_uid")), AGENT);
        /* The policy's max_plugins_per_handle is the default budget. */
        ck_assert_int_eq(json_integer_value(json_object_get(h, "budget")), 4);

        log = audit_text();
        ck_assert_ptr_nonnull(strstr(log, "\"event\":\"grant\""));
        ck_assert_ptr_nonnull(strstr(log, id));
        ck_assert_ptr_null(strstr(log, "file-3"));

        expect(c, "io.lockd.Console.Revoke", json_pack("{s:s}", "handle", id), -1, "", NULL);
        expect(c, "io.lockd.Console.Revoke", json_pack("{s:s}", "handle", id), -1,
               "io.lockd.Console.UnknownHandle", NULL);
        free(log);
        log = audit_text();
        ck_assert_ptr_nonnull(strstr(log, "\"event\":\"revoke\""));
}
END_TEST

START_TEST(test_grant_refusals) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_close_ int small = file_of(10), big = file_of(1025);

        ck_assert_int_eq(varlink_client_connect(sock_path, &c), 0);
        /* A console, root, an unknown name, a number with a leading zero: no agents. */
        expect(c, "io.lockd.Console.Grant", json_pack("{s:i, s:s}", "file_fd", 0, "agent", "61003"),
               small, "io.lockd.Console.NotAnAgent", NULL);
        expect(c, "io.lockd.Console.Grant", json_pack("{s:i, s:s}", "file_fd", 0, "agent", "root"),
               small, "io.lockd.Console.NotAnAgent", NULL);
        expect(c, "io.lockd.Console.Grant",
               json_pack("{s:i, s:s}", "file_fd", 0, "agent", "no-such-user-here"), small,
               "io.lockd.Console.NotAnAgent", NULL);
        expect(c, "io.lockd.Console.Grant",
               json_pack("{s:i, s:s}", "file_fd", 0, "agent", "061001"), small,
               "io.lockd.Console.NotAnAgent", NULL);
        expect(c, "io.lockd.Console.Grant",
               json_pack("{s:i, s:s}", "file_fd", 0, "agent", "4294967295"), small,
               "io.lockd.Console.NotAnAgent", NULL);
        expect(c, "io.lockd.Console.Grant",
               json_pack("{s:i, s:s, s:i}", "file_fd", 0, "agent", "61001", "budget", 5), small,
               "io.lockd.Console.InvalidRequest", NULL);
        expect(c, "io.lockd.Console.Grant",
               json_pack("{s:i, s:s, s:s}", "file_fd", 0, "agent", "61001", "label",
                         "a\xe2\x80\xae"),
               small, "io.lockd.Console.InvalidRequest", NULL);
        expect(c, "io.lockd.Console.Grant", json_pack("{s:i, s:s}", "file_fd", 0, "agent", "61001"),
               big, "io.lockd.Console.InvalidRequest", NULL);
        expect(c, "io.lockd.Console.Grant", json_pack("{s:i, s:s}", "file_fd", 0, "agent", "61001"),
               -1, "io.lockd.Console.InvalidRequest", NULL);
        ck_assert_uint_eq(handles_n_agent(server.manager.handles, AGENT), 0);
}
END_TEST

static int failing_sync(int fd, void *userdata) {
        return -ENOSPC;
}

START_TEST(test_audit_failure) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(json_decrefp) json_t *g = NULL, *list = NULL;
        _cleanup_close_ int fd = file_of(10);
        _cleanup_free_ char *id = NULL;

        ck_assert_int_eq(varlink_client_connect(sock_path, &c), 0);
        expect(c, "io.lockd.Console.Grant", json_pack("{s:i, s:s}", "file_fd", 0, "agent", "61001"),
               fd, "", &g);
        id = strdup(json_string_value(json_object_get(g, "handle")));
        /* From here on no record reaches the disk (the server thread is idle between calls). */
        audit_set_sync_function(server.manager.audit, failing_sync, NULL);

        /* No record, no grant: the handle is undone. */
        expect(c, "io.lockd.Console.Grant", json_pack("{s:i, s:s}", "file_fd", 0, "agent", "61001"),
               fd, "io.lockd.Console.Unavailable", NULL);
        expect(c, "io.lockd.Console.ListHandles", NULL, -1, "", &list);
        ck_assert_uint_eq(json_array_size(json_object_get(list, "handles")), 1);
        /* No record, no revocation either: refused, naming the full disk; the handle stays. */
        {
                json_t *e = NULL;

                expect(c, "io.lockd.Console.Revoke", json_pack("{s:s}", "handle", id), -1,
                       "io.lockd.Console.Unavailable", &e);
                ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(e, "reason")),
                                             "the state directory is full"));
                json_decref(e);
        }
        json_decref(list);
        expect(c, "io.lockd.Console.ListHandles", NULL, -1, "", &list);
        ck_assert_uint_eq(json_array_size(json_object_get(list, "handles")), 1);
        /* After a failed fsync() nothing says what is on disk: the log takes no record before a
         * reopen (a restart), and every change is refused until then, naming the same cause. */
        audit_set_sync_function(server.manager.audit, NULL, NULL);
        expect(c, "io.lockd.Console.Revoke", json_pack("{s:s}", "handle", id), -1,
               "io.lockd.Console.Unavailable", NULL);
}
END_TEST

/* Agent.ListHandles as uid: the number of handles seen, each with only the agent's four fields. */
static int agent_sees(uid_t uid, const char *want_id) {
        pid_t pid = fork();
        int status;

        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                VarlinkClient *c = NULL;
                json_t *answer = NULL, *h;
                char *error = NULL;
                size_t i, n = 0;

                if (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0 ||
                    varlink_client_connect(sock_path, &c) < 0 ||
                    varlink_client_call(c, "io.lockd.Agent.ListHandles", NULL, NULL, 0, &answer,
                                        &error) < 0 ||
                    error)
                        _exit(100);
                json_array_foreach(json_object_get(answer, "handles"), i, h) {
                        const char *key;
                        json_t *v;

                        json_object_foreach(h, key, v) if (strcmp(key, "handle") != 0 &&
                                                           strcmp(key, "label") != 0 &&
                                                           strcmp(key, "budget_left") != 0 &&
                                                           strcmp(key, "expires_usec") != 0)
                                _exit(101);
                        if (want_id &&
                            strcmp(json_string_value(json_object_get(h, "handle")), want_id) != 0)
                                _exit(102);
                        n++;
                }
                _exit((int)n);
        }
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status));
        return WEXITSTATUS(status);
}

START_TEST(test_agent_view) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(json_decrefp) json_t *g = NULL;
        _cleanup_close_ int fd = file_of(10);

        ck_assert_int_eq(varlink_client_connect(sock_path, &c), 0);
        expect(c, "io.lockd.Console.Grant",
               json_pack("{s:i, s:s, s:s, s:i}", "file_fd", 0, "agent", "61001", "label", "mine",
                         "budget", 2),
               fd, "", &g);
        ck_assert_int_eq(agent_sees(AGENT, json_string_value(json_object_get(g, "handle"))), 1);
        ck_assert_int_eq(agent_sees(OTHER_AGENT, NULL), 0);
}
END_TEST

static Suite *console_handles_suite(void) {
        Suite *s = suite_create("console-handles");
        const CaseOptions each = {.timeout = 60, .setup = setup, .teardown = teardown};

        suite_add_case(s, &each, test_grant_list_revoke);
        suite_add_case(s, &each, test_grant_refusals);
        suite_add_case(s, &each, test_audit_failure);
        suite_add_case(s, &each, test_agent_view);
        return s;
}

int main(void) {
        return check_run(console_handles_suite());
}
