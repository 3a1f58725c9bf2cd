/* plugin.toml validation: the contract's Manifest and Inputs rules on top of the strict TOML
 * subset. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "macro.h"
#include "manifest.h"
#include "toml.h"

#define MANIFEST_NAME_MAX           64
#define MANIFEST_TEXT_MAX           1024
#define MANIFEST_VERSION_DIGITS_MAX 9 /* per component, so it fits in unsigned */
#define MANIFEST_CPU_S_MAX          3600
#define MANIFEST_TIMEOUT_S_MAX      3600
#define MANIFEST_MEMORY_MIN         ((uint64_t)16 * 1024 * 1024)
#define MANIFEST_MEMORY_MAX         ((uint64_t)16 * 1024 * 1024 * 1024)
#define MANIFEST_INPUT_NAME_MAX     32
#define MANIFEST_INPUT_BYTES_MAX    1024
#define MIME_NAME_MAX               127 /* RFC 6838 4.2: each of type and subtype */

static const char *const error_names[_E_MANIFEST_MAX] = {
        [MANIFEST_OK] = "OK",
        [E_MANIFEST_TOO_LARGE] = "E_MANIFEST_TOO_LARGE",
        [E_MANIFEST_UTF8] = "E_MANIFEST_UTF8",
        [E_MANIFEST_SYNTAX] = "E_MANIFEST_SYNTAX",
        [E_MANIFEST_UNSUPPORTED] = "E_MANIFEST_UNSUPPORTED",
        [E_MANIFEST_DUPLICATE_KEY] = "E_MANIFEST_DUPLICATE_KEY",
        [E_MANIFEST_UNKNOWN_KEY] = "E_MANIFEST_UNKNOWN_KEY",
        [E_MANIFEST_MISSING_KEY] = "E_MANIFEST_MISSING_KEY",
        [E_MANIFEST_TYPE] = "E_MANIFEST_TYPE",
        [E_MANIFEST_NAME] = "E_MANIFEST_NAME",
        [E_MANIFEST_VERSION] = "E_MANIFEST_VERSION",
        [E_MANIFEST_PROTOCOL] = "E_MANIFEST_PROTOCOL",
        [E_MANIFEST_TEXT] = "E_MANIFEST_TEXT",
        [E_MANIFEST_ACCEPTS] = "E_MANIFEST_ACCEPTS",
        [E_MANIFEST_LIMITS] = "E_MANIFEST_LIMITS",
        [E_MANIFEST_MEMORY] = "E_MANIFEST_MEMORY",
        [E_MANIFEST_PROTOCOL_KEY] = "E_MANIFEST_PROTOCOL_KEY",
        [E_MANIFEST_INPUT] = "E_MANIFEST_INPUT",
        [E_MANIFEST_PLACEHOLDER] = "E_MANIFEST_PLACEHOLDER",
};

const char *manifest_error_name(ManifestError e) {
        if ((unsigned)e >= _E_MANIFEST_MAX)
                return NULL;
        return error_names[e];
}

static const char *const input_kind_names[] = {
        [INPUT_KIND_TEXT] = "text",
        [INPUT_KIND_EMAIL] = "email",
        [INPUT_KIND_DIGITS] = "digits",
};

const char *input_kind_name(InputKind k) {
        if ((unsigned)k >= ELEMENTSOF(input_kind_names))
                return NULL;
        return input_kind_names[k];
}

const ManifestInput *manifest_find_input(const Manifest *m, const char *name) {
        if (!m || !name)
                return NULL;
        for (size_t i = 0; i < m->n_inputs; i++)
                if (strcmp(m->inputs[i].name, name) == 0)
                        return &m->inputs[i];
        return NULL;
}

Manifest *manifest_free(Manifest *m) {
        if (!m)
                return NULL;

        free(m->name);
        free(m->version);
        free(m->question);
        free(m->one);
        free(m->zero);
        if (m->accepts)
                for (size_t i = 0; i < m->n_accepts; i++)
                        free(m->accepts[i]);
        free(m->accepts);
        free(m);
        return NULL;
}

