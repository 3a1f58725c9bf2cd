/*
 * lockctl plugin new: a new plugin directory, in C or Go, protocol 1 or 2, that builds, lints and
 * passes its own fixtures at once (ARCHITECTURE.md "Testing a plugin").
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "lockctl-plugin.h"
#include "lockctl.h"
#include "macro.h"
#include "manifest.h"

/*
 * Where the SDKs are: lockplugin.h, and the Go module lockd/sdk (client/go). Installed under this
 * lockctl's own prefix (meson passes it), or under the two prefixes a Debian machine has (the
 * lockd-dev package's /usr, a meson install's default /usr/local); a lockctl run from its build
 * tree takes them from the source tree it was built from, so that a new plugin's `make test`
 * works there with nothing installed.
 */
#ifndef LOCKD_INCLUDEDIR
#define LOCKD_INCLUDEDIR "/usr/include/lockd"
#endif
#ifndef LOCKD_DATADIR
#define LOCKD_DATADIR "/usr/share/lockd"
#endif
#ifndef LOCKD_BINDIR
#define LOCKD_BINDIR "/usr/bin"
#endif
static const char *const include_dirs[] = {LOCKD_INCLUDEDIR, "/usr/include/lockd",
                                           "/usr/local/include/lockd"};
static const char *const go_sdk_dirs[] = {LOCKD_DATADIR "/go", "/usr/share/lockd/go",
                                          "/usr/local/share/lockd/go"};

/* One file of a template: its path in the new directory, and its text with @KEY@ markers. */
typedef struct TemplateFile {
        const char *path;
        const char *text;
} TemplateFile;

/*
 * The manifests. Protocol 1 asks a question about format alone; protocol 2 adds one typed input
 * and a detail, as the contract's example does. The question is a placeholder the author
 * replaces, with one, zero and the code.
 */
static const char manifest_p1[] = "name = \"@NAME@\"\n"
                                  "version = \"0.1.0\"\n"
                                  "protocol = 1\n"
                                  "question = \"Is the file empty?\"\n"
                                  "one = \"the file has no bytes\"\n"
                                  "zero = \"the file has at least one byte\"\n"
                                  "accepts = [\"application/octet-stream\"]\n"
                                  "limits = { cpu_s = 5, memory = \"@MEMORY@\", timeout_s = 10 }\n";

static const char manifest_p2[] =
        "name = \"@NAME@\"\n"
        "version = \"0.1.0\"\n"
        "protocol = 2\n"
        "question = \"Does the file contain ${needle}?\"\n"
        "one = \"the file contains the typed value\"\n"
        "zero = \"the file does not contain the typed value\"\n"
        "accepts = [\"text/plain\"]\n"
        "limits = { cpu_s = 5, memory = \"@MEMORY@\", timeout_s = 10 }\n"
        "inputs = [{ name = \"needle\", kind = \"text\", max_bytes = 256 }]\n"
        "detail = true\n";

static const char c_source_p1[] = "/* Plugin @NAME@: is the file empty? */\n"
                                  "#include <errno.h>\n"
                                  "#include <unistd.h>\n"
                                  "\n"
                                  "#include \"lockplugin.h\"\n"
                                  "\n"
                                  "int main(void) {\n"
                                  "        char byte;\n"
                                  "        ssize_t n;\n"
                                  "\n"
                                  "        do\n"
                                  "                n = read(lp_input_fd(), &byte, 1);\n"
                                  "        while (n < 0 && errno == EINTR);\n"
                                  "        if (n < 0)\n"
                                  "                lp_fail(\"cannot read the input\");\n"
                                  "        lp_answer(n == 0);\n"
                                  "}\n";

static const char c_source_p2[] =
        "/* Plugin @NAME@: does the file contain the typed needle? Reports where. */\n"
        "#define _GNU_SOURCE /* memmem() */\n"
        "#include <string.h>\n"
        "\n"
        "#include \"lockplugin.h\"\n"
        "\n"
        "int main(void) {\n"
        "        char needle[257];\n"
        "        size_t len;\n"
        "        char *json = lp_inputs(NULL), *text, *hit;\n"
        "        ssize_t n;\n"
        "\n"
        "        if (!json)\n"
        "                lp_fail(\"no inputs\");\n"
        "        n = lp_input_get(json, \"needle\", needle, sizeof(needle));\n"
        "        if (n <= 0)\n"
        "                lp_fail(\"no needle\");\n"
        "        text = lp_read_all(64u << 20, &len);\n"
        "        if (!text)\n"
        "                lp_fail(\"cannot read the input\");\n"
        "        hit = memmem(text, len, needle, (size_t)n);\n"
        "        if (hit)\n"
        "                lp_detail(\"first match at byte offset %zu\", (size_t)(hit - text));\n"
        "        lp_answer(hit != NULL);\n"
        "}\n";

