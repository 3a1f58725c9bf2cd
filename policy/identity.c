/* Marketplace identity patterns: the lint of a pattern and its whole-SAN match. */
#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "identity.h"

/*
 * The lint rules. A pattern is a POSIX ERE that lockd matches against the whole SAN of a signing
 * certificate (identity_match()); the rules flag patterns that match more than their author
 * meant, above all under verifiers that search for a substring (cosign's
 * --certificate-identity-regexp).
 *
 * W_IDENTITY_UNESCAPED_DOT: each '.' outside a bracket expression that is not escaped by a
 *   backslash ("\\." is an escaped backslash and then a bare '.'): it matches any character, so
 *   "github.com" matches "githubXcom". A '.' directly followed by a quantifier ('*', '+', '?',
 *   '{') is a deliberate wildcard (".*") and is not reported; "[.]" and "\." are literal dots.
 *
 * W_IDENTITY_UNANCHORED: the pattern does not start with '^'. lockd anchors the match over the
 *   whole SAN anyway, but a pattern must say what it means wherever it is used.
 *
 * W_IDENTITY_PREFIX_REPO: the pattern's leading literal — after an optional '^', the characters
 *   up to the first metacharacter, "\X" read as X for an ASCII punctuation X, "[X]" read as X,
 *   a bare '.' read as the dot it was surely meant to be (it has its own warning), and the last
 *   character dropped when a quantifier follows it — leaves the repository path open:
 *   - for a GitHub workflow identity (literal starting "https://github.com/"), the OWNER and the
 *     REPO segments must each be spelled literally and end with a literal '/':
 *     "^https://github\.com/acme" also matches "https://github.com/acme-evil/...",
 *     "^https://github\.com/acme/lockfile-plugins" also matches "acme/lockfile-plugins-evil",
 *     "^https://github\.com/acme/.*" matches every repository of acme, and a group, bracket or
 *     wildcard inside either segment leaves it open the same way;
 *   - for any other URI (a literal holding "://"), the literal must name a host and at least two
 *     whole path segments (owner and repository, as on GitLab or Forgejo), and must end right
 *     after a '/': "^https://ci\.example\.com/acme.*" also matches ".../acme-evil", and
 *     "^https://gitlab\.com/acme/.*" every repository of acme;
 *   - a literal that holds no "://" at all fixes no repository: "^.*$", "^.+$", "^h.*", an
 *     optional or repeated group in front ("^(https://github\.com/acme/x/)?.*"), anything that
 *     starts with a wildcard matches SANs of every repository it allows.
 *   A literal that runs up to a final '$' is an exact SAN and is never reported. A '|' ends the
 *   literal like the end of the pattern does, and has a rule of its own:
 *
 * W_IDENTITY_ALTERNATION: a '|' outside every group. Its other side is a pattern of its own, and
 *   "A|.*" or "A|^https://gitlab\.com/.*" accept SANs of repositories that the first side never
 *   named: write one marketplace per identity instead. A '|' inside a group after the repository
 *   is spelled ("/(release|publish)\.yml") stays within it; one before it leaves the repository
 *   open and is reported by W_IDENTITY_PREFIX_REPO.
 */

#define GITHUB_PREFIX "https://github.com/"

static const char *const warning_names[_W_IDENTITY_MAX] = {
        [W_IDENTITY_UNESCAPED_DOT] = "W_IDENTITY_UNESCAPED_DOT",
        [W_IDENTITY_UNANCHORED] = "W_IDENTITY_UNANCHORED",
        [W_IDENTITY_PREFIX_REPO] = "W_IDENTITY_PREFIX_REPO",
        [W_IDENTITY_ALTERNATION] = "W_IDENTITY_ALTERNATION",
};

const char *identity_warning_name(IdentityWarningCode code) {
        if ((unsigned)code >= _W_IDENTITY_MAX)
                return "W_IDENTITY_UNKNOWN";
        return warning_names[code];
}

typedef struct WarningList {
        IdentityWarning *warnings;
        size_t max;
        size_t n;
} WarningList;

