/* A Go source file's import declarations and a go.mod's module directive, read without the Go
 * toolchain: the lexical rules of the Go specification that these two need, and nothing more. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "go-imports.h"
#include "macro.h"

static const char *const error_names[_E_GO_SOURCE_MAX] = {
        [GO_SOURCE_OK] = "OK",         [E_GO_TOO_LARGE] = "E_GO_TOO_LARGE",
        [E_GO_SYNTAX] = "E_GO_SYNTAX", [E_GO_PATH] = "E_GO_PATH",
        [E_GO_MODULE] = "E_GO_MODULE",
};

const char *go_source_error_name(GoSourceError e) {
        return e >= 0 && e < _E_GO_SOURCE_MAX ? error_names[e] : "E_GO_UNKNOWN";
}

/* A position in the buffer, and its line and byte column (both from 1). */
typedef struct Lexer {
        const char *s;
        size_t len, pos;
        unsigned line, column;
        GoSourceDiag *diag;
} Lexer;

static void advance(Lexer *lx, size_t n) {
        for (size_t i = 0; i < n && lx->pos < lx->len; i++) {
                if (lx->s[lx->pos++] == '\n') {
                        lx->line++;
                        lx->column = 1;
                } else
                        lx->column++;
        }
}

static int fail_at(GoSourceDiag *d, GoSourceError code, unsigned line, unsigned column,
                   const char *fmt, ...) {
        va_list ap;

        d->code = code;
        d->line = line;
        d->column = column;
        va_start(ap, fmt);
        vsnprintf(d->message, sizeof(d->message), fmt, ap);
        va_end(ap);
        return -EINVAL;
}

static bool at(const Lexer *lx, const char *s) {
        size_t n = strlen(s);

        return lx->len - lx->pos >= n && memcmp(lx->s + lx->pos, s, n) == 0;
}

/*
 * Skips white space and comments; semicolons and newlines too when separators is true (between
 * declarations and between the specs of a group, where Go has or inserts a semicolon). An
 * unterminated comment is an error.
 */
static int skip_blank(Lexer *lx, bool separators) {
        while (lx->pos < lx->len) {
                char c = lx->s[lx->pos];

                if (c == ' ' || c == '\t' || c == '\r' || (separators && (c == '\n' || c == ';')))
                        advance(lx, 1);
                else if (c == '\n')
                        return 0;
                else if (at(lx, "//")) {
                        while (lx->pos < lx->len && lx->s[lx->pos] != '\n')
                                advance(lx, 1);
                } else if (at(lx, "/*")) {
                        unsigned line = lx->line, column = lx->column;
                        const char *end = NULL;

                        for (size_t i = lx->pos + 2; i + 1 < lx->len && !end; i++)
                                if (lx->s[i] == '*' && lx->s[i + 1] == '/')
                                        end = lx->s + i;
                        if (!end)
                                return fail_at(lx->diag, E_GO_SYNTAX, line, column,
                                               "comment not terminated");
                        advance(lx, (size_t)(end - (lx->s + lx->pos)) + 2);
                } else
                        return 0;
        }
        return 0;
}

/* Letters, digits, '_' and every non-ASCII byte (Go identifiers take Unicode letters). */
static bool ident_char(unsigned char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c >= 0x80;
}

/* The length of the identifier at the position (0 when there is none: it starts with a digit). */
static size_t ident_len(const Lexer *lx) {
        size_t n = 0;

        if (lx->pos < lx->len && lx->s[lx->pos] >= '0' && lx->s[lx->pos] <= '9')
                return 0;
        while (lx->pos + n < lx->len && ident_char((unsigned char)lx->s[lx->pos + n]))
                n++;
        return n;
}

static bool at_keyword(const Lexer *lx, const char *kw) {
        size_t n = strlen(kw);

        return ident_len(lx) == n && memcmp(lx->s + lx->pos, kw, n) == 0;
}

