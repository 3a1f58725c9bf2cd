/* Unit tests of identity patterns: each lint rule, and a match that never takes a substring. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "identity.h"
#include "check-run.h"

#define GOOD                                                                                       \
        "^https://github\\.com/acme/lockfile-plugins/\\.github/workflows/release\\.yml@refs/tags/"

static IdentityWarning w[16];

/* Lints p, asserting success; the number of warnings. */
static size_t lint(const char *p) {
        size_t n = 99;

        memset(w, 0, sizeof(w));
        ck_assert_int_eq(identity_pattern_lint(p, w, 16, &n), 0);
        ck_assert_uint_le(n, 16);
        for (size_t i = 0; i < n; i++)
                ck_assert_uint_gt(strlen(w[i].message), 0);
        return n;
}

/* How many warnings of code the last lint() gave. */
static size_t count(size_t n, IdentityWarningCode code) {
        size_t k = 0;

        for (size_t i = 0; i < n; i++)
                k += w[i].code == code;
        return k;
}

START_TEST(test_good) {
        ck_assert_uint_eq(lint(GOOD), 0);
        ck_assert_uint_eq(lint("^https://github\\.com/acme/x/"), 0);
        /* An exact SAN is pinned whatever it is. */
        ck_assert_uint_eq(lint("^https://ci\\.example\\.com/acme$"), 0);
        ck_assert_uint_eq(lint("^alice@example\\.org$"), 0);
        /* A deliberate wildcard after the pinned repository. */
        ck_assert_uint_eq(lint(GOOD "lockfile-.*"), 0);
}
END_TEST

START_TEST(test_unescaped_dot) {
        size_t n;

        /* The brief's spelling has one dot; with ".github" two. */
        n = lint("^https://github.com/acme/lockfile-plugins/");
        ck_assert_uint_eq(n, 1);
        ck_assert_int_eq(w[0].code, W_IDENTITY_UNESCAPED_DOT);
        ck_assert_uint_eq(w[0].offset, 15);

        n = lint("^https://github.com/acme/lockfile-plugins/.github/");
        ck_assert_uint_eq(n, 2);
        ck_assert_int_eq(w[0].code, W_IDENTITY_UNESCAPED_DOT);
        ck_assert_uint_eq(w[0].offset, 15);
        ck_assert_int_eq(w[1].code, W_IDENTITY_UNESCAPED_DOT);
        ck_assert_uint_eq(w[1].offset, 42);
        ck_assert_str_eq(identity_warning_name(w[0].code), "W_IDENTITY_UNESCAPED_DOT");

        /* The good example with none of its four dots escaped. */
        n = lint("^https://github.com/acme/lockfile-plugins/.github/workflows/release.yml@refs/"
                 "tags/");
        ck_assert_uint_eq(n, 3);
        ck_assert_uint_eq(count(n, W_IDENTITY_UNESCAPED_DOT), 3);
}
END_TEST

START_TEST(test_brackets_and_escapes) {
        size_t n;

        /* A dot in a bracket expression is literal. */
        ck_assert_uint_eq(lint("^https://github[.]com/acme/x/"), 0);
        ck_assert_uint_eq(lint("^a[].]b$"), 0);
        ck_assert_uint_eq(lint("^a[^.]b$"), 0);
        ck_assert_uint_eq(lint("^a[[:alpha:].]b$"), 0);
        ck_assert_uint_eq(lint("^a[[.-.]]b$"), 0);
        /* "\\." is an escaped backslash and then a bare dot (at byte 4). */
        n = lint("^a\\\\.b$");
        ck_assert_uint_eq(n, 1);
        ck_assert_int_eq(w[0].code, W_IDENTITY_UNESCAPED_DOT);
        ck_assert_uint_eq(w[0].offset, 4);
        /* "\\\." is an escaped backslash and an escaped dot. */
        ck_assert_uint_eq(lint("^a\\\\\\.b$"), 0);
        /* A dot after a bracket expression is outside it. */
        n = lint("^a[x].b$");
        ck_assert_uint_eq(n, 1);
        ck_assert_uint_eq(w[0].offset, 5);
}
END_TEST

START_TEST(test_unanchored) {
        size_t n = lint("https://github\\.com/acme/x/");

        ck_assert_uint_eq(n, 1);
        ck_assert_int_eq(w[0].code, W_IDENTITY_UNANCHORED);
        ck_assert_uint_eq(w[0].offset, 0);
        ck_assert_str_eq(identity_warning_name(w[0].code), "W_IDENTITY_UNANCHORED");
}
END_TEST

/* p gives exactly one warning, W_IDENTITY_PREFIX_REPO at offset. */
static void expect_prefix(const char *p, size_t offset) {
        size_t n = lint(p);

        ck_assert_msg(n == 1 && w[0].code == W_IDENTITY_PREFIX_REPO, "%s: %zu warnings, first %s",
                      p, n, identity_warning_name(w[0].code));
        ck_assert_uint_eq(w[0].offset, offset);
}

