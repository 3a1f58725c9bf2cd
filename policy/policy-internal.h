/* The lockd.yaml reader shared by the parser's files (policy-reader.c: libyaml events and typed
 * scalars; policy.c: the schema), and the printer's unit helpers. Not part of the policy API. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "policy.h"

#define POLICY_KEY_PATH_MAX 128
#define DAY_SEC             (UINT64_C(24) * 3600)

/* A place in the file, 1-based; 0:0 when the key was not written in the file being parsed. */
typedef struct Mark {
        unsigned line, column;
        unsigned source; /* the source (policy_parse_sources()) it is in */
} Mark;

/* A key whose value is not a mapping, as set by one of the user's sources: the dotted path, where.
 */
typedef struct KeySet {
        char path[POLICY_KEY_PATH_MAX];
        Mark mark;
} KeySet;

/* The keys checked against each other (policy.c's check_policy()), to say where each was written.
 */
typedef enum KeyMark {
        MARK_NONE, /* a key checked against no other: nothing is kept */
        MARK_UID_FIRST,
        MARK_UID_LAST,
        MARK_PER_UID,
        MARK_TOTAL,
        MARK_IDLE,
        MARK_ABSOLUTE,
        MARK_AGENT_PATH,
        MARK_CONSOLE_PATH,
        MARK_CONFINEMENT,
        MARK_BACKEND,
        _MARK_MAX,
} KeyMark;

typedef struct Ctx {
        yaml_parser_t *parser;
        yaml_event_t *event; /* the current event, owned */
        const char *buf;
        size_t len;
        PolicyDiag *diag;
        Policy *policy;
        bool is_default; /* parsing the compiled-in default: principals get no place */
        char path[POLICY_KEY_PATH_MAX]; /* the dotted key being parsed, for messages */
        const void *field_arg;          /* the arg of the Field whose value is being parsed */
        /* Where the keys that are checked against each other were written in the user's file. */
        Mark marks[_MARK_MAX];
        unsigned source;             /* the index of the source being parsed */
        const PolicySource *sources; /* their names, for a key set twice */
        KeySet *keys;                /* the keys the user's sources set so far (owned) */
        size_t n_keys;
} Ctx;

/* A key of a mapping; reader_mapping() sets c->field_arg to arg before calling parse. */
typedef struct Field {
        const char *key;
        int (*parse)(Ctx *c, void *data);
        const void *arg; /* what parse needs besides the value, or NULL */
} Field;

/* How YAML 1.1 would resolve a scalar: lockd reads a plain scalar as what it looks like. */
typedef enum ScalarKind {
        SCALAR_STRING,
        SCALAR_NULL,
        SCALAR_BOOL,       /* true or false */
        SCALAR_BOOL_OTHER, /* yes, no, on, off, y, n, True, FALSE, ... */
        SCALAR_INT,        /* 0 or [1-9][0-9]*: the only integers lockd reads */
        SCALAR_NUMBER,     /* any other number YAML 1.1 knows: signs, 0x, 0o, octal, floats, 1:30 */
} ScalarKind;