static int hex_value(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/*
 * Reads the escape at s[0] == '\\' of an interpreted string (n bytes left) into out (the decoded
 * bytes, *out_len of them). Returns the escape's length in the source, or -1 when Go refuses it.
 */
static int read_escape(const char *s, size_t n, char out[static 4], size_t *out_len) {
        static const char simple[] = "abfnrtv\\\"", value[] = "\a\b\f\n\r\t\v\\\"";
        const char *k;
        uint32_t v = 0;
        int digits;

        if (n < 2)
                return -1;
        if (s[1] != 0 && (k = strchr(simple, s[1]))) {
                out[0] = value[k - simple];
                *out_len = 1;
                return 2;
        }
        if (s[1] >= '0' && s[1] <= '7') {
                if (n < 4)
                        return -1;
                for (int i = 1; i <= 3; i++) {
                        if (s[i] < '0' || s[i] > '7')
                                return -1;
                        v = v * 8 + (uint32_t)(s[i] - '0');
                }
                if (v > 255)
                        return -1;
                out[0] = (char)v;
                *out_len = 1;
                return 4;
        }
        digits = s[1] == 'x' ? 2 : s[1] == 'u' ? 4 : s[1] == 'U' ? 8 : 0;
        if (digits == 0 || n < (size_t)digits + 2)
                return -1;
        for (int i = 2; i < digits + 2; i++) {
                int h = hex_value(s[i]);

                if (h < 0)
                        return -1;
                v = v * 16 + (uint32_t)h;
        }
        if (s[1] == 'x') {
                out[0] = (char)v;
                *out_len = 1;
        } else {
                if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
                        return -1;
                *out_len = utf8_encode(v, out);
        }
        return digits + 2;
}

/*
 * Reads the string literal at the position, interpreted ("...") or raw (`...`), into a new
 * decoded string of at most GO_IMPORT_PATH_MAX bytes. 0, or -EINVAL with the diag set (at the
 * literal's start) or -ENOMEM.
 */
static int read_string(Lexer *lx, char **ret) {
        unsigned line = lx->line, column = lx->column;
        char quote = lx->s[lx->pos], buf[GO_IMPORT_PATH_MAX];
        size_t n = 0;
        char *s;

        advance(lx, 1);
        for (;;) {
                char dec[4];
                size_t dec_len = 1;
                char c;

                if (lx->pos >= lx->len || (quote == '"' && lx->s[lx->pos] == '\n'))
                        return fail_at(lx->diag, E_GO_SYNTAX, line, column,
                                       "string literal not terminated");
                c = lx->s[lx->pos];
                if (c == quote) {
                        advance(lx, 1);
                        break;
                }
                if (quote == '"' && c == '\\') {
                        int k = read_escape(lx->s + lx->pos, lx->len - lx->pos, dec, &dec_len);

                        if (k < 0)
                                return fail_at(lx->diag, E_GO_SYNTAX, lx->line, lx->column,
                                               "unknown escape sequence");
                        advance(lx, (size_t)k);
                } else {
                        dec[0] = c;
                        advance(lx, 1);
                        /* A raw string drops carriage returns (the specification). */
                        if (quote == '`' && c == '\r')
                                continue;
                }
                if (n + dec_len > sizeof(buf))
                        return fail_at(lx->diag, E_GO_TOO_LARGE, line, column,
                                       "path longer than %d bytes", GO_IMPORT_PATH_MAX);
                memcpy(buf + n, dec, dec_len);
                n += dec_len;
        }
        s = strndup(buf, n);
        if (!s)
                return -ENOMEM;
        if (strlen(s) != n) {
                free(s);
                return fail_at(lx->diag, E_GO_PATH, line, column, "path holds a NUL byte");
        }
        *ret = s;
        return 0;
}

/*
 * An import path as the compiler takes it (cmd/compile's checkImportPath): non-empty, valid
 * UTF-8 without U+FFFD, no control character, space, backslash or any of !"#$%&'()*,:;<=>?[]^`{|}.
 */
static const char *path_problem(const char *p) {
        size_t len = strlen(p);

        if (len == 0)
                return "empty path";
        if (!utf8_valid(p, len))
                return "path is not valid UTF-8";
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)p[i];

                if (c < 0x21 || c == 0x7f || strchr("!\"#$%&'()*,:;<=>?[\\]^`{|}", c))
                        return "path holds a character Go refuses in an import path";
                if (c == 0xef && i + 2 < len && (unsigned char)p[i + 1] == 0xbf &&
                    (unsigned char)p[i + 2] == 0xbd)
                        return "path holds U+FFFD";
        }
        return NULL;
}

GoImports *go_imports_free(GoImports *g) {
        if (!g)
                return NULL;
        for (size_t i = 0; i < g->n; i++)
                free(g->items[i].path);
        free(g->items);
        free(g);
        return NULL;
}

