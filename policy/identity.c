/* Marketplace identity patterns: the lint of a pattern and its whole-SAN match. */
#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdarg.h>
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
 *   - for any other URI (a literal holding "://"), the literal must name a host and must end
 *     right after a '/': "^https://ci\.example\.com/acme.*" also matches ".../acme-evil".
 *   A literal that runs up to a final '$' is an exact SAN and is never reported. Alternation is
 *   not analysed branch by branch: a '|' ends the literal like the end of the pattern does.
 */

#define GITHUB_PREFIX "https://github.com/"

static const char *const warning_names[_W_IDENTITY_MAX] = {
        [W_IDENTITY_UNESCAPED_DOT] = "W_IDENTITY_UNESCAPED_DOT",
        [W_IDENTITY_UNANCHORED] = "W_IDENTITY_UNANCHORED",
        [W_IDENTITY_PREFIX_REPO] = "W_IDENTITY_PREFIX_REPO",
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

/* Given p[i] == '[', the index just past the bracket expression's closing ']' (or of the NUL
 * if it has none; regcomp refuses such a pattern). */
static size_t bracket_end(const char *p, size_t i) {
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
        return p[i] == ']' ? i + 1 : i;
}

/*
 * Walks pattern's tokens outside bracket expressions: reports each bare '.' not followed by a
 * quantifier into l (when l is not NULL). -EINVAL on a ')' that closes no '(' (glibc takes it
 * as a literal, POSIX leaves it undefined, and it would unbalance the ^(...)$ wrapping).
 */
static int scan_tokens(const char *p, WarningList *l) {
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
                case '.':
                        if (l && !is_quantifier(p[i + 1]))
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
                const char *host = scheme_end + 3;

                if (*host == '\0' || *host == '/')
                        warn(l, W_IDENTITY_PREFIX_REPO, off,
                             "every host matches after '%.40s': spell the host and the path", lit);
                else if (lit[strlen(lit) - 1] != '/')
                        warn(l, W_IDENTITY_PREFIX_REPO, off,
                             "the literal '%.60s' ends inside a path segment, so '%.60s-evil' "
                             "matches too: end the segment with '/'",
                             lit, lit);
        }
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
        if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
                return -EINVAL;
        regfree(&re);
        if (scan_tokens(pattern, NULL) < 0)
                return -EINVAL;

        if (pattern[0] != '^')
                warn(&l, W_IDENTITY_UNANCHORED, 0,
                     "the pattern does not start with '^': lockd matches the whole SAN, but "
                     "other verifiers search for a substring; say where it starts");
        (void)scan_tokens(pattern, &l);
        r = lint_prefix(pattern, &l);
        if (r < 0)
                return r;
        *n_warnings = l.n;
        return 0;
}

bool identity_match(const char *pattern, const char *san) {
        regex_t raw, re;
        regmatch_t m;
        size_t n_sub;
        char *wrapped;
        bool ok;

        if (!pattern || !san)
                return false;
        /* The pattern alone must be valid and balanced, so that ^(...)$ wraps all of it. */
        if (scan_tokens(pattern, NULL) < 0 || regcomp(&raw, pattern, REG_EXTENDED) != 0)
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
