/*
 * The marketplace set: policy ones read-only, added ones persisted under the state directory and
 * found again after a restart, lint warnings and force, and the inputs refused.
 */
#include <check.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check-run.h"
#include "fd-util.h"
#include "macro.h"
#include "index-versions.h"
#include "marketplaces.h"
#include "verifier.h"

#define ISSUER "https://token.actions.githubusercontent.com"
#define GOOD   "^https://github\\.com/acme/lockfile-plugins/\\.github/workflows/release\\.yml@.*"
/* Unescaped dots: a lint warning. */
#define SLOPPY "^https://github.com/acme/lockfile-plugins/.github/workflows/release.yml@.*"

static char top[] = "/tmp/lockd-test-marketplaces-XXXXXX";
static char root_path[512];
static int statefd = -1;

__attribute__((format(printf, 1, 2))) static void sh(const char *fmt, ...) {
        char cmd[4096];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
}

static int root_fd(void) {
        int fd = open(root_path, O_RDONLY | O_CLOEXEC);

        ck_assert_int_ge(fd, 0);
        return fd;
}

static void setup(void) {
        char path[512];

        ck_assert_ptr_nonnull(mkdtemp(top));
        ck_assert_int_eq(verifier_set_helper_path(getenv("LOCKD_VERIFY")), 0);
        sh("%s init %s/root >/dev/null", getenv("LOCKD_SIGN"), top);
        snprintf(root_path, sizeof(root_path), "%s/root/trusted_root.json", top);
        snprintf(path, sizeof(path), "%s/state", top);
        ck_assert_int_eq(mkdir(path, 0700), 0);
        statefd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(statefd, 0);
}

static void teardown(void) {
        statefd = safe_close(statefd);
        sh("rm -rf %s", top);
        strcpy(top, "/tmp/lockd-test-marketplaces-XXXXXX");
}

static int add(Marketplaces *ms, const char *name, const char *issuer, const char *identity,
               bool force, char ***warnings, const char **reason) {
        int fd = root_fd(), r;

        r = marketplaces_add(ms, statefd, name, issuer, identity, NULL, fd, force, warnings,
                             reason);
        close(fd);
        return r;
}

static void count_report(const char *name, int error, const char *message, void *userdata) {
        (void)name;
        (void)error;
        (void)message;
        (*(int *)userdata)++;
}

