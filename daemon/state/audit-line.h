/* An audit record's line, written without JSON objects: the caller's fields as a fixed array, the
 * canonical bytes (audit-chain.h) produced directly, and the journal copy's fields beside them. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit-chain.h"

typedef enum AuditValueKind {
        AUDIT_VALUE_NULL,
        AUDIT_VALUE_STRING,
        AUDIT_VALUE_INTEGER,
        AUDIT_VALUE_TRUE,
        AUDIT_VALUE_FALSE,
        _AUDIT_VALUE_KIND_MAX,
} AuditValueKind;

/* One caller field: a name audit_field_name_allowed() accepts and a scalar value. The strings are
 * borrowed for the call. */
typedef struct AuditField {
        const char *name;
        AuditValueKind kind;
        const char *string; /* AUDIT_VALUE_STRING: UTF-8, at most AUDIT_STRING_MAX bytes */
        int64_t integer;    /* AUDIT_VALUE_INTEGER */
} AuditField;

/* A string field, or null for a NULL string. */
static inline AuditField audit_field_string(const char *name, const char *s) {
        return (AuditField){
                .name = name, .kind = s ? AUDIT_VALUE_STRING : AUDIT_VALUE_NULL, .string = s};
}
static inline AuditField audit_field_integer(const char *name, int64_t i) {
        return (AuditField){.name = name, .kind = AUDIT_VALUE_INTEGER, .integer = i};
}
/* A counter: capped at the largest JSON integer, as the JSON writer did. */
static inline AuditField audit_field_counter(const char *name, uint64_t i) {
        return audit_field_integer(name, i > INT64_MAX ? INT64_MAX : (int64_t)i);
}
static inline AuditField audit_field_bool(const char *name, bool b) {
        return (AuditField){.name = name, .kind = b ? AUDIT_VALUE_TRUE : AUDIT_VALUE_FALSE};
}
static inline AuditField audit_field_null(const char *name) {
        return (AuditField){.name = name, .kind = AUDIT_VALUE_NULL};
}

/* A record's line and its journal copy's fields, in one allocation. */
typedef struct AuditLine {
        char *buf;     /* the line, its newline and a NUL; then each field as name NUL text NUL */
        size_t len;    /* the line's bytes without the newline */
        size_t n_text; /* fields in the text part */
} AuditLine;

/*
 * The canonical line of the record (seq, time, prev, event) with fields: one JSON object, keys
 * sorted, compact, every non-ASCII character escaped, exactly what json_dumps() with
 * AUDIT_JSON_FLAGS makes of the same object (tests/unit/test-audit.c compares the two). Fills
 * *ret (free ret->buf) with the line, a newline, a NUL, and for each field its name and its
 * journal text (a string as it is, an integer in decimal, true, false or null). 0; -EINVAL for a
 * refused name (audit_field_name_allowed()), a name given twice, a string that is not UTF-8 or is
 * longer than AUDIT_STRING_MAX, more than AUDIT_FIELDS_MAX fields; -E2BIG for a line longer than
 * AUDIT_LINE_MAX; -ENOMEM. *ret untouched on failure.
 */
int audit_line_format(uint64_t seq, uint64_t time, const char *prev, AuditEvent event,
                      const AuditField *fields, size_t n, AuditLine *ret);

/* The fields of a JSON object as AuditFields (borrowing its strings) into out (room for
 * AUDIT_FIELDS_MAX): their number, or -EINVAL for more of them, a value audit_value_allowed()
 * refuses or a string holding a NUL. */
int audit_line_fields_from_json(json_t *o, AuditField *out);
