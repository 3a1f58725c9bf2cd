/*
 * The test plugins of tests/plugins/ run under the real sandbox: each good plugin must answer, each
 * hostile one must see the exact errno the contract promises (it reports it on fd 7), and each
 * bad ending must read as plugin_error with its precise cause.
 */
#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check-run.h"
#include "fd-util.h"
#include "macro.h"
#include "runner.h"

#define TEST_UID_BASE 655400

#define streq(a, b) (strcmp((a), (b)) == 0)

/* What a run checks beyond outcome, cause and detail. */
typedef enum Extra {
        EXTRA_NONE,
        EXTRA_DETAIL_TOTAL, /* detail_total == value, detail_len == min(value, RUN_DETAIL_MAX) */
        EXTRA_STDERR_BYTES, /* stderr_bytes == value */
        EXTRA_THREADS_MAX,  /* the "threads=N" of the detail is in 1..value */
} Extra;

typedef struct PluginCase {
        const char *name;
        const char *plugin;      /* the directory under tests/plugins/; NULL: name */
        const char *input;       /* fd 3; NULL: DEFAULT_INPUT */
        const char *inputs_json; /* fd 6, with spec.inputs */
        SandboxSpec spec;        /* what the plugin's plugin.toml says */
        RunOutcome outcome;
        const char *cause;  /* run_cause_format(), for plugin_error; NULL for an answer */
        const char *detail; /* a substring of the detail, not followed by a digit; NULL: none */
        Extra extra;
        uint64_t value;
} PluginCase;

#define DEFAULT_INPUT "hello lockd needle-xyz\n"
#define LIMITS(c, t)                                                                               \
        { .cpu_s = (c), .memory_bytes = 128 * MiB, .timeout_s = (t) }
/* Protocol 1, no fd 6 nor 7. */
#define P1                                                                                         \
        { .protocol = 1, .limits = LIMITS(2, 3) }
/* Protocol 2 with detail = true: the hostile plugins. */
#define P2D                                                                                        \
        { .protocol = 2, .detail = true, .limits = LIMITS(2, 3) }
/* Protocol 2 with inputs and detail. */
#define P2ID                                                                                       \
        { .protocol = 2, .inputs = true, .detail = true, .limits = LIMITS(2, 3) }
#define NEEDLE_JSON "{\"needle\":\"needle-xyz\"}"

/* A hostile plugin the sandbox must refuse, with the detail it must report. */
#define REFUSED(n, d)                                                                              \
        { .name = (n), .spec = P2D, .outcome = RUN_ONE, .detail = (d) }
/* A plugin that must read as plugin_error with cause c. */
#define ERROR(n, c)                                                                                \
        { .name = (n), .spec = P1, .outcome = RUN_PLUGIN_ERROR, .cause = (c) }