/* The place where the current event starts. */
Mark reader_here(const Ctx *c);
/* Fills c->diag with code, m and the message; returns -EINVAL. */
int reader_fail_at(Ctx *c, PolicyError code, Mark m, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* Fails at whichever of a and b was written later (the one that made the pair inconsistent). */
int reader_fail_pair(Ctx *c, PolicyError code, Mark a, Mark b, const char *fmt, ...)
        __attribute__((format(printf, 5, 6)));

/* Fails at the start of the current event, the message prefixed with the key being parsed. */
#define fail(c, code, fmt, ...)                                                                    \
        reader_fail_at((c), (code), reader_here(c), "%s: " fmt,                                    \
                       (c)->path[0] ? (c)->path : "lockd.yaml", ##__VA_ARGS__)

/*
 * Refuses, before libyaml sees c->buf, invalid UTF-8 and the characters lockd refuses anywhere
 * (NUL, controls, NEL/LS/PS, byte order marks, non-characters, bidi overrides and isolates, a CR
 * not before a LF). Returns 0, or -EINVAL with c->diag filled at the character's place.
 */
int reader_prescan(Ctx *c);
/*
 * Parses one YAML stream (c->buf) on top of c->policy: an empty stream or a null document
 * changes nothing; otherwise the one document must be a mapping, read against root. Anchors,
 * aliases, tags, directives and a second document are refused. 0, -EINVAL with c->diag, -ENOMEM.
 */
int reader_stream(Ctx *c, const Field *root, size_t n_root);
/*
 * Parses the mapping starting at the current event against fields (at most 64). An unknown key,
 * a key given twice, a merge key or a key that is not a scalar is an error at the key; each value
 * is parsed by its field's function, which starts on the value's first event and ends on its last.
 */
int reader_mapping(Ctx *c, const Field *fields, size_t n_fields, void *data);
/* Calls item() on each element of the list starting at the current event. */
int reader_sequence(Ctx *c, int (*item)(Ctx *c, void *data, size_t index), void *data);

/* How YAML 1.1 would read the scalar event e. */
ScalarKind reader_scalar_kind(const yaml_event_t *e);
/* What an event is, for a message: "a mapping", "a list", "null", ... */
const char *reader_event_kind(const yaml_event_t *e);
/* The current scalar event's value (NUL-terminated; it may hold an escaped NUL before its end). */
const char *reader_scalar(const Ctx *c);
/* Whether the current event is a null scalar. */
bool reader_is_null(const Ctx *c);
/* E_POLICY_TYPE ("expected what") unless the current event is a scalar. */
int reader_expect_scalar(Ctx *c, const char *what);
/* Parses the decimal digits of s[0..n) into *ret; false on overflow. */
bool reader_digits(const char *s, size_t n, uint64_t *ret);

/* The typed values: each reads the current event, fails at it with E_POLICY_TYPE, E_POLICY_RANGE
 * or E_POLICY_VALUE, and leaves its output untouched on failure. */
/* An integer in [min, max], written as a plain decimal integer (no sign, no leading zero). */
int reader_uint(Ctx *c, uint64_t min, uint64_t max, uint64_t *ret);
/* Plain true or false. */
int reader_bool(Ctx *c, bool *ret);
/*
 * A non-empty string of at most max bytes with no control or otherwise refused character (an
 * escape in a double-quoted string can write any of them). A plain scalar that YAML would read as
 * null, a boolean or a number is not a string: it has to be quoted, so nobody is surprised by
 * what no or 0600 mean.
 */
int reader_string(Ctx *c, size_t max, char **ret);
/* An absolute, normalized path of at most max bytes, replacing the string in *p. */
int reader_path(Ctx *c, size_t max, char **p);
/* A size in bytes: an integer, or one with a KiB, MiB or GiB suffix; in [min, max]. */
int reader_size(Ctx *c, uint64_t min, uint64_t max, uint64_t *ret);
/* A duration in seconds: an integer, or one with an s, min, h or d suffix; in [min, max]. */
int reader_duration(Ctx *c, uint64_t min, uint64_t max, uint64_t *ret);
/* A duration in milliseconds that must carry its unit (ms, s, min). */
int reader_duration_ms(Ctx *c, uint64_t min, uint64_t max, uint64_t *ret);

/* Writes bytes as the largest exact unit ("64MiB", "4096"): what the parser reads back. */
void policy_format_size(uint64_t bytes, char *buf, size_t len);
/* Writes seconds as the largest exact unit ("15min", "8h", "90s"). */
void policy_format_duration(uint64_t sec, char *buf, size_t len);
/* Milliseconds with the largest unit that divides them: "250ms", "1s", "2min". */
void policy_format_duration_ms(uint64_t ms, char *buf, size_t len);
