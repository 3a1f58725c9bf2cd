/* A Go source file's imports and a go.mod's module path, read by the Go grammar (no I/O). */
#pragma once

#include <stddef.h>

#define GO_SOURCE_BYTES_MAX (4 * 1024 * 1024) /* one .go file, or go.mod */
#define GO_IMPORTS_MAX      1024              /* imports of one file */
#define GO_IMPORT_PATH_MAX  512               /* bytes of one decoded import or module path */

typedef enum GoSourceError {
        GO_SOURCE_OK = 0,
        E_GO_TOO_LARGE, /* over GO_SOURCE_BYTES_MAX, or past a cap */
        E_GO_SYNTAX,    /* not the Go grammar's package clause and import declarations */
        E_GO_PATH,      /* an import or module path Go refuses (empty, a space, a quote, ...) */
        E_GO_MODULE,    /* go.mod names no module, or in a form this reader does not take */
        _E_GO_SOURCE_MAX,
} GoSourceError;

/* Where and why a file was refused: line and column count from 1, the column in bytes (Go's). */
typedef struct GoSourceDiag {
        GoSourceError code;
        unsigned line, column;
        char message[160];
} GoSourceDiag;

typedef struct GoImport {
        char *path;            /* decoded: "net\x2fhttp" is net/http */
        unsigned line, column; /* of the path's opening quote */
} GoImport;

typedef struct GoImports {
        GoImport *items;
        size_t n;
} GoImports;

/*
 * Reads the imports of one Go source file: a byte order mark, then the package clause, then every
 * import declaration, single (import "fmt") or grouped (import ( ... )), each spec with an
 * optional name (an alias, "." or "_") and an interpreted or raw string, with comments and
 * semicolons anywhere the grammar has them. Reading stops at the first declaration that is not an
 * import: Go allows no import after it. Escapes are decoded (\x, \u, \U, octal, the single-letter
 * ones), so a path is seen as the compiler sees it. 0 with *ret (free it with go_imports_free());
 * -EINVAL with diag filled; -ENOMEM. *ret untouched on failure.
 */
int go_imports_parse(const char *buf, size_t len, GoImports **ret, GoSourceDiag *diag);

GoImports *go_imports_free(GoImports *g);
static inline void go_imports_freep(GoImports **g) {
        if (*g)
                go_imports_free(*g);
}

/*
 * The module path of a go.mod: its module directive, the path bare or as a Go string, with //
 * comments anywhere. 0 with a new string in *ret; -EINVAL with diag filled (no module directive,
 * two of them, the block form, a bad path); -ENOMEM. *ret untouched on failure.
 */
int go_mod_module_path(const char *buf, size_t len, char **ret, GoSourceDiag *diag);

/* One replace directive of a go.mod: the module (any version) and where its source is. */
typedef struct GoReplace {
        char *module;
        char *dir; /* a directory (./x, ../x or absolute), as written; NULL: another module */
} GoReplace;

typedef struct GoReplaces {
        GoReplace *items;
        size_t n;
} GoReplaces;

#define GO_REPLACES_MAX 256

/*
 * The replace directives of a go.mod, single (replace a => ../a) and in blocks (replace ( ... )),
 * with or without versions on either side, paths bare or as Go strings. Only what the import
 * check needs: where the source of a required module lies when it is a local directory. 0 with
 * *ret (free with go_replaces_free()); -EINVAL with diag filled (a directive without "=>", more
 * than GO_REPLACES_MAX, a block not closed); -ENOMEM. *ret untouched on failure.
 */
int go_mod_replacements(const char *buf, size_t len, GoReplaces **ret, GoSourceDiag *diag);

GoReplaces *go_replaces_free(GoReplaces *r);
static inline void go_replaces_freep(GoReplaces **r) {
        if (*r)
                go_replaces_free(*r);
}

/* The error's name, E_GO_SYNTAX and so on. */
const char *go_source_error_name(GoSourceError e);