static const PluginCase cases[] = {
        /* Good plugins. */
        {.name = "good-one", .spec = P1, .outcome = RUN_ONE},
        {.name = "good-one-empty",
         .plugin = "good-one",
         .input = "",
         .spec = P1,
         .outcome = RUN_ZERO},
        {.name = "good-zero", .spec = P1, .outcome = RUN_ZERO},
        {.name = "good-zero-empty",
         .plugin = "good-zero",
         .input = "",
         .spec = P1,
         .outcome = RUN_ONE},
        {.name = "good-inputs",
         .inputs_json = NEEDLE_JSON,
         .spec = P2ID,
         .outcome = RUN_ONE,
         .detail = "offset=12"},
        {.name = "good-inputs-absent",
         .plugin = "good-inputs",
         .inputs_json = "{\"needle\":\"absent\"}",
         .spec = P2ID,
         .outcome = RUN_ZERO,
         .detail = "not found"},
        {.name = "good-inputs-escaped",
         .plugin = "good-inputs",
         .input = "say \"h\xc3\xa9\" \\ok\n",
         .inputs_json = "{\"needle\":\"\\\"h\\u00e9\\\" \\\\\"}",
         .spec = P2ID,
         .outcome = RUN_ONE,
         .detail = "offset=4"},

        /* The filesystem: Landlock allows nothing but the own binary; the memfds keep their seals.
         */
        REFUSED("open-passwd", "errno=13"),
        REFUSED("open-root-dir", "errno=13"),
        REFUSED("write-tmp", "errno=13"),
        REFUSED("exec-other", "errno=13"),
        REFUSED("proc-status", "errno=13"),
        REFUSED("write-fd3", "errno=9"),
        /*
         * lockd's memfds are mode 0444 (the binary 0555), so reopening them for writing through
         * /proc/self/fd fails with EACCES before the seals are reached; run_case() checks the
         * seals and the bytes from the outside after every run.
         */
        REFUSED("reopen-fd3-write", "errno=13 at=open"),
        REFUSED("reopen-fd3-mmap", "errno=13 at=open"),
        REFUSED("reopen-exe-write", "errno=13 at=open"),
        {.name = "write-fd6",
         .inputs_json = NEEDLE_JSON,
         .spec = P2ID,
         .outcome = RUN_ONE,
         .detail = "errno=9"},
        {.name = "reopen-fd6-write",
         .inputs_json = NEEDLE_JSON,
         .spec = P2ID,
         .outcome = RUN_ONE,
         .detail = "errno=13 at=open"},
        REFUSED("leaked-fd", "errno=9"),
        /* A descriptor the plugin itself put at 7 is never taken for the detail pipe. */
        {.name = "own-fd7", .spec = P1, .outcome = RUN_ONE},

        /* File metadata of any kind. */
        REFUSED("chmod-fd3", "errno=1"),
        REFUSED("chmod-path", "errno=1"),
        REFUSED("chown-fd3", "errno=1"),
        REFUSED("utimensat-fd3", "errno=1"),
        REFUSED("ftruncate-fd3", "errno=1"),
        REFUSED("fsetxattr-fd3", "errno=1"),
        REFUSED("fs-ioc-setflags", "errno=1"),
        REFUSED("fs-ioc-fssetxattr", "errno=1"),
        REFUSED("file-setattr", "errno=1"),

        /* The network. */
        REFUSED("socket-inet", "errno=1"),
        REFUSED("socket-unix", "errno=1"),
        REFUSED("socketpair", "errno=1"),
        REFUSED("tcp-connect", "errno=1 at=socket"),

        /* Processes, signals and limits of others. */
        REFUSED("fork", "errno=1"),
        REFUSED("vfork", "errno=1"),
        REFUSED("clone-newns", "errno=1"),
        REFUSED("clone3", "errno=38"),
        REFUSED("execveat", "errno=1"),
        REFUSED("ptrace", "errno=1"),
        REFUSED("process-vm-readv", "errno=1"),
        REFUSED("kill-init", "errno=1"),
        REFUSED("kill-group", "errno=1"),
        REFUSED("kill-all", "errno=1"),
        REFUSED("kill-parent", "errno=1"),
        REFUSED("tgkill-other", "errno=1"),
        REFUSED("prlimit-other", "errno=1"),
        REFUSED("pidfd-open-other", "errno=1"),
        REFUSED("get-robust-list", "errno=1"),
        REFUSED("kcmp", "errno=1"),

        /* Descriptor owners. */
        REFUSED("fsetown", "errno=1"),
        REFUSED("fsetown-ex", "errno=1"),
        REFUSED("fsetsig", "errno=1"),
        REFUSED("ioctl-fiosetown", "errno=1"),
        REFUSED("ioctl-siocspgrp", "errno=1"),

        /* Kernel objects and namespaces. */
        REFUSED("memfd-create", "errno=1"),
        REFUSED("mount", "errno=1"),
        REFUSED("bpf", "errno=1"),
        REFUSED("keyctl", "errno=1"),
        REFUSED("add-key", "errno=1"),
        REFUSED("perf-event-open", "errno=1"),
        REFUSED("shmget", "errno=1"),
        REFUSED("msgget", "errno=1"),
        REFUSED("semget", "errno=1"),
        REFUSED("mq-open", "errno=1"),
        REFUSED("io-uring-setup", "errno=1"),
        REFUSED("userfaultfd", "errno=1"),
        REFUSED("unshare", "errno=1"),
        REFUSED("setns", "errno=1"),
        REFUSED("personality", "errno=1"),
        REFUSED("init-module", "errno=1"),

        /* Memory. */
        REFUSED("mmap-shared-anon", "errno=1"),
        REFUSED("map-growsdown", "errno=1"),
        REFUSED("memory-limit", "errno=12"),
        REFUSED("brk-limit", "errno=12"),

        /* Foreign ABIs and unknown numbers. */
        REFUSED("x32-syscall", "errno=1"),
        REFUSED("int80-syscall", "errno=1"),
        REFUSED("unknown-syscall", "errno=1"),

        /* What the plugin finds around it. */
        REFUSED("environment", "env=LOCKFILE_PLUGIN_PROTOCOL=2"),
        REFUSED("cwd", "cwd=/"),
        REFUSED("stdin", "stdin=/dev/null"),
        {.name = "threads-cap",
         .spec = P2D,
         .outcome = RUN_ONE,
         .detail = "errno=11 threads=",
         .extra = EXTRA_THREADS_MAX,
         .value = 512},

        /* Endings that are not an answer. */
        {.name = "cpu-spin",
         .spec = {.protocol = 1, .limits = LIMITS(1, 30)},
         .outcome = RUN_PLUGIN_ERROR,
         .cause = "signal:SIGXCPU"},
        {.name = "sleep-timeout",
         .spec = {.protocol = 1, .limits = LIMITS(2, 1)},
         .outcome = RUN_PLUGIN_ERROR,
         .cause = "timeout"},
        ERROR("print-11", "bad_output"),
        ERROR("print-1nn", "bad_output"),
        ERROR("print-1-exit1", "exit:1"),
        ERROR("print-nothing", "no_output"),
        ERROR("print-flood", "bad_output"),
        ERROR("raise-sigsegv", "signal:SIGSEGV"),
        ERROR("abort", "signal:SIGABRT"),
        ERROR("stack-overflow", "signal:SIGSEGV"),
        ERROR("fail", "exit:1"),

        /* Detail and stderr volumes. */
        {.name = "detail-flood",
         .spec = P2D,
         .outcome = RUN_ONE,
         .extra = EXTRA_DETAIL_TOTAL,
         .value = 4096},
        {.name = "detail-flood-raw",
         .spec = P2D,
         .outcome = RUN_ONE,
         .extra = EXTRA_DETAIL_TOTAL,
         .value = 1024 * 1024},
        {.name = "stderr-noise",
         .spec = P1,
         .outcome = RUN_ONE,
         .extra = EXTRA_STDERR_BYTES,
         .value = 100000},
};

