/* lockd.yaml: the strict parser and validator, driven by libyaml events and a schema of tables. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "identity.h"
#include "macro.h"
#include "policy-internal.h"
#include "policy.h"

#define POLICY_KEY_PATH_MAX         128
#define POLICY_BUS_ADDRESS_MAX      512
#define POLICY_SLICE_MAX            255 /* systemd's UNIT_NAME_MAX minus the NUL */
#define POLICY_ISSUER_MAX           256
#define POLICY_IDENTITY_MAX         1024
#define POLICY_MARKETPLACE_NAME_MAX 64
#define POLICY_UID_FIRST_MIN        1000 /* below are system users (SYS_UID_MAX is 999) */
#define POLICY_UID_LAST_MAX         (UINT32_C(0x7fffffff) - 1)
#define DAY_SEC                     (UINT64_C(24) * 3600)

static void yaml_parser_deletep(yaml_parser_t *p) {
        yaml_parser_delete(p);
}

static void yaml_event_deletep(yaml_event_t *e) {
        yaml_event_delete(e);
}

/* A place in the file, 1-based; 0:0 when the key was not written in the file being parsed. */
typedef struct Mark {
        unsigned line, column;
} Mark;

typedef struct Ctx {
        yaml_parser_t *parser;
        yaml_event_t *event; /* the current event, owned */
        const char *buf;
        size_t len;
        PolicyDiag *diag;
        Policy *policy;
        bool is_default; /* parsing the compiled-in default: principals get no place */
        bool in_agents;  /* parsing agents: (root may not be one) */
        char path[POLICY_KEY_PATH_MAX]; /* the dotted key being parsed, for messages */
        /* Where the keys that are checked against each other were written in the user's file. */
        Mark uid_first, uid_last, per_uid, total, idle, absolute, agent_path, console_path;
} Ctx;

typedef struct Field {
        const char *key;
        int (*parse)(Ctx *c, void *data);
} Field;

static Mark mark_of(yaml_mark_t m) {
        return (Mark){.line = (unsigned)m.line + 1, .column = (unsigned)m.column + 1};
}

static Mark here(const Ctx *c) {
        return mark_of(c->event->start_mark);
}