/* One import spec: an optional name ("." , "_" or an identifier), then the path. */
static int read_spec(Lexer *lx, GoImports *g) {
        const char *problem;
        unsigned line, column;
        size_t n;
        char *path = NULL;
        int r;

        if (lx->pos < lx->len && lx->s[lx->pos] == '.')
                advance(lx, 1);
        else if ((n = ident_len(lx)) > 0)
                advance(lx, n);
        r = skip_blank(lx, false);
        if (r < 0)
                return r;
        if (lx->pos >= lx->len || (lx->s[lx->pos] != '"' && lx->s[lx->pos] != '`'))
                return fail_at(lx->diag, E_GO_SYNTAX, lx->line, lx->column,
                               "expected an import path (a string)");
        line = lx->line;
        column = lx->column;
        r = read_string(lx, &path);
        if (r < 0)
                return r;
        problem = path_problem(path);
        if (problem) {
                free(path);
                return fail_at(lx->diag, E_GO_PATH, line, column, "%s", problem);
        }
        if (g->n >= GO_IMPORTS_MAX) {
                free(path);
                return fail_at(lx->diag, E_GO_TOO_LARGE, line, column, "more than %d imports",
                               GO_IMPORTS_MAX);
        }
        g->items[g->n++] = (GoImport){.path = path, .line = line, .column = column};
        return 0;
}

int go_imports_parse(const char *buf, size_t len, GoImports **ret, GoSourceDiag *diag) {
        _cleanup_(go_imports_freep) GoImports *g = NULL;
        Lexer lx = {.s = buf, .len = len, .line = 1, .column = 1, .diag = diag};
        size_t n;
        int r;

        *diag = (GoSourceDiag){};
        if (len > GO_SOURCE_BYTES_MAX)
                return fail_at(diag, E_GO_TOO_LARGE, 0, 0, "larger than %d bytes",
                               GO_SOURCE_BYTES_MAX);
        g = calloc(1, sizeof(*g));
        if (!g)
                return -ENOMEM;
        g->items = calloc(GO_IMPORTS_MAX, sizeof(GoImport));
        if (!g->items)
                return -ENOMEM;

        /* A byte order mark is allowed as the file's first character, and only there. */
        if (at(&lx, "\xef\xbb\xbf"))
                advance(&lx, 3);
        r = skip_blank(&lx, true);
        if (r < 0)
                return r;
        if (!at_keyword(&lx, "package"))
                return fail_at(diag, E_GO_SYNTAX, lx.line, lx.column, "expected 'package'");
        advance(&lx, strlen("package"));
        r = skip_blank(&lx, false);
        if (r < 0)
                return r;
        n = ident_len(&lx);
        if (n == 0)
                return fail_at(diag, E_GO_SYNTAX, lx.line, lx.column, "expected the package name");
        advance(&lx, n);

        for (;;) {
                r = skip_blank(&lx, true);
                if (r < 0)
                        return r;
                if (!at_keyword(&lx, "import"))
                        break; /* the first other declaration, or the end: no import after it */
                advance(&lx, strlen("import"));
                /* No semicolon is inserted after the keyword: the spec may follow a newline. */
                r = skip_blank(&lx, false);
                while (r == 0 && lx.pos < lx.len && lx.s[lx.pos] == '\n') {
                        advance(&lx, 1);
                        r = skip_blank(&lx, false);
                }
                if (r < 0)
                        return r;
                if (lx.pos < lx.len && lx.s[lx.pos] == '(') {
                        advance(&lx, 1);
                        for (;;) {
                                r = skip_blank(&lx, true);
                                if (r < 0)
                                        return r;
                                if (lx.pos >= lx.len)
                                        return fail_at(diag, E_GO_SYNTAX, lx.line, lx.column,
                                                       "import group not closed");
                                if (lx.s[lx.pos] == ')') {
                                        advance(&lx, 1);
                                        break;
                                }
                                r = read_spec(&lx, g);
                                if (r < 0)
                                        return r;
                        }
                } else {
                        r = read_spec(&lx, g);
                        if (r < 0)
                                return r;
                }
        }
        *ret = TAKE_PTR(g);
        return 0;
}