static const char *case_plugin(const PluginCase *c) {
        return c->plugin ?: c->name;
}

static char *path_join(const char *env, const char *a, const char *b) {
        const char *dir = getenv(env);
        char *p;

        ck_assert_msg(dir, "%s is not set", env);
        ck_assert_int_ge(asprintf(&p, "%s/%s%s", dir, a, b ?: ""), 0);
        return p;
}

/* Says whether text contains the line "key = value" exactly. */
static bool toml_has_line(const char *text, const char *line) {
        size_t n = strlen(line);

        for (const char *p = text; (p = strstr(p, line)); p += n)
                if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
                        return true;
        return false;
}

/*
 * Checks that the spec of the table says what the plugin's plugin.toml says, so the two cannot
 * drift apart (the keys the runtime needs only: the strict parser has tests of its own).
 */
static void check_manifest(const PluginCase *c) {
        _cleanup_free_ char *path =
                path_join("LOCKD_TEST_PLUGINS_SRC", case_plugin(c), "/plugin.toml");
        _cleanup_free_ char *text = NULL, *line = NULL;
        _cleanup_close_ int fd = -1;
        size_t len;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_msg(fd >= 0, "%s: %m", path);
        ck_assert_int_eq(read_full_fd(fd, 64 * 1024, &text, &len), 0);

        ck_assert_int_ge(asprintf(&line, "protocol = %u", c->spec.protocol), 0);
        ck_assert_msg(toml_has_line(text, line), "%s: no line '%s'", c->name, line);
        free(line);
        ck_assert_int_ge(asprintf(&line,
                                  "limits = { cpu_s = %" PRIu64 ", memory = \"%" PRIu64
                                  "MiB\", timeout_s = %" PRIu64 " }",
                                  c->spec.limits.cpu_s, c->spec.limits.memory_bytes / MiB,
                                  c->spec.limits.timeout_s),
                         0);
        ck_assert_msg(toml_has_line(text, line), "%s: no line '%s'", c->name, line);
        ck_assert_msg(toml_has_line(text, "detail = true") == c->spec.detail, "%s: detail differs",
                      c->name);
        ck_assert_msg((strstr(text, "\ninputs = [") != NULL) == c->spec.inputs, "%s: inputs differ",
                      c->name);
}

