/*
 * lockctl plugin lint: a plugin directory checked offline (its manifest, and its binary's
 * writable segments against the manifest's memory), and with --source the import check of the
 * contract's Publishing section (ARCHITECTURE.md "Testing a plugin").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf-check.h"
#include "elf-image.h"
#include "fd-util.h"
#include "go-imports.h"
#include "import-check.h"
#include "lockctl-console.h"
#include "lockctl-plugin.h"
#include "lockctl.h"
#include "macro.h"
#include "manifest.h"

#define BINARY_BYTES_MAX   (1024 * MiB) /* a plugin binary lint reads */
#define SOURCE_DEPTH_MAX   32           /* directories below the source directory */
#define SOURCE_ENTRIES_MAX 100000       /* directory entries walked in all */
#define SOURCE_FILES_MAX   10000        /* .go files read in all */

/* A read-only private map of a file (an empty file maps to nothing). */
typedef struct Mapped {
        uint8_t *data;
        size_t len;
} Mapped;

static void mapped_done(Mapped *m) {
        if (m->data)
                (void)munmap(m->data, m->len);
        *m = (Mapped){};
}

/* Maps dirfd/name, a regular file of at most BINARY_BYTES_MAX bytes. 0 or -errno. */
static int map_file(int dirfd, const char *name, Mapped *ret) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        void *p;

        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0 || fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        if ((uint64_t)st.st_size > BINARY_BYTES_MAX)
                return -EFBIG;
        if (st.st_size == 0) {
                *ret = (Mapped){};
                return 0;
        }
        p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED)
                return negative_errno();
        *ret = (Mapped){.data = p, .len = (size_t)st.st_size};
        return 0;
}

/* What one lint run found: "error: ..." and "warning: ..." lines, in the order found. */
typedef struct Findings {
        json_t *errors, *warnings;
} Findings;

static void findings_done(Findings *f) {
        json_decref(f->errors);
        json_decref(f->warnings);
        *f = (Findings){};
}

static int findings_init(Findings *f) {
        f->errors = json_array();
        f->warnings = json_array();
        return f->errors && f->warnings ? 0 : -ENOMEM;
}

/* Adds one "error: CODE: ..." or "warning: CODE: ..." line. 0 or -ENOMEM. */
__attribute__((format(printf, 3, 4))) static int finding_add(json_t *list, const char *kind,
                                                             const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL, *line = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0 || asprintf(&line, "%s: %s", kind, msg) < 0)
                return -ENOMEM;
        return json_array_append_new(list, json_string(line)) < 0 ? -ENOMEM : 0;
}

/*
 * Prints the findings: every line, then "ok" when there is no error; or with --json one object
 * {"ok", "errors", "warnings"}. Returns the exit status: 0 without errors, else 1.
 */
static int findings_print(const Findings *f, bool json) {
        bool ok = json_array_size(f->errors) == 0;
        json_t *v;
        size_t i;

        if (json) {
                if (console_print_json_steal(json_pack("{s:b, s:O, s:O}", "ok", ok, "errors",
                                                       f->errors, "warnings", f->warnings)) != 0)
                        return LOCKCTL_EXIT_FAIL;
                return ok ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
        }
        json_array_foreach(f->warnings, i, v) printf("%s\n", json_string_value(v));
        json_array_foreach(f->errors, i, v) printf("%s\n", json_string_value(v));
        if (ok)
                printf("ok\n");
        return ok ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
}

/*
 * DIR/plugin, when there is one, against what lockd will do with it: a static x86-64 ELF, whose
 * writable segments fit the manifest's memory. The kernel maps those segments at execve under
 * RLIMIT_DATA = memory (ARCHITECTURE.md "The sandbox"); when they do not fit, the plugin dies
 * before its first instruction with a bare signal:SIGSEGV. Warnings only: lint checks the
 * manifest, and a binary may be rebuilt. 0 or -ENOMEM.
 */
