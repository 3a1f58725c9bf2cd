/* The lockd.yaml reader: the file's characters checked, libyaml events with everything lockd
 * never accepts refused, scalars typed as YAML 1.1 would read them, mappings walked against a
 * table of fields, and the typed values (integers, booleans, strings, paths, sizes, durations). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "codec.h"
#include "macro.h"
#include "policy-internal.h"
#include "policy.h"

static void yaml_parser_deletep(yaml_parser_t *p) {
        yaml_parser_delete(p);
}

static void yaml_event_deletep(yaml_event_t *e) {
        yaml_event_delete(e);
}

static Mark mark_of(yaml_mark_t m) {
        return (Mark){.line = (unsigned)m.line + 1, .column = (unsigned)m.column + 1};
}

Mark reader_here(const Ctx *c) {
        Mark m = mark_of(c->event->start_mark);

        m.source = c->source;
        return m;
}

int reader_fail_at(Ctx *c, PolicyError code, Mark m, const char *fmt, ...) {
        va_list ap;

        c->diag->code = code;
        c->diag->source = c->source;
        c->diag->line = m.line;
        c->diag->column = m.column;
        va_start(ap, fmt);
        vsnprintf(c->diag->message, sizeof(c->diag->message), fmt, ap);
        va_end(ap);
        return -EINVAL;
}

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
 * The characters lockd refuses anywhere, in the file and in a decoded string alike: NUL and every
 * other control character but tab and line feed (and carriage return, which reader_prescan() allows
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
int reader_prescan(Ctx *c) {
        const unsigned char *s = (const unsigned char *)c->buf;
        unsigned line = 1, column = 1;

        for (size_t i = 0; i < c->len;) {
                uint32_t cp;
                int k = utf8_decode(s + i, c->len - i, &cp);
                size_t n = k > 0 ? (size_t)k : 0;

                if (k < 0)
                        return reader_fail_at(c, E_POLICY_SYNTAX, (Mark){line, column, c->source},
                                              "invalid UTF-8 at byte 0x%02x", s[i]);
                if (cp == 0)
                        return reader_fail_at(c, E_POLICY_SYNTAX, (Mark){line, column, c->source},
                                              "a NUL byte");
                if (cp == '\r' && !(i + 1 < c->len && s[i + 1] == '\n'))
                        return reader_fail_at(c, E_POLICY_SYNTAX, (Mark){line, column, c->source},
                                              "a carriage return not followed by a line feed");
                if (codepoint_refused(cp))
                        return reader_fail_at(c, E_POLICY_SYNTAX, (Mark){line, column, c->source},
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

/* The place of byte offset off, counted as reader_prescan() counts. */
static Mark offset_mark(const Ctx *c, size_t off) {
        Mark m = {1, 1, c->source};

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
        const yaml_char_t *anchor = NULL, *tag = NULL;

        yaml_event_delete(e);
        if (!yaml_parser_parse(c->parser, e)) {
                yaml_parser_t *y = c->parser;
                Mark m;

                if (y->error == YAML_MEMORY_ERROR)
                        return -ENOMEM;
                m = y->error == YAML_READER_ERROR ? offset_mark(c, y->problem_offset)
                                                  : mark_of(y->problem_mark);
                return reader_fail_at(c, E_POLICY_SYNTAX, m, "%s%s%s", y->problem ?: "invalid YAML",
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
                anchor = e->data.scalar.anchor;
                tag = e->data.scalar.tag;
                break;
        case YAML_SEQUENCE_START_EVENT:
                anchor = e->data.sequence_start.anchor;
                tag = e->data.sequence_start.tag;
                break;
        case YAML_MAPPING_START_EVENT:
                anchor = e->data.mapping_start.anchor;
                tag = e->data.mapping_start.tag;
                break;
        default:
                break;
        }
        if (anchor)
                return fail(c, E_POLICY_UNSUPPORTED, "anchors are not supported");
        if (tag)
                return fail(c, E_POLICY_UNSUPPORTED, "tags are not supported");
        return 0;
}

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

ScalarKind reader_scalar_kind(const yaml_event_t *e) {
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
const char *reader_event_kind(const yaml_event_t *e) {
        switch (e->type) {
        case YAML_MAPPING_START_EVENT:
                return "a mapping";
        case YAML_SEQUENCE_START_EVENT:
                return "a list";
        case YAML_SCALAR_EVENT:
                switch (reader_scalar_kind(e)) {
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

const char *reader_scalar(const Ctx *c) {
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
 * Records that the user's current source sets the key c->path to a value that is not a mapping
 * (the value's first event is current). The same key set by an earlier source is an error naming
 * both: drop-ins merge, they never silently override one another or lockd.yaml. The compiled-in
 * default is not a source: every file may set what it sets.
 */
static int key_set(Ctx *c) {
        KeySet *k;

        if (c->is_default || c->event->type == YAML_MAPPING_START_EVENT)
                return 0;
        for (size_t i = 0; i < c->n_keys; i++) {
                const KeySet *o = &c->keys[i];

                /* Within one source the mapping's own duplicate check has spoken already. */
                if (o->mark.source == c->source || strcmp(o->path, c->path) != 0)
                        continue;
                return fail(c, E_POLICY_DUPLICATE_KEY, "set in %s:%u:%u and again in %s",
                            c->sources ? c->sources[o->mark.source].name : "an earlier file",
                            o->mark.line, o->mark.column,
                            c->sources ? c->sources[c->source].name : "this file");
        }
        if (c->n_keys >= POLICY_KEYS_MAX)
                return fail(c, E_POLICY_RANGE, "more than %d keys in the policy's files",
                            POLICY_KEYS_MAX);
        k = reallocarray(c->keys, c->n_keys + 1, sizeof(*k));
        if (!k)
                return -ENOMEM;
        c->keys = k;
        k = &c->keys[c->n_keys++];
        snprintf(k->path, sizeof(k->path), "%s", c->path);
        k->mark = reader_here(c);
        return 0;
}

/*
 * Parses the mapping starting at the current event against fields. An unknown key, a key given
 * twice, a merge key or a key that is not a scalar is an error at the key; each value is parsed
 * by its field's function, which starts on the value's first event and ends on its last.
 */
int reader_mapping(Ctx *c, const Field *fields, size_t n_fields, void *data) {
        uint64_t seen = 0;
        char shown[64];
        int r;

        if (c->event->type != YAML_MAPPING_START_EVENT)
                return fail(c, E_POLICY_TYPE, "expected a mapping, found %s",
                            reader_event_kind(c->event));
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
                                    reader_event_kind(c->event));
                key = reader_scalar(c);
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
                        r = key_set(c);
                if (r >= 0) {
                        c->field_arg = fields[i].arg;
                        r = fields[i].parse(c, data);
                }
                if (r < 0)
                        return r;
                path_pop(c, old);
        }
}

/* Calls item() on each element of the list starting at the current event. */
int reader_sequence(Ctx *c, int (*item)(Ctx *c, void *data, size_t index), void *data) {
        int r;

        if (c->event->type != YAML_SEQUENCE_START_EVENT)
                return fail(c, E_POLICY_TYPE, "expected a list, found %s",
                            reader_event_kind(c->event));
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

int reader_expect_scalar(Ctx *c, const char *what) {
        if (c->event->type != YAML_SCALAR_EVENT)
                return fail(c, E_POLICY_TYPE, "expected %s, found %s", what,
                            reader_event_kind(c->event));
        return 0;
}

/* Parses the decimal digits of s[0..n) into *ret; false on overflow. */
bool reader_digits(const char *s, size_t n, uint64_t *ret) {
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
int reader_uint(Ctx *c, uint64_t min, uint64_t max, uint64_t *ret) {
        uint64_t v;
        int r;

        r = reader_expect_scalar(c, "an integer");
        if (r < 0)
                return r;
        switch (reader_scalar_kind(c->event)) {
        case SCALAR_INT:
                break;
        case SCALAR_NUMBER:
                return fail(c, E_POLICY_TYPE,
                            "expected a decimal integer without sign, leading zero, '_' or "
                            "fraction, found '%s'",
                            reader_scalar(c));
        default:
                return fail(c, E_POLICY_TYPE, "expected an integer, found %s",
                            reader_event_kind(c->event));
        }
        if (!reader_digits(reader_scalar(c), c->event->data.scalar.length, &v) || v < min ||
            v > max)
                return fail(c, E_POLICY_RANGE, "must be between %" PRIu64 " and %" PRIu64, min,
                            max);
        *ret = v;
        return 0;
}

int reader_bool(Ctx *c, bool *ret) {
        int r;

        r = reader_expect_scalar(c, "true or false");
        if (r < 0)
                return r;
        if (reader_scalar_kind(c->event) == SCALAR_BOOL_OTHER)
                return fail(c, E_POLICY_TYPE, "expected true or false, found '%s'",
                            reader_scalar(c));
        if (reader_scalar_kind(c->event) != SCALAR_BOOL)
                return fail(c, E_POLICY_TYPE, "expected true or false, found %s",
                            reader_event_kind(c->event));
        *ret = strcmp(reader_scalar(c), "true") == 0;
        return 0;
}

bool reader_is_null(const Ctx *c) {
        return c->event->type == YAML_SCALAR_EVENT && reader_scalar_kind(c->event) == SCALAR_NULL;
}

/*
 * A string of at most max bytes with no NUL or control character (an escape in a double-quoted
 * string can write any of them). A plain scalar that YAML would read as null, a boolean or a
 * number is not a string: it has to be quoted, so nobody is surprised by what "no" or 0600 mean.
 */
int reader_string(Ctx *c, size_t max, char **ret) {
        const char *s;
        size_t n;
        int r;

        r = reader_expect_scalar(c, "a string");
        if (r < 0)
                return r;
        if (reader_scalar_kind(c->event) != SCALAR_STRING)
                return fail(c, E_POLICY_TYPE, "expected a string, found %s (quote it)",
                            reader_event_kind(c->event));
        s = reader_scalar(c);
        n = c->event->data.scalar.length;
        for (size_t i = 0; i < n;) {
                uint32_t cp;
                int k = utf8_decode(s + i, n - i, &cp);

                if (k < 0 || cp < 0x20 || codepoint_refused(cp))
                        return fail(c, E_POLICY_VALUE,
                                    "contains a control or otherwise refused character");
                i += (size_t)k;
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

int reader_path(Ctx *c, size_t max, char **p) {
        _cleanup_free_ char *s = NULL;
        int r;

        r = reader_string(c, max, &s);
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

        r = reader_expect_scalar(c, example);
        if (r < 0)
                return r;
        switch (reader_scalar_kind(c->event)) {
        case SCALAR_INT:
        case SCALAR_STRING:
                break;
        default:
                return fail(c, E_POLICY_TYPE, "expected %s, found %s", example,
                            reader_event_kind(c->event));
        }
        s = reader_scalar(c);
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
        if (!reader_digits(s, digits, &v) || v > UINT64_MAX / factor || v * factor < min ||
            v * factor > max)
                return fail(c, E_POLICY_RANGE, "must be between %s and %s", lo, hi);
        *ret = v * factor;
        return 0;
}

int reader_size(Ctx *c, uint64_t min, uint64_t max, uint64_t *ret) {
        return get_scaled(c, size_units, "a size such as 65536, 64KiB, 16MiB or 1GiB", min, max,
                          policy_format_size, ret);
}

static const Unit duration_ms_units[] = {{"ms", 1}, {"s", 1000}, {"min", 60000}, {NULL, 0}};

int reader_duration_ms(Ctx *c, uint64_t min, uint64_t max, uint64_t *ret) {
        static const char example[] = "a duration with its unit, such as 250ms or 1s";
        const char *s;

        /* A bare number is seconds everywhere else in lockd.yaml: here it is refused rather than
         * read as milliseconds by surprise. */
        if (c->event->type == YAML_SCALAR_EVENT) {
                s = reader_scalar(c);
                if (strspn(s, "0123456789") == c->event->data.scalar.length)
                        return fail(c, E_POLICY_VALUE, "expected %s", example);
        }
        return get_scaled(c, duration_ms_units, example, min, max, policy_format_duration_ms, ret);
}

int reader_duration(Ctx *c, uint64_t min, uint64_t max, uint64_t *ret) {
        return get_scaled(c, duration_units, "a duration such as 90, 90s, 15min, 8h or 2d", min,
                          max, policy_format_duration, ret);
}

/*
 * Parses one YAML stream (c->buf) on top of c->policy: an empty stream or a null document
 * changes nothing; otherwise the one document must be a mapping.
 */
int reader_stream(Ctx *c, const Field *root, size_t n_root) {
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
        if (!reader_is_null(c)) {
                r = reader_mapping(c, root, n_root, c->policy);
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
int reader_fail_pair(Ctx *c, PolicyError code, Mark a, Mark b, const char *fmt, ...) {
        Mark m = (b.source > a.source ||
                  (b.source == a.source &&
                   (b.line > a.line || (b.line == a.line && b.column > a.column))))
                         ? b
                         : a;
        va_list ap;

        c->diag->code = code;
        c->diag->source = m.source;
        c->diag->line = m.line;
        c->diag->column = m.column;
        va_start(ap, fmt);
        vsnprintf(c->diag->message, sizeof(c->diag->message), fmt, ap);
        va_end(ap);
        return -EINVAL;
}