/*
 * Says whether detail holds want; a want ending in a digit must not be followed by another digit
 * ("errno=1" is not "errno=13").
 */
static bool detail_has(const RunResult *r, const char *want) {
        size_t n = strlen(want);
        const char *end = r->detail + r->detail_len;

        for (const char *p = r->detail; p + n <= end; p++) {
                p = memmem(p, (size_t)(end - p), want, n);
                if (!p)
                        return false;
                if (p + n == end || !isdigit((unsigned char)want[n - 1]) ||
                    !isdigit((unsigned char)p[n]))
                        return true;
        }
        return false;
}

static void run_case(const PluginCase *c, bool as_root, uid_t uid, RunResult *res) {
        _cleanup_free_ char *path = path_join("LOCKD_TEST_PLUGINS", case_plugin(c), NULL);
        _cleanup_close_ int bin = -1, snap = -1, in = -1;
        _cleanup_(sandbox_freep) Sandbox *sb = NULL;
        const char *input = c->input ?: DEFAULT_INPUT;
        RunParams p = {};
        int r;

        bin = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_msg(bin >= 0, "%s: %m", path);
        r = sandbox_new(bin, &c->spec, &sb);
        ck_assert_msg(r == 0, "%s: sandbox_new: %s", c->name, sandbox_strerror(r));

        /* The input as lockd gives it: a sealed memfd snapshot, reopened read-only. */
        snap = memfd_from_buffer(input, strlen(input), "input");
        ck_assert_int_ge(snap, 0);
        in = fd_reopen_readonly(snap);
        ck_assert_int_ge(in, 0);

        p.input_fd = in;
        if (c->spec.inputs) {
                ck_assert_ptr_nonnull(c->inputs_json);
                p.inputs_json = c->inputs_json;
                p.inputs_len = strlen(c->inputs_json);
        }
        if (as_root) {
                p.drop_to_uid = true;
                p.uid = uid;
                p.gid = uid;
        }

        r = runner_run(sb, &p, res);
        ck_assert_msg(r == 0, "%s: runner_run: %s", c->name, strerror(-r));

        /* Whatever the plugin tried, the input is still sealed and holds the same bytes. */
        {
                char buf[256];
                ssize_t n;

                ck_assert_int_eq(fcntl(snap, F_GET_SEALS) & MEMFD_SEALS_IMMUTABLE,
                                 MEMFD_SEALS_IMMUTABLE);
                n = pread(snap, buf, sizeof(buf), 0);
                ck_assert_msg(n == (ssize_t)strlen(input) && memcmp(buf, input, (size_t)n) == 0,
                              "%s: the input changed", c->name);
        }
}