int go_mod_module_path(const char *buf, size_t len, char **ret, GoSourceDiag *diag) {
        _cleanup_free_ char *module = NULL;
        Lexer lx = {.s = buf, .len = len, .line = 1, .column = 1, .diag = diag};
        int r;

        *diag = (GoSourceDiag){};
        if (len > GO_SOURCE_BYTES_MAX)
                return fail_at(diag, E_GO_TOO_LARGE, 0, 0, "larger than %d bytes",
                               GO_SOURCE_BYTES_MAX);
        if (memchr(buf, 0, len))
                return fail_at(diag, E_GO_MODULE, 0, 0, "go.mod holds a NUL byte");

        /* One directive per line: its first word, then its arguments up to the line's end. */
        while (lx.pos < lx.len) {
                unsigned line = lx.line, column;
                const char *problem;
                size_t n;

                r = skip_blank(&lx, false);
                if (r < 0)
                        return r;
                if (!at_keyword(&lx, "module")) {
                        while (lx.pos < lx.len && lx.s[lx.pos] != '\n')
                                advance(&lx, 1);
                        advance(&lx, 1);
                        continue;
                }
                if (module)
                        return fail_at(diag, E_GO_MODULE, line, lx.column,
                                       "a second module directive");
                advance(&lx, strlen("module"));
                r = skip_blank(&lx, false);
                if (r < 0)
                        return r;
                column = lx.column;
                if (lx.pos < lx.len && (lx.s[lx.pos] == '"' || lx.s[lx.pos] == '`')) {
                        r = read_string(&lx, &module);
                        if (r < 0)
                                return r;
                } else {
                        n = 0;
                        while (lx.pos + n < lx.len && !strchr(" \t\r\n", lx.s[lx.pos + n]) &&
                               !(lx.s[lx.pos + n] == '/' && lx.pos + n + 1 < lx.len &&
                                 lx.s[lx.pos + n + 1] == '/'))
                                n++;
                        if (n == 1 && lx.s[lx.pos] == '(')
                                return fail_at(diag, E_GO_MODULE, line, column,
                                               "the block form module ( ... ) is not taken");
                        if (n > GO_IMPORT_PATH_MAX)
                                return fail_at(diag, E_GO_TOO_LARGE, line, column,
                                               "module path longer than %d bytes",
                                               GO_IMPORT_PATH_MAX);
                        module = strndup(lx.s + lx.pos, n);
                        if (!module)
                                return -ENOMEM;
                        advance(&lx, n);
                }
                r = skip_blank(&lx, false);
                if (r < 0)
                        return r;
                if (lx.pos < lx.len && lx.s[lx.pos] != '\n')
                        return fail_at(diag, E_GO_MODULE, lx.line, lx.column,
                                       "unexpected text after the module path");
                problem = path_problem(module);
                if (problem)
                        return fail_at(diag, E_GO_PATH, line, column, "module %s", problem);
        }
        if (!module)
                return fail_at(diag, E_GO_MODULE, 0, 0, "go.mod has no module directive");
        *ret = TAKE_PTR(module);
        return 0;
}

GoReplaces *go_replaces_free(GoReplaces *r) {
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n; i++) {
                free(r->items[i].module);
                free(r->items[i].dir);
        }
        free(r->items);
        free(r);
        return NULL;
}

/* One word of a go.mod line: a Go string, or bare up to white space or a comment. */
static int read_word(Lexer *lx, char **ret) {
        size_t n = 0;

        if (lx->s[lx->pos] == '"' || lx->s[lx->pos] == '`')
                return read_string(lx, ret);
        while (lx->pos + n < lx->len && !strchr(" \t\r\n", lx->s[lx->pos + n]) &&
               !(lx->s[lx->pos + n] == '/' && lx->pos + n + 1 < lx->len &&
                 lx->s[lx->pos + n + 1] == '/'))
                n++;
        if (n > GO_IMPORT_PATH_MAX)
                return fail_at(lx->diag, E_GO_TOO_LARGE, lx->line, lx->column,
                               "word longer than %d bytes", GO_IMPORT_PATH_MAX);
        *ret = strndup(lx->s + lx->pos, n);
        if (!*ret)
                return -ENOMEM;
        advance(lx, n);
        return 0;
}

/* The words of the rest of the line, at most max of them, into words[]; their count. */
static int read_line_words(Lexer *lx, char **words, size_t max, size_t *ret_n) {
        size_t n = 0;
        int r;

        for (;;) {
                r = skip_blank(lx, false);
                if (r < 0)
                        return r;
                if (lx->pos >= lx->len || lx->s[lx->pos] == '\n')
                        break;
                if (n >= max)
                        return fail_at(lx->diag, E_GO_MODULE, lx->line, lx->column,
                                       "too many words in a replace directive");
                r = read_word(lx, &words[n]);
                if (r < 0)
                        return r;
                n++;
        }
        *ret_n = n;
        return 0;
}