START_TEST(test_marketplaces_add_list_persist_remove) {
        _cleanup_(marketplaces_freep) Marketplaces *ms = NULL, *again = NULL;
        MarketplaceSpec spec = {"official", ISSUER, GOOD, root_path};
        const MarketplaceEntry *e;
        char **warnings = NULL;
        int reports = 0;

        ck_assert_int_eq(marketplaces_load(statefd, &spec, 1, NULL, NULL, &ms), 0);
        ck_assert_uint_eq(marketplaces_n(ms), 1);
        e = marketplaces_get(ms, 0);
        ck_assert_str_eq(e->marketplace.name, "official");
        ck_assert_int_eq(e->source, MARKETPLACE_SOURCE_POLICY);
        ck_assert_str_eq(marketplace_source_name(e->source), "policy");
        ck_assert_uint_eq(strlen(e->trusted_root_sha256), 64);
        /* lockd holds the root's bytes, sealed, and never a parsed root. */
        ck_assert_ptr_null(e->marketplace.root);
        ck_assert_int_eq(fcntl(e->trusted_root_fd, F_GET_SEALS) & MEMFD_SEALS_IMMUTABLE,
                         MEMFD_SEALS_IMMUTABLE);

        ck_assert_int_eq(add(ms, "acme", ISSUER, GOOD, false, &warnings, NULL), 0);
        ck_assert_ptr_nonnull(warnings);
        ck_assert_ptr_null(warnings[0]);
        marketplace_warnings_free(warnings);
        ck_assert_int_eq(add(ms, "zeta-2", ISSUER, GOOD, false, NULL, NULL), 0);
        ck_assert_uint_eq(marketplaces_n(ms), 3);
        ck_assert_str_eq(marketplaces_get(ms, 0)->marketplace.name, "acme");
        ck_assert_str_eq(marketplaces_get(ms, 1)->marketplace.name, "official");
        ck_assert_str_eq(marketplaces_get(ms, 2)->marketplace.name, "zeta-2");
        ck_assert_ptr_null(marketplaces_get(ms, 3));
        e = marketplaces_find(ms, "acme");
        ck_assert_int_eq(e->source, MARKETPLACE_SOURCE_ADDED);
        ck_assert_str_eq(e->marketplace.issuer, ISSUER);
        ck_assert_str_eq(e->marketplace.identity_pattern, GOOD);
        ck_assert_str_eq(e->trusted_root_sha256,
                         marketplaces_find(ms, "official")->trusted_root_sha256);

        /* Taken names, the policy's included. */
        ck_assert_int_eq(add(ms, "acme", ISSUER, GOOD, true, NULL, NULL), -EEXIST);
        ck_assert_int_eq(add(ms, "official", ISSUER, GOOD, true, NULL, NULL), -EEXIST);

        /* A restart: the same set. */
        ck_assert_int_eq(marketplaces_load(statefd, &spec, 1, count_report, &reports, &again), 0);
        ck_assert_int_eq(reports, 0);
        ck_assert_uint_eq(marketplaces_n(again), 3);
        for (size_t i = 0; i < 3; i++) {
                const MarketplaceEntry *a = marketplaces_get(ms, i),
                                       *b = marketplaces_get(again, i);

                ck_assert_str_eq(a->marketplace.name, b->marketplace.name);
                ck_assert_str_eq(a->marketplace.issuer, b->marketplace.issuer);
                ck_assert_str_eq(a->marketplace.identity_pattern, b->marketplace.identity_pattern);
                ck_assert_str_eq(a->trusted_root_sha256, b->trusted_root_sha256);
                ck_assert_int_eq(a->source, b->source);
        }
        marketplaces_free(again);
        again = NULL;

        /* The policy's are read-only; an added one goes, from disk too. */
        ck_assert_int_eq(marketplaces_remove(ms, statefd, "official"), -EPERM);
        ck_assert_int_eq(marketplaces_remove(ms, statefd, "nope"), -ENOENT);
        ck_assert_int_eq(marketplaces_remove(ms, statefd, "acme"), 0);
        ck_assert_ptr_null(marketplaces_find(ms, "acme"));
        ck_assert_int_eq(marketplaces_remove(ms, statefd, "acme"), -ENOENT);
        ck_assert_int_eq(marketplaces_load(statefd, NULL, 0, NULL, NULL, &again), 0);
        ck_assert_uint_eq(marketplaces_n(again), 1);
        ck_assert_str_eq(marketplaces_get(again, 0)->marketplace.name, "zeta-2");
        sh("test ! -e %s/state/marketplaces/acme && ! ls -A %s/state/marketplaces | grep -q '^\\.'",
           top, top);
}
END_TEST

START_TEST(test_marketplaces_lint) {
        _cleanup_(marketplaces_freep) Marketplaces *ms = NULL;
        char **warnings = NULL;

        ck_assert_int_eq(marketplaces_load(statefd, NULL, 0, NULL, NULL, &ms), 0);

        /* Warnings without force: refused, the warnings returned, nothing stored. */
        ck_assert_int_eq(add(ms, "acme", ISSUER, SLOPPY, false, &warnings, NULL), -EAGAIN);
        ck_assert_ptr_nonnull(warnings);
        ck_assert_ptr_nonnull(warnings[0]);
        ck_assert_ptr_nonnull(strstr(warnings[0], "W_IDENTITY_UNESCAPED_DOT"));
        marketplace_warnings_free(warnings);
        warnings = NULL;
        ck_assert_uint_eq(marketplaces_n(ms), 0);
        sh("test ! -e %s/state/marketplaces/acme", top);

        /* With force: added, the warnings still returned. */
        ck_assert_int_eq(add(ms, "acme", ISSUER, SLOPPY, true, &warnings, NULL), 0);
        ck_assert_ptr_nonnull(warnings[0]);
        marketplace_warnings_free(warnings);
        ck_assert_ptr_nonnull(marketplaces_find(ms, "acme"));
}
END_TEST

