/* The import check's pure parts: Go imports and go.mod, the allow-list, the C deny-list over an
 * ELF image's symbols, and the writable segments lint compares with the manifest's memory. */
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-run.h"
#include "data-cases.h"
#include "elf-image.h"
#include "go-imports.h"
#include "import-check.h"

static size_t read_file(const char *path, char **ret) {
        FILE *f = fopen(path, "rb");
        size_t n = 0, cap = 0;
        char *buf = NULL;
        int c;

        if (!f)
                return (size_t)-1;
        while ((c = fgetc(f)) != EOF) {
                if (n + 1 >= cap) {
                        cap = cap ? cap * 2 : 256;
                        buf = realloc(buf, cap);
                        ck_assert_ptr_nonnull(buf);
                }
                buf[n++] = (char)c;
        }
        fclose(f);
        if (!buf)
                buf = calloc(1, 1);
        buf[n] = 0;
        *ret = buf;
        return n;
}

/*
 * One case of tests/data/go-imports: main.go and expected, which lists "path line:col" per
 * import (valid) or "CODE line:col" (invalid).
 */
static int run_case(const char *kind, const char *name) {
        GoImports *g = NULL;
        GoSourceDiag d;
        char path[4096], *src = NULL, *expected = NULL, *got = NULL;
        size_t len, got_len = 0;
        FILE *out;
        int r, ret = 0;

        snprintf(path, sizeof(path), "%s/go-imports/%s/%s/main.go", data_dir(), kind, name);
        len = read_file(path, &src);
        ck_assert_msg(len != (size_t)-1, "cannot read %s", path);
        snprintf(path, sizeof(path), "%s/go-imports/%s/%s/expected", data_dir(), kind, name);
        ck_assert_msg(read_file(path, &expected) != (size_t)-1, "cannot read %s", path);

        out = open_memstream(&got, &got_len);
        ck_assert_ptr_nonnull(out);
        r = go_imports_parse(src, len, &g, &d);
        if (r == 0) {
                for (size_t i = 0; i < g->n; i++)
                        fprintf(out, "%s %u:%u\n", g->items[i].path, g->items[i].line,
                                g->items[i].column);
                go_imports_free(g);
        } else
                fprintf(out, "%s %u:%u\n", go_source_error_name(d.code), d.line, d.column);
        fclose(out);
        if (strcmp(got, expected) != 0 || (r == 0) != (strcmp(kind, "valid") == 0) ||
            (r < 0 && (r != -EINVAL || d.message[0] == 0))) {
                fprintf(stderr, "%s/%s: expected '%s', got '%s' (%d: %s)\n", kind, name, expected,
                        got, r, r < 0 ? d.message : "");
                ret = -1;
        }
        free(src);
        free(expected);
        free(got);
        return ret;
}

START_TEST(test_data_valid) {
        unsigned failed, count = data_cases_run("go-imports", "valid", run_case, &failed);

        ck_assert_uint_ge(count, 5);
        ck_assert_uint_eq(failed, 0);
}
END_TEST

START_TEST(test_data_invalid) {
        unsigned failed, count = data_cases_run("go-imports", "invalid", run_case, &failed);

        ck_assert_uint_ge(count, 5);
        ck_assert_uint_eq(failed, 0);
}
END_TEST

START_TEST(test_caps) {
        GoImports *sentinel = (GoImports *)&sentinel, *g = sentinel;
        GoSourceDiag d;
        size_t len = strlen("package p\nimport (\n") + (GO_IMPORTS_MAX + 1) * 5 + 2;
        char *src = malloc(len + 1), *p = src;

        ck_assert_ptr_nonnull(src);
        p += sprintf(p, "package p\nimport (\n");
        for (int i = 0; i <= GO_IMPORTS_MAX; i++)
                p += sprintf(p, "\"%c%c\"\n", 'a' + i % 26, 'a' + i / 26 % 26);
        p += sprintf(p, ")");
        ck_assert_int_eq(go_imports_parse(src, (size_t)(p - src), &g, &d), -EINVAL);
        ck_assert_int_eq(d.code, E_GO_TOO_LARGE);
        ck_assert_ptr_eq(g, sentinel);
        free(src);

        /* A path past GO_IMPORT_PATH_MAX bytes, and a file past GO_SOURCE_BYTES_MAX. */
        src = malloc(GO_SOURCE_BYTES_MAX + 2);
        ck_assert_ptr_nonnull(src);
        len = (size_t)sprintf(src, "package p\nimport \"");
        memset(src + len, 'a', GO_IMPORT_PATH_MAX + 1);
        len += GO_IMPORT_PATH_MAX + 1;
        src[len++] = '"';
        ck_assert_int_eq(go_imports_parse(src, len, &g, &d), -EINVAL);
        ck_assert_int_eq(d.code, E_GO_TOO_LARGE);
        ck_assert_uint_eq(d.line, 2);
        ck_assert_uint_eq(d.column, 8);
        memset(src, ' ', GO_SOURCE_BYTES_MAX + 1);
        ck_assert_int_eq(go_imports_parse(src, GO_SOURCE_BYTES_MAX + 1, &g, &d), -EINVAL);
        ck_assert_int_eq(d.code, E_GO_TOO_LARGE);
        ck_assert_ptr_eq(g, sentinel);
        free(src);
}
END_TEST

