/* An audit record's canonical line made directly from a field array: no JSON object is built, no
 * key sorted by a library, one allocation per record (ARCHITECTURE.md, the audit log). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit-line.h"
#include "codec.h"
#include "macro.h"

/* The record's own keys, beside at most AUDIT_FIELDS_MAX of the caller's. */
#define KEYS_MAX (AUDIT_FIELDS_MAX + 4)

/* Appends to a buffer of AUDIT_LINE_MAX bytes (on the caller's stack); past it, only the overflow
 * is noted. */
typedef struct Out {
        char buf[AUDIT_LINE_MAX + 1];
        size_t len;
        bool overflow;
} Out;

static void put(Out *o, const char *s, size_t n) {
        if (o->overflow || n > AUDIT_LINE_MAX - o->len) {
                o->overflow = true;
                return;
        }
        memcpy(o->buf + o->len, s, n);
        o->len += n;
}

static void put_str(Out *o, const char *s) {
        put(o, s, strlen(s));
}

/* \uXXXX in upper-case hex, as jansson writes it. */
static void put_u16(Out *o, unsigned cp) {
        char seq[7];

        snprintf(seq, sizeof(seq), "\\u%04X", cp);
        put(o, seq, 6);
}

/* The characters jansson writes with a short escape. */
static const char *const short_escapes['\\' + 1] = {
        ['"'] = "\\\"", ['\\'] = "\\\\", ['\b'] = "\\b", ['\f'] = "\\f",
        ['\n'] = "\\n", ['\r'] = "\\r",  ['\t'] = "\\t",
};

/*
 * A JSON string as json_dumps() writes it with JSON_ENSURE_ASCII: quote, backslash and the
 * controls with jansson's short escapes where it has one (\b \f \n \r \t) and \u00XX otherwise,
 * every character past U+007F as \uXXXX (a surrogate pair past the BMP), the rest as it is. s was
 * checked to be UTF-8.
 */
static void put_json_string(Out *o, const char *s, size_t len) {
        put(o, "\"", 1);
        for (size_t i = 0; i < len;) {
                size_t run = i;
                uint32_t cp;
                int k;

                while (run < len && (uint8_t)s[run] >= 0x20 && (uint8_t)s[run] < 0x80 &&
                       s[run] != '"' && s[run] != '\\')
                        run++;
                put(o, s + i, run - i);
                i = run;
                if (i >= len)
                        break;
                k = utf8_decode(s + i, len - i, &cp);
                if (k <= 0) {
                        o->overflow = true; /* cannot happen: checked by the caller */
                        return;
                }
                i += (size_t)k;
                if (cp < ELEMENTSOF(short_escapes) && short_escapes[cp])
                        put_str(o, short_escapes[cp]);
                else if (cp < 0x10000)
                        put_u16(o, cp);
                else {
                        cp -= 0x10000;
                        put_u16(o, 0xD800 | ((cp >> 10) & 0x3FF));
                        put_u16(o, 0xDC00 | (cp & 0x3FF));
                }
        }
        put(o, "\"", 1);
}

/* A key of the line (a caller's field or one of the record's own) and its text: a string as it
 * is, else the value's JSON spelling, which the journal copy shows too. */
typedef struct Key {
        const AuditField *field;
        const char *text;
} Key;

static int key_compare(const void *a, const void *b) {
        return strcmp(((const Key *)a)->field->name, ((const Key *)b)->field->name);
}

static const char *value_text(const AuditField *f, char num[static 24]) {
        switch (f->kind) {
        case AUDIT_VALUE_STRING:
                return f->string;
        case AUDIT_VALUE_INTEGER:
                snprintf(num, 24, "%" PRId64, f->integer);
                return num;
        case AUDIT_VALUE_TRUE:
                return "true";
        case AUDIT_VALUE_FALSE:
                return "false";
        default:
                return "null";
        }
}

/* Checks the caller's fields; 0 or -EINVAL. */
static int fields_check(const AuditField *fields, size_t n) {
        if (n > AUDIT_FIELDS_MAX || (n > 0 && !fields))
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                const AuditField *f = &fields[i];

                if (!audit_field_name_allowed(f->name) ||
                    (unsigned)f->kind >= _AUDIT_VALUE_KIND_MAX)
                        return -EINVAL;
                if (f->kind == AUDIT_VALUE_STRING) {
                        size_t len;

                        if (!f->string)
                                return -EINVAL;
                        len = strlen(f->string);
                        if (len > AUDIT_STRING_MAX || !utf8_valid(f->string, len))
                                return -EINVAL;
                }
        }
        return 0;
}