static const char c_makefile[] =
        "# Builds the plugin static (lockd refuses a binary with an interpreter) and tests it\n"
        "# under lockd's sandbox: `make test`.\n"
        "CC ?= cc\n"
        "CFLAGS ?= -O2 -Wall -Wextra\n"
        "LOCKD_INCLUDE ?= @INCLUDE@\n"
        "LOCKCTL ?= @LOCKCTL@\n"
        "\n"
        "# --emit-relocs keeps what the code refers to, for the import check (lint --source).\n"
        "plugin: plugin.c\n"
        "\t$(CC) -static -Wl,--emit-relocs $(CFLAGS) -I$(LOCKD_INCLUDE) -o $@ plugin.c\n"
        "\n"
        "test: plugin\n"
        "\t$(LOCKCTL) plugin lint .\n"
        "\t$(LOCKCTL) plugin lint --source .\n"
        "\t$(LOCKCTL) plugin test . --fixtures\n"
        "\n"
        "clean:\n"
        "\trm -f plugin\n"
        "\n"
        ".PHONY: test clean\n";

static const char go_mod[] = "module @NAME@\n"
                             "\n"
                             "go 1.19\n"
                             "\n"
                             "require lockd/sdk v0.0.0\n"
                             "\n"
                             "replace lockd/sdk => @SDK@\n";

static const char go_source_p1[] = "// Plugin @NAME@: is the file empty?\n"
                                   "package main\n"
                                   "\n"
                                   "import (\n"
                                   "\t\"io\"\n"
                                   "\t\"os\"\n"
                                   "\n"
                                   "\t\"lockd/sdk\"\n"
                                   ")\n"
                                   "\n"
                                   "func main() {\n"
                                   "\tsdk.Run(func(in *os.File) (bool, error) {\n"
                                   "\t\tvar b [1]byte\n"
                                   "\t\t_, err := in.Read(b[:])\n"
                                   "\t\tif err == io.EOF {\n"
                                   "\t\t\treturn true, nil\n"
                                   "\t\t}\n"
                                   "\t\treturn false, err\n"
                                   "\t})\n"
                                   "}\n";

static const char go_source_p2[] =
        "// Plugin @NAME@: does the file contain the typed needle? Reports where.\n"
        "package main\n"
        "\n"
        "import (\n"
        "\t\"bytes\"\n"
        "\t\"fmt\"\n"
        "\t\"io\"\n"
        "\t\"os\"\n"
        "\n"
        "\t\"lockd/sdk\"\n"
        ")\n"
        "\n"
        "func main() {\n"
        "\tsdk.Run(func(in *os.File) (bool, error) {\n"
        "\t\tinputs, err := sdk.Inputs()\n"
        "\t\tif err != nil {\n"
        "\t\t\treturn false, err\n"
        "\t\t}\n"
        "\t\ttext, err := io.ReadAll(in)\n"
        "\t\tif err != nil {\n"
        "\t\t\treturn false, err\n"
        "\t\t}\n"
        "\t\tat := bytes.Index(text, []byte(inputs[\"needle\"]))\n"
        "\t\tif at >= 0 {\n"
        "\t\t\t_ = sdk.Detail(fmt.Sprintf(\"first match at byte offset %d\", at))\n"
        "\t\t}\n"
        "\t\treturn at >= 0, nil\n"
        "\t})\n"
        "}\n";

static const char go_test[] = "package main\n"
                              "\n"
                              "import (\n"
                              "\t\"testing\"\n"
                              "\n"
                              "\t\"lockd/sdk/sdktest\"\n"
                              ")\n"
                              "\n"
                              "// Every fixture gives the answer of its directory, under "
                              "lockd's sandbox.\n"
                              "func TestFixtures(t *testing.T) {\n"
                              "\tsdktest.Fixtures(t, \".\")\n"
                              "}\n";

