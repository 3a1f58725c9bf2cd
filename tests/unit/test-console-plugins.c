/*
 * The plugin and marketplace methods over a real Varlink connection: a server thread runs them on
 * a Manager with a temporary state directory, the test calls them with varlink_client_call() and
 * real signed releases passed as fds, and checks every answer against the interface's names.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "catalog.h"
#include "check-run.h"
#include "agent-plugins.h"
#include "console-plugins.h"
#include "fd-util.h"
#include "macro.h"
#include "manager.h"
#include "marketplaces.h"
#include "test-release.h"
#include "test-server.h"
#include "verifier.h"

#define SLOPPY "^https://github.com/acme/.*"
#define NAME   "text.is-utf8"
#define Q1     "Is the file valid UTF-8?"
#define Q2     "Is the file valid UTF-8 without a BOM?"

static char top[] = "/tmp/lockd-test-console-plugins-XXXXXX";
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static bool allow_unsigned;

/* The lead's accessor, here a switch the test turns. */
bool manager_allow_unsigned(const Manager *m) {
        return allow_unsigned;
}

static TestServer server;

static int open_in(const char *dir, const char *file) {
        int fd = release_open(top, dir, file);

        ck_assert_msg(fd >= 0, "%s/%s/%s", top, dir, file);
        return fd;
}

static void setup(void) {
        MarketplaceSpec spec = {"acme", ISSUER, PATTERN, NULL};
        char path[512], root[512];

        ck_assert_ptr_nonnull(mkdtemp(top));
        ck_assert_int_eq(verifier_set_helper_path(getenv("LOCKD_VERIFY")), 0);
        sh("%s init %s/root >/dev/null", getenv("LOCKD_SIGN"), top);
        snprintf(root, sizeof(root), "%s/root/trusted_root.json", top);
        spec.trusted_root_path = root;
        snprintf(path, sizeof(path), "%s/state", top);
        ck_assert_int_eq(mkdir(path, 0700), 0);

        server = (TestServer){};
        server.manager.state_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(server.manager.state_fd, 0);
        ck_assert_int_eq(catalog_load(server.manager.state_fd, NULL, NULL, &server.manager.catalog),
                         0);
        ck_assert_int_eq(marketplaces_load(server.manager.state_fd, &spec, 1, NULL, NULL,
                                           &server.manager.marketplaces),
                         0);
        allow_unsigned = false;

        ck_assert_int_ge(sd_event_new(&server.manager.event), 0);
        snprintf(sock_path, sizeof(sock_path), "%s/sock", top);
        test_server_start(&server, console_plugin_methods, agent_plugin_methods, sock_path, 0);
}

static void teardown(void) {
        test_server_stop(&server);
        sd_event_unref(server.manager.event);
        catalog_free(server.manager.catalog);
        marketplaces_free(server.manager.marketplaces);
        safe_close(server.manager.state_fd);
        sh("rm -rf %s", top);
        strcpy(top, "/tmp/lockd-test-console-plugins-XXXXXX");
}

/* Calls method with params (taken) and fds; returns the error name ("" for a reply) and the
 * answer's parameters in *ret. */
static char *call(VarlinkClient *c, const char *method, json_t *params, const int *fds,
                  size_t n_fds, json_t **ret) {
        char *error = NULL;
        json_t *answer = NULL;

        ck_assert_ptr_nonnull(params);
        ck_assert_int_eq(varlink_client_call(c, method, params, fds, n_fds, &answer, &error), 0);
        json_decref(params);
        if (ret)
                *ret = answer;
        else
                json_decref(answer);
        return error ? error : strdup("");
}

static void expect(VarlinkClient *c, const char *method, json_t *params, const int *fds,
                   size_t n_fds, const char *want, json_t **ret) {
        _cleanup_free_ char *error = call(c, method, params, fds, n_fds, ret);

        ck_assert_msg(strcmp(error, want) == 0, "%s: got '%s', wanted '%s'", method, error, want);
}

/* The four fds of top/<tag>/ in the order manifest, binary, manifest bundle, binary bundle. */
static void release_fds(const char *tag, int fds[4]) {
        fds[0] = open_in(tag, "plugin.toml");
        fds[1] = open_in(tag, "plugin");
        fds[2] = open_in(tag, "plugin.toml.sigstore.json");
        fds[3] = open_in(tag, "plugin.sigstore.json");
}