START_TEST(test_go_mod) {
        static const struct {
                const char *text, *module; /* module NULL: refused with code */
                GoSourceError code;
        } cases[] = {
                {"module acme.is-empty\n\ngo 1.19\n", "acme.is-empty", 0},
                {"// c\nmodule   example.com/x // comment\nrequire lockd/sdk v0.0.0\n",
                 "example.com/x", 0},
                {"module \"example.com/q\"\n", "example.com/q", 0},
                {"module `example.com/raw`", "example.com/raw", 0},
                {"\tmodule example.com/tab\r\n", "example.com/tab", 0},
                {"go 1.19\n", NULL, E_GO_MODULE},
                {"module a.b\nmodule c.d\n", NULL, E_GO_MODULE},
                {"module (\n\ta.b\n)\n", NULL, E_GO_MODULE},
                {"module a.b c.d\n", NULL, E_GO_MODULE},
                {"module \"a b\"\n", NULL, E_GO_PATH},
                {"module \"\"\n", NULL, E_GO_PATH},
                {"module \"a.b\n", NULL, E_GO_SYNTAX},
                {"modules a.b\n", NULL, E_GO_MODULE},
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *sentinel = (char *)&sentinel, *m = sentinel;
                GoSourceDiag d;
                int r = go_mod_module_path(cases[i].text, strlen(cases[i].text), &m, &d);

                if (cases[i].module) {
                        ck_assert_msg(r == 0, "case %zu: %d %s", i, r, d.message);
                        ck_assert_str_eq(m, cases[i].module);
                        free(m);
                } else {
                        ck_assert_msg(r == -EINVAL, "case %zu: %d", i, r);
                        ck_assert_msg(d.code == cases[i].code, "case %zu: %s", i,
                                      go_source_error_name(d.code));
                        ck_assert_ptr_eq(m, sentinel);
                }
        }
}
END_TEST

START_TEST(test_go_mod_replace) {
        static const char mod[] = "module acme.x\n"
                                  "require (\n\tlockd/sdk v0.0.0 // replace => nowhere\n)\n"
                                  "replace lockd/sdk => ../../client/go\n"
                                  "// replace commented.out => /x\n"
                                  "replace (\n"
                                  "\tgithub.com/a/b => /usr/share/gocode/src/github.com/a/b\n"
                                  "\tgithub.com/c/d v1.2.3 => \"./third party/d\" // quoted\n"
                                  "\n"
                                  "\tgithub.com/e/f => github.com/e/g v1.0.0\n"
                                  ")\n"
                                  "replace example.com/h v0.1.0 => ../h\n";
        static const struct {
                const char *module, *dir;
        } want[] = {
                {"lockd/sdk", "../../client/go"},
                {"github.com/a/b", "/usr/share/gocode/src/github.com/a/b"},
                {"github.com/c/d", "./third party/d"},
                {"github.com/e/f", NULL},
                {"example.com/h", "../h"},
        };
        GoReplaces *sentinel = (GoReplaces *)&sentinel, *rs = sentinel;
        GoSourceDiag d;

        ck_assert_int_eq(go_mod_replacements(mod, strlen(mod), &rs, &d), 0);
        ck_assert_uint_eq(rs->n, sizeof(want) / sizeof(want[0]));
        for (size_t i = 0; i < rs->n; i++) {
                ck_assert_str_eq(rs->items[i].module, want[i].module);
                if (want[i].dir)
                        ck_assert_str_eq(rs->items[i].dir, want[i].dir);
                else
                        ck_assert_ptr_null(rs->items[i].dir);
        }
        go_replaces_free(rs);
        rs = sentinel;

        /* Broken directives, an unclosed block. */
        ck_assert_int_eq(go_mod_replacements("replace a\n", 10, &rs, &d), -EINVAL);
        ck_assert_int_eq(d.code, E_GO_MODULE);
        ck_assert_int_eq(go_mod_replacements("replace => b\n", 13, &rs, &d), -EINVAL);
        ck_assert_int_eq(go_mod_replacements("x => ../y v1\nreplace x => ../y v1\n", 34, &rs, &d),
                         -EINVAL);
        ck_assert_uint_eq(d.line, 2);
        ck_assert_int_eq(go_mod_replacements("replace (\n a => b\n", 18, &rs, &d), -EINVAL);
        ck_assert_uint_eq(d.line, 1);
        ck_assert_ptr_eq(rs, sentinel);
}
END_TEST