static const char go_makefile[] =
        "# Builds the plugin static (CGO_ENABLED=0: lockd refuses a binary with an interpreter)\n"
        "# and tests it under lockd's sandbox: `make test`.\n"
        "GO ?= go\n"
        "LOCKCTL ?= @LOCKCTL@\n"
        "\n"
        "plugin: go.mod $(wildcard *.go)\n"
        "\tCGO_ENABLED=0 $(GO) build -trimpath -o $@ .\n"
        "\n"
        "test: plugin\n"
        "\t$(GO) vet ./...\n"
        "\t$(LOCKCTL) plugin lint .\n"
        "\t$(LOCKCTL) plugin lint --source .\n"
        "\t$(LOCKCTL) plugin test . --fixtures\n"
        "\tLOCKCTL=$(LOCKCTL) $(GO) test ./...\n"
        "\n"
        "clean:\n"
        "\trm -f plugin\n"
        "\n"
        ".PHONY: test clean\n";

static const char gitignore[] = "/plugin\n";

/* Fixtures for both answers, with their inputs for protocol 2. */
static const TemplateFile fixtures_p1[] = {
        {"fixtures/one/empty", ""},
        {"fixtures/zero/one-byte", "x"},
};

static const TemplateFile fixtures_p2[] = {
        {"fixtures/one/greeting.txt", "hello, world\n"},
        {"fixtures/one/greeting.txt.inputs.json", "{\"needle\": \"world\"}\n"},
        {"fixtures/zero/greeting.txt", "hello, world\n"},
        {"fixtures/zero/greeting.txt.inputs.json", "{\"needle\": \"moon\"}\n"},
};

/* The substitutions of one new plugin. */
typedef struct Subst {
        const char *name, *sdk, *include, *lockctl, *memory;
} Subst;

/* Expands the @KEY@ markers of text. A new string, or NULL when out of memory. */
static char *template_expand(const char *text, const Subst *s) {
        const struct {
                const char *key, *value;
        } map[] = {{"@NAME@", s->name},
                   {"@SDK@", s->sdk},
                   {"@INCLUDE@", s->include},
                   {"@LOCKCTL@", s->lockctl},
                   {"@MEMORY@", s->memory}};
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);

        if (!f)
                return NULL;
        while (*text) {
                bool done = false;

                for (size_t i = 0; i < ELEMENTSOF(map) && !done; i++) {
                        size_t k = strlen(map[i].key);

                        if (strncmp(text, map[i].key, k) == 0) {
                                fputs(map[i].value ? map[i].value : "", f);
                                text += k;
                                done = true;
                        }
                }
                if (!done)
                        fputc(*text++, f);
        }
        if (fclose(f) != 0) {
                free(out);
                return NULL;
        }
        return out;
}

/*
 * The source tree's client/ directory when this lockctl runs from its build tree (it is not the
 * installed one, and the tree it was built from is still there), else NULL.
 */
static const char *source_client_dir(void) {
#ifdef LOCKD_SOURCE_CLIENTDIR
        _cleanup_free_ char *self = realpath("/proc/self/exe", NULL), *installed = NULL;
        char probe[PATH_MAX];

        installed = realpath(LOCKD_BINDIR "/lockctl", NULL);
        if (!self || (installed && strcmp(self, installed) == 0))
                return NULL;
        snprintf(probe, sizeof(probe), "%s/lockplugin.h", LOCKD_SOURCE_CLIENTDIR);
        if (access(probe, R_OK) == 0)
                return LOCKD_SOURCE_CLIENTDIR;
#endif
        return NULL;
}

/* The first of dirs[] that holds file (NULL: the directory itself), else NULL. */
static const char *first_with(const char *const *dirs, size_t n, const char *file) {
        for (size_t i = 0; i < n; i++) {
                char probe[PATH_MAX];

                snprintf(probe, sizeof(probe), "%s%s%s", dirs[i], file ? "/" : "",
                         file ? file : "");
                if (access(probe, R_OK) == 0)
                        return dirs[i];
        }
        return NULL;
}

