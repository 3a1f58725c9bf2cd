/* Unit tests of daemon/roles against the real user and group databases (run as root: two test
 * groups are created with groupadd and removed again, in the private copy of /etc that
 * tests/tools/private-etc gives the test, never in the host's). */
#include <check.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check-run.h"
#include "uidpool.h"
#include "macro.h"
#include "roles.h"

/*
 * Debian's base-passwd users and groups, present on every Debian system: root 0:0, daemon 1:1,
 * bin 2:2, sync 4 with primary group nogroup (65534), nobody 65534:65534.
 */

static char test_group[32]; /* a group whose one member is daemon, for supplementary membership */
static gid_t test_gid;
static char root_alias[32]; /* a second name for gid 0 (groupadd -o -g 0) */

static int run(const char *const argv[]) {
        pid_t pid = fork();
        int status;

        if (pid < 0)
                return -errno;
        if (pid == 0) {
                execvp(argv[0], (char *const *)argv);
                _exit(127);
        }
        if (waitpid(pid, &status, 0) < 0)
                return -errno;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/* Unchecked fixture (in the runner, around each test's case): the groups exist for the test and
 * are removed even when it fails. */
static void group_setup(void) {
        struct group *g;

        /* Before the names are set: the teardown then removes nothing. */
        ck_assert_msg(getenv("LOCKD_PRIVATE_ETC"),
                      "test-roles adds groups to /etc: run it through tests/tools/private-etc");
        snprintf(test_group, sizeof(test_group), "lockdtest%ld", (long)getpid() % 100000);
        ck_assert_msg(geteuid() == 0, "test-roles needs root to create a test group");
        ck_assert_int_eq(run((const char *const[]){"groupadd", "-U", "daemon", test_group, NULL}),
                         0);
        g = getgrnam(test_group);
        ck_assert_ptr_nonnull(g);
        test_gid = g->gr_gid;
        snprintf(root_alias, sizeof(root_alias), "lockdtestr%ld", (long)getpid() % 100000);
        ck_assert_int_eq(run((const char *const[]){"groupadd", "-o", "-g", "0", root_alias, NULL}),
                         0);
}

static void group_teardown(void) {
        if (test_group[0] && run((const char *const[]){"groupdel", test_group, NULL}) < 0)
                fprintf(stderr, "cannot remove the test group %s\n", test_group);
        /* -f: gid 0 is root's primary group, which groupdel protects otherwise. */
        if (root_alias[0] && run((const char *const[]){"groupdel", "-f", root_alias, NULL}) < 0)
                fprintf(stderr, "cannot remove the test group %s\n", root_alias);
}

static Policy *policy(const char *text) {
        Policy *p = NULL;
        PolicyDiag d;

        ck_assert_msg(policy_parse(text, strlen(text), &p, &d) == 0, "%s %u:%u %s",
                      policy_error_name(d.code), d.line, d.column, d.message);
        return p;
}

/* roles_resolve() of text: its return value, the reason in why. */
static int resolve(const char *text, Roles **ret, char *why, size_t len) {
        _cleanup_(policy_freep) Policy *p = policy(text);
        return roles_resolve(p, ret, why, len);
}

START_TEST(test_resolve) {
        _cleanup_(roles_freep) Roles *r = NULL;
        char why[256];

        ck_assert_int_eq(resolve("agents: {users: [daemon, 4242], groups: [bin]}\n"
                                 "consoles: {users: [root, 0], groups: [nogroup]}\n",
                                 &r, why, sizeof(why)),
                         0);
        ck_assert_uint_eq(r->agents.n_uids, 2);
        ck_assert_uint_eq(r->agents.uids[0], 1);
        ck_assert_uint_eq(r->agents.uids[1], 4242);
        ck_assert_uint_eq(r->agents.n_gids, 1);
        ck_assert_uint_eq(r->agents.gids[0], 2);
        ck_assert_uint_eq(r->consoles.n_uids, 1); /* root and 0 are one uid */
        ck_assert_uint_eq(r->consoles.uids[0], 0);
        ck_assert_uint_eq(r->consoles.gids[0], 65534);
}
END_TEST

/* The compiled-in default: root is the one console, nobody is an agent. */
START_TEST(test_resolve_default) {
        _cleanup_(policy_freep) Policy *p = NULL;
        _cleanup_(roles_freep) Roles *r = NULL;
        char why[256];

        ck_assert_int_eq(policy_default(&p), 0);
        ck_assert_int_eq(roles_resolve(p, &r, why, sizeof(why)), 0);
        ck_assert_uint_eq(r->agents.n_uids + r->agents.n_gids, 0);
        ck_assert_uint_eq(r->consoles.n_uids, 1);
        ck_assert_uint_eq(r->consoles.uids[0], 0);
        ck_assert_int_eq(roles_classify(r, 0, 0), ROLE_CONSOLE);
        ck_assert_int_eq(roles_classify(r, 1, 1), ROLE_NONE);
        ck_assert_int_eq(roles_classify(r, 65534, 65534), ROLE_NONE);
}
END_TEST

START_TEST(test_resolve_unknown) {
        Roles *r = NULL;
        char why[256];

        ck_assert_int_eq(resolve("agents: {users: [no-such-user-lockd]}\n", &r, why, sizeof(why)),
                         -ENOENT);
        ck_assert_ptr_null(r);
        ck_assert_ptr_nonnull(strstr(why, "no-such-user-lockd"));
        ck_assert_ptr_nonnull(strstr(why, "1:18"));
        ck_assert_int_eq(
                resolve("consoles: {groups: [no-such-group-lockd]}\n", &r, why, sizeof(why)),
                -ENOENT);
        ck_assert_ptr_nonnull(strstr(why, "group 'no-such-group-lockd'"));
        /* A number needs no database entry. */
        ck_assert_int_eq(resolve("agents: {users: [3999999]}\n", &r, why, sizeof(why)), 0);
        r = roles_free(r);
}
END_TEST

/* A name that resolves to 0 cannot be an agent, whatever it is called; it can be a console. */
START_TEST(test_resolve_root_agent) {
        Roles *r = NULL;
        char text[256], why[256];

        snprintf(text, sizeof(text), "agents: {groups: [%s]}\n", root_alias);
        ck_assert_int_eq(resolve(text, &r, why, sizeof(why)), -EPERM);
        ck_assert_ptr_null(r);
        ck_assert_ptr_nonnull(strstr(why, root_alias));
        snprintf(text, sizeof(text), "consoles: {groups: [%s]}\n", root_alias);
        ck_assert_int_eq(resolve(text, &r, why, sizeof(why)), 0);
        ck_assert_uint_eq(r->consoles.gids[0], 0);
        r = roles_free(r);
}
END_TEST

START_TEST(test_overlap_primary_group) {
        Roles *r = NULL;
        char why[256];

        /* daemon's primary group is daemon (1). */
        ck_assert_int_eq(resolve("agents: {groups: [daemon]}\nconsoles: {users: [daemon]}\n", &r,
                                 why, sizeof(why)),
                         -ENOTUNIQ);
        ck_assert_ptr_null(r);
        ck_assert_ptr_nonnull(strstr(why, "'daemon'"));
        /* sync's primary group is nogroup: found by enumerating users, as sync is named nowhere */
        ck_assert_int_eq(resolve("agents: {users: [sync]}\nconsoles: {groups: [nogroup]}\n", &r,
                                 why, sizeof(why)),
                         -ENOTUNIQ);
        ck_assert_int_eq(resolve("agents: {groups: [nogroup]}\nconsoles: {groups: [4]}\n", &r, why,
                                 sizeof(why)),
                         0);
        r = roles_free(r);
        ck_assert_int_eq(resolve("agents: {groups: [nogroup]}\nconsoles: {users: [4]}\n", &r, why,
                                 sizeof(why)),
                         -ENOTUNIQ);
        ck_assert_ptr_nonnull(strstr(why, "uid 4"));
}
END_TEST

START_TEST(test_overlap_ids) {
        Roles *r = NULL;
        char why[256];

        /* The parser sees different spellings; NSS sees one uid. */
        ck_assert_int_eq(resolve("agents: {users: [1]}\nconsoles: {users: [daemon]}\n", &r, why,
                                 sizeof(why)),
                         -ENOTUNIQ);
        ck_assert_ptr_nonnull(strstr(why, "uid 1 "));
        ck_assert_int_eq(
                resolve("agents: {groups: [bin]}\nconsoles: {groups: [2]}\n", &r, why, sizeof(why)),
                -ENOTUNIQ);
        ck_assert_ptr_nonnull(strstr(why, "gid 2 "));
        ck_assert_ptr_null(r);
}
END_TEST

/* A console user who is a supplementary member of an agents group, and the other way round. */
START_TEST(test_overlap_supplementary) {
        Roles *r = NULL;
        char text[256], why[256];

        snprintf(text, sizeof(text), "agents: {groups: [%s]}\nconsoles: {users: [daemon]}\n",
                 test_group);
        ck_assert_int_eq(resolve(text, &r, why, sizeof(why)), -ENOTUNIQ);
        ck_assert_ptr_nonnull(strstr(why, "through group"));
        snprintf(text, sizeof(text), "agents: {users: [daemon]}\nconsoles: {groups: [%s]}\n",
                 test_group);
        ck_assert_int_eq(resolve(text, &r, why, sizeof(why)), -ENOTUNIQ);
        snprintf(text, sizeof(text), "agents: {users: [bin]}\nconsoles: {groups: [%s]}\n",
                 test_group);
        ck_assert_int_eq(resolve(text, &r, why, sizeof(why)), 0);
        r = roles_free(r);
}
END_TEST

START_TEST(test_classify) {
        _cleanup_(roles_freep) Roles *r = NULL;
        char text[256], why[256];

        snprintf(text, sizeof(text),
                 "agents: {users: [4242], groups: [%s, 5001]}\n"
                 "consoles: {users: [root], groups: [5002]}\n",
                 test_group);
        ck_assert_int_eq(resolve(text, &r, why, sizeof(why)), 0);

        ck_assert_int_eq(roles_classify(r, 0, 0), ROLE_CONSOLE);
        ck_assert_int_eq(roles_classify(r, 4242, 4242), ROLE_AGENT);
        /* daemon: an agent through its supplementary group, whatever its gid */
        ck_assert_int_eq(roles_classify(r, 1, 1), ROLE_AGENT);
        ck_assert_int_eq(roles_classify(r, 1, 1), ROLE_AGENT); /* from the cache */
        ck_assert_uint_ge(r->n_cache, 1);
        /* bin is in no role, unless its peer gid says so */
        ck_assert_int_eq(roles_classify(r, 2, 2), ROLE_NONE);
        ck_assert_int_eq(roles_classify(r, 2, 5001), ROLE_AGENT);
        ck_assert_int_eq(roles_classify(r, 2, 5002), ROLE_CONSOLE);
        /* a uid with no passwd entry counts by uid and gid only */
        ck_assert_int_eq(roles_classify(r, 3999999, 3999999), ROLE_NONE);
        ck_assert_int_eq(roles_classify(r, 3999999, 5001), ROLE_AGENT);
        /* both roles at once: neither */
        ck_assert_int_eq(roles_classify(r, 0, 5001), ROLE_NONE);
        ck_assert_int_eq(roles_classify(r, 4242, 5002), ROLE_NONE);
        ck_assert_int_eq(roles_classify(r, 1, 5002), ROLE_NONE);
        ck_assert_int_eq(roles_classify(NULL, 0, 0), ROLE_NONE);

        /* The values are the Varlink role_mask bits. */
        ck_assert_uint_eq(ROLE_AGENT, 1u);
        ck_assert_uint_eq(ROLE_CONSOLE, 2u);
}
END_TEST

/* The cache is a bounded ring: many uids never grow it past ROLES_CACHE_MAX. */
START_TEST(test_classify_cache_bound) {
        _cleanup_(roles_freep) Roles *r = NULL;
        char why[256];

        ck_assert_int_eq(resolve("agents: {users: [3999999]}\n", &r, why, sizeof(why)), 0);
        for (uid_t u = 4000000; u < 4000000 + ROLES_CACHE_MAX + 10; u++)
                ck_assert_int_eq(roles_classify(r, u, u), ROLE_NONE);
        ck_assert_uint_eq(r->n_cache, ROLES_CACHE_MAX);
        ck_assert_int_eq(roles_classify(r, 3999999, 3999999), ROLE_AGENT);
}
END_TEST

START_TEST(test_uid_range) {
        char why[256];

        ck_assert_int_eq(uid_pool_check_range(1, 10, why, sizeof(why)), -EEXIST);
        ck_assert_ptr_nonnull(strstr(why, "daemon"));
        ck_assert_int_eq(uid_pool_check_range(65534, 65534, why, sizeof(why)), -EEXIST);
        ck_assert_ptr_nonnull(strstr(why, "65534"));
        /* The test group's gid, which no user has as uid or primary gid */
        ck_assert_int_eq(uid_pool_check_range(test_gid, test_gid, why, sizeof(why)), -EEXIST);
        ck_assert_ptr_nonnull(strstr(why, test_group));
        ck_assert_int_eq(uid_pool_check_range(3000000000u, 3000100000u, why, sizeof(why)), 0);
        ck_assert_str_eq(why, "");
        ck_assert_int_eq(uid_pool_check_range(0, 10, why, sizeof(why)), -EINVAL);
        ck_assert_int_eq(uid_pool_check_range(20, 10, why, sizeof(why)), -EINVAL);
        ck_assert_int_eq(uid_pool_check_range(20, 30, NULL, 0),
                         uid_pool_check_range(20, 30, why, sizeof(why)));
}
END_TEST

static Suite *roles_suite(void) {
        Suite *s = suite_create("roles");
        const CaseOptions each = {.timeout = 60,
                                  .unchecked_setup = group_setup,
                                  .unchecked_teardown = group_teardown};

        suite_add_case(s, &each, test_resolve);
        suite_add_case(s, &each, test_resolve_default);
        suite_add_case(s, &each, test_resolve_unknown);
        suite_add_case(s, &each, test_resolve_root_agent);
        suite_add_case(s, &each, test_overlap_primary_group);
        suite_add_case(s, &each, test_overlap_ids);
        suite_add_case(s, &each, test_overlap_supplementary);
        suite_add_case(s, &each, test_classify);
        suite_add_case(s, &each, test_classify_cache_bound);
        suite_add_case(s, &each, test_uid_range);
        return s;
}

int main(void) {
        return check_run(roles_suite());
}