static void close_fds(int *fds, size_t n) {
        for (size_t i = 0; i < n; i++)
                safe_close(fds[i]);
}

static json_t *signed_params(const char *accept_name) {
        json_t *p = json_pack("{s:s, s:i, s:i, s:i, s:i}", "marketplace", "acme", "manifest_fd", 0,
                              "binary_fd", 1, "manifest_bundle_fd", 2, "binary_bundle_fd", 3);

        if (accept_name)
                json_object_set_new(p, "accept_name", json_string(accept_name));
        return p;
}

START_TEST(test_console_install_update_remove) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        json_t *answer;
        int fds[4];

        ck_assert_int_eq(varlink_client_connect(sock_path, &c), 0);
        expect(c, "io.lockd.Console.ListPlugins", json_object(), NULL, 0, "", &answer);
        ck_assert_uint_eq(json_array_size(json_object_get(answer, "plugins")), 0);
        json_decref(answer);

        release_make(top, "v1", NAME, "1.0.0", Q1, NULL, true);
        release_fds("v1", fds);
        expect(c, "io.lockd.Console.InstallPlugin", signed_params(NULL), fds, 4, "", &answer);
        json_t *p = json_object_get(answer, "plugin");
        ck_assert_str_eq(json_string_value(json_object_get(p, "name")), NAME);
        ck_assert_str_eq(json_string_value(json_object_get(p, "version")), "1.0.0");
        ck_assert_str_eq(json_string_value(json_object_get(p, "marketplace")), "acme");
        ck_assert(json_is_true(json_object_get(p, "signed")));
        ck_assert_uint_eq(strlen(json_string_value(json_object_get(p, "binary_sha256"))), 64);
        ck_assert_int_eq(
                json_integer_value(json_object_get(json_object_get(p, "limits"), "memory_bytes")),
                128 * 1024 * 1024);
        ck_assert_ptr_null(json_object_get(answer, "replaced"));
        json_decref(answer);

        /* The same release again: not newer. */
        expect(c, "io.lockd.Console.InstallPlugin", signed_params(NULL), fds, 4,
               "io.lockd.Console.UpdateRefused", &answer);
        ck_assert_str_eq(json_string_value(json_object_get(answer, "reason")),
                         "UPDATE_REFUSED_NOT_NEWER");
        ck_assert_str_eq(json_string_value(json_object_get(answer, "installed")), "1.0.0");
        json_decref(answer);
        close_fds(fds, 4);

        /* A new question: the typed name, and only the right one. */
        release_make(top, "v2", NAME, "2.0.0", Q2, NULL, true);
        release_fds("v2", fds);
        expect(c, "io.lockd.Console.InstallPlugin", signed_params(NULL), fds, 4,
               "io.lockd.Console.UpdateNeedsTypedName", &answer);
        ck_assert_str_eq(json_string_value(json_object_get(answer, "question")), Q2);
        ck_assert_str_eq(json_string_value(json_object_get(answer, "version")), "2.0.0");
        ck_assert_str_eq(json_string_value(json_object_get(answer, "installed")), "1.0.0");
        json_decref(answer);
        expect(c, "io.lockd.Console.InstallPlugin", signed_params("TEXT.IS-UTF8"), fds, 4,
               "io.lockd.Console.UpdateNeedsTypedName", NULL);
        expect(c, "io.lockd.Console.InstallPlugin", signed_params(NAME), fds, 4, "", &answer);
        ck_assert_str_eq(json_string_value(json_object_get(answer, "replaced")), "1.0.0");
        json_decref(answer);
        close_fds(fds, 4);

        /* The agent sees the agent's Plugin type only. */
        expect(c, "io.lockd.Agent.ListPlugins", json_object(), NULL, 0, "", &answer);
        p = json_array_get(json_object_get(answer, "plugins"), 0);
        ck_assert_str_eq(json_string_value(json_object_get(p, "question")), Q2);
        ck_assert_uint_eq(json_object_size(p), 8);
        ck_assert_ptr_null(json_object_get(p, "signed"));
        ck_assert_ptr_null(json_object_get(p, "binary_sha256"));
        json_decref(answer);

        expect(c, "io.lockd.Console.RemovePlugin", json_pack("{s:s}", "name", "no.such"), NULL, 0,
               "io.lockd.Console.UnknownPlugin", NULL);
        expect(c, "io.lockd.Console.RemovePlugin", json_pack("{s:s}", "name", "../etc"), NULL, 0,
               "io.lockd.Console.UnknownPlugin", NULL);
        expect(c, "io.lockd.Console.RemovePlugin",
               json_pack("{s:s, s:s}", "name", NAME, "version", "1.0"), NULL, 0,
               "io.lockd.Console.InvalidRequest", NULL);
        expect(c, "io.lockd.Console.RemovePlugin", json_pack("{s:s}", "name", NAME), NULL, 0, "",
               NULL);
        expect(c, "io.lockd.Console.ListPlugins", json_object(), NULL, 0, "", &answer);
        ck_assert_uint_eq(json_array_size(json_object_get(answer, "plugins")), 0);
        json_decref(answer);
}
END_TEST

