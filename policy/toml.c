/* The strict TOML-subset parser behind plugin.toml: buffer in, tree or one positioned error out. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "macro.h"
#include "toml.h"

typedef struct Parser {
        const char *buf;
        size_t len;
        size_t pos;
        unsigned line;     /* 1-based line of pos */
        size_t line_start; /* offset of the first byte of that line */
        TomlError *error;
} Parser;

/* A place in the buffer, remembered to report an error at the start of a construct. */
typedef struct Mark {
        unsigned line, column;
} Mark;

static Mark mark(const Parser *p) {
        return (Mark){p->line, (unsigned)(p->pos - p->line_start + 1)};
}

/* Fills p->error (first error wins) and returns -EINVAL. */
static int fail_at(Parser *p, TomlErrorCode code, Mark m, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static int fail_at(Parser *p, TomlErrorCode code, Mark m, const char *fmt, ...) {
        va_list ap;

        if (p->error && p->error->code == TOML_OK) {
                p->error->code = code;
                p->error->line = m.line;
                p->error->column = m.column;
                va_start(ap, fmt);
                vsnprintf(p->error->message, sizeof(p->error->message), fmt, ap);
                va_end(ap);
        }
        return -EINVAL;
}

#define fail(p, code, ...) fail_at((p), (code), mark(p), __VA_ARGS__)

const char *toml_type_name(TomlType t) {
        switch (t) {
        case TOML_STRING:
                return "string";
        case TOML_INTEGER:
                return "integer";
        case TOML_BOOLEAN:
                return "boolean";
        case TOML_ARRAY:
                return "array";
        case TOML_TABLE:
                return "inline table";
        }
        return "value";
}

TomlValue *toml_value_free(TomlValue *v) {
        if (!v)
                return NULL;

        switch (v->type) {
        case TOML_STRING:
                free(v->string.data);
                break;
        case TOML_ARRAY:
                for (size_t i = 0; i < v->array.n; i++)
                        toml_value_free(v->array.items[i]);
                free(v->array.items);
                break;
        case TOML_TABLE:
                for (size_t i = 0; i < v->table.n; i++) {
                        free(v->table.entries[i].key);
                        toml_value_free(v->table.entries[i].value);
                }
                free(v->table.entries);
                break;
        default:
                break;
        }
        free(v);
        return NULL;
}

const TomlEntry *toml_table_find(const TomlValue *table, const char *key) {
        if (!table || table->type != TOML_TABLE || !key)
                return NULL;

        for (size_t i = 0; i < table->table.n; i++)
                if (strcmp(table->table.entries[i].key, key) == 0)
                        return &table->table.entries[i];
        return NULL;
}

static TomlValue *value_new(TomlType type, Mark m) {
        TomlValue *v = calloc(1, sizeof(*v));
        if (!v)
                return NULL;
        v->type = type;
        v->line = m.line;
        v->column = m.column;
        return v;
}

/*
 * Checks the whole buffer before any parsing: well-formed UTF-8 (no overlong forms, surrogates or
 * code points past U+10FFFF) and no control character (C0, DEL, C1) other than tab, LF, and CR
 * directly before LF. Returns 0 or -EINVAL with the offending byte's place.
 */
static int check_encoding(Parser *p) {
        unsigned line = 1;
        size_t line_start = 0;

        for (size_t i = 0; i < p->len;) {
                const unsigned char *s = (const unsigned char *)p->buf + i;
                size_t left = p->len - i, n;
                uint32_t cp;
                int k;
                Mark m = {line, (unsigned)(i - line_start + 1)};

                if (s[0] < 0x80) {
                        if (s[0] == '\n') {
                                line++;
                                line_start = i + 1;
                        } else if (s[0] == '\r' && !(left >= 2 && s[1] == '\n'))
                                return fail_at(p, TOML_E_UTF8, m,
                                               "carriage return not followed by a line feed");
                        else if (s[0] == 0)
                                return fail_at(p, TOML_E_UTF8, m, "NUL byte");
                        else if ((s[0] < 0x20 && s[0] != '\t' && s[0] != '\r') || s[0] == 0x7f)
                                return fail_at(p, TOML_E_UTF8, m, "control character 0x%02x", s[0]);
                        i++;
                        continue;
                }

                k = utf8_decode(s, left, &cp);
                switch (k) {
                case UTF8_E_LEAD:
                        return fail_at(p, TOML_E_UTF8, m, "invalid UTF-8 lead byte 0x%02x", s[0]);
                case UTF8_E_TRUNCATED:
                        return fail_at(p, TOML_E_UTF8, m, "truncated UTF-8 sequence");
                case UTF8_E_CONTINUATION:
                        return fail_at(p, TOML_E_UTF8, m, "invalid UTF-8 continuation byte");
                case UTF8_E_OVERLONG:
                        return fail_at(p, TOML_E_UTF8, m, "overlong UTF-8 sequence");
                case UTF8_E_SURROGATE:
                        return fail_at(p, TOML_E_UTF8, m, "UTF-8-encoded surrogate");
                case UTF8_E_RANGE:
                        return fail_at(p, TOML_E_UTF8, m, "code point past U+10FFFF");
                default:
                        n = (size_t)k;
                }
                if (cp >= 0x80 && cp <= 0x9f)
                        return fail_at(p, TOML_E_UTF8, m, "C1 control character U+%04X",
                                       (unsigned)cp);
                i += n;
        }
        return 0;
}

static bool eof(const Parser *p) {
        return p->pos >= p->len;
}

static char peek(const Parser *p) {
        return eof(p) ? '\0' : p->buf[p->pos];
}

static char peek_at(const Parser *p, size_t off) {
        return p->pos + off >= p->len ? '\0' : p->buf[p->pos + off];
}

static bool at_newline(const Parser *p) {
        /* check_encoding() guarantees every CR is followed by LF */
        return peek(p) == '\n' || peek(p) == '\r';
}

static void skip_newline(Parser *p) {
        if (peek(p) == '\r')
                p->pos++;
        p->pos++;
        p->line++;
        p->line_start = p->pos;
}

static void skip_ws(Parser *p) {
        while (peek(p) == ' ' || peek(p) == '\t')
                p->pos++;
}

static void skip_comment(Parser *p) {
        if (peek(p) != '#')
                return;
        while (!eof(p) && !at_newline(p))
                p->pos++;
}

/* Skips whitespace, comments and newlines, as allowed between the elements of an array. */
static void skip_ws_comments_newlines(Parser *p) {
        for (;;) {
                skip_ws(p);
                skip_comment(p);
                if (eof(p) || !at_newline(p))
                        return;
                skip_newline(p);
        }
}

static bool is_bare_key_char(char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-';
}

/*
 * Parses a bare key at p->pos into a new string in *ret, refusing quoted and dotted keys. Leaves
 * p->pos after the key and any whitespace that follows it.
 */
static int parse_key(Parser *p, char **ret) {
        Mark start = mark(p);
        size_t begin = p->pos, end;
        char *key;

        if (peek(p) == '"' || peek(p) == '\'')
                return fail(p, TOML_E_UNSUPPORTED, "quoted keys are not supported; use a bare key");
        while (!eof(p) && is_bare_key_char(peek(p)))
                p->pos++;
        if (p->pos == begin)
                return fail(p, TOML_E_SYNTAX, "expected a key");
        end = p->pos;

        skip_ws(p);
        if (peek(p) == '.')
                return fail_at(p, TOML_E_UNSUPPORTED, start,
                               "dotted keys are not supported; use an inline table");

        key = strndup(p->buf + begin, end - begin);
        if (!key)
                return -ENOMEM;
        *ret = key;
        return 0;
}

/* Decodes the escape sequence at p->pos (a backslash) into out; returns bytes written or -EINVAL.
 */
static int parse_escape(Parser *p, char *out) {
        Mark m = mark(p);
        char c = peek_at(p, 1);
        size_t digits;
        uint32_t cp = 0;

        switch (c) {
        case 'b':
                out[0] = '\b';
                break;
        case 't':
                out[0] = '\t';
                break;
        case 'n':
                out[0] = '\n';
                break;
        case 'f':
                out[0] = '\f';
                break;
        case 'r':
                out[0] = '\r';
                break;
        case '"':
                out[0] = '"';
                break;
        case '\\':
                out[0] = '\\';
                break;
        case 'u':
        case 'U':
                digits = c == 'u' ? 4 : 8;
                for (size_t i = 0; i < digits; i++) {
                        int h = unhexchar(peek_at(p, 2 + i));
                        if (h < 0)
                                return fail_at(p, TOML_E_SYNTAX, m,
                                               "\\%c takes exactly %zu hexadecimal digits", c,
                                               digits);
                        cp = (cp << 4) | (uint32_t)h;
                }
                if (cp >= 0xd800 && cp <= 0xdfff)
                        return fail_at(p, TOML_E_SYNTAX, m,
                                       "escape of surrogate U+%04X, not a Unicode scalar value",
                                       (unsigned)cp);
                if (cp > 0x10ffff)
                        return fail_at(p, TOML_E_SYNTAX, m, "escape of a code point past U+10FFFF");
                p->pos += 2 + digits;
                return (int)utf8_encode(cp, out);
        default:
                if (c == '\0' || c == '\n' || c == '\r')
                        return fail_at(p, TOML_E_SYNTAX, m, "backslash at the end of a line");
                if ((unsigned char)c < 0x80 && c > 0x20)
                        return fail_at(p, TOML_E_SYNTAX, m, "unknown escape \\%c", c);
                return fail_at(p, TOML_E_SYNTAX, m, "unknown escape sequence");
        }
        p->pos += 2;
        return 1;
}

/* Parses a basic or literal string at p->pos into a new TOML_STRING in *ret. */
static int parse_string(Parser *p, TomlValue **ret) {
        Mark start = mark(p);
        char quote = peek(p);
        size_t end, n = 0;
        _cleanup_free_ char *data = NULL;
        TomlValue *v;

        if (peek_at(p, 1) == quote && peek_at(p, 2) == quote)
                return fail(p, TOML_E_UNSUPPORTED, "multi-line strings are not supported");

        /* Find the closing quote first: the decoded string is never longer than the raw one. */
        for (end = p->pos + 1;; end++) {
                if (end >= p->len || p->buf[end] == '\n' || p->buf[end] == '\r')
                        return fail_at(p, TOML_E_SYNTAX, start,
                                       "string not closed before the end of the line");
                if (p->buf[end] == quote)
                        break;
                if (quote == '"' && p->buf[end] == '\\' && end + 1 < p->len &&
                    p->buf[end + 1] != '\n' && p->buf[end + 1] != '\r')
                        end++;
        }

        data = malloc(end - p->pos);
        if (!data)
                return -ENOMEM;

        p->pos++;
        while (p->pos < end) {
                if (quote == '"' && peek(p) == '\\') {
                        int r = parse_escape(p, data + n);
                        if (r < 0)
                                return r;
                        n += (size_t)r;
                } else
                        data[n++] = p->buf[p->pos++];
        }
        p->pos++; /* the closing quote */
        data[n] = '\0';

        v = value_new(TOML_STRING, start);
        if (!v)
                return -ENOMEM;
        v->string.data = TAKE_PTR(data);
        v->string.len = n;
        *ret = v;
        return 0;
}

static bool is_token_char(char c) {
        return is_bare_key_char(c) || c == '+' || c == '.' || c == ':';
}

/*
 * Parses a decimal integer token (tok, n bytes) as TOML defines it: optional sign, digits with
 * single underscores between them, no leading zero, within int64_t.
 */
static int parse_integer(Parser *p, Mark m, const char *tok, size_t n, int64_t *ret) {
        bool negative = false, digit_before = false;
        uint64_t value = 0, limit;
        size_t i = 0, digits = 0;

        if (tok[0] == '+' || tok[0] == '-') {
                negative = tok[0] == '-';
                i++;
        }
        if (i >= n)
                return fail_at(p, TOML_E_SYNTAX, m, "a sign without digits");
        if (tok[i] == '0' && i + 1 < n)
                return fail_at(p, TOML_E_SYNTAX, m, "integers must not have leading zeros");

        limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        for (; i < n; i++) {
                if (tok[i] == '_') {
                        if (!digit_before || i + 1 >= n || tok[i + 1] < '0' || tok[i + 1] > '9')
                                return fail_at(p, TOML_E_SYNTAX, m,
                                               "an underscore in an integer must be between "
                                               "two digits");
                        digit_before = false;
                        continue;
                }
                if (tok[i] < '0' || tok[i] > '9')
                        return fail_at(p, TOML_E_SYNTAX, m, "invalid integer");
                if (value > (limit - (uint64_t)(tok[i] - '0')) / 10)
                        return fail_at(p, TOML_E_SYNTAX, m, "integer does not fit in 64 bits");
                value = value * 10 + (uint64_t)(tok[i] - '0');
                digit_before = true;
                digits++;
        }
        if (digits == 0)
                return fail_at(p, TOML_E_SYNTAX, m, "invalid integer");

        *ret = negative ? (int64_t)(0 - value) : (int64_t)value;
        return 0;
}

/* Parses a boolean, an integer, or refuses a float, date or non-decimal integer. */
static int parse_scalar(Parser *p, TomlValue **ret) {
        Mark start = mark(p);
        size_t begin = p->pos, n;
        const char *tok = p->buf + begin;
        const char *digits;
        TomlValue *v;
        int64_t integer = 0;
        int r;

        while (!eof(p) && is_token_char(peek(p)))
                p->pos++;
        n = p->pos - begin;
        if (n == 0)
                return fail(p, TOML_E_SYNTAX,
                            "expected a value (string, integer, boolean, array or inline table)");

        if ((n == 4 && memcmp(tok, "true", 4) == 0) || (n == 5 && memcmp(tok, "false", 5) == 0)) {
                v = value_new(TOML_BOOLEAN, start);
                if (!v)
                        return -ENOMEM;
                v->boolean = n == 4;
                *ret = v;
                return 0;
        }

        digits = tok + (tok[0] == '+' || tok[0] == '-');
        if ((size_t)(tok + n - digits) == 3 &&
            (memcmp(digits, "inf", 3) == 0 || memcmp(digits, "nan", 3) == 0))
                return fail_at(p, TOML_E_UNSUPPORTED, start, "floats are not supported");
        if (!(tok[0] == '+' || tok[0] == '-' || (tok[0] >= '0' && tok[0] <= '9')))
                return fail_at(p, TOML_E_SYNTAX, start,
                               "expected a value (string, integer, boolean, array or inline "
                               "table); strings need quotes");
        if (digits + 1 < tok + n && digits[0] == '0' &&
            (digits[1] == 'x' || digits[1] == 'o' || digits[1] == 'b'))
                return fail_at(p, TOML_E_UNSUPPORTED, start,
                               "hexadecimal, octal and binary integers are not supported");
        if (memchr(tok, ':', n) || memchr(digits, '-', (size_t)(tok + n - digits)))
                return fail_at(p, TOML_E_UNSUPPORTED, start, "dates and times are not supported");
        if (memchr(tok, '.', n) || memchr(tok, 'e', n) || memchr(tok, 'E', n))
                return fail_at(p, TOML_E_UNSUPPORTED, start, "floats are not supported");

        r = parse_integer(p, start, tok, n, &integer);
        if (r < 0)
                return r;
        v = value_new(TOML_INTEGER, start);
        if (!v)
                return -ENOMEM;
        v->integer = integer;
        *ret = v;
        return 0;
}

static int parse_value(Parser *p, unsigned depth, TomlValue **ret);

/* Appends v (taking it) to the array a, refusing more than TOML_ITEMS_MAX elements. */
static int array_append(Parser *p, TomlValue *a, TomlValue *v) {
        TomlValue **items;

        if (a->array.n >= TOML_ITEMS_MAX) {
                fail_at(p, TOML_E_LIMIT, (Mark){v->line, v->column},
                        "more than %d elements in an array", TOML_ITEMS_MAX);
                toml_value_free(v);
                return -EINVAL;
        }
        items = reallocarray(a->array.items, a->array.n + 1, sizeof(*items));
        if (!items) {
                toml_value_free(v);
                return -ENOMEM;
        }
        a->array.items = items;
        a->array.items[a->array.n++] = v;
        return 0;
}

/*
 * Adds key = v (taking both) to the table t, refusing a duplicate key (reported at the second key)
 * and more than TOML_ITEMS_MAX keys.
 */
static int table_add(Parser *p, TomlValue *t, char *key, Mark key_mark, TomlValue *v) {
        TomlEntry *entries;
        int r = -EINVAL;

        if (toml_table_find(t, key)) {
                fail_at(p, TOML_E_DUPLICATE_KEY, key_mark, "duplicate key '%s'", key);
                goto fail;
        }
        if (t->table.n >= TOML_ITEMS_MAX) {
                fail_at(p, TOML_E_LIMIT, key_mark, "more than %d keys in a table", TOML_ITEMS_MAX);
                goto fail;
        }
        entries = reallocarray(t->table.entries, t->table.n + 1, sizeof(*entries));
        if (!entries) {
                r = -ENOMEM;
                goto fail;
        }
        t->table.entries = entries;
        t->table.entries[t->table.n++] = (TomlEntry){
                .key = key,
                .line = key_mark.line,
                .column = key_mark.column,
                .value = v,
        };
        return 0;

fail:
        free(key);
        toml_value_free(v);
        return r;
}

/* Parses `key = value` at p->pos into table t; stops right after the value. */
static int parse_key_value(Parser *p, TomlValue *t, unsigned depth) {
        Mark key_mark = mark(p);
        _cleanup_free_ char *key = NULL;
        TomlValue *v = NULL;
        int r;

        r = parse_key(p, &key);
        if (r < 0)
                return r;
        if (peek(p) != '=')
                return fail(p, TOML_E_SYNTAX, "expected '=' after the key '%s'", key);
        p->pos++;
        skip_ws(p);
        if (eof(p) || at_newline(p) || peek(p) == '#')
                return fail(p, TOML_E_SYNTAX, "expected a value after '='");

        r = parse_value(p, depth, &v);
        if (r < 0)
                return r;
        return table_add(p, t, TAKE_PTR(key), key_mark, v);
}

/* Parses an array at p->pos ('['); depth is the depth of the new array. */
static int parse_array(Parser *p, unsigned depth, TomlValue **ret) {
        Mark start = mark(p);
        _cleanup_(toml_value_freep) TomlValue *a = NULL;
        int r;

        if (depth > TOML_DEPTH_MAX)
                return fail(p, TOML_E_LIMIT, "arrays and inline tables nested deeper than %d",
                            TOML_DEPTH_MAX);
        a = value_new(TOML_ARRAY, start);
        if (!a)
                return -ENOMEM;

        p->pos++;
        for (;;) {
                TomlValue *v = NULL;

                skip_ws_comments_newlines(p);
                if (eof(p))
                        return fail_at(p, TOML_E_SYNTAX, start, "array not closed");
                if (peek(p) == ']')
                        break;
                if (peek(p) == ',')
                        return fail(p, TOML_E_SYNTAX, "expected a value before ','");

                r = parse_value(p, depth, &v);
                if (r < 0)
                        return r;
                r = array_append(p, a, v);
                if (r < 0)
                        return r;

                skip_ws_comments_newlines(p);
                if (eof(p))
                        return fail_at(p, TOML_E_SYNTAX, start, "array not closed");
                if (peek(p) == ']')
                        break;
                if (peek(p) != ',')
                        return fail(p, TOML_E_SYNTAX, "expected ',' or ']' in an array");
                p->pos++;
        }
        p->pos++; /* ']' */
        *ret = TAKE_PTR(a);
        return 0;
}

/* Parses a single-line inline table at p->pos ('{'); depth is the depth of the new table. */
static int parse_inline_table(Parser *p, unsigned depth, TomlValue **ret) {
        Mark start = mark(p);
        _cleanup_(toml_value_freep) TomlValue *t = NULL;
        int r;

        if (depth > TOML_DEPTH_MAX)
                return fail(p, TOML_E_LIMIT, "arrays and inline tables nested deeper than %d",
                            TOML_DEPTH_MAX);
        t = value_new(TOML_TABLE, start);
        if (!t)
                return -ENOMEM;

        p->pos++;
        skip_ws(p);
        if (peek(p) != '}')
                for (;;) {
                        skip_ws(p);
                        if (eof(p))
                                return fail_at(p, TOML_E_SYNTAX, start, "inline table not closed");
                        if (at_newline(p) || peek(p) == '#')
                                return fail(p, TOML_E_SYNTAX,
                                            "an inline table must be on one line (TOML 1.0)");
                        if (peek(p) == '}')
                                return fail(p, TOML_E_SYNTAX,
                                            "no trailing comma in an inline table (TOML 1.0)");

                        r = parse_key_value(p, t, depth);
                        if (r < 0)
                                return r;

                        skip_ws(p);
                        if (eof(p))
                                return fail_at(p, TOML_E_SYNTAX, start, "inline table not closed");
                        if (peek(p) == '}')
                                break;
                        if (at_newline(p) || peek(p) == '#')
                                return fail(p, TOML_E_SYNTAX,
                                            "an inline table must be on one line (TOML 1.0)");
                        if (peek(p) != ',')
                                return fail(p, TOML_E_SYNTAX,
                                            "expected ',' or '}' in an inline table");
                        p->pos++;
                }
        p->pos++; /* '}' */
        *ret = TAKE_PTR(t);
        return 0;
}

/* Parses any value at p->pos; depth is that of the container the value is in. */
static int parse_value(Parser *p, unsigned depth, TomlValue **ret) {
        switch (peek(p)) {
        case '"':
        case '\'':
                return parse_string(p, ret);
        case '[':
                return parse_array(p, depth + 1, ret);
        case '{':
                return parse_inline_table(p, depth + 1, ret);
        default:
                return parse_scalar(p, ret);
        }
}

int toml_parse(const char *buf, size_t len, TomlValue **ret, TomlError *error) {
        _cleanup_(toml_value_freep) TomlValue *root = NULL;
        Parser p = {
                .buf = buf,
                .len = len,
                .line = 1,
                .error = error,
        };
        int r;

        if (error)
                *error = (TomlError){};
        if (!buf && len > 0)
                return -EINVAL;
        if (len > TOML_BYTES_MAX)
                return fail_at(&p, TOML_E_LIMIT, (Mark){0, 0}, "more than %d bytes",
                               TOML_BYTES_MAX);

        r = check_encoding(&p);
        if (r < 0)
                return r;

        root = value_new(TOML_TABLE, (Mark){1, 1});
        if (!root)
                return -ENOMEM;

        for (;;) {
                skip_ws(&p);
                if (eof(&p))
                        break;
                if (at_newline(&p)) {
                        skip_newline(&p);
                        continue;
                }
                if (peek(&p) == '#') {
                        skip_comment(&p);
                        continue;
                }
                if (peek(&p) == '[')
                        return fail(&p, TOML_E_UNSUPPORTED,
                                    "table headers ([table], [[array]]) are not supported; write "
                                    "key = { ... } instead");

                r = parse_key_value(&p, root, 0);
                if (r < 0)
                        return r;

                skip_ws(&p);
                skip_comment(&p);
                if (!eof(&p) && !at_newline(&p))
                        return fail(&p, TOML_E_SYNTAX,
                                    "expected the end of the line after a value");
        }

        *ret = TAKE_PTR(root);
        return 0;
}