START_TEST(test_prefix_repo) {
        expect_prefix("^https://github\\.com/acme", 25);
        ck_assert_ptr_nonnull(strstr(w[0].message, "acme-evil"));
        expect_prefix("^https://github\\.com/acme/lockfile-plugins", 42);
        ck_assert_ptr_nonnull(strstr(w[0].message, "acme/lockfile-plugins-evil"));
        /* Any repository of the owner. */
        expect_prefix("^https://github\\.com/acme/.*", 26);
        expect_prefix("^https://github\\.com/acme/.+/", 26);
        expect_prefix("^https://github\\.com/acme/[^/]*/", 26);
        expect_prefix("^https://github\\.com/acme/lock[a-z-]+/", 30);
        /* A quantified last character is not literal. */
        expect_prefix("^https://github\\.com/acme/xy?/", 27);
        /* Any owner. */
        expect_prefix("^https://github\\.com/", 21);
        expect_prefix("^https://github\\.com/[^/]+/x/", 21);
        expect_prefix("^https://github\\.com/acme/x|^https://github\\.com/acme/y/", 27);
        /* Another URI: the literal ends inside a segment, or names no host. */
        expect_prefix("^https://ci\\.example\\.com/acme.*", 30);
        expect_prefix("^https://ci\\.example\\.com/acme", 30);
        expect_prefix("^https://.*", 9);
        ck_assert_uint_eq(lint("^https://ci\\.example\\.com/acme/.*"), 0);
        ck_assert_str_eq(identity_warning_name(W_IDENTITY_PREFIX_REPO), "W_IDENTITY_PREFIX_REPO");
        ck_assert_str_eq(identity_warning_name(_W_IDENTITY_MAX), "W_IDENTITY_UNKNOWN");
}
END_TEST

START_TEST(test_all_at_once) {
        size_t n = lint("https://github.com/acme");

        ck_assert_uint_eq(n, 3);
        ck_assert_int_eq(w[0].code, W_IDENTITY_UNANCHORED);
        ck_assert_int_eq(w[1].code, W_IDENTITY_UNESCAPED_DOT);
        ck_assert_uint_eq(w[1].offset, 14);
        ck_assert_int_eq(w[2].code, W_IDENTITY_PREFIX_REPO);
        n = lint("https://github.com/acme/");
        ck_assert_uint_eq(n, 3);
        n = lint("^https://github.com/acme/.*");
        ck_assert_uint_eq(n, 2);
        ck_assert_uint_eq(count(n, W_IDENTITY_PREFIX_REPO), 1);
        ck_assert_uint_eq(count(n, W_IDENTITY_UNESCAPED_DOT), 1);
}
END_TEST

START_TEST(test_truncated_list) {
        IdentityWarning one[1];
        size_t n = 0;

        ck_assert_int_eq(identity_pattern_lint("a.b.c.d", one, 1, &n), 0);
        ck_assert_uint_eq(n, 4);
        ck_assert_int_eq(one[0].code, W_IDENTITY_UNANCHORED);
        ck_assert_int_eq(identity_pattern_lint("a.b.c.d", NULL, 0, &n), 0);
        ck_assert_uint_eq(n, 4);
}
END_TEST

START_TEST(test_invalid) {
        static const char *const bad[] = {"(",         "^https://github\\.com/acme/(x",
                                          "[",         "a{",
                                          "*a",        "\\",
                                          "a)",        "^(a)|b)",
                                          "[[:nope:]]"};
        size_t n;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                ck_assert_msg(identity_pattern_lint(bad[i], w, 16, &n) == -EINVAL, "'%s' accepted",
                              bad[i]);
                ck_assert_msg(!identity_match(bad[i], "a"), "'%s' matched", bad[i]);
        }
        ck_assert_int_eq(identity_pattern_lint(NULL, w, 16, &n), -EINVAL);
        ck_assert_int_eq(identity_pattern_lint("^a$", w, 16, NULL), -EINVAL);
}
END_TEST

START_TEST(test_match_anchored) {
        const char *san = "https://github.com/acme/x/.github/workflows/release.yml@refs/tags/v1";

        ck_assert(!identity_match("acme", "https://github.com/acme/x"));
        ck_assert(identity_match("^https://github\\.com/acme/x/.*", san));
        ck_assert(identity_match("https://github\\.com/acme/x/.*", san));
        /* A pattern that matches only a prefix or a suffix does not match. */
        ck_assert(!identity_match("^https://github\\.com/acme/x/", san));
        ck_assert(!identity_match("^https://github\\.com/acme", "https://github.com/acme-evil/x/"));
        ck_assert(!identity_match("release\\.yml@refs/tags/v1$", san));
        ck_assert(identity_match("^https://github\\.com/acme$", "https://github.com/acme"));
        /* Alternation stays inside the anchors. */
        ck_assert(!identity_match("a|b", "xb"));
        ck_assert(!identity_match("a|b", "ax"));
        ck_assert(identity_match("a|b", "b"));
        ck_assert(!identity_match(GOOD "v[0-9]+", san));
        ck_assert(identity_match(GOOD "v[0-9]+", "https://github.com/acme/lockfile-plugins/"
                                                 ".github/workflows/release.yml@refs/tags/v12"));
        ck_assert(!identity_match(NULL, san));
        ck_assert(!identity_match("^a$", NULL));
        ck_assert(identity_match("", ""));
        ck_assert(!identity_match("", "a"));
}
END_TEST

int main(void) {
        Suite *s = suite_create("identity");
        TCase *tc = tcase_create("identity");

        tcase_add_test(tc, test_good);
        tcase_add_test(tc, test_unescaped_dot);
        tcase_add_test(tc, test_brackets_and_escapes);
        tcase_add_test(tc, test_unanchored);
        tcase_add_test(tc, test_prefix_repo);
        tcase_add_test(tc, test_all_at_once);
        tcase_add_test(tc, test_truncated_list);
        tcase_add_test(tc, test_invalid);
        tcase_add_test(tc, test_match_anchored);
        suite_add_tcase(s, tc);
        return check_run(s);
}
