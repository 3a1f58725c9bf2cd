/* Marketplace identity patterns: the lint of a pattern and its whole-SAN match. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef enum IdentityWarningCode {
        W_IDENTITY_UNESCAPED_DOT, /* a '.' meant as a literal dot matches any character */
        W_IDENTITY_UNANCHORED,    /* the pattern does not start with '^' */
        W_IDENTITY_PREFIX_REPO,   /* other repositories (or URIs) also match the literal path */
        W_IDENTITY_ALTERNATION,   /* a '|' outside every group: the other side matches on its own */
        _W_IDENTITY_MAX,
} IdentityWarningCode;

#define IDENTITY_WARNING_MESSAGE_MAX 192

typedef struct IdentityWarning {
        IdentityWarningCode code;
        size_t offset; /* byte offset in the pattern the warning is about */
        char message[IDENTITY_WARNING_MESSAGE_MAX];
} IdentityWarning;

/* "W_IDENTITY_UNESCAPED_DOT", …; "W_IDENTITY_UNKNOWN" for a value out of range. */
const char *identity_warning_name(IdentityWarningCode code);

/* The longest identity pattern, in bytes. */
#define IDENTITY_PATTERN_MAX 1024

/*
 * Whether regcomp() may be handed pattern: at most IDENTITY_PATTERN_MAX bytes, one repetition
 * operator per atom, groups nested at most 16 deep, intervals {m}, {m,} and {m,n} up to 255,
 * repetition counts multiplying to at most 256 along any nesting path, at most 256 parts copied
 * out by repetitions in all, at most 4 anchors ('^', '$'), no repetition of a group that can
 * match the empty string, no group (nor the whole pattern) that can match it in more than one
 * way, no back-reference, no GNU anchor (\b, \<, ...), balanced parentheses and closed
 * bracket expressions. identity.c says why, and what glibc does within these bounds. 0, or
 * -EINVAL with *ret_reason (if non-NULL) a static sentence saying what is wrong. A pattern it
 * accepts may still be an invalid ERE. Pure: no I/O, no logging, no regcomp().
 */
int identity_pattern_check(const char *pattern, const char **ret_reason);

/*
 * Lints pattern, a POSIX extended regular expression meant for the SANs of a marketplace's
 * signing certificates. Returns -EINVAL if pattern is NULL, refused by identity_pattern_check()
 * (before it is compiled) or not a valid ERE (regcomp with REG_EXTENDED), otherwise 0 with the
 * first max warnings, in pattern order within each rule, in warnings[] and their total number
 * (which may exceed max) in *n_warnings. Pure: no I/O, no logging.
 */
int identity_pattern_lint(const char *pattern, IdentityWarning *warnings, size_t max,
                          size_t *n_warnings);

/*
 * Whether pattern matches all of san: the pattern is compiled as ^(pattern)$ with REG_EXTENDED
 * and the match must span san from its first to its last byte, so a pattern never matches a
 * substring. False for a NULL argument, a pattern identity_pattern_check() refuses
 * (never compiled), an invalid pattern, or no match.
 */
bool identity_match(const char *pattern, const char *san);