START_TEST(test_console_install_refusals) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        json_t *answer;
        int fds[5], pipefd[2];

        ck_assert_int_eq(varlink_client_connect(sock_path, &c), 0);
        release_make(top, "good", NAME, "1.0.0", Q1, NULL, true);
        release_fds("good", fds);

        /* fd indexes past what came, a fd used twice, an index out of the typed range. */
        json_t *params = signed_params(NULL);
        json_object_set_new(params, "binary_fd", json_integer(5));
        expect(c, "io.lockd.Console.InstallPlugin", params, fds, 4,
               "io.lockd.Console.InvalidRequest", NULL);
        params = signed_params(NULL);
        json_object_set_new(params, "binary_fd", json_integer(0));
        expect(c, "io.lockd.Console.InstallPlugin", params, fds, 4,
               "io.lockd.Console.InvalidRequest", NULL);
        params = signed_params(NULL);
        json_object_set_new(params, "binary_fd", json_integer(8));
        expect(c, "io.lockd.Console.InstallPlugin", params, fds, 4,
               "org.varlink.service.InvalidParameter", NULL);

        /* A pipe for the binary; a directory for the manifest. */
        ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
        int swapped[4] = {fds[0], pipefd[0], fds[2], fds[3]};
        expect(c, "io.lockd.Console.InstallPlugin", signed_params(NULL), swapped, 4,
               "io.lockd.Console.InvalidRequest", &answer);
        ck_assert_ptr_nonnull(
                strstr(json_string_value(json_object_get(answer, "reason")), "regular"));
        json_decref(answer);
        close_fds(pipefd, 2);
        fds[4] = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int dir[4] = {fds[4], fds[1], fds[2], fds[3]};
        expect(c, "io.lockd.Console.InstallPlugin", signed_params(NULL), dir, 4,
               "io.lockd.Console.InvalidRequest", NULL);

        /* Half signed, half an index, an unknown marketplace. */
        expect(c, "io.lockd.Console.InstallPlugin",
               json_pack("{s:s, s:i, s:i, s:i}", "marketplace", "acme", "manifest_fd", 0,
                         "binary_fd", 1, "manifest_bundle_fd", 2),
               fds, 4, "io.lockd.Console.InvalidRequest", NULL);
        params = signed_params(NULL);
        json_object_set_new(params, "index_fd", json_integer(0));
        expect(c, "io.lockd.Console.InstallPlugin", params, fds, 4,
               "io.lockd.Console.InvalidRequest", NULL);
        params = signed_params(NULL);
        json_object_set_new(params, "marketplace", json_string("nope"));
        expect(c, "io.lockd.Console.InstallPlugin", params, fds, 4,
               "io.lockd.Console.UnknownMarketplace", &answer);
        ck_assert_str_eq(json_string_value(json_object_get(answer, "name")), "nope");
        json_decref(answer);
        close_fds(fds, 5);

        /* Signed for another tag. */
        release_make(top, "wrongtag", NAME, "1.0.0", Q1, "refs/tags/" NAME "/v1.0.1", true);
        release_fds("wrongtag", fds);
        expect(c, "io.lockd.Console.InstallPlugin", signed_params(NULL), fds, 4,
               "io.lockd.Console.VerificationFailed", &answer);
        ck_assert_str_eq(json_string_value(json_object_get(answer, "code")), "RELEASE_E_TAG");
        ck_assert(json_string_length(json_object_get(answer, "message")) > 0);
        json_decref(answer);
        close_fds(fds, 4);

        /* Unsigned: per the policy's allow_unsigned. */
        release_make(top, "unsigned", NAME, "1.0.0", Q1, NULL, false);
        fds[0] = open_in("unsigned", "plugin.toml");
        fds[1] = open_in("unsigned", "plugin");
        params = json_pack("{s:i, s:i}", "manifest_fd", 0, "binary_fd", 1);
        expect(c, "io.lockd.Console.InstallPlugin", json_deep_copy(params), fds, 2,
               "io.lockd.Console.UnsignedRefused", NULL);
        allow_unsigned = true;
        expect(c, "io.lockd.Console.InstallPlugin", params, fds, 2, "", &answer);
        ck_assert(json_is_false(json_object_get(json_object_get(answer, "plugin"), "signed")));
        ck_assert_str_eq(json_string_value(
                                 json_object_get(json_object_get(answer, "plugin"), "marketplace")),
                         "");
        json_decref(answer);
        close_fds(fds, 2);
}
END_TEST