START_TEST(test_plugin) {
        const PluginCase *c = &cases[_i];
        RunResult res;
        char cause[64];
        bool as_root = geteuid() == 0;

        check_manifest(c);
        run_case(c, as_root, (uid_t)(TEST_UID_BASE + _i), &res);
        run_cause_format(&res, cause, sizeof(cause));

        ck_assert_msg(res.outcome == c->outcome,
                      "%s: outcome %s (cause %s, detail '%.*s'), want %s", c->name,
                      run_outcome_name(res.outcome), cause, (int)res.detail_len, res.detail,
                      run_outcome_name(c->outcome));
        if (c->outcome == RUN_PLUGIN_ERROR)
                ck_assert_msg(streq(cause, c->cause), "%s: cause %s, want %s", c->name, cause,
                              c->cause);
        else
                ck_assert_msg(res.cause == RUN_CAUSE_NONE, "%s: cause %s for an answer", c->name,
                              cause);
        if (c->detail)
                ck_assert_msg(detail_has(&res, c->detail), "%s: detail '%.*s', want '%s'", c->name,
                              (int)res.detail_len, res.detail, c->detail);
        if (!c->spec.detail)
                ck_assert_msg(res.detail_total == 0, "%s: a detail without fd 7", c->name);
        if (as_root)
                ck_assert_msg(res.uid == (uid_t)(TEST_UID_BASE + _i), "%s: ran as uid %u", c->name,
                              (unsigned)res.uid);

        switch (c->extra) {
        case EXTRA_NONE:
                break;
        case EXTRA_DETAIL_TOTAL:
                ck_assert_msg(res.detail_total == c->value, "%s: detail_total %" PRIu64, c->name,
                              res.detail_total);
                ck_assert_uint_eq(res.detail_len,
                                  c->value < RUN_DETAIL_MAX ? c->value : RUN_DETAIL_MAX);
                break;
        case EXTRA_STDERR_BYTES:
                ck_assert_msg(res.stderr_bytes == c->value, "%s: stderr_bytes %" PRIu64, c->name,
                              res.stderr_bytes);
                break;
        case EXTRA_THREADS_MAX: {
                const char *p = memmem(res.detail, res.detail_len, "threads=", 8);
                unsigned long n;

                ck_assert_ptr_nonnull(p);
                n = strtoul(p + 8, NULL, 10);
                ck_assert_msg(n >= 1 && n <= c->value, "%s: %lu threads", c->name, n);
                break;
        }
        }
}
END_TEST

/* The same plugin run by a non-root caller: no uid change, the same refusals. */
START_TEST(test_plugin_unprivileged) {
        /* Running the suite as another user exercises it; as root there is nothing more here. */
        if (geteuid() == 0)
                return;
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                if (streq(cases[i].name, "socket-inet")) {
                        RunResult res;

                        run_case(&cases[i], false, 0, &res);
                        ck_assert_int_eq(res.outcome, RUN_ONE);
                        ck_assert(detail_has(&res, "errno=1"));
                }
}
END_TEST

/*
 * Without a memory cgroup (no scope here) the peak is the process's maxrss only where that is
 * provably the plugin's: execve() from this process's memory, shared until then, keeps our
 * high-water mark. A trivial plugin's peak is therefore unknown (0), never this process's size;
 * one that touches 115 MiB of heap shows it.
 */
START_TEST(test_peak_without_cgroup) {
        const PluginCase small = {.name = "good-one", .spec = P1, .outcome = RUN_ONE};
        const PluginCase big = {
                .name = "scope-oom",
                .spec = {.protocol = 1,
                         .limits = {.cpu_s = 2, .memory_bytes = 256 * MiB, .timeout_s = 5}},
                .outcome = RUN_ZERO};
        bool as_root = geteuid() == 0;
        RunResult res;

        run_case(&small, as_root, TEST_UID_BASE + 990, &res);
        ck_assert_int_eq(res.outcome, RUN_ONE);
        ck_assert_msg(res.peak_rss_bytes == 0, "peak %" PRIu64 " for a trivial plugin",
                      res.peak_rss_bytes);

        run_case(&big, as_root, TEST_UID_BASE + 991, &res);
        ck_assert_int_eq(res.outcome, RUN_ZERO);
        ck_assert_msg(res.peak_rss_bytes >= 115 * MiB && res.peak_rss_bytes < 256 * MiB,
                      "peak %" PRIu64, res.peak_rss_bytes);
}
END_TEST

static Suite *plugins_suite(void) {
        Suite *s = suite_create("plugins");
        const CaseOptions each = {.timeout = 60};

        suite_add_loop_case(s, &each, test_plugin, 0, (int)ELEMENTSOF(cases));
        suite_add_case(s, &each, test_plugin_unprivileged);
        suite_add_case(s, &each, test_peak_without_cgroup);
        return s;
}

int main(void) {
        return check_run(plugins_suite());
}
