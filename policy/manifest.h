/* plugin.toml: the strict parser and validator of a plugin's manifest (the contract's Manifest and
 * Inputs). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MANIFEST_BYTES_MAX   (64 * 1024) /* a larger plugin.toml is refused before parsing */
#define MANIFEST_INPUTS_MAX  4
#define MANIFEST_ACCEPTS_MAX 16

typedef enum ManifestError {
        MANIFEST_OK = 0,
        E_MANIFEST_TOO_LARGE,   /* over MANIFEST_BYTES_MAX */
        E_MANIFEST_UTF8,        /* invalid UTF-8 or a NUL/control character */
        E_MANIFEST_SYNTAX,      /* not the TOML subset a manifest is written in */
        E_MANIFEST_UNSUPPORTED, /* valid TOML lockd refuses to guess about: tables, floats, dates,
                                   ... */
        E_MANIFEST_DUPLICATE_KEY,
        E_MANIFEST_UNKNOWN_KEY,
        E_MANIFEST_MISSING_KEY,
        E_MANIFEST_TYPE, /* a key has a value of the wrong type */
        E_MANIFEST_NAME,
        E_MANIFEST_VERSION,
        E_MANIFEST_PROTOCOL,
        E_MANIFEST_TEXT, /* question, one or zero empty or too long */
        E_MANIFEST_ACCEPTS,
        E_MANIFEST_LIMITS,
        E_MANIFEST_MEMORY,
        E_MANIFEST_PROTOCOL_KEY, /* inputs or detail on a protocol-1 manifest */
        E_MANIFEST_INPUT,        /* a bad input declaration */
        E_MANIFEST_PLACEHOLDER,  /* ${...} in the question that is not a declared input, or an input
                                    not named */
        _E_MANIFEST_MAX,
} ManifestError;

typedef enum InputKind {
        INPUT_KIND_TEXT,
        INPUT_KIND_EMAIL,
        INPUT_KIND_DIGITS,
} InputKind;

typedef struct ManifestInput {
        char name[33];
        InputKind kind;
        unsigned max_bytes; /* 1..1024 */
} ManifestInput;

typedef struct Manifest {
        char *name;
        char *version;
        unsigned version_major, version_minor, version_patch;
        unsigned protocol;
        char *question;
        char *one;
        char *zero;
        char **accepts; /* NULL-terminated */
        size_t n_accepts;
        uint64_t cpu_s;
        uint64_t memory_bytes;
        uint64_t timeout_s;
        ManifestInput inputs[MANIFEST_INPUTS_MAX];
        size_t n_inputs;
        bool detail;
} Manifest;

typedef struct ManifestDiag {
        ManifestError code;
        unsigned line;   /* 1-based; 0 when the error has no place (a missing key) */
        unsigned column; /* 1-based, in bytes */
        char message[200];
} ManifestDiag;

/*
 * Parses and validates buf (len bytes, not NUL-terminated). Returns 0 and a new Manifest in *ret,
 * or a negative errno (-EINVAL for any manifest error, with *diag filled; -ENOMEM) and leaves
 * *ret untouched.
 */
int manifest_parse(const char *buf, size_t len, Manifest **ret, ManifestDiag *diag);
Manifest *manifest_free(Manifest *m);
static inline void manifest_freep(Manifest **m) {
        if (*m)
                manifest_free(*m);
}

/*
 * The manifest's rules for a plugin name and a version, for names and versions that arrive
 * elsewhere (an index, a store directory): true when the NUL-terminated string passes them.
 */
bool manifest_name_valid(const char *name);
bool manifest_version_valid(const char *version);

/* The code's name as documented ("E_MANIFEST_SYNTAX"). */
const char *manifest_error_name(ManifestError e);
/* Looks up a declared input by name; NULL when there is none. */
const ManifestInput *manifest_find_input(const Manifest *m, const char *name);
const char *input_kind_name(InputKind k);
