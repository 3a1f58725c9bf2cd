/*
 * Unit tests of identity patterns: each lint rule, a match that never takes a substring, and the
 * bounds that keep hostile patterns away from regcomp().
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

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
        /* (These name no repository: only their dot warnings count here.) */
        n = lint("^a[].]b$");
        ck_assert_uint_eq(count(n, W_IDENTITY_UNESCAPED_DOT), 0);
        n = lint("^a[^.]b$");
        ck_assert_uint_eq(count(n, W_IDENTITY_UNESCAPED_DOT), 0);
        n = lint("^a[[:alpha:].]b$");
        ck_assert_uint_eq(count(n, W_IDENTITY_UNESCAPED_DOT), 0);
        n = lint("^a[[.-.]]b$");
        ck_assert_uint_eq(count(n, W_IDENTITY_UNESCAPED_DOT), 0);
        /* "\\." is an escaped backslash and then a bare dot (at byte 4). */
        n = lint("^a\\\\.b$");
        ck_assert_uint_eq(n, 1);
        ck_assert_int_eq(w[0].code, W_IDENTITY_UNESCAPED_DOT);
        ck_assert_uint_eq(w[0].offset, 4);
        /* "\\\." is an escaped backslash and an escaped dot. */
        ck_assert_uint_eq(lint("^a\\\\\\.b$"), 0);
        /* A dot after a bracket expression is outside it. */
        n = lint("^a[x].b$");
        ck_assert_uint_eq(count(n, W_IDENTITY_UNESCAPED_DOT), 1);
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
        size_t n;

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
        n = lint("^https://github\\.com/acme/x|^https://github\\.com/acme/y/");
        ck_assert_uint_eq(n, 2);
        ck_assert_int_eq(w[0].code, W_IDENTITY_PREFIX_REPO);
        ck_assert_uint_eq(w[0].offset, 27);
        ck_assert_int_eq(w[1].code, W_IDENTITY_ALTERNATION);
        /* Another URI: the literal ends inside a segment, or names no host. */
        expect_prefix("^https://ci\\.example\\.com/acme.*", 30);
        expect_prefix("^https://ci\\.example\\.com/acme", 30);
        expect_prefix("^https://.*", 9);
        ck_assert_uint_eq(lint("^https://ci\\.example\\.com/acme/x/.*"), 0);
        /* Every repository of an owner on another forge. */
        expect_prefix("^https://ci\\.example\\.com/acme/.*", 31);
        expect_prefix("^https://gitlab\\.com/acme/.*", 26);
        /* No URL at all: match-all, a wildcard first, an optional group in front. */
        expect_prefix("^.*$", 1);
        expect_prefix("^.+$", 1);
        expect_prefix("^h.*", 2);
        expect_prefix("^(https://github\\.com/acme/x/)?.*", 1);
        expect_prefix("^(https://github\\.com/acme/x/)+", 1);
        ck_assert_ptr_nonnull(strstr(w[0].message, "fixes no URL"));
        ck_assert_str_eq(identity_warning_name(W_IDENTITY_PREFIX_REPO), "W_IDENTITY_PREFIX_REPO");
        ck_assert_str_eq(identity_warning_name(_W_IDENTITY_MAX), "W_IDENTITY_UNKNOWN");
}
END_TEST

/* A '|' outside every group is reported whatever each side says; one inside a group after the
 * repository is not. */