START_TEST(test_marketplaces_bad_inputs) {
        _cleanup_(marketplaces_freep) Marketplaces *ms = NULL;
        static const char *const bad_names[] = {
                "",      "-acme",
                "Acme",  "acme_1",
                "ac.me", "ac/me",
                "..",    "a2345678901234567890123456789012345678901234567890123456789012345",
        };
        static const char *const bad_issuers[] = {
                "",
                "http://token.actions.githubusercontent.com",
                "https://",
                "https://a b",
                "https://a\n",
                "ftp://x",
        };
        static const char *const bad_patterns[] = {"", "^(a", "^a)", "^a[", "^a b"};
        const char *reason;
        int fd, pipefd[2];

        ck_assert_int_eq(marketplaces_load(statefd, NULL, 0, NULL, NULL, &ms), 0);
        for (size_t i = 0; i < ELEMENTSOF(bad_names); i++) {
                reason = NULL;
                ck_assert_msg(add(ms, bad_names[i], ISSUER, GOOD, true, NULL, &reason) == -EINVAL,
                              "accepted name '%s'", bad_names[i]);
                ck_assert_ptr_nonnull(strstr(reason, "name"));
        }
        ck_assert(marketplace_name_valid(
                "a234567890123456789012345678901234567890123456789012345678901234"));
        ck_assert(marketplace_name_valid("0-a"));
        for (size_t i = 0; i < ELEMENTSOF(bad_issuers); i++) {
                reason = NULL;
                ck_assert_msg(add(ms, "acme", bad_issuers[i], GOOD, true, NULL, &reason) == -EINVAL,
                              "accepted issuer '%s'", bad_issuers[i]);
                ck_assert_ptr_nonnull(strstr(reason, "issuer"));
        }
        for (size_t i = 0; i < ELEMENTSOF(bad_patterns); i++) {
                reason = NULL;
                ck_assert_msg(add(ms, "acme", ISSUER, bad_patterns[i], true, NULL, &reason) ==
                                      -EINVAL,
                              "accepted pattern '%s'", bad_patterns[i]);
                ck_assert_ptr_nonnull(strstr(reason, "pattern"));
        }
        /* One that would make regcomp() exhaust memory: refused with why, never compiled. */
        reason = NULL;
        ck_assert_int_eq(add(ms, "acme", ISSUER, "^((a{99}){99}){99}$", true, NULL, &reason),
                         -EINVAL);
        ck_assert_ptr_nonnull(strstr(reason, "multiply past"));
        reason = NULL;
        ck_assert_int_eq(add(ms, "acme", ISSUER, GOOD "a++", true, NULL, &reason), -EINVAL);
        ck_assert_ptr_nonnull(strstr(reason, "two repetition operators"));

        /* Roots: not JSON of a trusted root, not a regular file, not readable. */
        fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        ck_assert_int_eq(
                marketplaces_add(ms, statefd, "acme", ISSUER, GOOD, NULL, fd, true, NULL, &reason),
                -EINVAL);
        ck_assert_ptr_nonnull(strstr(reason, "regular"));
        close(fd);
        ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
        ck_assert_int_eq(marketplaces_add(ms, statefd, "acme", ISSUER, GOOD, NULL, pipefd[0], true,
                                          NULL, &reason),
                         -EINVAL);
        close(pipefd[0]);
        close(pipefd[1]);
        fd = open(root_path, O_WRONLY | O_APPEND | O_CLOEXEC);
        ck_assert_int_eq(
                marketplaces_add(ms, statefd, "acme", ISSUER, GOOD, NULL, fd, true, NULL, &reason),
                -EINVAL);
        close(fd);
        fd = open(root_path, O_PATH | O_CLOEXEC);
        ck_assert_int_eq(
                marketplaces_add(ms, statefd, "acme", ISSUER, GOOD, NULL, fd, true, NULL, &reason),
                -EINVAL);
        close(fd);
        sh("printf '{\"mediaType\":\"x\"}' > %s/bogus.json", top);
        {
                char p[512];

                snprintf(p, sizeof(p), "%s/bogus.json", top);
                fd = open(p, O_RDONLY | O_CLOEXEC);
        }
        ck_assert_int_eq(
                marketplaces_add(ms, statefd, "acme", ISSUER, GOOD, NULL, fd, true, NULL, &reason),
                -EINVAL);
        ck_assert_ptr_nonnull(strstr(reason, "trusted root"));
        close(fd);
        ck_assert_uint_eq(marketplaces_n(ms), 0);
        sh("test ! -e %s/state/marketplaces || test -z \"$(ls -A %s/state/marketplaces)\"", top,
           top);
}
END_TEST