START_TEST(test_allow_list) {
        static const char *const allowed[] = {
                "fmt",          "os",          "io",
                "bytes",        "archive/zip", "compress/gzip",
                "encoding/xml", "image/png",   "unicode/utf8",
                "lockd/sdk",    "acme.x",      "acme.x/internal/y",
        };
        static const char *const denied[] = {
                "net",
                "net/http",
                "net/url",
                "net/mail",
                "os/exec",
                "os/signal",
                "os/user",
                "syscall",
                "unsafe",
                "plugin",
                "runtime/cgo",
                "runtime/debug",
                "runtime/pprof",
                "crypto/rand",
                "testing",
                "C",
                "lockd/sdk/sdktest",
                "lockd/sdkx",
                "internal/poll",
                "golang.org/x/sys/unix",
                "acme.xy",
                "./local",
                "vendor/x",
                "acme.x/../net",
        };

        for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
                ck_assert_msg(go_import_allowed("acme.x", allowed[i]), "%s", allowed[i]);
        for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++)
                ck_assert_msg(!go_import_allowed("acme.x", denied[i]), "%s", denied[i]);

        /* A module named after the standard library or the SDK owns nothing. */
        ck_assert_int_eq(go_module_path_check("acme.x"), 0);
        ck_assert_int_eq(go_module_path_check("example.com/plugins/x"), 0);
        ck_assert_int_eq(go_module_path_check("net"), -EINVAL);
        ck_assert_int_eq(go_module_path_check("net/evil"), -EINVAL);
        ck_assert_int_eq(go_module_path_check("lockd"), -EINVAL);
        ck_assert_int_eq(go_module_path_check("lockd/sdk/x"), -EINVAL);
        ck_assert_int_eq(go_module_path_check(""), -EINVAL);
        ck_assert_int_eq(go_module_path_check("./x"), -EINVAL);
        ck_assert(!go_import_allowed("net", "net"));
        ck_assert(!go_import_allowed("os", "os/exec"));
        ck_assert(!go_import_allowed("lockd", "lockd/sdk/sdktest"));
        ck_assert(go_import_allowed("netx.example", "netx.example/y"));
}
END_TEST

START_TEST(test_deny_list) {
        size_t n;
        const char *const *names = c_symbols_denied(&n);

        ck_assert_uint_ge(n, 16);
        for (size_t i = 0; i < n; i++)
                ck_assert_int_eq(c_symbol_denied(names[i], false), (int)i);
        ck_assert_int_ge(c_symbol_denied("socket", true), 0);
        ck_assert_int_ge(c_symbol_denied("execve", true), 0);
        /* Every static glibc binary defines dlopen: only a relocation tells. */
        ck_assert_int_ge(c_symbol_denied("dlopen", false), 0);
        ck_assert_int_eq(c_symbol_denied("dlopen", true), -1);
        ck_assert_int_eq(c_symbol_denied("__socket", false), -1);
        ck_assert_int_eq(c_symbol_denied("read", false), -1);
        ck_assert_int_eq(c_symbol_denied("socketx", false), -1);
        ck_assert_int_eq(c_symbol_denied("", false), -1);
}
END_TEST

/* A synthetic x86-64 ELF image: two PT_LOAD (one writable), a symbol table and optionally a
 * relocation section (not loaded) and a loaded one; returns its length. */
typedef struct ElfSpec {
        uint64_t rw_memsz;
        bool rela; /* a .rela.text, as --emit-relocs keeps it */
        unsigned rela_sym;
        bool alloc_rela; /* a loaded .rela.plt naming rela_sym */
        bool no_symtab;
} ElfSpec;

