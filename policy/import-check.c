/*
 * The import check (the contract's Publishing section; ARCHITECTURE.md "Testing a plugin"): a Go
 * plugin imports only packages of an allow-list, a C plugin's binary references no function of a
 * deny-list. The sandbox denies all of it at run time anyway; the check makes a reviewer's "this
 * plugin cannot open a socket" something a machine says before the review, and turns a denied
 * call into a clear refusal at publishing instead of a SIGSYS or an EPERM in a user's run.
 */
#include <errno.h>
#include <string.h>

#include "import-check.h"
#include "macro.h"

/*
 * The standard library packages a plugin may import: what reads, decodes, hashes and searches
 * bytes, and the runtime support every Go program has. A package is here when neither it nor
 * anything it exports reaches the network, other processes, signals, the raw system call
 * interface, memory outside Go's types, or the runtime's own limits. So, refused: net and all of
 * net/... (sockets; net/url and net/mail sit in that tree and are refused with it: a plugin
 * parses, it does not fetch, and a review would have to tell the pure ones apart by hand),
 * os/exec (child processes), os/signal (a handler could turn SIGXCPU, the CPU limit, into an
 * answer), os/user (the C library's NSS, files by path), syscall and unsafe (calls and memory
 * past every Go rule; unsafe is also what //go:linkname needs to reach runtime internals),
 * plugin (loads code), runtime/cgo (C code), runtime/debug (moves the runtime's memory and stack
 * limits the manifest was sized against, and writes heap dumps to a descriptor),
 * runtime/pprof and runtime/trace (write profiles), testing (tests are not built into the
 * plugin), crypto/rand (the system's randomness: an answer depends on the file alone), and
 * everything not listed (database/sql, expvar, flag, go/..., internal/..., and every package
 * outside the standard library but the module's own, the SDK's, and those of a dependency whose
 * source go.mod replaces with a local directory, when they pass the same check). `os` is
 * allowed: sdk.Run hands the input over as an *os.File, and the sandbox refuses what os could ask
 * beyond that.
 */
static const char *const go_allowed[] = {
        "archive/tar",
        "archive/zip",
        "bufio",
        "bytes",
        "compress/bzip2",
        "compress/flate",
        "compress/gzip",
        "compress/lzw",
        "compress/zlib",
        "container/heap",
        "container/list",
        "container/ring",
        "context",
        "crypto/aes",
        "crypto/cipher",
        "crypto/des",
        "crypto/hmac",
        "crypto/md5",
        "crypto/rc4",
        "crypto/sha1",
        "crypto/sha256",
        "crypto/sha512",
        "crypto/subtle",
        "debug/dwarf",
        "debug/elf",
        "debug/macho",
        "debug/pe",
        "embed",
        "encoding",
        "encoding/ascii85",
        "encoding/asn1",
        "encoding/base32",
        "encoding/base64",
        "encoding/binary",
        "encoding/csv",
        "encoding/hex",
        "encoding/json",
        "encoding/pem",
        "encoding/xml",
        "errors",
        "fmt",
        "hash",
        "hash/adler32",
        "hash/crc32",
        "hash/crc64",
        "hash/fnv",
        "html",
        "image",
        "image/color",
        "image/color/palette",
        "image/draw",
        "image/gif",
        "image/jpeg",
        "image/png",
        "index/suffixarray",
        "io",
        "io/fs",
        "io/ioutil",
        "log",
        "math",
        "math/big",
        "math/bits",
        "math/cmplx",
        "math/rand",
        "mime/quotedprintable",
        "os",
        "path",
        "path/filepath",
        "reflect",
        "regexp",
        "regexp/syntax",
        "runtime",
        "sort",
        "strconv",
        "strings",
        "sync",
        "sync/atomic",
        "text/scanner",
        "text/tabwriter",
        "time",
        "unicode",
        "unicode/utf16",
        "unicode/utf8",
};