START_TEST(test_alternation) {
        size_t n;

        n = lint("A|.*");
        ck_assert_uint_eq(count(n, W_IDENTITY_ALTERNATION), 1);
        ck_assert_uint_eq(count(n, W_IDENTITY_PREFIX_REPO), 1);
        n = lint("^A|^https://gitlab\\.com/.*");
        ck_assert_uint_eq(count(n, W_IDENTITY_ALTERNATION), 1);
        n = lint(GOOD "(a|b)");
        ck_assert_uint_eq(n, 0);
        n = lint("^https://github\\.com/acme/(x|y)/");
        ck_assert_uint_eq(count(n, W_IDENTITY_ALTERNATION), 0);
        ck_assert_uint_eq(count(n, W_IDENTITY_PREFIX_REPO), 1);
        ck_assert_str_eq(identity_warning_name(W_IDENTITY_ALTERNATION), "W_IDENTITY_ALTERNATION");
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
        ck_assert_uint_eq(n, 5);
        ck_assert_int_eq(one[0].code, W_IDENTITY_UNANCHORED);
        ck_assert_int_eq(identity_pattern_lint("a.b.c.d", NULL, 0, &n), 0);
        ck_assert_uint_eq(n, 5);
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

/* p passes identity_pattern_check(), and the reason is left alone. */
static void expect_admitted(const char *p) {
        const char *why = "untouched";

        ck_assert_msg(identity_pattern_check(p, &why) == 0, "'%.80s' refused: %s", p, why);
        ck_assert_str_eq(why, "untouched");
}

/* p fails identity_pattern_check() with a reason that contains what. */
static void expect_refused(const char *p, const char *what) {
        const char *why = NULL;

        ck_assert_msg(identity_pattern_check(p, &why) == -EINVAL, "'%.80s' admitted", p);
        ck_assert_ptr_nonnull(why);
        ck_assert_msg(strstr(why, what), "'%.80s': '%s' does not say '%s'", p, why, what);
        ck_assert_int_eq(identity_pattern_check(p, NULL), -EINVAL);
}

/* unit n times into buf (of size size), after prefix. */
static const char *repeat(char *buf, size_t size, const char *prefix, const char *unit, size_t n) {
        size_t len = strlen(prefix);

        ck_assert_uint_lt(len + n * strlen(unit), size);
        memcpy(buf, prefix, len + 1);
        for (size_t i = 0; i < n; i++, len += strlen(unit))
                memcpy(buf + len, unit, strlen(unit) + 1);
        return buf;
}

/* "(((a)))" with n groups around atom, each followed by op. */
static const char *nest(char *buf, size_t size, const char *atom, const char *op, size_t n) {
        size_t len = 0;

        ck_assert_uint_lt(n * (1 + strlen(op)) + strlen(atom), size);
        for (size_t i = 0; i < n; i++)
                buf[len++] = '(';
        memcpy(buf + len, atom, strlen(atom));
        len += strlen(atom);
        for (size_t i = 0; i < n; i++) {
                buf[len++] = ')';
                memcpy(buf + len, op, strlen(op));
                len += strlen(op);
        }
        buf[len] = '\0';
        return buf;
}

START_TEST(test_check_ordinary) {
        expect_admitted(GOOD);
        expect_admitted(GOOD "v[0-9]+\\.[0-9]+\\.[0-9]+(-rc[0-9]{1,3})?$");
        expect_admitted("^https://github\\.com/acme/x/\\.github/workflows/[a-z-]+\\.ya?ml@"
                        "refs/(heads/main|tags/v[0-9.]+)$");
        expect_admitted("^https://github\\.com/acme/x/.*@[0-9a-f]{40}$");
        expect_admitted("^alice@example\\.org$");
        expect_admitted("^a[].]b[^]x]c[[:alpha:][.-.][=e=]]*$");
        expect_admitted("\\.\\{\\}a}b]\\w+");
        expect_admitted("^https://a\\.example/x$|^https://b\\.example/y$");
        expect_admitted("");
        expect_admitted("()");
        expect_admitted("(a|b)*(c(d)?)+");
        expect_admitted("a{0}b{1,}c{2,5}");
        /* Each rule of the lint still runs on what the check admits. */
        ck_assert_uint_eq(lint(GOOD "v[0-9]{1,3}"), 0);
        ck_assert(identity_match(GOOD "v[0-9]{1,3}",
                                 "https://github.com/acme/lockfile-plugins/.github/workflows/"
                                 "release.yml@refs/tags/v123"));
}
END_TEST

START_TEST(test_check_bounds) {
        char buf[2048];

        /* Length. */
        memset(buf, 'a', 1024);
        buf[1024] = '\0';
        expect_admitted(buf);
        ck_assert_uint_eq(lint(buf), 2); /* unanchored, and no URL */
        buf[1024] = 'a';
        buf[1025] = '\0';
        expect_refused(buf, "longer than 1024 bytes");
        ck_assert_int_eq(identity_pattern_check(NULL, NULL), -EINVAL);

        /* One repetition operator per atom. */
        expect_refused("a++", "two repetition operators in a row");
        expect_refused("a*{2}", "two repetition operators in a row");
        expect_refused("a?*", "two repetition operators in a row");
        expect_refused("(a){2}{2}", "two repetition operators in a row");
        expect_admitted("(a+)+");
        expect_refused("*a", "nothing to repeat");
        expect_refused("(+a)", "nothing to repeat");
        expect_refused("a|{2}", "nothing to repeat");
        /* glibc reads "^*" as an anchor and a literal '*': refused all the same. */
        expect_refused("^*a", "nothing to repeat");
        expect_refused("a$?", "nothing to repeat");

        /* Repeating what may match nothing: regcomp() is exponential on "(a*)*(a*)*...". */
        expect_refused("(a*)*", "can match the empty string");
        expect_refused("()?", "can match the empty string");
        expect_refused("(a|)+", "can match the empty string");
        expect_refused("(|a){2}", "can match the empty string");
        expect_refused("((a)?b?)*", "can match the empty string");
        expect_refused("(^)*", "can match the empty string");
        expect_refused("(()|)", "in more than one way");
        expect_refused("(a||)", "in more than one way");
        expect_refused("(a?|b?)", "in more than one way");
        expect_refused("((a|)(b|)|)", "in more than one way");
        expect_refused("a||", "in more than one way");
        expect_admitted("a||b");
        expect_admitted("(a|)(b|)");
        expect_admitted("(a?b)*");
        expect_admitted("(a|b?c)*");
        expect_admitted("(a)?");
        expect_admitted("(a*)");

        /* Anchors: GNU ones refused, '^' and '$' counted with their copies. */
        expect_refused("a\\b", "GNU anchor");
        expect_refused("\\<a\\>", "GNU anchor");
        expect_refused("\\`a\\'", "GNU anchor");
        expect_refused("a\\B", "GNU anchor");
        expect_admitted("^a$|^b$");
        expect_refused("^a$|^b$|^c$", "more than 4 anchors");
        expect_admitted("(^a){4}");
        expect_refused("(^a){5}", "more than 4 anchors");

        /* Intervals. */
        expect_admitted("a{255}");
        expect_admitted("a{0,255}");
        expect_admitted("a{255,255}");
        expect_admitted("a{254,}");
        expect_refused("a{256}", "interval");
        expect_refused("a{256,}", "interval");
        expect_refused("a{0,256}", "interval");
        expect_refused("a{99999999999999999999}", "interval");
        expect_refused("a{2,1}", "interval");
        expect_refused("a{,3}", "interval");
        expect_refused("a{", "interval");
        expect_refused("a{1", "interval");
        expect_refused("a{x}", "interval");
        expect_refused("a{1,x}", "interval");

        /* Nesting depth. */
        expect_admitted(nest(buf, sizeof(buf), "a", "", 16));
        expect_refused(nest(buf, sizeof(buf), "a", "", 17), "more than 16 deep");
        expect_admitted(nest(buf, sizeof(buf), "a", "?b", 16));

        /* Products along a nesting path: '+' copies twice. */
        expect_admitted("((a{4}){4}){4}");
        expect_refused("(a{2}){129}", "multiply past 256");
        expect_refused("(a{255}){2}", "multiply past 256");
        expect_refused("((a{10}){10}){10}", "multiply past 256");
        expect_refused("(((a{4}){4}){4}){5}", "multiply past 256");
        /* Two paths, each of 64. */
        expect_admitted("((a{4}){4}){4}b((c{4}){4}){4}");
        expect_admitted(nest(buf, sizeof(buf), "a", "+", 6));

        /* The parts copied out in all: "(a)+" adds 2, "((a)+)+" 2 + 6, and so on. */
        expect_refused(nest(buf, sizeof(buf), "a", "+", 7), "more than 256 parts");
        expect_admitted("a{255}b{3}");
        expect_refused("a{255}b{4}", "more than 256 parts");
        expect_admitted(".{0,255}.{0,3}");
        expect_refused(".{0,255}.{0,4}", "more than 256 parts");
        expect_admitted("(a|b){65}");
        expect_refused("(a|b){66}", "more than 256 parts");
        expect_refused("(ab){0,255}", "more than 256 parts");
        expect_refused("(a{16}){16}", "more than 256 parts");
        expect_refused(repeat(buf, sizeof(buf), "", "a{64}", 5), "more than 256 parts");
        /* Operators copy nothing: 512 of them are fine. */
        expect_admitted(repeat(buf, sizeof(buf), "", ".?", 512));

        /* Back-references, brackets, parentheses, escapes. */
        expect_refused("(a)\\1", "back-reference");
        expect_refused("(a)(b)(c)(d)(e)(f)(g)(h)(i)\\9", "back-reference");
        expect_admitted("a\\0");
        expect_refused("[a", "unterminated bracket");
        expect_refused("[]", "unterminated bracket");
        expect_refused("[[:alpha:]", "unterminated bracket");
        expect_refused("a)", "closes no '('");
        expect_refused("(a", "never closed");
        expect_refused("a\\", "lone backslash");
        /* A quantifier inside a bracket expression is a character. */
        expect_admitted("[*+?{]");
        expect_admitted("a[+]+");
}
END_TEST

/*
 * Patterns that make glibc's regcomp() exhaust memory or take seconds (or regexec() backtrack):
 * each is refused by the check, by the lint and by the match, each in its own forked test under
 * alarm(2). RLIMIT_AS keeps a regression from taking the machine's memory with it.
 */
static const char *hostile(int i, char *buf, size_t size) {
        switch (i) {
        case 0:
                return repeat(buf, size, "a", "+", 1000);
        case 1:
                return "((a{99}){99}){99}";
        case 2:
                return "^https://github\\.com/(((acme{99}){99}){99}){99}/$";
        case 3:
                return nest(buf, size, "a", "+", 16);
        case 4:
                return nest(buf, size, "a{2}", "{2}", 16);
        case 5:
                return nest(buf, size, "a", "*", 40);
        case 6:
                return "(a{0,255}){255}";
        case 7:
                /* regcomp() is quick, but regexec() takes seconds on a long SAN. */
                return repeat(buf, size, "", ".{0,255}", 16);
        case 8:
                return repeat(buf, size, "", "a{255}{255}", 8);
        case 9:
                return "(a*)*\\1";
        case 10:
                return "x{32767}";
        case 11:
                return "(((a{10}){10}){10}){10}";
        case 12:
                /* regcomp() takes exponential time, about doubling per "(a*)*". */
                return repeat(buf, size, "", "(a*)*", 40);
        case 13:
                /* regcomp() takes memory in the cube of the number of "()?". */
                return repeat(buf, size, "", "()?", 300);
        case 14:
                return repeat(buf, size, "", "\\b", 100);
        case 15:
                return repeat(buf, size, "", "^$", 512);
        case 16:
                /* regcomp() takes 0.8 s and 400 MiB on 64 of these, twice the time per 8 more. */
                return repeat(buf, size, "", "(a|||)", 100);
        default:
                return NULL;
        }
}

#define N_HOSTILE 17

START_TEST(test_hostile) {
        static char san[4097];
        const struct rlimit as = {1024ul << 20, 1024ul << 20};
        IdentityWarning ws[4];
        const char *p, *why = NULL;
        char buf[2048];
        size_t n = 0;

#ifndef __SANITIZE_ADDRESS__
        /* Not under ASan, whose shadow memory alone needs terabytes of address space. */
        ck_assert_int_eq(setrlimit(RLIMIT_AS, &as), 0);
#else
        (void)as;
#endif
        alarm(2);
        p = hostile(_i, buf, sizeof(buf));
        ck_assert_ptr_nonnull(p);
        memset(san, 'a', sizeof(san) - 1);

        ck_assert_msg(identity_pattern_check(p, &why) == -EINVAL, "'%.60s' admitted", p);
        ck_assert_ptr_nonnull(why);
        ck_assert_int_eq(identity_pattern_lint(p, ws, 4, &n), -EINVAL);
        ck_assert(!identity_match(p, san));
        ck_assert(!identity_match(p, "aa"));
        alarm(0);
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

        suite_add_case(s, NULL, test_good);
        suite_add_case(s, NULL, test_unescaped_dot);
        suite_add_case(s, NULL, test_brackets_and_escapes);
        suite_add_case(s, NULL, test_unanchored);
        suite_add_case(s, NULL, test_prefix_repo);
        suite_add_case(s, NULL, test_all_at_once);
        suite_add_case(s, NULL, test_alternation);
        suite_add_case(s, NULL, test_truncated_list);
        suite_add_case(s, NULL, test_invalid);
        suite_add_case(s, NULL, test_match_anchored);
        suite_add_case(s, NULL, test_check_ordinary);
        suite_add_case(s, NULL, test_check_bounds);
        suite_add_loop_case(s, NULL, test_hostile, 0, N_HOSTILE);
        /* test_hostile's alarm() and RLIMIT_AS must end a forked test, not the runner. */
        setenv("CK_FORK", "yes", 1);
        return check_run(s);
}