static const char strtab[] = "\0socket\0__socket\0main\0dlopen\0clone";
enum { SYM_NULL, SYM_SOCKET, SYM___SOCKET, SYM_MAIN, SYM_DLOPEN, SYM_CLONE, N_SYMS };

static size_t make_elf(uint8_t *buf, size_t size, const ElfSpec *s) {
        Elf64_Ehdr eh = {.e_type = ET_EXEC, .e_machine = EM_X86_64, .e_version = EV_CURRENT};
        Elf64_Phdr ph[2] = {
                {.p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_memsz = 4096},
                {.p_type = PT_LOAD, .p_flags = PF_R | PF_W, .p_memsz = s->rw_memsz},
        };
        Elf64_Shdr sh[5] = {};
        Elf64_Sym sym[N_SYMS] = {};
        Elf64_Rela rela = {.r_info = ELF64_R_INFO(s->rela_sym, R_X86_64_PLT32)};
        static const unsigned name_off[N_SYMS] = {0, 1, 8, 17, 22, 29};
        size_t off = sizeof(eh), n_sh = 1;

        memset(buf, 0, size);
        memcpy(eh.e_ident, ELFMAG, SELFMAG);
        eh.e_ident[EI_CLASS] = ELFCLASS64;
        eh.e_ident[EI_DATA] = ELFDATA2LSB;
        eh.e_ident[EI_VERSION] = EV_CURRENT;
        eh.e_phoff = off;
        eh.e_phentsize = sizeof(Elf64_Phdr);
        eh.e_phnum = 2;
        memcpy(buf + off, ph, sizeof(ph));
        off += sizeof(ph);

        for (unsigned i = 1; i < N_SYMS; i++) {
                sym[i].st_name = name_off[i];
                sym[i].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
                sym[i].st_shndx = 1;
        }
        memcpy(buf + off, sym, sizeof(sym));
        if (!s->no_symtab) {
                sh[n_sh++] = (Elf64_Shdr){.sh_type = SHT_SYMTAB,
                                          .sh_offset = off,
                                          .sh_size = sizeof(sym),
                                          .sh_link = 2,
                                          .sh_entsize = sizeof(Elf64_Sym)};
        }
        off += sizeof(sym);
        memcpy(buf + off, strtab, sizeof(strtab));
        sh[n_sh++] =
                (Elf64_Shdr){.sh_type = SHT_STRTAB, .sh_offset = off, .sh_size = sizeof(strtab)};
        off += sizeof(strtab);
        off = (off + 7) & ~(size_t)7;
        memcpy(buf + off, &rela, sizeof(rela));
        if (s->rela)
                sh[n_sh++] = (Elf64_Shdr){.sh_type = SHT_RELA,
                                          .sh_offset = off,
                                          .sh_size = sizeof(rela),
                                          .sh_link = 1,
                                          .sh_entsize = sizeof(Elf64_Rela)};
        if (s->alloc_rela)
                sh[n_sh++] = (Elf64_Shdr){.sh_type = SHT_RELA,
                                          .sh_flags = SHF_ALLOC,
                                          .sh_offset = off,
                                          .sh_size = sizeof(rela),
                                          .sh_link = 1,
                                          .sh_entsize = sizeof(Elf64_Rela)};
        off += sizeof(rela);
        eh.e_shoff = off;
        eh.e_shentsize = sizeof(Elf64_Shdr);
        eh.e_shnum = (uint16_t)n_sh;
        memcpy(buf + off, sh, n_sh * sizeof(Elf64_Shdr));
        off += n_sh * sizeof(Elf64_Shdr);
        memcpy(buf, &eh, sizeof(eh));
        ck_assert_uint_le(off, size);
        return off;
}

typedef struct Seen {
        char names[512];
} Seen;

static int collect(const char *name, void *userdata) {
        Seen *s = userdata;

        strncat(s->names, name, sizeof(s->names) - strlen(s->names) - 2);
        strcat(s->names, " ");
        return 0;
}