/* Fills *d (when not NULL) and returns -EINVAL. */
static int fail(ManifestDiag *d, ManifestError code, unsigned line, unsigned column,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int fail(ManifestDiag *d, ManifestError code, unsigned line, unsigned column,
                const char *fmt, ...) {
        va_list ap;

        if (d) {
                d->code = code;
                d->line = line;
                d->column = column;
                va_start(ap, fmt);
                vsnprintf(d->message, sizeof(d->message), fmt, ap);
                va_end(ap);
        }
        return -EINVAL;
}

#define fail_value(d, code, v, ...) fail((d), (code), (v)->line, (v)->column, __VA_ARGS__)
#define fail_key(d, code, e, ...)   fail((d), (code), (e)->line, (e)->column, __VA_ARGS__)

/* Refuses (E_MANIFEST_TYPE, at the value) an entry whose value is not of the type wanted. */
static int expect_type(ManifestDiag *d, const TomlEntry *e, TomlType type) {
        if (e->value->type == type)
                return 0;
        return fail_value(
                d, E_MANIFEST_TYPE, e->value, "'%s' must be %s %s, not %s %s", e->key,
                type == TOML_INTEGER || type == TOML_TABLE ? "an" : "a", toml_type_name(type),
                e->value->type == TOML_INTEGER || e->value->type == TOML_TABLE ? "an" : "a",
                toml_type_name(e->value->type));
}

static bool is_lower_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/*
 * A plugin name: at most 64 bytes, two or more dot-separated segments, each of [a-z0-9-] that
 * starts and ends with a letter or digit ("pdf.has-blank-page"). Two segments at least, so that
 * the first names the format family; no dot or hyphen at either end, so that the name stays one
 * unambiguous token in the release tag <name>/v<version> and in "plugin.input" bindings.
 */
static bool name_is_valid(const char *s, size_t len) {
        size_t segments = 0;

        if (len == 0 || len > MANIFEST_NAME_MAX)
                return false;

        for (size_t i = 0; i < len;) {
                size_t start = i;

                while (i < len && (is_lower_alnum(s[i]) || s[i] == '-'))
                        i++;
                if (i == start || s[start] == '-' || s[i - 1] == '-')
                        return false;
                segments++;
                if (i == len)
                        break;
                if (s[i] != '.' || i + 1 == len)
                        return false;
                i++;
        }
        return segments >= 2;
}

/* SemVer 2.0.0 MAJOR.MINOR.PATCH exactly: no leading zeros, no pre-release, no build metadata. */
static int parse_version(const char *s, size_t len, unsigned ret[3]) {
        unsigned parts[3];
        size_t i = 0;

        for (size_t k = 0; k < 3; k++) {
                size_t start = i;
                unsigned v = 0;

                while (i < len && s[i] >= '0' && s[i] <= '9') {
                        if (i - start >= MANIFEST_VERSION_DIGITS_MAX)
                                return -ERANGE;
                        v = v * 10 + (unsigned)(s[i] - '0');
                        i++;
                }
                if (i == start || (s[start] == '0' && i - start > 1))
                        return -EINVAL;
                parts[k] = v;
                if (k < 2) {
                        if (i >= len || s[i] != '.')
                                return -EINVAL;
                        i++;
                }
        }
        if (i != len)
                return -EINVAL;

        memcpy(ret, parts, sizeof(parts));
        return 0;
}

/*
 * A memory size: decimal digits without sign, leading zero or separator, then exactly KiB, MiB or
 * GiB ("512MiB"), between 16 MiB and 16 GiB inclusive. Returns 0, -EINVAL (bad form) or -ERANGE.
 */
static int parse_memory(const char *s, size_t len, uint64_t *ret) {
        static const struct {
                const char *suffix;
                uint64_t factor;
        } units[] = {
                {"KiB", 1024},
                {"MiB", 1024 * 1024},
                {"GiB", 1024 * 1024 * 1024},
        };
        uint64_t v = 0;
        size_t i = 0;

        while (i < len && s[i] >= '0' && s[i] <= '9') {
                if (i >= 12) /* 10^12 KiB is far past the maximum already */
                        return -ERANGE;
                v = v * 10 + (uint64_t)(s[i] - '0');
                i++;
        }
        if (i == 0 || (s[0] == '0' && i > 1))
                return -EINVAL;

        for (size_t k = 0; k < ELEMENTSOF(units); k++)
                if (len - i == 3 && memcmp(s + i, units[k].suffix, 3) == 0) {
                        v *= units[k].factor; /* v < 10^12 and factor <= 2^30: no overflow */
                        if (v < MANIFEST_MEMORY_MIN || v > MANIFEST_MEMORY_MAX)
                                return -ERANGE;
                        *ret = v;
                        return 0;
                }
        return -EINVAL;
}

static bool is_ascii_alnum(char c) {
        return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/*
 * One name of a media type: an RFC 6838 restricted-name, in either case. IANA registers names
 * with capitals (application/vnd.ms-excel.sheet.macroEnabled.12), and RFC 6838 4.2 makes the
 * names case-insensitive, so they are taken as registered and compared without case.
 */
static bool mime_name_is_valid(const char *s, size_t len) {
        if (len == 0 || len > MIME_NAME_MAX || !is_ascii_alnum(s[0]))
                return false;
        for (size_t i = 1; i < len; i++)
                if (!is_ascii_alnum(s[i]) && !strchr("!#$&^_.+-", s[i]))
                        return false;
        return true;
}

/* Equal but for the case of ASCII letters, whatever the locale. */
static bool ascii_equal_nocase(const char *a, const char *b) {
        for (;; a++, b++) {
                char x = *a >= 'A' && *a <= 'Z' ? (char)(*a + 32) : *a;
                char y = *b >= 'A' && *b <= 'Z' ? (char)(*b + 32) : *b;

                if (x != y)
                        return false;
                if (!x)
                        return true;
        }
}

/* type/subtype, both restricted-names; no wildcard, no parameters. */
static bool mime_is_valid(const char *s, size_t len) {
        const char *slash = memchr(s, '/', len);

        if (!slash)
                return false;
        return mime_name_is_valid(s, (size_t)(slash - s)) &&
               mime_name_is_valid(slash + 1, len - (size_t)(slash - s) - 1);
}

/*
 * question, one and zero: non-empty, not only white space, at most 1024 bytes, and nothing that
 * would change how the console shows it: no control character but tab (C0, DEL, C1, also when
 * written as an escape) and no bidirectional override or isolate (U+202A..U+202E,
 * U+2066..U+2069). Returns 0 or -EINVAL with *ret_reason set.
 */
static int check_text(const char *s, size_t len, const char **ret_reason) {
        bool blank = true;

        if (len == 0) {
                *ret_reason = "is empty";
                return -EINVAL;
        }
        if (len > MANIFEST_TEXT_MAX) {
                *ret_reason = "is longer than 1024 bytes";
                return -EINVAL;
        }
        for (size_t i = 0; i < len;) {
                uint32_t cp;
                int n = utf8_decode(s + i, len - i, &cp);

                /* The TOML reader checked the encoding; a string decoded from escapes is
                 * checked again here, like any other. */
                if (n < 0) {
                        *ret_reason = "is not valid UTF-8";
                        return -EINVAL;
                }
                if ((cp < 0x20 && cp != '\t') || (cp >= 0x7f && cp <= 0x9f)) {
                        *ret_reason = "holds a control character";
                        return -EINVAL;
                }
                if ((cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)) {
                        *ret_reason = "holds a bidirectional override or isolate";
                        return -EINVAL;
                }
                if (cp != ' ' && cp != '\t')
                        blank = false;
                i += (size_t)n;
        }
        if (blank) {
                *ret_reason = "is only white space";
                return -EINVAL;
        }
        return 0;
}

static int take_string(const TomlValue *v, char **ret) {
        char *s = strndup(v->string.data, v->string.len);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int parse_text(ManifestDiag *d, const TomlEntry *e, char **ret) {
        const char *reason;
        int r;

        r = expect_type(d, e, TOML_STRING);
        if (r < 0)
                return r;
        if (check_text(e->value->string.data, e->value->string.len, &reason) < 0)
                return fail_value(d, E_MANIFEST_TEXT, e->value, "'%s' %s", e->key, reason);
        return take_string(e->value, ret);
}

static int parse_accepts(ManifestDiag *d, const TomlEntry *e, Manifest *m) {
        const TomlValue *a = e->value;
        char **accepts;
        int r;

        r = expect_type(d, e, TOML_ARRAY);
        if (r < 0)
                return r;
        if (a->array.n == 0)
                return fail_value(d, E_MANIFEST_ACCEPTS, a, "'accepts' is empty");
        if (a->array.n > MANIFEST_ACCEPTS_MAX)
                return fail_value(d, E_MANIFEST_ACCEPTS, a->array.items[MANIFEST_ACCEPTS_MAX],
                                  "'accepts' lists more than %d types", MANIFEST_ACCEPTS_MAX);

        for (size_t i = 0; i < a->array.n; i++) {
                const TomlValue *v = a->array.items[i];

                if (v->type != TOML_STRING)
                        return fail_value(d, E_MANIFEST_TYPE, v,
                                          "'accepts' must list strings, not %s",
                                          toml_type_name(v->type));
                if (!mime_is_valid(v->string.data, v->string.len))
                        return fail_value(d, E_MANIFEST_ACCEPTS, v,
                                          "'accepts' entry %zu is not a media type "
                                          "type/subtype",
                                          i + 1);
                /* The same type in another case is the same type (RFC 6838 4.2). */
                for (size_t k = 0; k < i; k++)
                        if (ascii_equal_nocase(a->array.items[k]->string.data, v->string.data))
                                return fail_value(d, E_MANIFEST_ACCEPTS, v,
                                                  "'accepts' lists '%s' twice", v->string.data);
        }

        accepts = calloc(a->array.n + 1, sizeof(char *));
        if (!accepts)
                return -ENOMEM;
        m->accepts = accepts;
        for (size_t i = 0; i < a->array.n; i++) {
                r = take_string(a->array.items[i], &m->accepts[i]);
                if (r < 0)
                        return r;
                m->n_accepts++;
        }
        return 0;
}

/* An integer limit in min..max, reported as E_MANIFEST_LIMITS. */
static int parse_bounded(ManifestDiag *d, const TomlEntry *e, ManifestError code, int64_t min,
                         int64_t max, const char *what, int64_t *ret) {
        int r;

        r = expect_type(d, e, TOML_INTEGER);
        if (r < 0)
                return r;
        if (e->value->integer < min || e->value->integer > max)
                return fail_value(d, code, e->value, "%s '%s' must be between %lld and %lld", what,
                                  e->key, (long long)min, (long long)max);
        *ret = e->value->integer;
        return 0;
}

/*
 * limits = { cpu_s, memory, timeout_s }, all three required. cpu_s is not required to be at most
 * timeout_s: RLIMIT_CPU counts the CPU time of every thread, so a multi-threaded plugin can use
 * more CPU seconds than wall-clock seconds.
 */
static int parse_limits(ManifestDiag *d, const TomlEntry *e, Manifest *m) {
        static const char *const required[] = {"cpu_s", "memory", "timeout_s"};
        const TomlValue *t = e->value;
        int64_t v = 0;
        int r;

        r = expect_type(d, e, TOML_TABLE);
        if (r < 0)
                return r;

        for (size_t i = 0; i < t->table.n; i++) {
                const TomlEntry *f = &t->table.entries[i];

                if (strcmp(f->key, "cpu_s") == 0) {
                        r = parse_bounded(d, f, E_MANIFEST_LIMITS, 1, MANIFEST_CPU_S_MAX, "limit",
                                          &v);
                        if (r < 0)
                                return r;
                        m->cpu_s = (uint64_t)v;
                } else if (strcmp(f->key, "timeout_s") == 0) {
                        r = parse_bounded(d, f, E_MANIFEST_LIMITS, 1, MANIFEST_TIMEOUT_S_MAX,
                                          "limit", &v);
                        if (r < 0)
                                return r;
                        m->timeout_s = (uint64_t)v;
                } else if (strcmp(f->key, "memory") == 0) {
                        r = expect_type(d, f, TOML_STRING);
                        if (r < 0)
                                return r;
                        r = parse_memory(f->value->string.data, f->value->string.len,
                                         &m->memory_bytes);
                        if (r == -ERANGE)
                                return fail_value(d, E_MANIFEST_MEMORY, f->value,
                                                  "'memory' must be between 16MiB and 16GiB");
                        if (r < 0)
                                return fail_value(d, E_MANIFEST_MEMORY, f->value,
                                                  "'memory' must be a whole number followed by "
                                                  "KiB, MiB or GiB, like \"512MiB\"");
                } else
                        return fail_key(d, E_MANIFEST_UNKNOWN_KEY, f,
                                        "unknown key '%s' in 'limits' (cpu_s, memory, timeout_s)",
                                        f->key);
        }

        for (size_t i = 0; i < ELEMENTSOF(required); i++)
                if (!toml_table_find(t, required[i]))
                        return fail_value(d, E_MANIFEST_MISSING_KEY, t,
                                          "'limits' lacks the key '%s'", required[i]);
        return 0;
}

static bool input_name_is_valid(const char *s, size_t len) {
        if (len == 0 || len > MANIFEST_INPUT_NAME_MAX)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!is_lower_alnum(s[i]) && s[i] != '_')
                        return false;
        return true;
}

/* One element of inputs: { name, kind, max_bytes }, all three required. */
static int parse_input(ManifestDiag *d, const TomlValue *t, const Manifest *m, ManifestInput *in) {
        static const char *const required[] = {"name", "kind", "max_bytes"};
        int64_t v = 0;
        int r;

        if (t->type != TOML_TABLE)
                return fail_value(d, E_MANIFEST_TYPE, t,
                                  "'inputs' must list inline tables { name, kind, max_bytes }, "
                                  "not %s",
                                  toml_type_name(t->type));

        for (size_t i = 0; i < t->table.n; i++) {
                const TomlEntry *f = &t->table.entries[i];

                if (strcmp(f->key, "name") == 0) {
                        r = expect_type(d, f, TOML_STRING);
                        if (r < 0)
                                return r;
                        if (!input_name_is_valid(f->value->string.data, f->value->string.len))
                                return fail_value(d, E_MANIFEST_INPUT, f->value,
                                                  "an input's name must be 1 to 32 of [a-z0-9_]");
                        if (manifest_find_input(m, f->value->string.data))
                                return fail_value(d, E_MANIFEST_INPUT, f->value,
                                                  "input '%s' declared twice",
                                                  f->value->string.data);
                        memcpy(in->name, f->value->string.data, f->value->string.len + 1);
                } else if (strcmp(f->key, "kind") == 0) {
                        bool found = false;

                        r = expect_type(d, f, TOML_STRING);
                        if (r < 0)
                                return r;
                        for (size_t k = 0; k < ELEMENTSOF(input_kind_names); k++)
                                if (strlen(input_kind_names[k]) == f->value->string.len &&
                                    strcmp(input_kind_names[k], f->value->string.data) == 0) {
                                        in->kind = (InputKind)k;
                                        found = true;
                                }
                        if (!found)
                                return fail_value(d, E_MANIFEST_INPUT, f->value,
                                                  "an input's kind must be text, email or digits");
                } else if (strcmp(f->key, "max_bytes") == 0) {
                        r = parse_bounded(d, f, E_MANIFEST_INPUT, 1, MANIFEST_INPUT_BYTES_MAX,
                                          "input", &v);
                        if (r < 0)
                                return r;
                        in->max_bytes = (unsigned)v;
                } else
                        return fail_key(d, E_MANIFEST_UNKNOWN_KEY, f,
                                        "unknown key '%s' in an input (name, kind, max_bytes)",
                                        f->key);
        }

        for (size_t i = 0; i < ELEMENTSOF(required); i++)
                if (!toml_table_find(t, required[i]))
                        return fail_value(d, E_MANIFEST_MISSING_KEY, t,
                                          "an input lacks the key '%s'", required[i]);
        return 0;
}

static int parse_inputs(ManifestDiag *d, const TomlEntry *e, Manifest *m) {
        const TomlValue *a = e->value;
        int r;

        r = expect_type(d, e, TOML_ARRAY);
        if (r < 0)
                return r;
        if (a->array.n == 0)
                return fail_value(d, E_MANIFEST_INPUT, a,
                                  "'inputs' is empty; leave the key out instead");
        if (a->array.n > MANIFEST_INPUTS_MAX)
                return fail_value(d, E_MANIFEST_INPUT, a->array.items[MANIFEST_INPUTS_MAX],
                                  "more than %d inputs", MANIFEST_INPUTS_MAX);

        for (size_t i = 0; i < a->array.n; i++) {
                ManifestInput in = {};

                r = parse_input(d, a->array.items[i], m, &in);
                if (r < 0)
                        return r;
                m->inputs[m->n_inputs++] = in;
        }
        return 0;
}

/*
 * Every ${...} in the question must name a declared input, and every input must be named at least
 * once. Reported at the question (or at the unnamed input's table) as E_MANIFEST_PLACEHOLDER.
 */
static int check_placeholders(ManifestDiag *d, const TomlValue *question, const TomlValue *inputs,
                              const Manifest *m) {
        const char *s = question->string.data;
        size_t len = question->string.len;

        for (size_t i = 0; i + 1 < len; i++) {
                const char *end;
                size_t n;
                char name[MANIFEST_INPUT_NAME_MAX + 1];

                if (s[i] != '$' || s[i + 1] != '{')
                        continue;
                end = memchr(s + i + 2, '}', len - i - 2);
                if (!end)
                        return fail_value(d, E_MANIFEST_PLACEHOLDER, question,
                                          "'${' at byte %zu of the question is not closed by '}'",
                                          i + 1);
                n = (size_t)(end - (s + i + 2));
                if (n == 0 || n > MANIFEST_INPUT_NAME_MAX || !input_name_is_valid(s + i + 2, n))
                        return fail_value(d, E_MANIFEST_PLACEHOLDER, question,
                                          "'${...}' at byte %zu of the question does not name an "
                                          "input",
                                          i + 1);
                memcpy(name, s + i + 2, n);
                name[n] = '\0';
                if (!manifest_find_input(m, name))
                        return fail_value(d, E_MANIFEST_PLACEHOLDER, question,
                                          "'${%s}' in the question is not a declared input", name);
                i = (size_t)(end - s);
        }

        for (size_t i = 0; i < m->n_inputs; i++) {
                char needle[MANIFEST_INPUT_NAME_MAX + 4];

                snprintf(needle, sizeof(needle), "${%s}", m->inputs[i].name);
                if (!strstr(s, needle))
                        return fail_value(d, E_MANIFEST_PLACEHOLDER, inputs->array.items[i],
                                          "input '%s' is not named in the question as %s",
                                          m->inputs[i].name, needle);
        }
        return 0;
}

static ManifestError toml_to_manifest_error(TomlErrorCode c) {
        switch (c) {
        case TOML_E_UNSUPPORTED:
                return E_MANIFEST_UNSUPPORTED;
        case TOML_E_DUPLICATE_KEY:
                return E_MANIFEST_DUPLICATE_KEY;
        case TOML_E_UTF8:
                return E_MANIFEST_UTF8;
        case TOML_E_LIMIT:
                return E_MANIFEST_TOO_LARGE;
        default:
                return E_MANIFEST_SYNTAX;
        }
}

/* The top-level "name" (e): a string that name_is_valid() accepts, copied into m->name. 0, or a
 * negative errno with diag filled. */
static int parse_name_key(ManifestDiag *diag, const TomlEntry *e, Manifest *m) {
        const TomlValue *v = e->value;
        int r;

        r = expect_type(diag, e, TOML_STRING);
        if (r < 0)
                return r;
        if (!name_is_valid(v->string.data, v->string.len))
                return fail_value(diag, E_MANIFEST_NAME, v,
                                  "'name' must be at most 64 bytes of two or more dot-separated "
                                  "segments of [a-z0-9-], like \"pdf.has-blank-page\"");
        return take_string(v, &m->name);
}

/* The top-level "version" (e): a string MAJOR.MINOR.PATCH, its parts and the string into m. 0,
 * or a negative errno with diag filled. */
static int parse_version_key(ManifestDiag *diag, const TomlEntry *e, Manifest *m) {
        const TomlValue *v = e->value;
        unsigned parts[3];
        int r;

        r = expect_type(diag, e, TOML_STRING);
        if (r < 0)
                return r;
        r = parse_version(v->string.data, v->string.len, parts);
        if (r < 0)
                return fail_value(diag, E_MANIFEST_VERSION, v,
                                  "'version' must be MAJOR.MINOR.PATCH (SemVer, no leading zeros, "
                                  "no pre-release or build)");
        m->version_major = parts[0];
        m->version_minor = parts[1];
        m->version_patch = parts[2];
        return take_string(v, &m->version);
}

/* The top-level "protocol" (e): the integer 1 or 2, into m. 0, or a negative errno with diag
 * filled. */
static int parse_protocol_key(ManifestDiag *diag, const TomlEntry *e, Manifest *m) {
        int r;

        r = expect_type(diag, e, TOML_INTEGER);
        if (r < 0)
                return r;
        if (e->value->integer != 1 && e->value->integer != 2)
                return fail_value(diag, E_MANIFEST_PROTOCOL, e->value, "'protocol' must be 1 or 2");
        m->protocol = (unsigned)e->value->integer;
        return 0;
}

/* The protocol-2 keys "inputs" and "detail" (e), refused on protocol 1; *inputs is set to the
 * "inputs" entry. 0, or a negative errno with diag filled. */
static int parse_protocol_2_key(ManifestDiag *diag, const TomlEntry *e, Manifest *m,
                                bool protocol_1, const TomlEntry **inputs) {
        int r;

        if (protocol_1)
                return fail_key(diag, E_MANIFEST_PROTOCOL_KEY, e, "'%s' needs protocol = 2",
                                e->key);
        if (strcmp(e->key, "inputs") == 0) {
                *inputs = e;
                return parse_inputs(diag, e, m);
        }
        r = expect_type(diag, e, TOML_BOOLEAN);
        if (r < 0)
                return r;
        m->detail = e->value->boolean;
        return 0;
}

/* One top-level key (e) into m, with protocol_1 whether the document says protocol = 1;
 * *question and *inputs are set to those entries. 0, or a negative errno with diag filled (an
 * unknown key included). */
static int parse_top_key(ManifestDiag *diag, const TomlEntry *e, Manifest *m, bool protocol_1,
                         const TomlEntry **question, const TomlEntry **inputs) {
        if (strcmp(e->key, "name") == 0)
                return parse_name_key(diag, e, m);
        if (strcmp(e->key, "version") == 0)
                return parse_version_key(diag, e, m);
        if (strcmp(e->key, "protocol") == 0)
                return parse_protocol_key(diag, e, m);
        if (strcmp(e->key, "question") == 0) {
                *question = e;
                return parse_text(diag, e, &m->question);
        }
        if (strcmp(e->key, "one") == 0)
                return parse_text(diag, e, &m->one);
        if (strcmp(e->key, "zero") == 0)
                return parse_text(diag, e, &m->zero);
        if (strcmp(e->key, "accepts") == 0)
                return parse_accepts(diag, e, m);
        if (strcmp(e->key, "limits") == 0)
                return parse_limits(diag, e, m);
        if (strcmp(e->key, "inputs") == 0 || strcmp(e->key, "detail") == 0)
                return parse_protocol_2_key(diag, e, m, protocol_1, inputs);
        return fail_key(diag, E_MANIFEST_UNKNOWN_KEY, e, "unknown key '%s'", e->key);
}

/*
 * The checks run in a fixed order, and the first failure is reported: the size, the TOML subset
 * (encoding first), then every top-level key in document order (unknown key, protocol-2 key on
 * protocol 1, type, value), then missing keys in the order of the contract, then placeholders.
 */
int manifest_parse(const char *buf, size_t len, Manifest **ret, ManifestDiag *diag) {
        static const char *const required[] = {"name", "version", "protocol", "question",
                                               "one",  "zero",    "accepts",  "limits"};
        _cleanup_(toml_value_freep) TomlValue *root = NULL;
        _cleanup_(manifest_freep) Manifest *m = NULL;
        const TomlEntry *protocol, *question = NULL, *inputs = NULL;
        bool protocol_1;
        TomlError te;
        int r;

        if (diag)
                *diag = (ManifestDiag){};
        if (!ret || (!buf && len > 0))
                return -EINVAL;
        if (len > MANIFEST_BYTES_MAX)
                return fail(diag, E_MANIFEST_TOO_LARGE, 0, 0, "plugin.toml is larger than %d bytes",
                            MANIFEST_BYTES_MAX);

        r = toml_parse(buf, len, &root, &te);
        if (r == -EINVAL)
                return fail(diag, toml_to_manifest_error(te.code), te.line, te.column, "%s",
                            te.message);
        if (r < 0)
                return r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;

        protocol = toml_table_find(root, "protocol");
        protocol_1 =
                protocol && protocol->value->type == TOML_INTEGER && protocol->value->integer == 1;

        for (size_t i = 0; i < root->table.n; i++) {
                r = parse_top_key(diag, &root->table.entries[i], m, protocol_1, &question, &inputs);
                if (r < 0)
                        return r;
        }

        for (size_t i = 0; i < ELEMENTSOF(required); i++)
                if (!toml_table_find(root, required[i]))
                        return fail(diag, E_MANIFEST_MISSING_KEY, 0, 0, "missing key '%s'",
                                    required[i]);

        r = check_placeholders(diag, question->value, inputs ? inputs->value : NULL, m);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(m);
        return 0;
}

bool manifest_name_valid(const char *name) {
        return name && name_is_valid(name, strlen(name));
}

bool manifest_version_valid(const char *version) {
        unsigned parts[3];

        return version && parse_version(version, strlen(version), parts) == 0;
}