START_TEST(test_marketplaces_policy_and_stored_errors) {
        _cleanup_(marketplaces_freep) Marketplaces *ms = NULL;
        MarketplaceSpec specs[2] = {
                {"official", ISSUER, GOOD, root_path},
                {"official", ISSUER, GOOD, root_path},
        };
        MarketplaceSpec missing = {"official", ISSUER, GOOD, "/nonexistent/trusted_root.json"};
        MarketplaceSpec badname = {"Official", ISSUER, GOOD, root_path};
        Marketplaces *none = NULL;
        int reports = 0;

        /* The policy's mistakes fail the load. */
        ck_assert_int_eq(marketplaces_load(statefd, specs, 2, count_report, &reports, &none),
                         -EINVAL);
        ck_assert_int_eq(reports, 1);
        ck_assert_int_eq(marketplaces_load(statefd, &missing, 1, NULL, NULL, &none), -ENOENT);
        ck_assert_int_eq(marketplaces_load(statefd, &badname, 1, NULL, NULL, &none), -EINVAL);
        ck_assert_ptr_null(none);

        /* A stored marketplace that is broken, misnamed, or shadowed by the policy is skipped. */
        ck_assert_int_eq(marketplaces_load(statefd, NULL, 0, NULL, NULL, &ms), 0);
        ck_assert_int_eq(add(ms, "official", ISSUER, GOOD, false, NULL, NULL), 0);
        ck_assert_int_eq(add(ms, "broken", ISSUER, GOOD, false, NULL, NULL), 0);
        ck_assert_int_eq(add(ms, "renamed", ISSUER, GOOD, false, NULL, NULL), 0);
        ck_assert_int_eq(add(ms, "fine", ISSUER, GOOD, false, NULL, NULL), 0);
        marketplaces_free(ms);
        ms = NULL;
        sh("cd %s/state/marketplaces && chmod u+w broken/trusted_root.json && "
           "printf '{}' > broken/trusted_root.json && "
           "sed -i 's/\"renamed\"/\"fine\"/' renamed/marketplace.json && mkdir Bad",
           top);
        reports = 0;
        ck_assert_int_eq(marketplaces_load(statefd, specs, 1, count_report, &reports, &ms), 0);
        ck_assert_int_eq(reports, 4);
        ck_assert_uint_eq(marketplaces_n(ms), 2);
        ck_assert_int_eq(marketplaces_find(ms, "official")->source, MARKETPLACE_SOURCE_POLICY);
        ck_assert_ptr_nonnull(marketplaces_find(ms, "fine"));

        /* The human may add a marketplace where a broken stored one was. */
        ck_assert_int_eq(add(ms, "broken", ISSUER, GOOD, false, NULL, NULL), 0);
        marketplaces_free(ms);
        ms = NULL;
        reports = 0;
        ck_assert_int_eq(marketplaces_load(statefd, specs, 1, count_report, &reports, &ms), 0);
        ck_assert_int_eq(reports, 3);
        ck_assert_ptr_nonnull(marketplaces_find(ms, "broken"));
}
END_TEST

/* The URL is kept with an added marketplace and survives a reload; a bad one is refused. */
START_TEST(test_marketplaces_url) {
        _cleanup_(marketplaces_freep) Marketplaces *ms = NULL, *again = NULL;
        static const char *const refused[] = {
                "http://example.org/m",
                "ftp://example.org/m",
                "https://",
                "file://",
                "https://example.org/m?x=1",
                "https://example.org/m#top",
                "file:///srv/../etc",
                "https://example.org/a b",
                "example.org/m",
        };
        const char *reason = NULL;
        int fd;

        ck_assert_int_eq(marketplaces_load(statefd, NULL, 0, NULL, NULL, &ms), 0);
        for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
                reason = NULL;
                ck_assert_msg(marketplace_url_check(refused[i], &reason) == -EINVAL, "%s",
                              refused[i]);
                ck_assert_ptr_nonnull(reason);
                fd = root_fd();
                ck_assert_int_eq(marketplaces_add(ms, statefd, "acme", ISSUER, GOOD, refused[i], fd,
                                                  true, NULL, &reason),
                                 -EINVAL);
                close(fd);
        }
        ck_assert_int_eq(marketplace_url_check("file:///srv/lockd-market", NULL), 0);
        fd = root_fd();
        ck_assert_int_eq(marketplaces_add(ms, statefd, "acme", ISSUER, GOOD,
                                          "https://plugins.example.org/lockd", fd, true, NULL,
                                          &reason),
                         0);
        close(fd);
        ck_assert_str_eq(marketplaces_find(ms, "acme")->url, "https://plugins.example.org/lockd");
        ck_assert_ptr_null(marketplaces_find(ms, "acme")->marketplace.root);
        ck_assert_int_eq(marketplaces_load(statefd, NULL, 0, NULL, NULL, &again), 0);
        ck_assert_str_eq(marketplaces_find(again, "acme")->url,
                         "https://plugins.example.org/lockd");
}
END_TEST