START_TEST(test_elf_symbols) {
        uint8_t buf[2048];
        Seen seen = {};
        bool relocations = true;
        size_t len;

        /* Without relocations: every named symbol of the table. */
        len = make_elf(buf, sizeof(buf), &(ElfSpec){.rw_memsz = 4096});
        ck_assert_int_eq(elf_symbols_foreach(buf, len, collect, &seen, &relocations), 0);
        ck_assert(!relocations);
        ck_assert_str_eq(seen.names, "socket __socket main dlopen clone ");

        /* A loaded relocation section (IRELATIVE, .rela.plt) is the loader's, not the code's. */
        memset(&seen, 0, sizeof(seen));
        len = make_elf(buf, sizeof(buf), &(ElfSpec){.alloc_rela = true, .rela_sym = SYM_SOCKET});
        ck_assert_int_eq(elf_symbols_foreach(buf, len, collect, &seen, &relocations), 0);
        ck_assert(!relocations);
        ck_assert_str_eq(seen.names, "socket __socket main dlopen clone ");

        /* With --emit-relocs' sections: only what the code refers to. */
        memset(&seen, 0, sizeof(seen));
        len = make_elf(buf, sizeof(buf), &(ElfSpec){.rela = true, .rela_sym = SYM___SOCKET});
        ck_assert_int_eq(elf_symbols_foreach(buf, len, collect, &seen, &relocations), 0);
        ck_assert(relocations);
        ck_assert_str_eq(seen.names, "__socket ");
        memset(&seen, 0, sizeof(seen));
        len = make_elf(buf, sizeof(buf), &(ElfSpec){.rela = true, .rela_sym = SYM_SOCKET});
        ck_assert_int_eq(elf_symbols_foreach(buf, len, collect, &seen, &relocations), 0);
        ck_assert_str_eq(seen.names, "socket ");

        /* A relocation past the table, a stripped image, a truncated one, not an ELF. */
        len = make_elf(buf, sizeof(buf), &(ElfSpec){.rela = true, .rela_sym = N_SYMS});
        ck_assert_int_eq(elf_symbols_foreach(buf, len, collect, &seen, NULL), -ENOEXEC);
        len = make_elf(buf, sizeof(buf), &(ElfSpec){.no_symtab = true});
        ck_assert_int_eq(elf_symbols_foreach(buf, len, collect, &seen, NULL), -ENOENT);
        len = make_elf(buf, sizeof(buf), &(ElfSpec){.rw_memsz = 1});
        ck_assert_int_eq(elf_symbols_foreach(buf, len - 1, collect, &seen, NULL), -ENOEXEC);
        ck_assert_int_eq(elf_symbols_foreach(buf, 100, collect, &seen, NULL), -ENOEXEC);
        buf[0] = 0;
        ck_assert_int_eq(elf_symbols_foreach(buf, len, collect, &seen, NULL), -ENOEXEC);
}
END_TEST

START_TEST(test_elf_writable) {
        uint8_t buf[2048];
        uint64_t w = 0;
        size_t len;

        len = make_elf(buf, sizeof(buf), &(ElfSpec){.rw_memsz = 40 << 20});
        ck_assert_int_eq(elf_writable_bytes(buf, len, &w), 0);
        ck_assert_uint_eq(w, 40 << 20); /* the read-execute segment does not count */
        ck_assert_int_eq(elf_writable_bytes(buf, 64 + 56, &w), -ENOEXEC);
        ck_assert_int_eq(elf_writable_bytes(buf, 10, &w), -ENOEXEC);
        ck_assert_uint_eq(w, 40 << 20); /* untouched on failure */
        len = make_elf(buf, sizeof(buf), &(ElfSpec){.rw_memsz = UINT64_MAX});
        /* one writable segment of UINT64_MAX fits; a second would not */
        ck_assert_int_eq(elf_writable_bytes(buf, len, &w), 0);
        buf[64 + 4] |= PF_W; /* the first segment writable too: the sum overflows */
        ck_assert_int_eq(elf_writable_bytes(buf, len, &w), -EOVERFLOW);
}
END_TEST

static Suite *import_check_suite(void) {
        Suite *s = suite_create("import-check");

        suite_add_case(s, NULL, test_data_valid);
        suite_add_case(s, NULL, test_data_invalid);
        suite_add_case(s, NULL, test_caps);
        suite_add_case(s, NULL, test_go_mod);
        suite_add_case(s, NULL, test_go_mod_replace);
        suite_add_case(s, NULL, test_allow_list);
        suite_add_case(s, NULL, test_deny_list);
        suite_add_case(s, NULL, test_elf_symbols);
        suite_add_case(s, NULL, test_elf_writable);
        return s;
}

int main(void) {
        return check_run(import_check_suite());
}