static int lint_binary(int dirfd, const Manifest *m, Findings *f) {
        Mapped bin = {};
        uint64_t writable;
        int r;

        r = map_file(dirfd, "plugin", &bin);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return finding_add(f->warnings, "warning",
                                   "BINARY: plugin cannot be read: %s; lockd needs a static "
                                   "executable there",
                                   strerror(-r));
        r = elf_check_static(bin.data, bin.len);
        if (r == -ELIBEXEC)
                r = finding_add(f->warnings, "warning",
                                "BINARY: plugin is linked dynamically (it has an interpreter): "
                                "lockd refuses it; link it with -static (C) or build it with "
                                "CGO_ENABLED=0 (Go)");
        else if (r < 0 || elf_writable_bytes(bin.data, bin.len, &writable) < 0)
                r = finding_add(f->warnings, "warning",
                                "BINARY: plugin is not an x86-64 ELF executable: lockd refuses it");
        else if (writable > m->memory_bytes)
                r = finding_add(f->warnings, "warning",
                                "MEMORY_SEGMENTS: the binary's writable segments take %.1f MiB "
                                "(PT_LOAD with PF_W, memsz), more than the manifest's memory of "
                                "%.1f MiB (RLIMIT_DATA): every run would end as signal:SIGSEGV "
                                "before main; declare more memory than that, with room for what "
                                "the plugin allocates (lockd-plugin(7), MEMORY)",
                                writable / (double)MiB, m->memory_bytes / (double)MiB);
        mapped_done(&bin);
        return r;
}

/* lint DIR: the manifest, then the binary's warnings. */
static int lint_dir(const char *dir, bool json) {
        _cleanup_(manifest_freep) Manifest *m = NULL;
        _cleanup_close_ int dirfd = -1;
        _cleanup_free_ char *diag = NULL;
        Findings f = {};
        size_t diag_len = 0;
        FILE *out;
        int r;

        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", dir, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        if (!json) {
                r = plugin_load_manifest(dirfd, dir, &m, stdout, LOCKCTL_EXIT_FAIL);
                if (r != 0)
                        return r;
        } else {
                /* --json: the error line as lint prints it, in {"ok", "error"}. */
                out = open_memstream(&diag, &diag_len);
                if (!out)
                        return LOCKCTL_EXIT_FAIL;
                r = plugin_load_manifest(dirfd, dir, &m, out, LOCKCTL_EXIT_FAIL);
                fclose(out);
                if (r == LOCKCTL_EXIT_USAGE)
                        return r;
                if (r != 0) {
                        if (diag_len > 0 && diag[diag_len - 1] == '\n')
                                diag[--diag_len] = 0;
                        if (console_print_json_steal(
                                    json_pack("{s:b, s:s}", "ok", false, "error", diag)) != 0)
                                return LOCKCTL_EXIT_FAIL;
                        return r;
                }
        }
        if (findings_init(&f) < 0 || lint_binary(dirfd, m, &f) < 0) {
                findings_done(&f);
                fprintf(stderr, "lockctl: %s\n", strerror(ENOMEM));
                return LOCKCTL_EXIT_FAIL;
        }
        if (json)
                r = console_print_json_steal(json_pack("{s:b, s:n, s:O}", "ok", true, "error",
                                                       "warnings", f.warnings)) != 0
                            ? LOCKCTL_EXIT_FAIL
                            : LOCKCTL_EXIT_OK;
        else
                r = findings_print(&f, false);
        findings_done(&f);
        return r;
}

#define DEPENDENCIES_MAX 256 /* packages of local replacements checked */

/* The Go walk's state: the module, its go.mod's replacements, and what was found. */
typedef struct GoWalk {
        const char *module;
        const char *src; /* the source directory, for replacements written relative to it */
        const GoReplaces *replaces;
        Findings *f;
        size_t entries, files;
        char *visited[DEPENDENCIES_MAX]; /* dependency packages already checked */
        size_t n_visited;
} GoWalk;

static void go_walk_done(GoWalk *w) {
        for (size_t i = 0; i < w->n_visited; i++)
                free(w->visited[i]);
        w->n_visited = 0;
}

