/* A small, strict parser for the TOML 1.0 subset plugin.toml is written in; refuses the rest. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The subset: top-level `key = value` lines with bare keys; values are basic strings (every TOML
 * escape), literal strings, decimal integers, booleans, arrays (multi-line, comments, trailing
 * comma) and single-line inline tables. Comments anywhere a line may end. Everything else TOML has
 * (table headers, dotted or quoted keys, multi-line strings, floats, dates, hex/octal/binary
 * integers) is refused with TOML_E_UNSUPPORTED, never guessed at.
 */

#define TOML_BYTES_MAX (1024 * 1024) /* a larger buffer is refused before parsing */
#define TOML_DEPTH_MAX 8             /* arrays and inline tables nested in each other */
#define TOML_ITEMS_MAX 256           /* elements of one array, keys of one table */

typedef enum TomlErrorCode {
        TOML_OK = 0,
        TOML_E_SYNTAX,        /* not TOML, or TOML that breaks a rule of the spec */
        TOML_E_UNSUPPORTED,   /* valid TOML outside the subset */
        TOML_E_DUPLICATE_KEY, /* a key defined twice in one table */
        TOML_E_UTF8,          /* invalid UTF-8, or a control character other than tab */
        TOML_E_LIMIT,         /* past TOML_BYTES_MAX, TOML_DEPTH_MAX or TOML_ITEMS_MAX */
} TomlErrorCode;

typedef struct TomlError {
        TomlErrorCode code;
        unsigned line;   /* 1-based; 0 when the error has no place (the whole buffer) */
        unsigned column; /* 1-based, in bytes */
        char message[160];
} TomlError;

typedef enum TomlType {
        TOML_STRING,
        TOML_INTEGER,
        TOML_BOOLEAN,
        TOML_ARRAY,
        TOML_TABLE,
} TomlType;

typedef struct TomlValue TomlValue;

typedef struct TomlEntry {
        char *key;
        unsigned line, column; /* where the key starts */
        TomlValue *value;
} TomlEntry;

struct TomlValue {
        TomlType type;
        unsigned line, column; /* where the value starts: its quote, sign, digit, '[' or '{' */
        union {
                struct {
                        char *data; /* NUL-terminated, but may hold a NUL of its own (\u0000) */
                        size_t len; /* bytes, without the terminator */
                } string;
                int64_t integer;
                bool boolean;
                struct {
                        TomlValue **items;
                        size_t n;
                } array;
                struct {
                        TomlEntry *entries; /* in the order of the document */
                        size_t n;
                } table;
        };
};

/*
 * Parses buf (len bytes, need not be NUL-terminated) into a new TOML_TABLE in *ret. Returns 0, or
 * -EINVAL with *error filled (when error is not NULL), or -ENOMEM; *ret is untouched on failure.
 * Pure: no I/O, no logging.
 */
int toml_parse(const char *buf, size_t len, TomlValue **ret, TomlError *error);

/* Frees v and everything below it; returns NULL. */
TomlValue *toml_value_free(TomlValue *v);
static inline void toml_value_freep(TomlValue **v) {
        if (*v)
                toml_value_free(*v);
}

/* The entry of table with that key, or NULL (also when table is not a TOML_TABLE). */
const TomlEntry *toml_table_find(const TomlValue *table, const char *key);

/* "string", "integer", "boolean", "array", "inline table". */
const char *toml_type_name(TomlType t);