static void warn(WarningList *l, IdentityWarningCode code, size_t offset, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static void warn(WarningList *l, IdentityWarningCode code, size_t offset, const char *fmt, ...) {
        if (l->n < l->max) {
                IdentityWarning *w = &l->warnings[l->n];
                va_list ap;

                w->code = code;
                w->offset = offset;
                va_start(ap, fmt);
                vsnprintf(w->message, sizeof(w->message), fmt, ap);
                va_end(ap);
        }
        l->n++;
}

static bool is_quantifier(char c) {
        return c != '\0' && strchr("*+?{", c);
}

/*
 * Given p[i] == '[', the index of the bracket expression's closing ']', or of the NUL if it has
 * none (regcomp refuses such a pattern; identity_pattern_check() refuses it first). This reads a
 * bracket expression as glibc does: a ']' first (after an optional '^') is literal, "[:", "[."
 * and "[=" open a class, a collating element or an equivalence class that runs to ":]", ".]" or
 * "=]", and a backslash is an ordinary character.
 */
static size_t bracket_close(const char *p, size_t i) {
        i++;
        if (p[i] == '^')
                i++;
        if (p[i] == ']')
                i++;
        while (p[i] != '\0' && p[i] != ']') {
                if (p[i] == '[' && (p[i + 1] == ':' || p[i + 1] == '.' || p[i + 1] == '=')) {
                        char d = p[i + 1];

                        i += 2;
                        while (p[i] != '\0' && !(p[i] == d && p[i + 1] == ']'))
                                i++;
                        if (p[i] != '\0')
                                i += 2;
                        continue;
                }
                i++;
        }
        return i;
}

/* Given p[i] == '[', the index just past the bracket expression (see bracket_close()). */
static size_t bracket_end(const char *p, size_t i) {
        i = bracket_close(p, i);
        return p[i] == ']' ? i + 1 : i;
}

/*
 * The bounds of identity_pattern_check(). glibc's regcomp() builds the parse tree by copying the
 * repeated tree for every repetition operator ("x+" becomes "xx*", "x{3}" becomes "xxx",
 * "x{0,3}" becomes "(x(x(x)?)?)?"), then a node array and the epsilon closure of every node, so
 * "a++++...", "((a{99}){99}){99}" or a chain of nested repetitions grows exponentially and runs
 * out of memory (or takes seconds) before regcomp() returns. Parts that match the empty string
 * are the other trap: repeating one ("(a*)*(a*)*...") takes exponential time, a group that
 * matches it in two ways ("(a||)(a||)...") too, and each anchor multiplies the closures of the
 * empty-matching parts around it. regexec() slows down with the number of optional copies
 * (".{0,255}.{0,255}..."), and a back-reference makes it backtrack. The bounds:
 * - IDENTITY_PATTERN_MAX bytes;
 * - one repetition operator per atom ("a++" and "a*{2}" are refused, POSIX leaves them
 *   undefined; "(a+)+" is two atoms, each repeated once), and none after an anchor (glibc reads
 *   "^*" as an anchor and a literal '*');
 * - groups nested at most IDENTITY_DEPTH_MAX deep (glibc's parser recurses once per group);
 * - intervals {m}, {m,} and {m,n} with m <= n <= IDENTITY_INTERVAL_MAX ("{,n}" is a GNU
 *   extension and refused);
 * - the product of the copies ('+' makes 2, {m} and {m,n} make max(n, 1), {m,} makes m + 1)
 *   along any nesting path at most IDENTITY_NESTING_MAX ("((a{4}){4}){4}" makes 64); the next
 *   bound implies this one (a path of n copies copies its innermost atom n - 1 times), which is
 *   checked first to say what is wrong with "((a{99}){99}){99}";
 * - the parts that repetition operators add by copying, each part (a character, a bracket
 *   expression, an anchor, a '|', a group, an operator) counted once per copy and nested
 *   copies multiplied out, at most IDENTITY_COPIES_MAX in the whole pattern: "a{255}" adds 254,
 *   "(ab){3}" adds 2 * 3 (the group is a part), "(a{2}){3}" adds 1 + 2 * 4;
 * - at most IDENTITY_ANCHORS_MAX anchors ('^' and '$', copies counted), enough for
 *   "^a$|^b$"; no GNU anchor (\b, \B, \<, \>, \`, \': "\b\b\b..." is exponential);
 * - no repetition of an atom that can match the empty string ("(a*)*", "(a|)?", "(^)+": the
 *   repetition adds nothing), and no group, nor the whole pattern, that can match it in more
 *   than one way ("(a||)", "(a?|b?)", "a||");
 * - no back-reference (\1 to \9).
 *
 * Measured with glibc 2.36 (Debian 12, x86-64): regcomp() of "^(pattern)$" with REG_EXTENDED,
 * as identity_match() does, under RLIMIT_AS of 256 MiB, then regexec() on 4 KiB subjects, in the
 * C and C.UTF-8 locales. Refused now:
 *   "a" and 24 '+'            REG_ESPACE after 0.3 to 0.5 s (the 256 MiB spent);
 *   "((a{99}){99}){99}"       0.5 s and 204 MiB (RLIMIT_AS just holds it);
 *   "(a{0,255}){255}"         REG_ESPACE after 6.2 s;
 *   "(.{0,2}){0,255}"         REG_ESPACE after 3.1 s (lockd.yaml's earlier check let it by);
 *   ".{0,255}" 16 times       regcomp() 0.16 s and 32 MiB, then regexec() 15 to 23 s and 230 MiB;
 *   "()*" 16, 32 times        0.2 s, then more than 20 s (doubling with each "()*");
 *   "()?" 128, 192 times      0.8 s and 230 MiB, 5 s and 950 MiB (memory grows as the cube);
 *   "(a|||)" 32, 64 times     0.05 s and 35 MiB, 0.8 s and 400 MiB;
 *   "\b" 32, 64 times         0.15 s and 120 MiB, REG_ESPACE;
 *   "^" 512 times             0.2 s and 190 MiB; 32 '^' before 240 "(a|)": 0.26 s and 180 MiB;
 *   "^(a*)*(a*)*\1\2$"        regexec() 2 s on 81 bytes, growing about with the fifth power.
 * The worst patterns admitted, each filled up to 1024 bytes ("^^^^.{0,255}(a|)(a|)...",
 * "^$^$(a|)(a|)...", ".{0,255}.?.?...", "(.?a){63}.?.?...", "((.?a){7}){9}(a|)...",
 * "a{255}(a|)...", ".?", ".*", "(a|)" or "(.?)" repeated, 512 alternatives, groups 16 deep):
 * regcomp() at most 0.04 s and 34 MiB, regexec() at most 0.2 s and a 51 MiB peak (the same on a
 * 64 KiB subject); a 1024-byte literal takes 0.5 MiB. C.UTF-8 stays within these figures (a
 * bracket expression costs twice as much there). 28000 random patterns built from these pieces
 * (5700 admitted) did no worse than 0.03 s and 19 MiB in regcomp(), 0.11 s in regexec().
 */
#define IDENTITY_DEPTH_MAX    16
#define IDENTITY_INTERVAL_MAX 255
#define IDENTITY_NESTING_MAX  256
#define IDENTITY_COPIES_MAX   256
#define IDENTITY_ANCHORS_MAX  4

#define STRINGIFY_(x) #x
#define STRINGIFY(x)  STRINGIFY_(x)

/* An open group of identity_pattern_check(): what it holds so far. */
typedef struct CheckLevel {
        uint64_t parts;        /* each part counted once per copy */
        uint64_t anchors;      /* each '^' and '$' counted once per copy */
        uint64_t nesting;      /* the largest product of copies along a path inside the group */
        unsigned branch_empty; /* the ways the branch being read matches "", at most 2 */
        unsigned group_empty;  /* the ways the branches read before it do, at most 2 */
        unsigned before_atom;  /* branch_empty before the last atom */
} CheckLevel;

/* a + b for counts of ways that only need to tell 0, 1 and more apart. */
static unsigned ways_add(unsigned a, unsigned b) {
        return a + b > 2 ? 2 : a + b;
}

/*
 * The copies glibc makes of the atom before the repetition operator at p[*i] ('*', '+', '?' or
 * '{'), with *i moved to the operator's last byte and *ret_optional whether the operator allows
 * no copy at all; 0 when the interval is not one identity_pattern_check() accepts. Digits are
 * read with a cap, so no count overflows.
 */
static uint64_t repeat_copies(const char *p, size_t *i, bool *ret_optional) {
        uint64_t m = 0, n;
        size_t j = *i + 1;
        bool open = false;

        switch (p[*i]) {
        case '*':
        case '?':
                *ret_optional = true;
                return 1;
        case '+':
                *ret_optional = false;
                return 2;
        default:
                break;
        }
        if (p[j] < '0' || p[j] > '9')
                return 0;
        for (; p[j] >= '0' && p[j] <= '9'; j++)
                if (m <= IDENTITY_INTERVAL_MAX)
                        m = m * 10 + (uint64_t)(p[j] - '0');
        n = m;
        if (p[j] == ',') {
                j++;
                if (p[j] == '}')
                        open = true;
                else if (p[j] < '0' || p[j] > '9')
                        return 0;
                else
                        for (n = 0; p[j] >= '0' && p[j] <= '9'; j++)
                                if (n <= IDENTITY_INTERVAL_MAX)
                                        n = n * 10 + (uint64_t)(p[j] - '0');
        }
        if (p[j] != '}' || m > IDENTITY_INTERVAL_MAX || n > IDENTITY_INTERVAL_MAX || n < m)
                return 0;
        *i = j;
        *ret_optional = m == 0;
        if (open)
                return m + 1;
        return n > 0 ? n : 1;
}

/* identity_pattern_check()'s reading so far: the open groups and what the last atom was. */
typedef struct Check {
        CheckLevel level[IDENTITY_DEPTH_MAX + 1]; /* level[0] the whole pattern */
        size_t depth;                             /* the groups open */
        uint64_t atom_parts;   /* the last atom's parts (a group's inside, plus one) */
        uint64_t atom_nesting; /* the last atom's product of copies */
        uint64_t atom_anchors; /* the last atom's anchors */
        bool atom_empty;       /* whether the last atom can match "" */
        uint64_t added;        /* the parts repetitions copied out, in the whole pattern */
        uint64_t anchors;      /* the anchors, copies counted, in the whole pattern */
        enum { LAST_NONE, LAST_ATOM, LAST_REPEATED } last;
} Check;

/* The escape at p[*i] ('\\'): *i moved to the escaped byte. NULL when it is an atom, otherwise
 * why the pattern is refused. */
static const char *check_escape(const char *p, size_t *i) {
        (*i)++;
        if (p[*i] == '\0')
                return "the identity pattern ends in a lone backslash";
        if (p[*i] >= '1' && p[*i] <= '9')
                /* regexec() backtracks over every way the group can match. */
                return "the identity pattern has a back-reference (\\1 to \\9)";
        if (strchr("bB<>`'", p[*i]))
                /* regcomp() takes exponential time on "\b\b\b...". */
                return "the identity pattern has a GNU anchor (\\b, \\B, \\<, \\>, \\` or \\')";
        return NULL;
}

/* A '(': a new level, unless groups nest too deep (the reason then). */
static const char *check_group_open(Check *c) {
        if (c->depth == IDENTITY_DEPTH_MAX)
                return "the identity pattern nests groups more than " STRINGIFY(
                        IDENTITY_DEPTH_MAX) " deep";
        c->level[++c->depth] = (CheckLevel){.branch_empty = 1};
        c->last = LAST_NONE;
        return NULL;
}

/* A ')': the group becomes the last atom of the level around it, unless it closes nothing or can
 * match "" in more than one way (the reason then). */
static const char *check_group_close(Check *c) {
        CheckLevel *inner, *outer;

        if (c->depth == 0)
                /* glibc takes it as a literal; it would unbalance ^(...)$. */
                return "the identity pattern has a ')' that closes no '('";
        inner = &c->level[c->depth];
        c->atom_parts = inner->parts + 1;
        c->atom_nesting = inner->nesting > 0 ? inner->nesting : 1;
        if (ways_add(inner->group_empty, inner->branch_empty) > 1)
                /* regcomp() is exponential on "(a||)(a||)...", "(()|)...". */
                return "the identity pattern has a group that can match the empty string in more "
                       "than one way (such as '(a||)')";
        c->atom_empty = inner->group_empty + inner->branch_empty > 0;
        c->atom_anchors = inner->anchors;
        outer = &c->level[--c->depth];
        outer->anchors += c->atom_anchors;
        outer->before_atom = outer->branch_empty;
        /* The group matches "" in at most one way: the product is at most 1. */
        outer->branch_empty = c->atom_empty ? outer->branch_empty : 0;
        outer->parts += c->atom_parts;
        if (c->atom_nesting > outer->nesting)
                outer->nesting = c->atom_nesting;
        c->last = LAST_ATOM;
        return NULL;
}

/* A '|': the branch read so far joins the group's, and a new branch starts. */
static void check_alternation(Check *c) {
        CheckLevel *l = &c->level[c->depth];

        l->group_empty = ways_add(l->group_empty, l->branch_empty);
        l->branch_empty = 1;
        l->parts++;
        c->last = LAST_NONE;
}

/* A '^' or '$': one part and one anchor more, unless that makes too many (the reason then). */
static const char *check_anchor(Check *c) {
        /* glibc reads a '*' after an anchor as a literal: refused by check_repetition(). An
         * anchor matches the empty string. regcomp() grows with the cube of a run of anchors
         * ("^^^..."). */
        c->level[c->depth].parts++;
        c->level[c->depth].anchors++;
        c->last = LAST_NONE;
        if (++c->anchors > IDENTITY_ANCHORS_MAX)
                return "the identity pattern has more than " STRINGIFY(
                        IDENTITY_ANCHORS_MAX) " anchors ('^' and '$')";
        return NULL;
}

/* The repetition operator at p[*i] ('*', '+', '?' or '{'), *i moved to its last byte: the last
 * atom copied out into the counts, unless one of the rules on repetitions refuses it (the reason
 * then, in the order the rules are checked). */
static const char *check_repetition(Check *c, const char *p, size_t *i) {
        CheckLevel *l = &c->level[c->depth];
        uint64_t copies;
        bool optional;

        if (c->last == LAST_NONE)
                return "the identity pattern has a repetition operator with nothing to repeat";
        if (c->last == LAST_REPEATED)
                return "the identity pattern has two repetition operators in a row (such as "
                       "'a++' or 'a*{2}')";
        if (c->atom_empty)
                /* regcomp() takes exponential time on "(a*)*(a*)*..." and cubic memory on
                 * "()?()?...", and the repetition adds nothing. */
                return "the identity pattern repeats a group that can match the empty string "
                       "(such as '(a*)*' or '(a|)?')";
        copies = repeat_copies(p, i, &optional);
        if (copies == 0)
                return "the identity pattern has an interval other than {m}, {m,} or {m,n} with "
                       "m <= n <= " STRINGIFY(IDENTITY_INTERVAL_MAX);
        c->atom_nesting *= copies;
        if (c->atom_nesting > IDENTITY_NESTING_MAX)
                return "the identity pattern nests repetitions whose counts multiply "
                       "past " STRINGIFY(IDENTITY_NESTING_MAX);
        /* The copies of the atom beyond the first; the operator is the pattern's own part. */
        c->added += c->atom_parts * (copies - 1);
        if (c->added > IDENTITY_COPIES_MAX)
                return "the identity pattern has repetitions that copy out more than " STRINGIFY(
                        IDENTITY_COPIES_MAX) " parts in all";
        c->anchors += c->atom_anchors * (copies - 1);
        if (c->anchors > IDENTITY_ANCHORS_MAX)
                return "the identity pattern has more than " STRINGIFY(
                        IDENTITY_ANCHORS_MAX) " anchors ('^' and '$')";
        l->parts += 1 + c->atom_parts * (copies - 1);
        l->anchors += c->atom_anchors * (copies - 1);
        if (optional)
                l->branch_empty = l->before_atom;
        c->atom_parts *= copies;
        if (c->atom_nesting > l->nesting)
                l->nesting = c->atom_nesting;
        c->last = LAST_REPEATED;
        return NULL;
}

/* A one-part atom (a character, an escape, a bracket expression): it cannot match "". */
static void check_atom(Check *c) {
        CheckLevel *l = &c->level[c->depth];

        c->atom_parts = 1;
        c->atom_nesting = 1;
        c->atom_empty = false;
        c->atom_anchors = 0;
        l->before_atom = l->branch_empty;
        l->branch_empty = 0;
        l->parts++;
        if (l->nesting == 0)
                l->nesting = 1;
        c->last = LAST_ATOM;
}

/* The token at p[*i], *i moved to its last byte: NULL, or why the pattern is refused. */
static const char *check_token(Check *c, const char *p, size_t *i) {
        const char *reason = NULL;

        switch (p[*i]) {
        case '\\':
                reason = check_escape(p, i);
                break;
        case '[':
                *i = bracket_close(p, *i);
                if (p[*i] == '\0')
                        return "the identity pattern has an unterminated bracket expression";
                break;
        case '(':
                return check_group_open(c);
        case ')':
                return check_group_close(c);
        case '|':
                check_alternation(c);
                return NULL;
        case '^':
        case '$':
                return check_anchor(c);
        case '*':
        case '+':
        case '?':
        case '{':
                return check_repetition(c, p, i);
        default:
                break;
        }
        if (!reason)
                check_atom(c);
        return reason;
}

int identity_pattern_check(const char *pattern, const char **ret_reason) {
        Check c = {.last = LAST_NONE};
        const char *reason = NULL;

        c.level[0].branch_empty = 1;
        if (!pattern)
                reason = "the identity pattern is missing";
        else if (strnlen(pattern, IDENTITY_PATTERN_MAX + 1) > IDENTITY_PATTERN_MAX)
                reason = "the identity pattern is longer than " STRINGIFY(
                        IDENTITY_PATTERN_MAX) " bytes";

        /* Every count stays under IDENTITY_PATTERN_MAX * (IDENTITY_COPIES_MAX + 1) parts times
         * IDENTITY_INTERVAL_MAX + 1 copies: no overflow. */
        for (size_t i = 0; !reason && pattern[i] != '\0'; i++)
                reason = check_token(&c, pattern, &i);
        if (!reason && c.depth > 0)
                reason = "the identity pattern has a '(' that is never closed";
        /* identity_match() wraps the pattern in a group. */
        if (!reason && ways_add(c.level[0].group_empty, c.level[0].branch_empty) > 1)
                reason = "the identity pattern can match the empty string in more than one way "
                         "(such as 'a||')";

        if (reason) {
                if (ret_reason)
                        *ret_reason = reason;
                return -EINVAL;
        }
        return 0;
}

/*
 * Walks pattern's tokens outside bracket expressions: reports each bare '.' not followed by a
 * quantifier into l (when l is not NULL), and with alternation each '|' outside every group.
 * -EINVAL on a ')' that closes no '(' (glibc takes it as a literal, POSIX leaves it undefined, and
 * it would unbalance the ^(...)$ wrapping).
 */
static int scan_tokens(const char *p, WarningList *l, bool alternation) {
        unsigned depth = 0;
        size_t i = 0;

        while (p[i] != '\0') {
                switch (p[i]) {
                case '\\':
                        i += p[i + 1] != '\0' ? 2 : 1;
                        continue;
                case '[':
                        i = bracket_end(p, i);
                        continue;
                case '(':
                        depth++;
                        break;
                case ')':
                        if (depth == 0)
                                return -EINVAL;
                        depth--;
                        break;
                case '|':
                        if (l && alternation && depth == 0)
                                warn(l, W_IDENTITY_ALTERNATION, i,
                                     "'|' outside a group: its other side is a pattern of its "
                                     "own and may match other repositories; use one "
                                     "marketplace per identity");
                        break;
                case '.':
                        if (l && !alternation && !is_quantifier(p[i + 1]))
                                warn(l, W_IDENTITY_UNESCAPED_DOT, i,
                                     "'.' matches any character ('github.com' also matches "
                                     "'githubXcom'): write '\\.' for a literal dot");
                        break;
                default:
                        break;
                }
                i++;
        }
        return 0;
}

typedef enum LiteralStop {
        STOP_END,         /* the pattern ends after the literal */
        STOP_EXACT,       /* a final '$' follows the literal: the pattern is one exact SAN */
        STOP_ALTERNATION, /* a '|' follows the literal */
        STOP_WILDCARD,    /* a group, bracket, quantifier, escape class or anchor follows */
} LiteralStop;

/*
 * Extracts pattern's leading literal (the rules' comment says how) into lit, which has room for
 * strlen(pattern) + 1 bytes. Returns how it stopped; *stop_offset is the byte offset in pattern
 * where the literal ends.
 */
static LiteralStop leading_literal(const char *p, char *lit, size_t *stop_offset) {
        size_t i = p[0] == '^' ? 1 : 0, n = 0, atom_n = 0, atom_off = i;

        for (;;) {
                unsigned char c = (unsigned char)p[i];
                LiteralStop stop;

                if (c == '\0')
                        stop = STOP_END;
                else if (c == '$')
                        stop = p[i + 1] == '\0' ? STOP_EXACT : STOP_WILDCARD;
                else if (c == '|')
                        stop = STOP_ALTERNATION;
                else if (is_quantifier((char)c)) {
                        /* The quantified atom is not literal. */
                        n = atom_n;
                        i = atom_off;
                        stop = STOP_WILDCARD;
                } else if (c == '[' && p[i + 1] != '^' && (unsigned char)p[i + 1] < 0x80 &&
                           p[i + 1] != '\0' && p[i + 2] == ']') {
                        /* A one-character bracket expression ("[.]") is that character. */
                        atom_n = n;
                        atom_off = i;
                        lit[n++] = p[i + 1];
                        i += 3;
                        continue;
                } else if (strchr("[()^", (char)c))
                        stop = STOP_WILDCARD;
                else if (c == '\\') {
                        unsigned char e = (unsigned char)p[i + 1];

                        if (e >= 0x80 || !ispunct(e)) {
                                stop = STOP_WILDCARD; /* a back-reference or a GNU class */
                        } else {
                                atom_n = n;
                                atom_off = i;
                                lit[n++] = (char)e;
                                i += 2;
                                continue;
                        }
                } else {
                        /* A UTF-8 continuation byte belongs to the atom it continues. */
                        if ((c & 0xc0) != 0x80) {
                                atom_n = n;
                                atom_off = i;
                        }
                        lit[n++] = (char)c;
                        i++;
                        continue;
                }
                lit[n] = '\0';
                *stop_offset = i;
                return stop;
        }
}

/* Applies W_IDENTITY_PREFIX_REPO to the leading literal of p. -ENOMEM or 0. */
static int lint_prefix(const char *p, WarningList *l) {
        LiteralStop stop;
        size_t off;
        char *lit;

        lit = malloc(strlen(p) + 1);
        if (!lit)
                return -ENOMEM;
        stop = leading_literal(p, lit, &off);
        if (stop == STOP_EXACT)
                goto done;

        if (strncasecmp(lit, GITHUB_PREFIX, strlen(GITHUB_PREFIX)) == 0) {
                const char *owner = lit + strlen(GITHUB_PREFIX), *owner_end, *repo, *repo_end;

                owner_end = strchr(owner, '/');
                if (!owner_end) {
                        if (*owner == '\0')
                                warn(l, W_IDENTITY_PREFIX_REPO, off,
                                     "every GitHub owner matches after '" GITHUB_PREFIX
                                     "': spell the owner and the repository, each ending "
                                     "with '/'");
                        else
                                warn(l, W_IDENTITY_PREFIX_REPO, off,
                                     "other owners match too ('%.40s' also matches '%.40s-evil/"
                                     "...'): end the owner with '/'",
                                     owner, owner);
                        goto done;
                }
                repo = owner_end + 1;
                repo_end = strchr(repo, '/');
                if (!repo_end) {
                        int owner_len = (int)(owner_end - owner);

                        if (*repo == '\0')
                                warn(l, W_IDENTITY_PREFIX_REPO, off,
                                     "every repository of '%.*s' matches: spell the repository, "
                                     "ending with '/'",
                                     owner_len > 40 ? 40 : owner_len, owner);
                        else
                                warn(l, W_IDENTITY_PREFIX_REPO, off,
                                     "other repositories match too ('%.40s' also matches "
                                     "'%.40s-evil/...'): end the repository with '/'",
                                     owner, owner);
                }
                goto done;
        }

        const char *scheme_end = strstr(lit, "://");
        if (scheme_end) {
                const char *host = scheme_end + 3, *path = strchr(host, '/');
                size_t segments = 0;

                for (const char *q = path; q && *q; q++)
                        segments += *q == '/';
                if (*host == '\0' || *host == '/')
                        warn(l, W_IDENTITY_PREFIX_REPO, off,
                             "every host matches after '%.40s': spell the host and the path", lit);
                else if (lit[strlen(lit) - 1] != '/')
                        warn(l, W_IDENTITY_PREFIX_REPO, off,
                             "the literal '%.60s' ends inside a path segment, so '%.60s-evil' "
                             "matches too: end the segment with '/'",
                             lit, lit);
                else if (segments < 3) /* the host's '/', then owner/ and repository/ */
                        warn(l, W_IDENTITY_PREFIX_REPO, off,
                             "every repository under '%.60s' matches: spell the owner and the "
                             "repository, each ending with '/'",
                             lit);
        } else
                warn(l, W_IDENTITY_PREFIX_REPO, off,
                     "the pattern fixes no URL before its first wildcard (only '%.40s'): it "
                     "matches the SANs of any repository; spell "
                     "'^https://HOST/OWNER/REPOSITORY/' first",
                     lit);
done:
        free(lit);
        return 0;
}

int identity_pattern_lint(const char *pattern, IdentityWarning *warnings, size_t max,
                          size_t *n_warnings) {
        WarningList l = {.warnings = warnings, .max = warnings ? max : 0};
        regex_t re;
        int r;

        if (!pattern || !n_warnings)
                return -EINVAL;
        /* Before anything compiles it: regcomp() itself is the denial of service. */
        if (identity_pattern_check(pattern, NULL) < 0)
                return -EINVAL;
        if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
                return -EINVAL;
        regfree(&re);
        if (scan_tokens(pattern, NULL, false) < 0)
                return -EINVAL;

        if (pattern[0] != '^')
                warn(&l, W_IDENTITY_UNANCHORED, 0,
                     "the pattern does not start with '^': lockd matches the whole SAN, but "
                     "other verifiers search for a substring; say where it starts");
        (void)scan_tokens(pattern, &l, false);
        r = lint_prefix(pattern, &l);
        if (r < 0)
                return r;
        (void)scan_tokens(pattern, &l, true);
        *n_warnings = l.n;
        return 0;
}

bool identity_match(const char *pattern, const char *san) {
        regex_t raw, re;
        regmatch_t m;
        size_t n_sub;
        char *wrapped;
        bool ok;

        if (!pattern || !san || identity_pattern_check(pattern, NULL) < 0)
                return false;
        /* The pattern alone must be valid and balanced, so that ^(...)$ wraps all of it. */
        if (scan_tokens(pattern, NULL, false) < 0 || regcomp(&raw, pattern, REG_EXTENDED) != 0)
                return false;
        n_sub = raw.re_nsub;
        regfree(&raw);

        if (asprintf(&wrapped, "^(%s)$", pattern) < 0)
                return false;
        ok = regcomp(&re, wrapped, REG_EXTENDED) == 0;
        free(wrapped);
        if (!ok)
                return false;
        ok = re.re_nsub == n_sub + 1 && regexec(&re, san, 1, &m, 0) == 0 && m.rm_so == 0 &&
             (size_t)m.rm_eo == strlen(san);
        regfree(&re);
        return ok;
}