START_TEST(test_console_marketplaces) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        json_t *answer, *list;
        int fd;

        ck_assert_int_eq(varlink_client_connect(sock_path, &c), 0);
        fd = open_in("root", "trusted_root.json");

        expect(c, "io.lockd.Console.AddMarketplace",
               json_pack("{s:s, s:s, s:s, s:i}", "name", "team", "issuer", ISSUER, "identity",
                         SLOPPY, "trusted_root_fd", 0),
               &fd, 1, "io.lockd.Console.LintWarnings", &answer);
        ck_assert_uint_ge(json_array_size(json_object_get(answer, "warnings")), 1);
        json_decref(answer);
        expect(c, "io.lockd.Console.AddMarketplace",
               json_pack("{s:s, s:s, s:s, s:i, s:b}", "name", "team", "issuer", ISSUER, "identity",
                         SLOPPY, "trusted_root_fd", 0, "force", true),
               &fd, 1, "", &answer);
        ck_assert_uint_ge(json_array_size(json_object_get(answer, "warnings")), 1);
        json_decref(answer);
        expect(c, "io.lockd.Console.AddMarketplace",
               json_pack("{s:s, s:s, s:s, s:i}", "name", "team", "issuer", ISSUER, "identity",
                         PATTERN, "trusted_root_fd", 0),
               &fd, 1, "io.lockd.Console.MarketplaceExists", NULL);
        expect(c, "io.lockd.Console.AddMarketplace",
               json_pack("{s:s, s:s, s:s, s:i}", "name", "Bad Name", "issuer", ISSUER, "identity",
                         PATTERN, "trusted_root_fd", 0),
               &fd, 1, "io.lockd.Console.InvalidRequest", NULL);
        expect(c, "io.lockd.Console.AddMarketplace",
               json_pack("{s:s, s:s, s:s, s:i}", "name", "other", "issuer", ISSUER, "identity",
                         PATTERN, "trusted_root_fd", 1),
               &fd, 1, "io.lockd.Console.InvalidRequest", NULL);
        close(fd);

        expect(c, "io.lockd.Console.ListMarketplaces", json_object(), NULL, 0, "", &answer);
        list = json_object_get(answer, "marketplaces");
        ck_assert_uint_eq(json_array_size(list), 2);
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "name")),
                         "acme");
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "source")),
                         "policy");
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 1), "source")),
                         "added");
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 1), "identity")),
                         SLOPPY);
        json_decref(answer);

        expect(c, "io.lockd.Console.RemoveMarketplace", json_pack("{s:s}", "name", "acme"), NULL, 0,
               "io.lockd.Console.MarketplaceFromPolicy", NULL);
        expect(c, "io.lockd.Console.RemoveMarketplace", json_pack("{s:s}", "name", "team"), NULL, 0,
               "", NULL);
        expect(c, "io.lockd.Console.RemoveMarketplace", json_pack("{s:s}", "name", "team"), NULL, 0,
               "io.lockd.Console.UnknownMarketplace", NULL);
}
END_TEST

static Suite *console_plugins_suite(void) {
        Suite *s = suite_create("console-plugins");
        const CaseOptions each = {.timeout = 120, .setup = setup, .teardown = teardown};

        suite_add_case(s, &each, test_console_install_update_remove);
        suite_add_case(s, &each, test_console_install_refusals);
        suite_add_case(s, &each, test_console_marketplaces);
        return s;
}

int main(void) {
        return check_run(console_plugins_suite());
}