/* Rollback and freeze: an older version or an expired index is refused and nothing is recorded;
 * a newer one is recorded on disk (a reload reads it); removing the marketplace forgets it. */
START_TEST(test_index_versions) {
        _cleanup_(marketplaces_freep) Marketplaces *ms = NULL;
        IndexFreshness verdict;
        uint64_t newest = 99, v = 99;
        const char *reason = NULL;
        int64_t now = 2000000000;
        VerifiedIndex vi = {.version = 5, .expires = now + 60};
        int fd;

        ck_assert_int_eq(index_versions_get(statefd, "acme", &v), 0);
        ck_assert_uint_eq(v, 0);
        ck_assert_int_eq(index_versions_admit(statefd, "acme", &vi, now, &verdict, &newest), 0);
        ck_assert_int_eq(verdict, INDEX_FRESH);
        ck_assert_uint_eq(newest, 0);
        ck_assert_int_eq(index_versions_get(statefd, "acme", &v), 0);
        ck_assert_uint_eq(v, 5);

        /* The same version again: fresh; an older one: a rollback, the record untouched. */
        ck_assert_int_eq(index_versions_admit(statefd, "acme", &vi, now, &verdict, &newest), 0);
        vi.version = 4;
        ck_assert_int_eq(index_versions_admit(statefd, "acme", &vi, now, &verdict, &newest),
                         -ESTALE);
        ck_assert_int_eq(verdict, INDEX_ROLLBACK);
        ck_assert_uint_eq(newest, 5);
        /* Newer but expired (also at the very second): a freeze, nothing recorded. */
        vi.version = 6;
        vi.expires = now;
        ck_assert_int_eq(index_versions_admit(statefd, "acme", &vi, now, &verdict, &newest),
                         -ETIME);
        ck_assert_int_eq(verdict, INDEX_EXPIRED);
        ck_assert_int_eq(index_versions_get(statefd, "acme", &v), 0);
        ck_assert_uint_eq(v, 5);
        /* Older and expired: the rollback is named. */
        vi.version = 1;
        ck_assert_int_eq(index_versions_admit(statefd, "acme", &vi, now, &verdict, &newest),
                         -ESTALE);

        /* A record that is not one number fails closed. */
        sh("printf '7x\\n' > %s/state/index-versions/other", top);
        ck_assert_int_eq(index_versions_get(statefd, "other", &v), -EBADMSG);
        vi = (VerifiedIndex){.version = 9, .expires = now + 1};
        ck_assert_int_eq(index_versions_admit(statefd, "other", &vi, now, &verdict, &newest),
                         -EBADMSG);

        /* Adding a marketplace starts afresh; removing it forgets its record. */
        ck_assert_int_eq(marketplaces_load(statefd, NULL, 0, NULL, NULL, &ms), 0);
        fd = root_fd();
        ck_assert_int_eq(
                marketplaces_add(ms, statefd, "acme", ISSUER, GOOD, NULL, fd, true, NULL, &reason),
                0);
        close(fd);
        ck_assert_int_eq(index_versions_get(statefd, "acme", &v), 0);
        ck_assert_uint_eq(v, 0);
        vi = (VerifiedIndex){.version = 3, .expires = now + 1};
        ck_assert_int_eq(index_versions_admit(statefd, "acme", &vi, now, &verdict, &newest), 0);
        ck_assert_int_eq(marketplaces_remove(ms, statefd, "acme"), 0);
        ck_assert_int_eq(index_versions_get(statefd, "acme", &v), 0);
        ck_assert_uint_eq(v, 0);
}
END_TEST

static Suite *marketplaces_suite(void) {
        Suite *s = suite_create("marketplaces");
        const CaseOptions each = {.timeout = 60, .setup = setup, .teardown = teardown};

        suite_add_case(s, &each, test_marketplaces_add_list_persist_remove);
        suite_add_case(s, &each, test_marketplaces_lint);
        suite_add_case(s, &each, test_marketplaces_bad_inputs);
        suite_add_case(s, &each, test_marketplaces_policy_and_stored_errors);
        suite_add_case(s, &each, test_marketplaces_url);
        suite_add_case(s, &each, test_index_versions);
        return s;
}

int main(void) {
        return check_run(marketplaces_suite());
}