static int fail_at(Ctx *c, PolicyError code, Mark m, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static int fail_at(Ctx *c, PolicyError code, Mark m, const char *fmt, ...) {
        va_list ap;

        c->diag->code = code;
        c->diag->line = m.line;
        c->diag->column = m.column;
        va_start(ap, fmt);
        vsnprintf(c->diag->message, sizeof(c->diag->message), fmt, ap);
        va_end(ap);
        return -EINVAL;
}

/* Fails at the start of the current event, the message prefixed with the key being parsed. */
#define fail(c, code, fmt, ...)                                                                    \
        fail_at((c), (code), here(c), "%s: " fmt, (c)->path[0] ? (c)->path : "lockd.yaml",         \
                ##__VA_ARGS__)

/* Copies s (n bytes) into buf for a message: at most 40 characters, anything odd as '?'. */
static const char *printable(const char *s, size_t n, char *buf, size_t len) {
        size_t k = 0;

        for (size_t i = 0; i < n && k + 4 < len && i < 40; i++)
                buf[k++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
        if (n > 40 && k + 4 < len) {
                memcpy(buf + k, "...", 3);
                k += 3;
        }
        buf[k] = '\0';
        return buf;
}

/*
 * Decodes the UTF-8 sequence at s (n > 0 bytes available) into *ret; returns its length, or 0 for
 * an invalid, overlong, truncated or surrogate sequence.
 */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *ret) {
        uint32_t cp;
        size_t len;

        if (s[0] < 0x80) {
                *ret = s[0];
                return 1;
        }
        if (s[0] >= 0xc2 && s[0] <= 0xdf) {
                cp = s[0] & 0x1f;
                len = 2;
        } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
                cp = s[0] & 0x0f;
                len = 3;
        } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
                cp = s[0] & 0x07;
                len = 4;
        } else
                return 0;
        if (len > n)
                return 0;
        for (size_t k = 1; k < len; k++) {
                if ((s[k] & 0xc0) != 0x80)
                        return 0;
                cp = cp << 6 | (s[k] & 0x3f);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        *ret = cp;
        return len;
}

/*
 * The characters lockd refuses anywhere, in the file and in a decoded string alike: NUL and every
 * other control character but tab and line feed (and carriage return, which prescan() allows
 * only before a line feed), the C1 controls and the line breaks YAML 1.1 knows beyond LF (NEL,
 * LS, PS, which would make editors and libyaml disagree about line numbers), byte order marks,
 * non-characters, and the bidirectional overrides and isolates (which can make what an
 * administrator reads differ from what lockd parses).
 */
static bool codepoint_refused(uint32_t cp) {
        return (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') ||
               (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
               (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff ||
               (cp & 0xfffe) == 0xfffe || (cp >= 0xfdd0 && cp <= 0xfdef);
}

/* Refuses, before libyaml sees the file, invalid UTF-8 and every codepoint_refused(). Returns 0,
 * or -EINVAL with diag filled at the character's place. */
static int prescan(Ctx *c) {
        const unsigned char *s = (const unsigned char *)c->buf;
        unsigned line = 1, column = 1;

        for (size_t i = 0; i < c->len;) {
                uint32_t cp;
                size_t n = utf8_decode(s + i, c->len - i, &cp);

                if (n == 0)
                        return fail_at(c, E_POLICY_SYNTAX, (Mark){line, column},
                                       "invalid UTF-8 at byte 0x%02x", s[i]);
                if (cp == 0)
                        return fail_at(c, E_POLICY_SYNTAX, (Mark){line, column}, "a NUL byte");
                if (cp == '\r' && !(i + 1 < c->len && s[i + 1] == '\n'))
                        return fail_at(c, E_POLICY_SYNTAX, (Mark){line, column},
                                       "a carriage return not followed by a line feed");
                if (codepoint_refused(cp))
                        return fail_at(c, E_POLICY_SYNTAX, (Mark){line, column},
                                       "character U+%04X is not allowed", (unsigned)cp);
                if (cp == '\n') {
                        line++;
                        column = 1;
                } else if (cp != '\r')
                        column++;
                i += n;
        }
        return 0;
}

/* The place of byte offset off, counted as prescan() counts. */
static Mark offset_mark(const Ctx *c, size_t off) {
        Mark m = {1, 1};

        for (size_t i = 0; i < off && i < c->len; i++) {
                unsigned char ch = (unsigned char)c->buf[i];
                if (ch == '\n') {
                        m.line++;
                        m.column = 1;
                } else if ((ch & 0xc0) != 0x80 && ch != '\r')
                        m.column++;
        }
        return m;
}

/*
 * Fetches the next event into c->event. Everything lockd does not accept in any place is refused
 * here: anchors and aliases (a file means what it says where it says it), tags (no type is ever
 * chosen by the file) and directives.
 */
static int next(Ctx *c) {
        yaml_event_t *e = c->event;

        yaml_event_delete(e);
        if (!yaml_parser_parse(c->parser, e)) {
                yaml_parser_t *y = c->parser;
                Mark m;

                if (y->error == YAML_MEMORY_ERROR)
                        return -ENOMEM;
                m = y->error == YAML_READER_ERROR ? offset_mark(c, y->problem_offset)
                                                  : mark_of(y->problem_mark);
                return fail_at(c, E_POLICY_SYNTAX, m, "%s%s%s", y->problem ?: "invalid YAML",
                               y->context ? " " : "", y->context ?: "");
        }

        switch (e->type) {
        case YAML_ALIAS_EVENT:
                return fail(c, E_POLICY_UNSUPPORTED, "aliases are not supported");
        case YAML_DOCUMENT_START_EVENT:
                if (e->data.document_start.version_directive ||
                    e->data.document_start.tag_directives.start !=
                            e->data.document_start.tag_directives.end)
                        return fail(c, E_POLICY_UNSUPPORTED, "directives are not supported");
                break;
        case YAML_SCALAR_EVENT:
                if (e->data.scalar.anchor)
                        return fail(c, E_POLICY_UNSUPPORTED, "anchors are not supported");
                if (e->data.scalar.tag)
                        return fail(c, E_POLICY_UNSUPPORTED, "tags are not supported");
                break;
        case YAML_SEQUENCE_START_EVENT:
                if (e->data.sequence_start.anchor)
                        return fail(c, E_POLICY_UNSUPPORTED, "anchors are not supported");
                if (e->data.sequence_start.tag)
                        return fail(c, E_POLICY_UNSUPPORTED, "tags are not supported");
                break;
        case YAML_MAPPING_START_EVENT:
                if (e->data.mapping_start.anchor)
                        return fail(c, E_POLICY_UNSUPPORTED, "anchors are not supported");
                if (e->data.mapping_start.tag)
                        return fail(c, E_POLICY_UNSUPPORTED, "tags are not supported");
                break;
        default:
                break;
        }
        return 0;
}

/* How YAML 1.1 would resolve a scalar: lockd reads a plain scalar as what it looks like. */
typedef enum ScalarKind {
        SCALAR_STRING,
        SCALAR_NULL,
        SCALAR_BOOL,       /* true or false */
        SCALAR_BOOL_OTHER, /* yes, no, on, off, y, n, True, FALSE, ... */
        SCALAR_INT,        /* 0 or [1-9][0-9]*: the only integers lockd reads */
        SCALAR_NUMBER,     /* any other number YAML 1.1 knows: signs, 0x, 0o, octal, floats, 1:30 */
} ScalarKind;

static bool is_one_of(const char *s, const char *const *words) {
        for (; *words; words++)
                if (strcmp(s, *words) == 0)
                        return true;
        return false;
}

/* Whether the plain scalar s (n bytes) is a number in YAML 1.1 that is not a canonical integer. */
static bool looks_numeric(const char *s, size_t n) {
        static const char *const special[] = {".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN", NULL};
        size_t i = 0, digits = 0;
        const char *alphabet = "0123456789_:.";

        if (is_one_of(s, special))
                return true;
        if (i < n && (s[i] == '+' || s[i] == '-'))
                i++;
        if (i < n && is_one_of(s + i, special))
                return true;
        if (n - i > 2 && s[i] == '0' && strchr("xob", s[i + 1]) && s[i + 1] != '\0') {
                alphabet = s[i + 1] == 'x'   ? "0123456789abcdefABCDEF_"
                           : s[i + 1] == 'o' ? "01234567_"
                                             : "01_";
                i += 2;
        }
        for (; i < n; i++) {
                if (strchr(alphabet, s[i]) && s[i] != '\0') {
                        digits += s[i] != '_' && s[i] != ':' && s[i] != '.';
                        continue;
                }
                /* An exponent ends a decimal number: [eE][-+]?[0-9]+ */
                if ((s[i] == 'e' || s[i] == 'E') && digits > 0 && alphabet[0] == '0' &&
                    alphabet[10] == '_') {
                        i++;
                        if (i < n && (s[i] == '+' || s[i] == '-'))
                                i++;
                        if (i == n)
                                return false;
                        for (; i < n; i++)
                                if (s[i] < '0' || s[i] > '9')
                                        return false;
                        return true;
                }
                return false;
        }
        return digits > 0;
}

static ScalarKind scalar_kind(const yaml_event_t *e) {
        static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
        static const char *const bools[] = {"true", "false", NULL};
        static const char *const other_bools[] = {
                "True", "TRUE", "False", "FALSE", "yes", "Yes", "YES", "no", "No", "NO", "on",
                "On",   "ON",   "off",   "Off",   "OFF", "y",   "Y",   "n",  "N",  NULL};
        const char *s = (const char *)e->data.scalar.value;
        size_t n = e->data.scalar.length;

        if (e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || strlen(s) != n)
                return SCALAR_STRING;
        if (is_one_of(s, nulls))
                return SCALAR_NULL;
        if (is_one_of(s, bools))
                return SCALAR_BOOL;
        if (is_one_of(s, other_bools))
                return SCALAR_BOOL_OTHER;
        if ((n == 1 && s[0] == '0') || (s[0] >= '1' && s[0] <= '9' && strspn(s, "0123456789") == n))
                return SCALAR_INT;
        if (looks_numeric(s, n))
                return SCALAR_NUMBER;
        return SCALAR_STRING;
}

/* What the current event is, for a message: "a mapping", "a list", "null", ... */
static const char *event_kind(const yaml_event_t *e) {
        switch (e->type) {
        case YAML_MAPPING_START_EVENT:
                return "a mapping";
        case YAML_SEQUENCE_START_EVENT:
                return "a list";
        case YAML_SCALAR_EVENT:
                switch (scalar_kind(e)) {
                case SCALAR_NULL:
                        return "null";
                case SCALAR_BOOL:
                case SCALAR_BOOL_OTHER:
                        return "a boolean";
                case SCALAR_INT:
                        return "an integer";
                case SCALAR_NUMBER:
                        return "a number";
                case SCALAR_STRING:
                        return "a string";
                }
                break;
        default:
                break;
        }
        return "something else";
}

static const char *scalar(const Ctx *c) {
        return (const char *)c->event->data.scalar.value;
}

/* Appends ".key" (or "key" at the top) to the key path; returns the length to restore. */
static size_t path_push(Ctx *c, const char *key) {
        size_t old = strlen(c->path);

        snprintf(c->path + old, sizeof(c->path) - old, "%s%s", old ? "." : "", key);
        return old;
}

static size_t path_push_index(Ctx *c, size_t index) {
        size_t old = strlen(c->path);

        snprintf(c->path + old, sizeof(c->path) - old, "[%zu]", index);
        return old;
}

static void path_pop(Ctx *c, size_t old) {
        c->path[old] = '\0';
}

/*
 * Parses the mapping starting at the current event against fields. An unknown key, a key given
 * twice, a merge key or a key that is not a scalar is an error at the key; each value is parsed
 * by its field's function, which starts on the value's first event and ends on its last.
 */
static int parse_mapping(Ctx *c, const Field *fields, size_t n_fields, void *data) {
        uint64_t seen = 0;
        char shown[64];
        int r;

        if (c->event->type != YAML_MAPPING_START_EVENT)
                return fail(c, E_POLICY_TYPE, "expected a mapping, found %s", event_kind(c->event));
        for (;;) {
                const char *key;
                size_t i, old;

                r = next(c);
                if (r < 0)
                        return r;
                if (c->event->type == YAML_MAPPING_END_EVENT)
                        return 0;
                if (c->event->type != YAML_SCALAR_EVENT)
                        return fail(c, E_POLICY_TYPE, "a key must be a string, found %s",
                                    event_kind(c->event));
                key = scalar(c);
                if (c->event->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                    strcmp(key, "<<") == 0)
                        return fail(c, E_POLICY_UNSUPPORTED, "merge keys are not supported");
                for (i = 0; i < n_fields; i++)
                        if (strlen(key) == c->event->data.scalar.length &&
                            strcmp(key, fields[i].key) == 0)
                                break;
                if (i == n_fields)
                        return fail(
                                c, E_POLICY_UNKNOWN_KEY, "unknown key '%s'",
                                printable(key, c->event->data.scalar.length, shown, sizeof(shown)));
                if (seen & (UINT64_C(1) << i))
                        return fail(c, E_POLICY_DUPLICATE_KEY, "duplicate key '%s'", key);
                seen |= UINT64_C(1) << i;

                old = path_push(c, fields[i].key);
                r = next(c);
                if (r >= 0)
                        r = fields[i].parse(c, data);
                if (r < 0)
                        return r;
                path_pop(c, old);
        }
}

/* Calls item() on each element of the list starting at the current event. */
static int parse_sequence(Ctx *c, int (*item)(Ctx *c, void *data, size_t index), void *data) {
        int r;

        if (c->event->type != YAML_SEQUENCE_START_EVENT)
                return fail(c, E_POLICY_TYPE, "expected a list, found %s", event_kind(c->event));
        for (size_t index = 0;; index++) {
                size_t old;

                r = next(c);
                if (r < 0)
                        return r;
                if (c->event->type == YAML_SEQUENCE_END_EVENT)
                        return 0;
                old = path_push_index(c, index);
                r = item(c, data, index);
                if (r < 0)
                        return r;
                path_pop(c, old);
        }
}

static int expect_scalar(Ctx *c, const char *what) {
        if (c->event->type != YAML_SCALAR_EVENT)
                return fail(c, E_POLICY_TYPE, "expected %s, found %s", what, event_kind(c->event));
        return 0;
}

/* Parses the decimal digits of s[0..n) into *ret; false on overflow. */
static bool parse_digits(const char *s, size_t n, uint64_t *ret) {
        uint64_t v = 0;

        for (size_t i = 0; i < n; i++) {
                if (v > (UINT64_MAX - 9) / 10)
                        return false;
                v = v * 10 + (uint64_t)(s[i] - '0');
        }
        *ret = v;
        return true;
}

/* An integer in [min, max], written as a plain decimal integer (no sign, no leading zero). */
static int get_uint(Ctx *c, uint64_t min, uint64_t max, uint64_t *ret) {
        uint64_t v;
        int r;

        r = expect_scalar(c, "an integer");
        if (r < 0)
                return r;
        switch (scalar_kind(c->event)) {
        case SCALAR_INT:
                break;
        case SCALAR_NUMBER:
                return fail(c, E_POLICY_TYPE,
                            "expected a decimal integer without sign, leading zero, '_' or "
                            "fraction, found '%s'",
                            scalar(c));
        default:
                return fail(c, E_POLICY_TYPE, "expected an integer, found %s",
                            event_kind(c->event));
        }
        if (!parse_digits(scalar(c), c->event->data.scalar.length, &v) || v < min || v > max)
                return fail(c, E_POLICY_RANGE, "must be between %" PRIu64 " and %" PRIu64, min,
                            max);
        *ret = v;
        return 0;
}

static int get_bool(Ctx *c, bool *ret) {
        int r;

        r = expect_scalar(c, "true or false");
        if (r < 0)
                return r;
        if (scalar_kind(c->event) == SCALAR_BOOL_OTHER)
                return fail(c, E_POLICY_TYPE, "expected true or false, found '%s'", scalar(c));
        if (scalar_kind(c->event) != SCALAR_BOOL)
                return fail(c, E_POLICY_TYPE, "expected true or false, found %s",
                            event_kind(c->event));
        *ret = strcmp(scalar(c), "true") == 0;
        return 0;
}

static bool is_null(const Ctx *c) {
        return c->event->type == YAML_SCALAR_EVENT && scalar_kind(c->event) == SCALAR_NULL;
}

/*
 * A string of at most max bytes with no NUL or control character (an escape in a double-quoted
 * string can write any of them). A plain scalar that YAML would read as null, a boolean or a
 * number is not a string: it has to be quoted, so nobody is surprised by what "no" or 0600 mean.
 */
static int get_string(Ctx *c, size_t max, char **ret) {
        const char *s;
        size_t n;
        int r;

        r = expect_scalar(c, "a string");
        if (r < 0)
                return r;
        if (scalar_kind(c->event) != SCALAR_STRING)
                return fail(c, E_POLICY_TYPE, "expected a string, found %s (quote it)",
                            event_kind(c->event));
        s = scalar(c);
        n = c->event->data.scalar.length;
        for (size_t i = 0; i < n;) {
                uint32_t cp;
                size_t k = utf8_decode((const unsigned char *)s + i, n - i, &cp);

                if (k == 0 || cp < 0x20 || codepoint_refused(cp))
                        return fail(c, E_POLICY_VALUE,
                                    "contains a control or otherwise refused character");
                i += k;
        }
        if (n == 0)
                return fail(c, E_POLICY_VALUE, "must not be empty");
        if (n > max)
                return fail(c, E_POLICY_VALUE, "longer than %zu bytes", max);
        *ret = strndup(s, n);
        return *ret ? 0 : -ENOMEM;
}

/*
 * Whether path is absolute and normalized: no empty, "." or ".." component, no trailing '/',
 * and not "/" itself.
 */
static bool path_normalized(const char *path) {
        const char *p = path;

        if (path[0] != '/' || path[1] == '\0')
                return false;
        while (*p == '/') {
                size_t n = strcspn(p + 1, "/");

                if (n == 0 || (n == 1 && p[1] == '.') || (n == 2 && p[1] == '.' && p[2] == '.'))
                        return false;
                p += 1 + n;
        }
        return true;
}

static int set_path(Ctx *c, size_t max, char **p) {
        _cleanup_free_ char *s = NULL;
        int r;

        r = get_string(c, max, &s);
        if (r < 0)
                return r;
        if (!path_normalized(s))
                return fail(c, E_POLICY_VALUE,
                            "expected an absolute, normalized path other than / (no '.' or "
                            "'..' component, no '//', no trailing '/')");
        free(*p);
        *p = TAKE_PTR(s);
        return 0;
}

bool policy_principal_name_valid(const char *name) {
        size_t n;

        if (!name)
                return false;
        n = strlen(name);
        if (n == 0 || n > POLICY_NAME_MAX)
                return false;
        if (!((name[0] >= 'a' && name[0] <= 'z') || name[0] == '_'))
                return false;
        for (size_t i = 1; i < n; i++) {
                char ch = name[i];
                if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-')
                        continue;
                if (ch == '$' && i == n - 1)
                        continue;
                return false;
        }
        return true;
}

/*
 * A user or group: a plain decimal number (0..2^32-2; (uint32_t)-1 is no id) or a name
 * (policy_principal_name_valid()). Root, by number or by name, can never be an agent: an agent
 * running as root could read what it likes without lockd.
 */
static int get_principal(Ctx *c, bool is_group, bool forbid_root, PolicyPrincipal *ret) {
        const char *kind = is_group ? "group" : "user";
        PolicyPrincipal p = {.is_group = is_group};
        int r;

        r = expect_scalar(c, "a name or a number");
        if (r < 0)
                return r;
        if (!c->is_default) {
                p.line = here(c).line;
                p.column = here(c).column;
        }
        if (scalar_kind(c->event) == SCALAR_INT) {
                uint64_t v;

                r = get_uint(c, 0, UINT32_MAX - 1, &v);
                if (r < 0)
                        return r;
                if (forbid_root && v == 0)
                        return fail(c, E_POLICY_RANGE, "%s 0 (root) cannot be an agent", kind);
                p.numeric = true;
                p.id = (uint32_t)v;
                *ret = p;
                return 0;
        }

        r = get_string(c, POLICY_NAME_MAX, &p.name);
        if (r == -EINVAL && c->diag->code == E_POLICY_TYPE)
                return fail(c, E_POLICY_TYPE, "expected a %s name or number, found %s", kind,
                            event_kind(c->event));
        if (r < 0)
                return r;
        if (!policy_principal_name_valid(p.name)) {
                free(p.name);
                return fail(c, E_POLICY_VALUE, "invalid %s name (expected [a-z_][a-z0-9_-]*$?)",
                            kind);
        }
        if (forbid_root && strcmp(p.name, "root") == 0) {
                free(p.name);
                return fail(c, E_POLICY_VALUE, "%s root cannot be an agent", kind);
        }
        *ret = p;
        return 0;
}

static bool principal_same(const PolicyPrincipal *a, const PolicyPrincipal *b) {
        if (a->is_group != b->is_group || a->numeric != b->numeric)
                return false;
        return a->numeric ? a->id == b->id : strcmp(a->name, b->name) == 0;
}

static void principal_done(PolicyPrincipal *p) {
        free(p->name);
        *p = (PolicyPrincipal){};
}

/* Drops every principal of the given kind from role (a list given in the file replaces it). */
static void role_drop(PolicyRole *role, bool is_group) {
        size_t k = 0;

        for (size_t i = 0; i < role->n_principals; i++) {
                if (role->principals[i].is_group == is_group)
                        principal_done(&role->principals[i]);
                else
                        role->principals[k++] = role->principals[i];
        }
        role->n_principals = k;
}

typedef struct RoleList {
        PolicyRole *role;
        bool is_group;
        size_t n; /* how many of this list were parsed */
} RoleList;

static int parse_role_item(Ctx *c, void *data, size_t index) {
        RoleList *l = data;
        PolicyRole *role = l->role;
        PolicyPrincipal p, *a;
        int r;

        if (l->n >= POLICY_PRINCIPALS_MAX)
                return fail(c, E_POLICY_RANGE, "more than %d entries", POLICY_PRINCIPALS_MAX);
        r = get_principal(c, l->is_group, c->in_agents, &p);
        if (r < 0)
                return r;
        for (size_t i = 0; i < role->n_principals; i++)
                if (principal_same(&role->principals[i], &p)) {
                        principal_done(&p);
                        return fail(c, E_POLICY_VALUE, "listed twice");
                }
        a = reallocarray(role->principals, role->n_principals + 1, sizeof(*a));
        if (!a) {
                principal_done(&p);
                return -ENOMEM;
        }
        role->principals = a;
        a[role->n_principals++] = p;
        l->n++;
        return 0;
}

static int parse_role_list(Ctx *c, PolicyRole *role, bool is_group) {
        RoleList l = {.role = role, .is_group = is_group};

        if (c->event->type != YAML_SEQUENCE_START_EVENT)
                return fail(c, E_POLICY_TYPE, "expected a list, found %s", event_kind(c->event));
        role_drop(role, is_group);
        return parse_sequence(c, parse_role_item, &l);
}

static int parse_role_users(Ctx *c, void *data) {
        return parse_role_list(c, data, false);
}

static int parse_role_groups(Ctx *c, void *data) {
        return parse_role_list(c, data, true);
}

static const Field role_fields[] = {
        {"users", parse_role_users},
        {"groups", parse_role_groups},
};

static int parse_agents(Ctx *c, void *data) {
        Policy *p = data;
        int r;

        c->in_agents = true;
        r = parse_mapping(c, role_fields, ELEMENTSOF(role_fields), &p->agents);
        c->in_agents = false;
        return r;
}

static int parse_consoles(Ctx *c, void *data) {
        Policy *p = data;

        return parse_mapping(c, role_fields, ELEMENTSOF(role_fields), &p->consoles);
}

/*
 * A socket's mode, as a quoted octal string ("0660"): an unquoted 0660 is octal to YAML 1.1 and
 * decimal to YAML 1.2, and 660 is decimal to both, so only a string says one thing.
 */
static int parse_socket_mode(Ctx *c, void *data) {
        PolicySocket *s = data;
        const char *v;
        int r;

        r = expect_scalar(c, "a quoted octal mode");
        if (r < 0)
                return r;
        if (c->event->data.scalar.style != YAML_SINGLE_QUOTED_SCALAR_STYLE &&
            c->event->data.scalar.style != YAML_DOUBLE_QUOTED_SCALAR_STYLE)
                return fail(c, E_POLICY_TYPE, "expected a quoted octal mode such as \"0660\"");
        v = scalar(c);
        if (c->event->data.scalar.length != 4 || v[0] != '0' || strspn(v, "01234567") != 4)
                return fail(c, E_POLICY_VALUE, "expected four octal digits such as \"0660\"");
        mode_t m = (mode_t)strtoul(v, NULL, 8);
        if (m < 0600 || m > 0777)
                return fail(c, E_POLICY_RANGE, "must be between \"0600\" and \"0777\"");
        s->mode = m;
        return 0;
}

static int parse_socket_group(Ctx *c, void *data) {
        PolicySocket *s = data;
        PolicyPrincipal g;
        int r;

        if (is_null(c)) {
                principal_done(&s->group);
                s->has_group = false;
                return 0;
        }
        r = get_principal(c, true, false, &g);
        if (r < 0)
                return r;
        principal_done(&s->group);
        s->group = g;
        s->has_group = true;
        return 0;
}

static int parse_socket_path(Ctx *c, void *data) {
        PolicySocket *s = data;
        Mark m = here(c);
        int r;

        r = set_path(c, POLICY_SOCKET_PATH_MAX, &s->path);
        if (r < 0)
                return r;
        if (s == &c->policy->agent_socket)
                c->agent_path = m;
        else
                c->console_path = m;
        return 0;
}

static const Field socket_fields[] = {
        {"path", parse_socket_path},
        {"mode", parse_socket_mode},
        {"group", parse_socket_group},
};

static int parse_socket_agent(Ctx *c, void *data) {
        Policy *p = data;
        return parse_mapping(c, socket_fields, ELEMENTSOF(socket_fields), &p->agent_socket);
}

static int parse_socket_console(Ctx *c, void *data) {
        Policy *p = data;
        return parse_mapping(c, socket_fields, ELEMENTSOF(socket_fields), &p->console_socket);
}

static const Field sockets_fields[] = {
        {"agent", parse_socket_agent},
        {"console", parse_socket_console},
};

static int parse_sockets(Ctx *c, void *data) {
        return parse_mapping(c, sockets_fields, ELEMENTSOF(sockets_fields), data);
}

static int parse_state_directory(Ctx *c, void *data) {
        Policy *p = data;
        return set_path(c, POLICY_PATH_MAX, &p->state_directory);
}

static int parse_runtime_directory(Ctx *c, void *data) {
        Policy *p = data;
        return set_path(c, POLICY_PATH_MAX, &p->runtime_directory);
}

static int parse_security_level(Ctx *c, void *data) {
        Policy *p = data;
        uint64_t v;
        int r;

        r = get_uint(c, 1, 3, &v);
        if (r < 0)
                return r;
        p->security_level = (unsigned)v;
        return 0;
}

static int parse_allow_unsigned(Ctx *c, void *data) {
        Policy *p = data;
        return get_bool(c, &p->allow_unsigned);
}

static int parse_uid_first(Ctx *c, void *data) {
        Policy *p = data;
        uint64_t v;
        Mark m = here(c);
        int r;

        r = get_uint(c, POLICY_UID_FIRST_MIN, POLICY_UID_LAST_MAX, &v);
        if (r < 0)
                return r;
        p->ephemeral_uid_first = (uint32_t)v;
        c->uid_first = m;
        return 0;
}

static int parse_uid_last(Ctx *c, void *data) {
        Policy *p = data;
        uint64_t v;
        Mark m = here(c);
        int r;

        r = get_uint(c, POLICY_UID_FIRST_MIN, POLICY_UID_LAST_MAX, &v);
        if (r < 0)
                return r;
        p->ephemeral_uid_last = (uint32_t)v;
        c->uid_last = m;
        return 0;
}

static const Field uid_fields[] = {
        {"first", parse_uid_first},
        {"last", parse_uid_last},
};

static int parse_ephemeral_uids(Ctx *c, void *data) {
        return parse_mapping(c, uid_fields, ELEMENTSOF(uid_fields), data);
}

/*
 * A number with an optional unit: the integer in [min, max] after scaling. units is a
 * NULL-terminated list of suffixes with their factors; a bare plain integer has factor 1.
 */
typedef struct Unit {
        const char *suffix;
        uint64_t factor;
} Unit;

static const Unit size_units[] = {
        {"KiB", 1024}, {"MiB", 1024 * 1024}, {"GiB", 1024 * 1024 * 1024}, {NULL, 0}};
static const Unit duration_units[] = {
        {"s", 1}, {"min", 60}, {"h", 3600}, {"d", DAY_SEC}, {NULL, 0}};

static int get_scaled(Ctx *c, const Unit *units, const char *example, uint64_t min, uint64_t max,
                      void (*show)(uint64_t, char *, size_t), uint64_t *ret) {
        char lo[32], hi[32];
        const char *s;
        size_t n, digits;
        uint64_t v, factor = 1;
        int r;

        r = expect_scalar(c, example);
        if (r < 0)
                return r;
        switch (scalar_kind(c->event)) {
        case SCALAR_INT:
        case SCALAR_STRING:
                break;
        default:
                return fail(c, E_POLICY_TYPE, "expected %s, found %s", example,
                            event_kind(c->event));
        }
        s = scalar(c);
        n = c->event->data.scalar.length;
        digits = strspn(s, "0123456789");
        if (digits == 0 || (digits > 1 && s[0] == '0'))
                return fail(c, E_POLICY_VALUE, "expected %s", example);
        if (digits < n) {
                const Unit *u;
                for (u = units; u->suffix; u++)
                        if (strlen(u->suffix) == n - digits && strcmp(s + digits, u->suffix) == 0)
                                break;
                if (!u->suffix)
                        return fail(c, E_POLICY_VALUE, "expected %s", example);
                factor = u->factor;
        }
        show(min, lo, sizeof(lo));
        show(max, hi, sizeof(hi));
        if (!parse_digits(s, digits, &v) || v > UINT64_MAX / factor || v * factor < min ||
            v * factor > max)
                return fail(c, E_POLICY_RANGE, "must be between %s and %s", lo, hi);
        *ret = v * factor;
        return 0;
}

static int get_size(Ctx *c, uint64_t min, uint64_t max, uint64_t *ret) {
        return get_scaled(c, size_units, "a size such as 65536, 64KiB, 16MiB or 1GiB", min, max,
                          policy_format_size, ret);
}

static int get_duration(Ctx *c, uint64_t min, uint64_t max, uint64_t *ret) {
        return get_scaled(c, duration_units, "a duration such as 90, 90s, 15min, 8h or 2d", min,
                          max, policy_format_duration, ret);
}

#define LIMIT_U32(field, lo, hi)                                                                   \
        static int parse_limit_##field(Ctx *c, void *data) {                                       \
                PolicyLimits *l = data;                                                            \
                uint64_t v;                                                                        \
                int r = get_uint(c, lo, hi, &v);                                                   \
                if (r < 0)                                                                         \
                        return r;                                                                  \
                l->field = (uint32_t)v;                                                            \
                return 0;                                                                          \
        }

LIMIT_U32(max_plugins_per_handle, 1, 64)
LIMIT_U32(concurrent_runs, 1, 256)
LIMIT_U32(pending_tickets_per_agent, 1, 1024)

static int parse_limit_connections_per_uid(Ctx *c, void *data) {
        PolicyLimits *l = data;
        Mark m = here(c);
        uint64_t v;
        int r;

        r = get_uint(c, 1, 1024, &v);
        if (r < 0)
                return r;
        l->connections_per_uid = (uint32_t)v;
        c->per_uid = m;
        return 0;
}

static int parse_limit_connections_total(Ctx *c, void *data) {
        PolicyLimits *l = data;
        Mark m = here(c);
        uint64_t v;
        int r;

        r = get_uint(c, 1, 65536, &v);
        if (r < 0)
                return r;
        l->connections_total = (uint32_t)v;
        c->total = m;
        return 0;
}

static int parse_limit_message_bytes(Ctx *c, void *data) {
        PolicyLimits *l = data;
        return get_size(c, 4 * KiB, 16 * MiB, &l->message_bytes);
}

static int parse_limit_max_handle_bytes(Ctx *c, void *data) {
        PolicyLimits *l = data;
        return get_size(c, KiB, 4 * (uint64_t)GiB, &l->max_handle_bytes);
}

static int parse_limit_idle(Ctx *c, void *data) {
        PolicyLimits *l = data;
        Mark m = here(c);
        int r;

        r = get_duration(c, 1, 30 * DAY_SEC, &l->session_idle_timeout_sec);
        if (r >= 0)
                c->idle = m;
        return r;
}

static int parse_limit_absolute(Ctx *c, void *data) {
        PolicyLimits *l = data;
        Mark m = here(c);
        int r;

        r = get_duration(c, 1, 30 * DAY_SEC, &l->session_absolute_timeout_sec);
        if (r >= 0)
                c->absolute = m;
        return r;
}

static int parse_limit_ticket_timeout(Ctx *c, void *data) {
        PolicyLimits *l = data;
        return get_duration(c, 1, 30 * DAY_SEC, &l->ticket_timeout_sec);
}

static const Field limits_fields[] = {
        {"max_plugins_per_handle", parse_limit_max_plugins_per_handle},
        {"concurrent_runs", parse_limit_concurrent_runs},
        {"pending_tickets_per_agent", parse_limit_pending_tickets_per_agent},
        {"connections_per_uid", parse_limit_connections_per_uid},
        {"connections_total", parse_limit_connections_total},
        {"message_bytes", parse_limit_message_bytes},
        {"session_idle_timeout", parse_limit_idle},
        {"session_absolute_timeout", parse_limit_absolute},
        {"max_handle_bytes", parse_limit_max_handle_bytes},
        {"ticket_timeout", parse_limit_ticket_timeout},
};

static int parse_limits(Ctx *c, void *data) {
        Policy *p = data;
        return parse_mapping(c, limits_fields, ELEMENTSOF(limits_fields), &p->limits);
}

static int parse_scope_backend(Ctx *c, void *data) {
        PolicyScope *s = data;
        _cleanup_free_ char *v = NULL;
        int r;

        r = get_string(c, 16, &v);
        if (r == -EINVAL && c->diag->code == E_POLICY_VALUE)
                return fail(c, E_POLICY_VALUE, "expected systemd or none");
        if (r < 0)
                return r;
        for (int b = 0; b < _POLICY_SCOPE_MAX; b++)
                if (strcmp(v, policy_scope_backend_name(b)) == 0) {
                        s->backend = b;
                        return 0;
                }
        return fail(c, E_POLICY_VALUE, "expected systemd or none");
}

/*
 * The bus whose systemd manager creates the scopes: "system", "user", or a D-Bus address. Only
 * unix: addresses: lockd runs with PrivateNetwork= and must never reach a manager over TCP.
 */
static int parse_scope_bus(Ctx *c, void *data) {
        PolicyScope *s = data;
        _cleanup_free_ char *v = NULL;
        int r;

        r = get_string(c, POLICY_BUS_ADDRESS_MAX, &v);
        if (r < 0)
                return r;
        free(s->bus_address);
        s->bus_address = NULL;
        if (strcmp(v, "system") == 0)
                s->bus = POLICY_BUS_SYSTEM;
        else if (strcmp(v, "user") == 0)
                s->bus = POLICY_BUS_USER;
        else if (strncmp(v, "unix:", 5) == 0 && v[5] != '\0') {
                s->bus = POLICY_BUS_ADDRESS;
                s->bus_address = TAKE_PTR(v);
        } else
                return fail(c, E_POLICY_VALUE,
                            "expected system, user or a D-Bus address starting with 'unix:'");
        return 0;
}

/* systemd's rule for a slice name, and not the root slice "-.slice". */
static bool slice_name_valid(const char *s) {
        size_t n = strlen(s), m;

        if (n > POLICY_SLICE_MAX || n <= 6 || strcmp(s + n - 6, ".slice") != 0)
                return false;
        m = n - 6;
        for (size_t i = 0; i < m; i++) {
                char ch = s[i];
                if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || strchr(":_.\\-", ch)))
                        return false;
        }
        if (s[0] == '-' || s[m - 1] == '-')
                return false;
        for (size_t i = 0; i + 1 < m; i++)
                if (s[i] == '-' && s[i + 1] == '-')
                        return false;
        return true;
}

static int parse_scope_slice(Ctx *c, void *data) {
        PolicyScope *s = data;
        _cleanup_free_ char *v = NULL;
        int r;

        r = get_string(c, POLICY_SLICE_MAX, &v);
        if (r < 0)
                return r;
        if (!slice_name_valid(v))
                return fail(c, E_POLICY_VALUE,
                            "expected a slice unit name such as lockd-plugins.slice");
        free(s->slice);
        s->slice = TAKE_PTR(v);
        return 0;
}

static int parse_scope_cpu_quota(Ctx *c, void *data) {
        PolicyScope *s = data;
        const char *v;
        size_t n, digits;
        uint64_t q;
        int r;

        if (is_null(c)) {
                s->cpu_quota_percent = 0;
                return 0;
        }
        r = expect_scalar(c, "a percentage such as \"50%\" or null");
        if (r < 0)
                return r;
        if (scalar_kind(c->event) != SCALAR_STRING)
                return fail(c, E_POLICY_TYPE, "expected a percentage such as \"50%%\", found %s",
                            event_kind(c->event));
        v = scalar(c);
        n = c->event->data.scalar.length;
        digits = strspn(v, "0123456789");
        if (digits == 0 || digits + 1 != n || v[digits] != '%' || (digits > 1 && v[0] == '0'))
                return fail(c, E_POLICY_VALUE, "expected a percentage such as \"50%%\"");
        if (!parse_digits(v, digits, &q) || q < 1 || q > 10000)
                return fail(c, E_POLICY_RANGE, "must be between 1%% and 10000%%");
        s->cpu_quota_percent = (uint32_t)q;
        return 0;
}

static const Field scope_fields[] = {
        {"backend", parse_scope_backend},
        {"bus", parse_scope_bus},
        {"slice", parse_scope_slice},
        {"cpu_quota", parse_scope_cpu_quota},
};

static int parse_scope(Ctx *c, void *data) {
        Policy *p = data;
        return parse_mapping(c, scope_fields, ELEMENTSOF(scope_fields), &p->scope);
}

static int parse_marketplace_name(Ctx *c, void *data) {
        PolicyMarketplace *m = data;
        const Policy *p = c->policy;
        _cleanup_free_ char *v = NULL;
        int r;

        r = get_string(c, POLICY_MARKETPLACE_NAME_MAX, &v);
        if (r < 0)
                return r;
        if (!((v[0] >= 'a' && v[0] <= 'z') || (v[0] >= '0' && v[0] <= '9')) ||
            strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(v))
                return fail(c, E_POLICY_VALUE, "expected [a-z0-9][a-z0-9-]*");
        /* m is the entry being parsed, not yet counted in p->n_marketplaces. */
        for (size_t i = 0; i < p->n_marketplaces; i++)
                if (strcmp(p->marketplaces[i].name, v) == 0)
                        return fail(c, E_POLICY_DUPLICATE_KEY, "marketplace '%s' given twice", v);
        free(m->name);
        m->name = TAKE_PTR(v);
        return 0;
}

/* The OIDC issuer: an https URL with a host and no user information, compared exactly later. */
static int parse_marketplace_issuer(Ctx *c, void *data) {
        PolicyMarketplace *m = data;
        _cleanup_free_ char *v = NULL;
        size_t host;
        int r;

        r = get_string(c, POLICY_ISSUER_MAX, &v);
        if (r < 0)
                return r;
        if (strncmp(v, "https://", 8) != 0)
                return fail(c, E_POLICY_VALUE, "expected an https:// URL");
        host = strcspn(v + 8, "/");
        if (host == 0 ||
            strspn(v + 8, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                          "0123456789.-:") < host ||
            strchr(v, ' '))
                return fail(c, E_POLICY_VALUE, "expected an https:// URL with a host name");
        free(m->issuer);
        m->issuer = TAKE_PTR(v);
        return 0;
}

static int parse_marketplace_identity(Ctx *c, void *data) {
        PolicyMarketplace *m = data;
        _cleanup_free_ char *v = NULL;
        size_t n_warnings;
        int r;

        r = get_string(c, POLICY_IDENTITY_MAX, &v);
        if (r < 0)
                return r;
        /* The same compile (REG_EXTENDED) the verifier uses; the lint's warnings are lockctl's. */
        r = identity_pattern_lint(v, NULL, 0, &n_warnings);
        if (r == -EINVAL)
                return fail(c, E_POLICY_VALUE, "not a valid POSIX extended regular expression");
        if (r < 0)
                return r;
        free(m->identity);
        m->identity = TAKE_PTR(v);
        return 0;
}

static int parse_marketplace_trusted_root(Ctx *c, void *data) {
        PolicyMarketplace *m = data;
        return set_path(c, POLICY_PATH_MAX, &m->trusted_root);
}

static const Field marketplace_fields[] = {
        {"name", parse_marketplace_name},
        {"issuer", parse_marketplace_issuer},
        {"identity", parse_marketplace_identity},
        {"trusted_root", parse_marketplace_trusted_root},
};

static void marketplace_done(PolicyMarketplace *m) {
        free(m->name);
        free(m->issuer);
        free(m->identity);
        free(m->trusted_root);
        *m = (PolicyMarketplace){};
}

static int parse_marketplace(Ctx *c, void *data, size_t index) {
        Policy *p = data;
        PolicyMarketplace m = {}, *a;
        Mark start = here(c);
        const char *missing = NULL;
        int r;

        if (p->n_marketplaces >= POLICY_MARKETPLACES_MAX)
                return fail(c, E_POLICY_RANGE, "more than %d marketplaces",
                            POLICY_MARKETPLACES_MAX);
        r = parse_mapping(c, marketplace_fields, ELEMENTSOF(marketplace_fields), &m);
        if (r >= 0) {
                missing = !m.name           ? "name"
                          : !m.issuer       ? "issuer"
                          : !m.identity     ? "identity"
                          : !m.trusted_root ? "trusted_root"
                                            : NULL;
                if (missing)
                        r = fail_at(c, E_POLICY_MISSING, start, "%s: '%s' is missing", c->path,
                                    missing);
        }
        if (r >= 0) {
                a = reallocarray(p->marketplaces, p->n_marketplaces + 1, sizeof(*a));
                if (!a)
                        r = -ENOMEM;
                else {
                        p->marketplaces = a;
                        m.line = c->is_default ? 0 : start.line;
                        m.column = c->is_default ? 0 : start.column;
                        a[p->n_marketplaces++] = m;
                        return 0;
                }
        }
        marketplace_done(&m);
        return r;
}

static void marketplaces_clear(Policy *p) {
        for (size_t i = 0; i < p->n_marketplaces; i++)
                marketplace_done(&p->marketplaces[i]);
        free(p->marketplaces);
        p->marketplaces = NULL;
        p->n_marketplaces = 0;
}

static int parse_marketplaces(Ctx *c, void *data) {
        Policy *p = data;

        if (c->event->type != YAML_SEQUENCE_START_EVENT)
                return fail(c, E_POLICY_TYPE, "expected a list, found %s", event_kind(c->event));
        marketplaces_clear(p);
        return parse_sequence(c, parse_marketplace, p);
}

static const Field root_fields[] = {
        {"security_level", parse_security_level},
        {"agents", parse_agents},
        {"consoles", parse_consoles},
        {"sockets", parse_sockets},
        {"state_directory", parse_state_directory},
        {"runtime_directory", parse_runtime_directory},
        {"ephemeral_uids", parse_ephemeral_uids},
        {"limits", parse_limits},
        {"scope", parse_scope},
        {"marketplaces", parse_marketplaces},
        {"allow_unsigned", parse_allow_unsigned},
};

/*
 * Parses one YAML stream (c->buf) on top of c->policy: an empty stream or a null document
 * changes nothing; otherwise the one document must be a mapping.
 */
static int parse_stream(Ctx *c) {
        _cleanup_(yaml_parser_deletep) yaml_parser_t parser = {};
        _cleanup_(yaml_event_deletep) yaml_event_t event = {};
        int r;

        if (!yaml_parser_initialize(&parser))
                return -ENOMEM;
        yaml_parser_set_input_string(&parser, (const unsigned char *)c->buf, c->len);
        yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
        c->parser = &parser;
        c->event = &event;
        c->path[0] = '\0';

        r = next(c); /* STREAM-START */
        if (r < 0)
                return r;
        r = next(c);
        if (r < 0)
                return r;
        if (event.type == YAML_STREAM_END_EVENT)
                return 0;
        r = next(c); /* the root node, after DOCUMENT-START */
        if (r < 0)
                return r;
        if (!is_null(c)) {
                r = parse_mapping(c, root_fields, ELEMENTSOF(root_fields), c->policy);
                if (r < 0)
                        return r;
        }
        r = next(c); /* DOCUMENT-END */
        if (r < 0)
                return r;
        r = next(c);
        if (r < 0)
                return r;
        if (event.type != YAML_STREAM_END_EVENT)
                return fail(c, E_POLICY_UNSUPPORTED, "a second document is not supported");
        return 0;
}

/* Fails at whichever of a and b was written later (the one that made the pair inconsistent). */
static int fail_pair(Ctx *c, PolicyError code, Mark a, Mark b, const char *fmt, ...)
        __attribute__((format(printf, 5, 6)));
static int fail_pair(Ctx *c, PolicyError code, Mark a, Mark b, const char *fmt, ...) {
        Mark m = (b.line > a.line || (b.line == a.line && b.column > a.column)) ? b : a;
        va_list ap;

        c->diag->code = code;
        c->diag->line = m.line;
        c->diag->column = m.column;
        va_start(ap, fmt);
        vsnprintf(c->diag->message, sizeof(c->diag->message), fmt, ap);
        va_end(ap);
        return -EINVAL;
}

/* The rules between keys, checked once the default and the file are both applied. */
static int check_policy(Ctx *c) {
        const Policy *p = c->policy;
        const PolicyLimits *l = &p->limits;

        if (p->ephemeral_uid_first > p->ephemeral_uid_last)
                return fail_pair(c, E_POLICY_RANGE, c->uid_first, c->uid_last,
                                 "ephemeral_uids: first (%" PRIu32 ") is above last (%" PRIu32 ")",
                                 p->ephemeral_uid_first, p->ephemeral_uid_last);
        if (p->ephemeral_uid_last - p->ephemeral_uid_first >= POLICY_EPHEMERAL_UIDS_MAX)
                return fail_pair(c, E_POLICY_RANGE, c->uid_first, c->uid_last,
                                 "ephemeral_uids: more than %" PRIu32 " uids",
                                 POLICY_EPHEMERAL_UIDS_MAX);
        /* 65535 is (uint16_t)-1, which some interfaces still read as "no uid". */
        if (p->ephemeral_uid_first <= 65535 && p->ephemeral_uid_last >= 65535)
                return fail_pair(c, E_POLICY_RANGE, c->uid_first, c->uid_last,
                                 "ephemeral_uids: the range must not contain 65535");
        if (l->connections_total < l->connections_per_uid)
                return fail_pair(c, E_POLICY_RANGE, c->per_uid, c->total,
                                 "limits: connections_total (%" PRIu32
                                 ") is below connections_per_uid (%" PRIu32 ")",
                                 l->connections_total, l->connections_per_uid);
        if (l->session_absolute_timeout_sec < l->session_idle_timeout_sec)
                return fail_pair(c, E_POLICY_RANGE, c->idle, c->absolute,
                                 "limits: session_absolute_timeout is shorter than "
                                 "session_idle_timeout");
        if (strcmp(p->agent_socket.path, p->console_socket.path) == 0)
                return fail_pair(c, E_POLICY_VALUE, c->agent_path, c->console_path,
                                 "sockets: the agent and console sockets have the same path");

        /* The same user or group, by name or by number, in both roles. NSS is the daemon's
         * (roles_resolve()); here only what the file itself says. */
        for (size_t i = 0; i < p->agents.n_principals; i++)
                for (size_t j = 0; j < p->consoles.n_principals; j++) {
                        const PolicyPrincipal *a = &p->agents.principals[i],
                                              *b = &p->consoles.principals[j];
                        char shown[48];

                        if (!principal_same(a, b))
                                continue;
                        if (a->numeric)
                                snprintf(shown, sizeof(shown), "%" PRIu32, a->id);
                        else
                                snprintf(shown, sizeof(shown), "'%s'", a->name);
                        return fail_pair(c, E_POLICY_ROLES_OVERLAP, (Mark){a->line, a->column},
                                         (Mark){b->line, b->column},
                                         "%s %s is both an agent and a console",
                                         a->is_group ? "group" : "user", shown);
                }
        return 0;
}

static int parse_layers(const char *buf, size_t len, bool with_file, Policy **ret,
                        PolicyDiag *diag) {
        _cleanup_(policy_freep) Policy *p = NULL;
        Ctx c = {.diag = diag};
        int r;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        c.policy = p;

        /* The compiled-in default first, so omitted keys have one source of truth. */
        c.buf = policy_default_yaml;
        c.len = strlen(policy_default_yaml);
        c.is_default = true;
        r = prescan(&c);
        if (r >= 0)
                r = parse_stream(&c);
        if (r < 0)
                return r; /* a broken default: test-policy parses it, so this is a build bug */

        if (with_file) {
                /* Only places in the file are reported: forget where the default said what. */
                c.uid_first = c.uid_last = c.per_uid = c.total = (Mark){};
                c.idle = c.absolute = c.agent_path = c.console_path = (Mark){};
                c.buf = buf;
                c.len = len;
                c.is_default = false;
                r = prescan(&c);
                if (r < 0)
                        return r;
                r = parse_stream(&c);
                if (r < 0)
                        return r;
        }
        r = check_policy(&c);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

int policy_parse(const char *buf, size_t len, Policy **ret, PolicyDiag *diag) {
        PolicyDiag unused;

        if (!diag)
                diag = &unused;
        *diag = (PolicyDiag){};
        if (!ret || (!buf && len > 0))
                return -EINVAL;
        if (len > POLICY_BYTES_MAX) {
                diag->code = E_POLICY_TOO_LARGE;
                snprintf(diag->message, sizeof(diag->message), "lockd.yaml: larger than %d bytes",
                         POLICY_BYTES_MAX);
                return -EINVAL;
        }
        return parse_layers(buf ?: "", len, true, ret, diag);
}

int policy_default(Policy **ret) {
        PolicyDiag diag = {};

        if (!ret)
                return -EINVAL;
        return parse_layers(NULL, 0, false, ret, &diag);
}

Policy *policy_free(Policy *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->agents.n_principals; i++)
                principal_done(&p->agents.principals[i]);
        free(p->agents.principals);
        for (size_t i = 0; i < p->consoles.n_principals; i++)
                principal_done(&p->consoles.principals[i]);
        free(p->consoles.principals);
        free(p->agent_socket.path);
        principal_done(&p->agent_socket.group);
        free(p->console_socket.path);
        principal_done(&p->console_socket.group);
        free(p->state_directory);
        free(p->runtime_directory);
        free(p->scope.bus_address);
        free(p->scope.slice);
        marketplaces_clear(p);
        free(p);
        return NULL;
}