int audit_line_format(uint64_t seq, uint64_t time, const char *prev, AuditEvent event,
                      const AuditField *fields, size_t n, AuditLine *ret) {
        const char *ev = audit_event_to_string(event);
        AuditField own[4];
        Key keys[KEYS_MAX];
        const char *texts[AUDIT_FIELDS_MAX];
        char nums[KEYS_MAX][24];
        size_t n_keys = 0, text = 0, at;
        Out o = {};
        char *buf;
        int r;

        if (!prev || !ev || !ret || seq > INT64_MAX || time > INT64_MAX)
                return -EINVAL;
        r = fields_check(fields, n);
        if (r < 0)
                return r;
        own[0] = audit_field_integer("seq", (int64_t)seq);
        own[1] = audit_field_integer("time", (int64_t)time);
        own[2] = audit_field_string("prev", prev);
        own[3] = audit_field_string("event", ev);
        for (size_t i = 0; i < ELEMENTSOF(own) + n; i++) {
                const AuditField *f = i < ELEMENTSOF(own) ? &own[i] : &fields[i - ELEMENTSOF(own)];

                keys[n_keys] = (Key){.field = f, .text = value_text(f, nums[n_keys])};
                if (i >= ELEMENTSOF(own)) {
                        texts[i - ELEMENTSOF(own)] = keys[n_keys].text;
                        text += strlen(f->name) + 1 + strlen(keys[n_keys].text) + 1;
                }
                n_keys++;
        }
        /* The keys in strcmp() order, as JSON_SORT_KEYS sorts them; one object, no name twice. */
        qsort(keys, n_keys, sizeof(Key), key_compare);
        for (size_t i = 1; i < n_keys; i++)
                if (strcmp(keys[i - 1].field->name, keys[i].field->name) == 0)
                        return -EINVAL;

        put(&o, "{", 1);
        for (size_t i = 0; i < n_keys; i++) {
                if (i > 0)
                        put(&o, ",", 1);
                put_json_string(&o, keys[i].field->name, strlen(keys[i].field->name));
                put(&o, ":", 1);
                if (keys[i].field->kind == AUDIT_VALUE_STRING)
                        put_json_string(&o, keys[i].text, strlen(keys[i].text));
                else
                        put_str(&o, keys[i].text);
        }
        put(&o, "}", 1);
        if (o.overflow)
                return -E2BIG;

        /* The record's one allocation: the line, its newline, then the journal's fields in the
         * caller's order. */
        buf = malloc(o.len + 2 + text);
        if (!buf)
                return -ENOMEM;
        memcpy(buf, o.buf, o.len);
        buf[o.len] = '\n';
        buf[o.len + 1] = 0;
        at = o.len + 2;
        for (size_t i = 0; i < n; i++) {
                size_t nl = strlen(fields[i].name) + 1, tl = strlen(texts[i]) + 1;

                memcpy(buf + at, fields[i].name, nl);
                memcpy(buf + at + nl, texts[i], tl);
                at += nl + tl;
        }
        *ret = (AuditLine){.buf = buf, .len = o.len, .n_text = n};
        return 0;
}

int audit_line_fields_from_json(json_t *o, AuditField *out) {
        const char *key;
        json_t *v;
        size_t n = 0;

        if (!o)
                return 0;
        if (!json_is_object(o) || json_object_size(o) > AUDIT_FIELDS_MAX)
                return -EINVAL;
        json_object_foreach(o, key, v) {
                if (n >= AUDIT_FIELDS_MAX || !audit_value_allowed(v))
                        return -EINVAL;
                switch (json_typeof(v)) {
                case JSON_STRING:
                        /* audit_value_allowed() refused a NUL inside: strlen() is its length. */
                        out[n] = audit_field_string(key, json_string_value(v));
                        break;
                case JSON_INTEGER:
                        out[n] = audit_field_integer(key, (int64_t)json_integer_value(v));
                        break;
                case JSON_TRUE:
                case JSON_FALSE:
                        out[n] = audit_field_bool(key, json_is_true(v));
                        break;
                default:
                        out[n] = audit_field_null(key);
                        break;
                }
                n++;
        }
        return (int)n;
}