static int go_check_file(GoWalk *w, int dirfd, const char *name, const char *rel);

static bool has_suffix(const char *s, const char *suffix) {
        size_t n = strlen(s), k = strlen(suffix);

        return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Every entry but "." and "..": what to skip is decided per entry below. */
static bool not_dots(const char *name) {
        return strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

/* path is prefix itself or below it (prefix/...). */
static bool path_under(const char *path, const char *prefix) {
        size_t n = strlen(prefix);

        return strncmp(path, prefix, n) == 0 && (path[n] == 0 || path[n] == '/');
}

/*
 * A package outside the allow-list whose module go.mod replaces with a local directory (a
 * reviewed dependency's source, as the marketplace vendors Debian's): its own files, the
 * package's directory alone, are checked by the same rules, and the packages they import in
 * turn. Returns 1 when the package was (or is being) checked, its findings added; 0 when no
 * local replacement covers it (the caller refuses the import); -ENOMEM.
 */
static int go_check_dependency(GoWalk *w, const char *path) {
        _cleanup_free_ char *dir = NULL;
        _cleanup_close_ int fd = -1;
        const GoReplace *best = NULL;
        char **names = NULL;
        size_t n = 0;
        int r = 0;

        for (size_t i = 0; w->replaces && i < w->replaces->n; i++) {
                const GoReplace *g = &w->replaces->items[i];

                if (g->dir && path_under(path, g->module) &&
                    (!best || strlen(g->module) > strlen(best->module)))
                        best = g;
        }
        if (!best || strstr(path + strlen(best->module), "/..") ||
            strstr(path + strlen(best->module), "/./"))
                return 0;
        for (size_t i = 0; i < w->n_visited; i++)
                if (strcmp(w->visited[i], path) == 0)
                        return 1; /* checked already, or being checked up the stack */
        if (w->n_visited >= DEPENDENCIES_MAX)
                return finding_add(w->f->errors, "error",
                                   "GO_SOURCE: more than %d packages of local replacements",
                                   DEPENDENCIES_MAX) < 0
                               ? -ENOMEM
                               : 1;
        w->visited[w->n_visited] = strdup(path);
        if (!w->visited[w->n_visited])
                return -ENOMEM;
        w->n_visited++;

        if (asprintf(&dir, "%s%s%s%s", best->dir[0] == '/' ? "" : w->src,
                     best->dir[0] == '/' ? "" : "/", best->dir, path + strlen(best->module)) < 0)
                return -ENOMEM;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return finding_add(w->f->errors, "error", "GO_SOURCE: %s (the source of %s): %s",
                                   dir, path, strerror(errno)) < 0
                               ? -ENOMEM
                               : 1;
        r = dir_names_sorted(fd, not_dots, SOURCE_ENTRIES_MAX, &names, &n);
        if (r < 0)
                return finding_add(w->f->errors, "error", "GO_SOURCE: %s: %s", dir, strerror(-r)) <
                                       0
                               ? -ENOMEM
                               : 1;
        r = 0;
        for (size_t i = 0; i < n && r >= 0; i++) {
                _cleanup_free_ char *file = NULL;
                struct stat st;

                if (names[i][0] == '.' || names[i][0] == '_' || fstatat(fd, names[i], &st, 0) < 0 ||
                    !S_ISREG(st.st_mode))
                        continue;
                if (asprintf(&file, "%s/%s", dir, names[i]) < 0) {
                        r = -ENOMEM;
                        break;
                }
                if (has_suffix(names[i], ".s") || has_suffix(names[i], ".S") ||
                    has_suffix(names[i], ".sx") || has_suffix(names[i], ".syso"))
                        r = finding_add(w->f->errors, "error",
                                        "FILE_DENIED: %s (assembly or an object file: linked "
                                        "into the plugin past the import check)",
                                        file);
                else if (has_suffix(names[i], ".go") && !has_suffix(names[i], "_test.go")) {
                        if (++w->files > SOURCE_FILES_MAX) {
                                r = finding_add(w->f->errors, "error",
                                                "GO_SOURCE: more than %d .go files",
                                                SOURCE_FILES_MAX);
                                break;
                        }
                        r = go_check_file(w, fd, names[i], file);
                }
        }
        strv_free_n(names, n);
        return r < 0 ? r : 1;
}

/*
 * One .go file built into the plugin: each import outside the allow-list is an error, unless it
 * is a package of a local replacement whose own imports pass (go_check_dependency()).
 */
static int go_check_file(GoWalk *w, int dirfd, const char *name, const char *rel) {
        _cleanup_(go_imports_freep) GoImports *g = NULL;
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        GoSourceDiag diag;
        size_t len;
        int r;

        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return finding_add(w->f->errors, "error", "GO_SOURCE: %s: %s", rel,
                                   strerror(errno));
        r = read_full_fd(fd, GO_SOURCE_BYTES_MAX, &buf, &len);
        if (r < 0)
                return finding_add(w->f->errors, "error", "GO_SOURCE: %s: %s", rel,
                                   r == -EFBIG ? "larger than 4 MiB" : strerror(-r));
        r = go_imports_parse(buf, len, &g, &diag);
        if (r == -EINVAL)
                return finding_add(w->f->errors, "error", "GO_SYNTAX: %s (%s:%u:%u)", diag.message,
                                   rel, diag.line, diag.column);
        if (r < 0)
                return r;
        for (size_t i = 0; i < g->n; i++) {
                if (go_import_allowed(w->module, g->items[i].path))
                        continue;
                r = go_check_dependency(w, g->items[i].path);
                if (r == 0)
                        r = finding_add(w->f->errors, "error", "IMPORT_DENIED: %s (%s:%u:%u)",
                                        g->items[i].path, rel, g->items[i].line,
                                        g->items[i].column);
                if (r < 0)
                        return r;
        }
        return 0;
}

/*
 * Walks directory dirfd (rel its path below the source directory, "" for the top) as the go
 * command builds a module's packages: every .go file but tests (*_test.go), in every directory
 * but testdata and those whose name starts with '.' or '_'. Assembly and object files (.s, .S,
 * .sx, .syso) are linked without cgo, past any import: they are refused. 0 or -ENOMEM.
 */
static int go_walk(GoWalk *w, int dirfd, const char *rel, unsigned depth) {
        char **names = NULL;
        size_t n = 0;
        int r;

        r = dir_names_sorted(dirfd, not_dots, SOURCE_ENTRIES_MAX, &names, &n);
        if (r < 0)
                return finding_add(w->f->errors, "error", "GO_SOURCE: %s: %s", rel[0] ? rel : ".",
                                   strerror(-r));
        for (size_t i = 0; i < n && r >= 0; i++) {
                _cleanup_free_ char *path = NULL;
                const char *name = names[i];
                struct stat st;

                if (++w->entries > SOURCE_ENTRIES_MAX) {
                        r = finding_add(w->f->errors, "error",
                                        "GO_SOURCE: more than %d directory entries",
                                        SOURCE_ENTRIES_MAX);
                        break;
                }
                if (asprintf(&path, "%s%s%s", rel, rel[0] ? "/" : "", name) < 0) {
                        r = -ENOMEM;
                        break;
                }
                /* Symbolic links are followed, as the go command follows them. */
                if (fstatat(dirfd, name, &st, 0) < 0)
                        continue; /* a dangling link: nothing go would build */
                if (S_ISDIR(st.st_mode)) {
                        _cleanup_close_ int sub = -1;

                        if (name[0] == '.' || name[0] == '_' || strcmp(name, "testdata") == 0)
                                continue;
                        if (depth >= SOURCE_DEPTH_MAX) {
                                r = finding_add(w->f->errors, "error",
                                                "GO_SOURCE: %s: deeper than %d directories", path,
                                                SOURCE_DEPTH_MAX);
                                continue;
                        }
                        sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        if (sub < 0)
                                r = finding_add(w->f->errors, "error", "GO_SOURCE: %s: %s", path,
                                                strerror(errno));
                        else
                                r = go_walk(w, sub, path, depth + 1);
                        continue;
                }
                if (!S_ISREG(st.st_mode) || name[0] == '.' || name[0] == '_')
                        continue;
                if (has_suffix(name, ".s") || has_suffix(name, ".S") || has_suffix(name, ".sx") ||
                    has_suffix(name, ".syso"))
                        r = finding_add(w->f->errors, "error",
                                        "FILE_DENIED: %s (assembly or an object file: linked "
                                        "into the plugin past the import check)",
                                        path);
                else if (has_suffix(name, ".go") && !has_suffix(name, "_test.go")) {
                        if (++w->files > SOURCE_FILES_MAX) {
                                r = finding_add(w->f->errors, "error",
                                                "GO_SOURCE: more than %d .go files",
                                                SOURCE_FILES_MAX);
                                break;
                        }
                        r = go_check_file(w, dirfd, name, path);
                }
        }
        strv_free_n(names, n);
        return r < 0 ? r : 0;
}

/*
 * The Go check of src (go.mod there): its module path, then every package of the module, and
 * the packages of local replacements they import.
 */
static int lint_go(int srcfd, const char *src, Findings *f) {
        _cleanup_(go_replaces_freep) GoReplaces *replaces = NULL;
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL, *module = NULL;
        GoSourceDiag diag;
        size_t len;
        int r;

        fd = openat(srcfd, "go.mod", O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return finding_add(f->errors, "error", "GO_MOD: go.mod: %s", strerror(errno));
        r = read_full_fd(fd, GO_SOURCE_BYTES_MAX, &buf, &len);
        if (r < 0)
                return finding_add(f->errors, "error", "GO_MOD: go.mod: %s",
                                   r == -EFBIG ? "larger than 4 MiB" : strerror(-r));
        r = go_mod_module_path(buf, len, &module, &diag);
        if (r == -EINVAL)
                return finding_add(f->errors, "error", "GO_MOD: %s (go.mod:%u:%u)", diag.message,
                                   diag.line, diag.column);
        if (r < 0)
                return r;
        if (go_module_path_check(module) < 0)
                return finding_add(f->errors, "error",
                                   "GO_MOD: module %s: a path under the standard library's or "
                                   "the SDK's names is not a plugin's own (go.mod)",
                                   module);
        r = go_mod_replacements(buf, len, &replaces, &diag);
        if (r == -EINVAL)
                return finding_add(f->errors, "error", "GO_MOD: %s (go.mod:%u:%u)", diag.message,
                                   diag.line, diag.column);
        if (r < 0)
                return r;
        GoWalk w = {.module = module, .src = src, .replaces = replaces, .f = f};
        r = go_walk(&w, srcfd, "", 0);
        go_walk_done(&w);
        return r;
}

/* The C check's state: which deny-list names were seen. */
typedef struct SymbolSeen {
        bool seen[64];
        bool no_relocations;
} SymbolSeen;

static int symbol_seen(const char *name, void *userdata) {
        SymbolSeen *s = userdata;
        int k = c_symbol_denied(name, s->no_relocations);

        if (k >= 0 && (size_t)k < ELEMENTSOF(s->seen))
                s->seen[k] = true;
        return 0;
}

/*
 * The C check of the static binary `plugin` (in release, else src): the functions of the
 * deny-list its code refers to. With relocations (linked with -Wl,--emit-relocs) those are the
 * names its relocations use: the C library's own objects call their internal aliases (__socket,
 * __clone_internal), so only the plugin's references count. Without, the symbol table is all
 * there is, and a name in it is refused whoever brought it (a threaded plugin's C library brings
 * clone and socket: link it with --emit-relocs). A stripped binary cannot be checked: an error.
 */
static int lint_c(int binfd_dir, const char *bin_dir, Findings *f) {
        Mapped bin = {};
        SymbolSeen s = {};
        size_t n_denied;
        const char *const *denied = c_symbols_denied(&n_denied);
        bool relocations = false, any = false;
        int r;

        r = map_file(binfd_dir, "plugin", &bin);
        if (r < 0) {
                fprintf(stderr, "lockctl: %s/plugin: %s\n", bin_dir,
                        r == -EBADFD ? "not a regular file" : strerror(-r));
                return LOCKCTL_EXIT_USAGE;
        }
        /* First pass: are there relocations? The walk says so; the names are taken after. */
        r = elf_symbols_foreach(bin.data, bin.len, symbol_seen, &s, &relocations);
        if (r == 0 && !relocations) {
                s = (SymbolSeen){.no_relocations = true};
                r = elf_symbols_foreach(bin.data, bin.len, symbol_seen, &s, &relocations);
        }
        mapped_done(&bin);
        if (r == -ENOENT)
                return finding_add(f->errors, "error",
                                   "ELF_STRIPPED: %s/plugin has no symbol table: the import "
                                   "check reads it; build without -s and check before any strip",
                                   bin_dir);
        if (r < 0)
                return finding_add(f->errors, "error",
                                   "ELF_INVALID: %s/plugin is not an x86-64 ELF executable",
                                   bin_dir);
        for (size_t i = 0; i < n_denied && i < ELEMENTSOF(s.seen); i++)
                if (s.seen[i]) {
                        any = true;
                        r = finding_add(f->errors, "error", "SYMBOL_DENIED: %s", denied[i]);
                        if (r < 0)
                                return r;
                }
        if (any && !relocations)
                fprintf(stderr,
                        "note: %s/plugin has no relocations, so a name counts wherever it "
                        "is defined or used, the C library's own use included; link with "
                        "-Wl,--emit-relocs to count only the plugin's references\n",
                        bin_dir);
        return 0;
}

/* lint --source SRC [RELEASE]: the import check. */
static int lint_source(const char *src, const char *release, bool json) {
        _cleanup_close_ int srcfd = -1, relfd = -1;
        Findings f = {};
        int r;

        srcfd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (srcfd < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", src, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        if (release) {
                relfd = open(release, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (relfd < 0) {
                        fprintf(stderr, "lockctl: %s: %s\n", release, strerror(errno));
                        return LOCKCTL_EXIT_USAGE;
                }
        }
        if (findings_init(&f) < 0)
                return LOCKCTL_EXIT_FAIL;
        if (faccessat(srcfd, "go.mod", F_OK, 0) == 0)
                r = lint_go(srcfd, src, &f);
        else
                r = lint_c(relfd >= 0 ? relfd : srcfd, relfd >= 0 ? release : src, &f);
        if (r == LOCKCTL_EXIT_USAGE) {
                findings_done(&f);
                return r;
        }
        if (r < 0) {
                findings_done(&f);
                fprintf(stderr, "lockctl: %s\n", strerror(-r));
                return LOCKCTL_EXIT_FAIL;
        }
        r = findings_print(&f, json);
        findings_done(&f);
        return r;
}

int verb_plugin_lint(int argc, char **argv) {
        bool json = console_take_json(&argc, argv);
        const char *source = NULL, *dir = NULL, *release = NULL;

        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--source") == 0 && i + 1 < argc && !source)
                        source = argv[++i];
                else if (strncmp(argv[i], "--source=", 9) == 0 && argv[i][9] && !source)
                        source = argv[i] + 9;
                else if (argv[i][0] == '-') {
                        if (strcmp(argv[i], "--source") != 0)
                                fprintf(stderr, "lockctl: unknown option '%s'\n", argv[i]);
                        goto usage;
                } else if (!dir)
                        dir = argv[i];
                else if (!release)
                        release = argv[i];
                else
                        goto usage;
        }
        if (source && !release && !dir)
                return lint_source(source, NULL, json);
        if (source && !release)
                return lint_source(source, dir, json);
        if (!source && dir && !release)
                return lint_dir(dir, json);
usage:
        fprintf(stderr, "usage: lockctl plugin lint DIR [--json]\n"
                        "       lockctl plugin lint --source SRC_DIR [RELEASE_DIR] [--json]\n");
        return LOCKCTL_EXIT_USAGE;
}