/* Writes one file of the template under dirfd, never over an existing one. 0 or -errno. */
static int template_write(int dirfd, const TemplateFile *t, const Subst *s) {
        _cleanup_free_ char *text = template_expand(t->text, s);
        _cleanup_close_ int fd = -1;
        char parent[PATH_MAX];
        char *slash;

        if (!text)
                return -ENOMEM;
        /* The fixture directories: fixtures/, then fixtures/one or fixtures/zero. */
        snprintf(parent, sizeof(parent), "%s", t->path);
        for (slash = strchr(parent, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = 0;
                if (mkdirat(dirfd, parent, 0755) < 0 && errno != EEXIST)
                        return negative_errno();
                *slash = '/';
        }
        fd = openat(dirfd, t->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return negative_errno();
        return loop_write(fd, text, strlen(text)) < 0 ? -EIO : 0;
}

/* What plugin new was asked: NAME and its options. */
typedef struct NewArgs {
        const char *name, *lang, *dir, *sdk;
        int protocol;
} NewArgs;

/*
 * Reads plugin new's arguments into *a and checks NAME and --lang: -1 when they are good (*a's dir
 * NAME when not given), or the exit status to return at once after saying why.
 */
static int new_args(int argc, char **argv, NewArgs *a) {
        *a = (NewArgs){.protocol = 1};
        for (int i = 0; i < argc; i++) {
                if ((strcmp(argv[i], "--lang") == 0 || strcmp(argv[i], "--protocol") == 0 ||
                     strcmp(argv[i], "--dir") == 0 || strcmp(argv[i], "--sdk") == 0) &&
                    i + 1 < argc) {
                        const char *opt = argv[i++];

                        if (strcmp(opt, "--lang") == 0)
                                a->lang = argv[i];
                        else if (strcmp(opt, "--dir") == 0)
                                a->dir = argv[i];
                        else if (strcmp(opt, "--sdk") == 0)
                                a->sdk = argv[i];
                        else if (strcmp(argv[i], "1") == 0 || strcmp(argv[i], "2") == 0)
                                a->protocol = argv[i][0] - '0';
                        else {
                                fprintf(stderr, "lockctl: --protocol takes 1 or 2\n");
                                return LOCKCTL_EXIT_USAGE;
                        }
                } else if (argv[i][0] == '-') {
                        goto usage;
                } else if (!a->name) {
                        a->name = argv[i];
                } else
                        goto usage;
        }
        if (!a->name || !a->lang)
                goto usage;
        if (strcmp(a->lang, "c") != 0 && strcmp(a->lang, "go") != 0) {
                fprintf(stderr, "lockctl: --lang takes c or go\n");
                return LOCKCTL_EXIT_USAGE;
        }
        if (!manifest_name_valid(a->name)) {
                fprintf(stderr,
                        "lockctl: '%s' is not a plugin name: lowercase words of [a-z0-9-] joined "
                        "by dots, like acme.is-empty (see lockd-plugin(7))\n",
                        a->name);
                return LOCKCTL_EXIT_USAGE;
        }
        if (!a->dir)
                a->dir = a->name;
        return -1;

usage:
        fprintf(stderr, "usage: lockctl plugin new NAME --lang c|go [--protocol 1|2] [--dir DIR] "
                        "[--sdk DIR]\n");
        return LOCKCTL_EXIT_USAGE;
}

/*
 * The Go SDK's absolute path, for go.mod's replace directive: sdk (--sdk), else $LOCKD_GO_SDK,
 * else the build tree's (tree, may be NULL), else the first installed one. LOCKCTL_EXIT_OK with
 * *ret, or an exit status after saying why.
 */
static int go_sdk_path(const char *sdk, const char *tree, char **ret) {
        _cleanup_free_ char *tree_sdk = NULL;

        if (!sdk)
                sdk = getenv("LOCKD_GO_SDK");
        if ((!sdk || !sdk[0]) && tree) {
                if (asprintf(&tree_sdk, "%s/go", tree) < 0)
                        return LOCKCTL_EXIT_FAIL;
                sdk = tree_sdk;
        }
        if (!sdk || !sdk[0])
                sdk = first_with(go_sdk_dirs, ELEMENTSOF(go_sdk_dirs), "go.mod");
        if (!sdk) {
                fprintf(stderr,
                        "lockctl: no Go SDK in %s, %s or %s (the lockd-dev package "
                        "installs it); give --sdk DIR or $LOCKD_GO_SDK\n",
                        go_sdk_dirs[0], go_sdk_dirs[1], go_sdk_dirs[2]);
                return LOCKCTL_EXIT_USAGE;
        }
        *ret = realpath(sdk, NULL);
        if (!*ret) {
                fprintf(stderr,
                        "lockctl: the Go SDK at %s: %s (the lockd-dev package installs it; "
                        "or give "
                        "--sdk DIR or $LOCKD_GO_SDK)\n",
                        sdk, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        return LOCKCTL_EXIT_OK;
}

/*
 * Writes the template's files for the language and protocol into dir (dirfd, made just now),
 * removing all of it again when one fails: LOCKCTL_EXIT_OK, or LOCKCTL_EXIT_FAIL after saying why.
 */
static int write_files(int dirfd, const char *dir, bool go, int protocol, const Subst *s) {
        const TemplateFile files_c[] = {
                {"plugin.toml", protocol == 2 ? manifest_p2 : manifest_p1},
                {"plugin.c", protocol == 2 ? c_source_p2 : c_source_p1},
                {"Makefile", c_makefile},
                {".gitignore", gitignore},
        };
        const TemplateFile files_go[] = {
                {"plugin.toml", protocol == 2 ? manifest_p2 : manifest_p1},
                {"go.mod", go_mod},
                {"main.go", protocol == 2 ? go_source_p2 : go_source_p1},
                {"plugin_test.go", go_test},
                {"Makefile", go_makefile},
                {".gitignore", gitignore},
        };
        const TemplateFile *files = go ? files_go : files_c;
        size_t n_files = go ? ELEMENTSOF(files_go) : ELEMENTSOF(files_c);
        const TemplateFile *fixtures = protocol == 2 ? fixtures_p2 : fixtures_p1;
        size_t n_fixtures = protocol == 2 ? ELEMENTSOF(fixtures_p2) : ELEMENTSOF(fixtures_p1);
        int r;

        for (size_t i = 0; i < n_files + n_fixtures; i++) {
                const TemplateFile *t = i < n_files ? &files[i] : &fixtures[i - n_files];

                r = template_write(dirfd, t, s);
                if (r < 0) {
                        fprintf(stderr, "lockctl: %s/%s: %s\n", dir, t->path, strerror(-r));
                        /* Nothing half-made stays: the directory is ours, made just now. */
                        for (size_t k = 0; k < n_files + n_fixtures; k++)
                                (void)unlinkat(dirfd,
                                               k < n_files ? files[k].path
                                                           : fixtures[k - n_files].path,
                                               0);
                        (void)unlinkat(dirfd, "fixtures/one", AT_REMOVEDIR);
                        (void)unlinkat(dirfd, "fixtures/zero", AT_REMOVEDIR);
                        (void)unlinkat(dirfd, "fixtures", AT_REMOVEDIR);
                        (void)rmdir(dir);
                        return LOCKCTL_EXIT_FAIL;
                }
        }
        return LOCKCTL_EXIT_OK;
}

int verb_plugin_new(int argc, char **argv) {
        _cleanup_free_ char *sdk_real = NULL, *self = NULL;
        _cleanup_close_ int dirfd = -1;
        const char *tree = source_client_dir(), *include;
        NewArgs a;
        bool go;
        int r;

        r = new_args(argc, argv, &a);
        if (r >= 0)
                return r;
        go = strcmp(a.lang, "go") == 0;
        if (go) {
                r = go_sdk_path(a.sdk, tree, &sdk_real);
                if (r != LOCKCTL_EXIT_OK)
                        return r;
        }
        /* lockplugin.h: the build tree's, else the first installed one (the Makefile's default). */
        include = tree ? tree : first_with(include_dirs, ELEMENTSOF(include_dirs), "lockplugin.h");
        if (!include)
                include = LOCKD_INCLUDEDIR;
        /* The Makefile runs this very lockctl when it is not the installed one on $PATH. */
        if (tree)
                self = realpath("/proc/self/exe", NULL);

        /* The directory is new: lockctl never writes into one the author already has. */
        if (mkdir(a.dir, 0755) < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", a.dir, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        dirfd = open(a.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dirfd < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", a.dir, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }

        /* Go's runtime needs about 64 MiB to start; 128 MiB is the floor lockd-plugin(7) gives. */
        Subst s = {.name = a.name,
                   .sdk = sdk_real,
                   .include = include,
                   .lockctl = self ? self : "lockctl",
                   .memory = go ? "128MiB" : "64MiB"};
        r = write_files(dirfd, a.dir, go, a.protocol, &s);
        if (r != LOCKCTL_EXIT_OK)
                return r;
        printf("%s: a %s plugin, protocol %d: %s\n", a.dir, go ? "Go" : "C", a.protocol,
               go ? "plugin.toml main.go plugin_test.go go.mod Makefile fixtures/"
                  : "plugin.toml plugin.c Makefile fixtures/");
        printf("next: cd %s && make test (builds it static, lints the manifest, runs its "
               "fixtures under lockd's sandbox)\n",
               a.dir);
        return LOCKCTL_EXIT_OK;
}