/* A directory as go.mod writes one: ./x, ../x, an absolute path (or . and ..). */
static bool is_local_path(const char *p) {
        return p[0] == '/' || strcmp(p, ".") == 0 || strcmp(p, "..") == 0 ||
               strncmp(p, "./", 2) == 0 || strncmp(p, "../", 3) == 0;
}

/* One replace spec: words are "mod [ver] => target [ver]". Takes nothing from words. */
static int add_replace(Lexer *lx, unsigned line, char **words, size_t n, GoReplaces *rs) {
        size_t arrow = 0;
        GoReplace *it;

        while (arrow < n && strcmp(words[arrow], "=>") != 0)
                arrow++;
        if (arrow == 0 || arrow > 2 || arrow + 1 >= n || n - arrow - 1 > 2)
                return fail_at(lx->diag, E_GO_MODULE, line, 1,
                               "a replace directive is MODULE [VERSION] => TARGET [VERSION]");
        if (is_local_path(words[arrow + 1]) && n - arrow - 1 != 1)
                return fail_at(lx->diag, E_GO_MODULE, line, 1,
                               "a directory in a replace directive has no version");
        if (rs->n >= GO_REPLACES_MAX)
                return fail_at(lx->diag, E_GO_TOO_LARGE, line, 1, "more than %d replacements",
                               GO_REPLACES_MAX);
        it = &rs->items[rs->n];
        it->module = strdup(words[0]);
        it->dir = is_local_path(words[arrow + 1]) ? strdup(words[arrow + 1]) : NULL;
        if (!it->module || (is_local_path(words[arrow + 1]) && !it->dir)) {
                free(it->module);
                free(it->dir);
                return -ENOMEM;
        }
        rs->n++;
        return 0;
}

int go_mod_replacements(const char *buf, size_t len, GoReplaces **ret, GoSourceDiag *diag) {
        _cleanup_(go_replaces_freep) GoReplaces *rs = NULL;
        Lexer lx = {.s = buf, .len = len, .line = 1, .column = 1, .diag = diag};
        bool in_block = false;
        unsigned block_line = 0;
        int r;

        *diag = (GoSourceDiag){};
        if (len > GO_SOURCE_BYTES_MAX)
                return fail_at(diag, E_GO_TOO_LARGE, 0, 0, "larger than %d bytes",
                               GO_SOURCE_BYTES_MAX);
        if (memchr(buf, 0, len))
                return fail_at(diag, E_GO_MODULE, 0, 0, "go.mod holds a NUL byte");
        rs = calloc(1, sizeof(*rs));
        if (!rs)
                return -ENOMEM;
        rs->items = calloc(GO_REPLACES_MAX, sizeof(GoReplace));
        if (!rs->items)
                return -ENOMEM;

        while (lx.pos < lx.len) {
                unsigned line = lx.line;
                char *words[6] = {};
                size_t n = 0;

                r = skip_blank(&lx, false);
                if (r < 0)
                        return r;
                if (in_block) {
                        if (lx.pos < lx.len && lx.s[lx.pos] == ')') {
                                in_block = false;
                                advance(&lx, 1);
                        } else {
                                r = read_line_words(&lx, words, ELEMENTSOF(words), &n);
                                if (r >= 0 && n > 0)
                                        r = add_replace(&lx, line, words, n, rs);
                        }
                } else if (at_keyword(&lx, "replace")) {
                        advance(&lx, strlen("replace"));
                        r = skip_blank(&lx, false);
                        if (r >= 0 && lx.pos < lx.len && lx.s[lx.pos] == '(') {
                                advance(&lx, 1);
                                in_block = true;
                                block_line = line;
                        } else if (r >= 0) {
                                r = read_line_words(&lx, words, ELEMENTSOF(words), &n);
                                if (r >= 0)
                                        r = add_replace(&lx, line, words, n, rs);
                        }
                }
                for (size_t i = 0; i < ELEMENTSOF(words); i++)
                        free(words[i]);
                if (r < 0)
                        return r;
                /* The rest of the line (another directive's words, or nothing). */
                while (lx.pos < lx.len && lx.s[lx.pos] != '\n')
                        advance(&lx, 1);
                advance(&lx, 1);
        }
        if (in_block)
                return fail_at(diag, E_GO_MODULE, block_line, 1, "replace block not closed");
        *ret = TAKE_PTR(rs);
        return 0;
}