/*
 * The standard library's top-level directories (Go 1.19), "C" (cgo) and "lockd" (the SDK's): a
 * module path starting with one of them is not a plugin's own.
 */
static const char *const go_reserved_roots[] = {
        "C",       "archive", "bufio",    "builtin", "bytes",   "cmd",      "compress", "container",
        "context", "crypto",  "database", "debug",   "embed",   "encoding", "errors",   "expvar",
        "flag",    "fmt",     "go",       "hash",    "html",    "image",    "index",    "internal",
        "io",      "lockd",   "log",      "math",    "mime",    "net",      "os",       "path",
        "plugin",  "reflect", "regexp",   "runtime", "sort",    "strconv",  "strings",  "sync",
        "syscall", "testing", "text",     "time",    "unicode", "unsafe",   "vendor",
};

/* path is prefix itself or below it (prefix/...). */
static bool path_under(const char *path, const char *prefix) {
        size_t n = strlen(prefix);

        return strncmp(path, prefix, n) == 0 && (path[n] == 0 || path[n] == '/');
}

int go_module_path_check(const char *module) {
        if (!module || !module[0] || module[0] == '.' || module[0] == '/')
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(go_reserved_roots); i++)
                if (path_under(module, go_reserved_roots[i]))
                        return -EINVAL;
        return 0;
}

/* Every element of path is a name: none empty, "." or ".." (Go refuses those too). */
static bool path_elements_ok(const char *path) {
        for (const char *p = path;;) {
                size_t n = strcspn(p, "/");

                if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                if (!p[n])
                        return true;
                p += n + 1;
        }
}

bool go_import_allowed(const char *module, const char *path) {
        if (!path_elements_ok(path))
                return false;
        for (size_t i = 0; i < ELEMENTSOF(go_allowed); i++)
                if (strcmp(path, go_allowed[i]) == 0)
                        return true;
        /* The SDK's package itself: sdktest (os/exec, to run lockctl) is for tests only. */
        if (strcmp(path, GO_SDK_PACKAGE) == 0)
                return true;
        return go_module_path_check(module) == 0 && path_under(path, module);
}

/*
 * The C deny-list: functions that open network sockets, make or replace processes, trace or read
 * other processes, load code, or make any system call by number. The sandbox refuses every one
 * of them (ARCHITECTURE.md "The sandbox"); a plugin that calls one is broken or hostile.
 */
static const char *const c_denied[] = {
        "socket",
        "socketpair",
        "connect",
        "bind",
        "listen",
        "accept",
        "accept4",
        "getaddrinfo",
        "gethostbyname",
        "fork",
        "vfork",
        "_Fork",
        "clone",
        "clone3",
        "execve",
        "execveat",
        "fexecve",
        "execv",
        "execvp",
        "execvpe",
        "execl",
        "execlp",
        "execle",
        "posix_spawn",
        "posix_spawnp",
        "system",
        "popen",
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
        "dlopen",
        "dlmopen",
        "syscall",
};

/*
 * What every static glibc binary defines (static dlopen support comes with the C library's
 * start-up since glibc 2.34): present in every symbol table, so its presence says nothing.
 * With relocations, a reference to it is the plugin's own and refused like the others; without,
 * the sandbox still leaves dlopen nothing to open (Landlock: no file at all).
 */
static const char *const c_always_defined[] = {"dlopen", "dlmopen"};

const char *const *c_symbols_denied(size_t *ret_n) {
        *ret_n = ELEMENTSOF(c_denied);
        return c_denied;
}

int c_symbol_denied(const char *name, bool no_relocations) {
        if (no_relocations)
                for (size_t i = 0; i < ELEMENTSOF(c_always_defined); i++)
                        if (strcmp(name, c_always_defined[i]) == 0)
                                return -1;
        for (size_t i = 0; i < ELEMENTSOF(c_denied); i++)
                if (strcmp(name, c_denied[i]) == 0)
                        return (int)i;
        return -1;
}
