/*
 * bench/spawn: what the sandbox costs per answer. Runs N sequential answers of a static C plugin
 * (bench/answer-plugin) through runner_run() (a child made and released at once: the whole
 * sandbox on the clock), through a child made ahead and released on the clock (as lockd runs a
 * plugin: what no run decides is done before), the same binary by plain fork+exec+wait, and
 * through `bwrap --unshare-all` where bwrap works here, and prints per-run times and the ratios
 * (the target: the sandbox alone <= 1.1x plain, medians, for both). Then repeats plain and
 * sandboxed with ~1 GiB of touched RSS in the parent, to show that fork's cost grows with the
 * parent's memory and the runner's does not. Last, the plugin's own run (its execve to its reap)
 * bare and under each part of the sandbox alone, interleaved round by round: executed from the
 * sealed memfd, under the seccomp filter (both parts, as lockd stacks them), under Landlock, and
 * under both: what each part costs the plugin once it runs (ARCHITECTURE.md, the sandbox).
 *
 * Usage: spawn [N [PLUGIN]]   (N defaults to 1000, PLUGIN to the answer-plugin built beside it)
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench-util.h"
#include "macro.h"
#include "seccomp.h"

#ifndef BENCH_PLUGIN_PATH
#error "BENCH_PLUGIN_PATH must name the answer plugin"
#endif

#define BENCH_UID         655501 /* a fixed uid of the default ephemeral range (as root) */
#define BENCH_RSS_BYTES   (1 * GiB)
#define BENCH_LABEL_WIDTH 30 /* of the statistics rows' labels */

typedef struct SandboxRun {
        const Sandbox *sb;
} SandboxRun;

/* What every sandboxed answer here gets: the input, and as root the fixed bench uid. */
static RunParams run_params(int in) {
        return (RunParams){
                .input_fd = in,
                .drop_to_uid = geteuid() == 0,
                .uid = BENCH_UID,
                .gid = BENCH_UID,
        };
}

/* One answer through runner_run(), as lockd runs a plugin, without a scope. */
static int sandbox_run(void *userdata, int in) {
        SandboxRun *s = userdata;
        RunParams p = run_params(in);

        return bench_runner_run("spawn", "sandboxed run", s->sb, &p);
}

/* A child made ahead, untimed; its run on the clock, as lockd's pool runs one (no scope here). */
typedef struct AheadRun {
        const Sandbox *sb;
        RunChild *child;
} AheadRun;

static int ahead_prepare(void *userdata, int in) {
        AheadRun *a = userdata;
        int r;

        r = run_child_new(&a->child);
        if (r < 0)
                return r;
        /*
         * In lockd a child made ahead waits for its scope's job (1.6-2.3 ms of the manager's
         * work) before any run may take it; 1 ms here lets it finish what it does ahead.
         */
        (void)usleep(1000);
        return 0;
}

static int ahead_run(void *userdata, int in) {
        AheadRun *a = userdata;
        RunParams p = run_params(in);

        return bench_child_run("spawn", "run of a child made ahead", &a->child, a->sb, &p);
}

/* Maps and touches bytes of private anonymous memory in 4 KiB pages: the parent's RSS. */
static void *touch_rss(size_t bytes) {
        long page = sysconf(_SC_PAGESIZE);
        char *p;

        p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return NULL;
        (void)madvise(p, bytes, MADV_NOHUGEPAGE); /* one PTE per page, as a long-lived heap has */
        for (size_t i = 0; i < bytes; i += (size_t)page)
                p[i] = (char)i | 1;
        return p;
}

static long rss_kib(void) {
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        long kib = -1;
        FILE *f;

        f = fopen("/proc/self/status", "re");
        if (!f)
                return -1;
        while (getline(&line, &cap, f) > 0)
                if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
                        break;
        fclose(f);
        return kib;
}

/* The parts of the sandbox a run of the plugin gets, each alone (parts_run()). */
enum {
        PART_MEMFD = 1 << 0,    /* executed from the sealed memfd, not its path */
        PART_SECCOMP = 1 << 1,  /* the filter, both parts (AHEAD and LAST), no_new_privs */
        PART_LANDLOCK = 1 << 2, /* the plugin's Landlock ruleset, no_new_privs */
};

typedef struct PartsRun {
        const Sandbox *sb;
        /* The sandbox's memfd and Landlock ruleset, lifted above the fds a child lays out: dup3()
         * to CHILD_BINARY_FD must not close the ruleset, whose number depends on what we were
         * started with (under `perf record --` it was that very number). */
        int binary_fd, ruleset_fd;
        unsigned parts;
        const SeccompProgram *ahead, *last;
        double *exec_at; /* shared with the child: bench_now_ms() just before its execve */
} PartsRun;

/* In the child: the parts, in the runner's order, then the time of the execve. */
static void parts_prepare(void *userdata) {
        static struct sock_filter filter[SECCOMP_INSNS_MAX];
        PartsRun *p = userdata;

        if ((p->parts & PART_MEMFD) && dup3(p->binary_fd, 8, O_CLOEXEC) < 0)
                _exit(125);
        if ((p->parts & (PART_SECCOMP | PART_LANDLOCK)) && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                _exit(125);
        if ((p->parts & PART_LANDLOCK) &&
            syscall(__NR_landlock_restrict_self, p->ruleset_fd, 0) < 0)
                _exit(125);
        if (p->parts & PART_SECCOMP)
                for (const SeccompProgram *const *part = (const SeccompProgram *const[]){p->ahead,
                                                                                     p->last, NULL};
                     *part; part++) {
                        struct sock_fprog prog = {
                                .len = (unsigned short)seccomp_program_instantiate(
                                        *part, getpid(), filter),
                                .filter = filter};
                        if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                                _exit(125);
                }
        *p->exec_at = bench_now_ms();
}

/* One run with p's parts: the plugin's execve to its reap, in ms; a negative value on failure. */
static double parts_run(PartsRun *p, char *plugin, int in, int errfd) {
        static char *const empty_env[] = {NULL};
        char *argv[] = {plugin, NULL};
        int status = 0, r;
        double end;

        /* The child's fd 3 shares our offset: every run reads the whole input, as measured
         * runs do (bench_measure()). */
        if (lseek(in, 0, SEEK_SET) < 0) {
                fprintf(stderr, "spawn: rewinding the input: %s\n", strerror(errno));
                return -1;
        }
        r = bench_exec_prepared((p->parts & PART_MEMFD) ? p->sb->exec_path : plugin, argv,
                                empty_env, in, errfd, parts_prepare, p, &status);
        end = bench_now_ms();
        if (r != 0) {
                fprintf(stderr, "spawn: parts 0x%x: %s (wait status 0x%x)\n", p->parts,
                        r < 0 ? strerror(-r) : "no answer 1", status);
                return -1;
        }
        return end - *p->exec_at;
}

/* The plugin's run under each part alone, n rounds interleaved; prints medians and ratios. */
static int measure_parts(const BenchSetup *b, char *plugin, unsigned long n) {
        static const struct {
                unsigned parts;
                const char *label;
        } variants[] = {
                {0, "bare (its path)"},
                {PART_MEMFD, "from the sealed memfd"},
                {PART_MEMFD | PART_SECCOMP, "memfd + seccomp filter"},
                {PART_MEMFD | PART_LANDLOCK, "memfd + Landlock"},
                {PART_MEMFD | PART_SECCOMP | PART_LANDLOCK, "memfd + seccomp + Landlock"},
        };
        SeccompProgram *ahead = NULL, *last = NULL;
        double *times[ELEMENTSOF(variants)] = {};
        BenchStats st[ELEMENTSOF(variants)];
        double *shared;
        int fd, ruleset, r = 0;

        if (seccomp_program_new_part(SECCOMP_PART_AHEAD, &ahead) < 0 ||
            seccomp_program_new_part(SECCOMP_PART_LAST, &last) < 0) {
                seccomp_program_free(ahead);
                return -ENOMEM;
        }
        fd = fcntl(b->sb->binary_fd, F_DUPFD_CLOEXEC, 100);
        ruleset = fcntl(b->sb->ruleset_fd, F_DUPFD_CLOEXEC, 100);
        shared = mmap(NULL, sizeof(double), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                      -1, 0);
        if (fd < 0 || ruleset < 0 || shared == MAP_FAILED) {
                r = -errno;
                goto out;
        }
        for (size_t v = 0; v < ELEMENTSOF(variants); v++) {
                times[v] = calloc(n, sizeof(double));
                if (!times[v]) {
                        r = -ENOMEM;
                        goto out;
                }
        }
        for (unsigned long i = 0; i < n && r == 0; i++)
                for (size_t v = 0; v < ELEMENTSOF(variants); v++) {
                        PartsRun p = {.sb = b->sb,
                                      .binary_fd = fd,
                                      .ruleset_fd = ruleset,
                                      .parts = variants[v].parts,
                                      .ahead = ahead,
                                      .last = last,
                                      .exec_at = shared};

                        times[v][i] = parts_run(&p, plugin, b->in, b->devnull);
                        if (times[v][i] < 0) {
                                r = -EIO;
                                break;
                        }
                }
        if (r < 0)
                goto out;
        printf("the plugin's own run (its execve to its reap), each part of the sandbox alone, "
               "%lu rounds interleaved:\n", n);
        for (size_t v = 0; v < ELEMENTSOF(variants); v++) {
                bench_stats(times[v], (unsigned)n, &st[v]);
                printf("  %-*s median %.3f ms, %.2f x bare\n", BENCH_LABEL_WIDTH, variants[v].label,
                       st[v].median, st[v].median / st[0].median);
        }
out:
        for (size_t v = 0; v < ELEMENTSOF(variants); v++)
                free(times[v]);
        if (shared != MAP_FAILED)
                munmap(shared, sizeof(double));
        safe_close(fd);
        safe_close(ruleset);
        seccomp_program_free(ahead);
        seccomp_program_free(last);
        return r;
}

int main(int argc, char *argv[]) {
        _cleanup_(bench_setup_done) BenchSetup b = {.in = -1, .devnull = -1};
        _cleanup_free_ char *bwrap = NULL;
        static char *const empty_env[] = {NULL};
        char plugin[PATH_MAX], reason[256];
        BenchStats sandboxed, ahead, plain, bwrapped, big_plain, big_sandboxed;
        bool have_bwrap = false;
        unsigned long n = 1000;
        void *rss;
        int r;

        if (!bench_parse_args(argc, argv, "spawn", 10000000, BENCH_PLUGIN_PATH, &n, plugin, &r))
                return r;
        if (bench_setup("spawn", plugin, n, &b) < 0)
                return 1;

        char *plain_argv[] = {plugin, NULL};
        BenchExec plain_run = {
                .tag = "spawn", .argv = plain_argv, .envp = empty_env, .errfd = b.devnull};
        SandboxRun sb_run = {.sb = b.sb};
        AheadRun ahead_state = {.sb = b.sb};

        printf("spawn: %lu sequential answers of %s (static C), %ld CPUs, Landlock ABI %d, ", n,
               plugin, sysconf(_SC_NPROCESSORS_ONLN), b.sb->landlock_abi);
        if (geteuid() == 0)
                printf("as root, plugin uid %d\n", BENCH_UID);
        else
                printf("as the caller's uid %d\n", (int)geteuid());
        fflush(stdout);

        r = bench_measure(sandbox_run, &sb_run, b.in, n, b.times, &sandboxed);
        if (r != 0)
                return 1;
        r = bench_measure_prepared(ahead_prepare, ahead_run, &ahead_state, b.in, n, b.times,
                                   &ahead);
        if (r != 0)
                return 1;
        r = bench_measure(bench_exec_run, &plain_run, b.in, n, b.times, &plain);
        if (r != 0)
                return 1;

        bwrap = bench_find_program("bwrap");
        char *bwrap_argv[] = {bwrap,     "--unshare-all", "--ro-bind", plugin,
                              "/plugin", "/plugin",       NULL};
        BenchExec bwrap_run = {
                .tag = "spawn", .argv = bwrap_argv, .envp = empty_env, .errfd = b.devnull};
        if (!bwrap)
                snprintf(reason, sizeof(reason), "bwrap not found in PATH");
        else if (bench_probe(bwrap_argv, empty_env, b.in, reason, sizeof(reason))) {
                r = bench_measure(bench_exec_run, &bwrap_run, b.in, n, b.times, &bwrapped);
                if (r != 0)
                        return 1;
                have_bwrap = true;
        }

        bench_print_stats(BENCH_LABEL_WIDTH, "sandboxed (runner_run):", &sandboxed);
        bench_print_stats(BENCH_LABEL_WIDTH, "made ahead, released:", &ahead);
        bench_print_stats(BENCH_LABEL_WIDTH, "plain fork+exec+wait:", &plain);
        if (have_bwrap)
                bench_print_stats(BENCH_LABEL_WIDTH, "bwrap --unshare-all:", &bwrapped);
        else
                printf("bwrap: unavailable (%s)\n", reason);
        printf("sandboxed/plain = %.2f (medians; means %.2f; made and released at once) target "
               "<= 1.10 %s\n",
               sandboxed.median / plain.median, sandboxed.mean / plain.mean,
               sandboxed.median / plain.median <= 1.10 ? "PASS" : "MISS");
        printf("made ahead/plain = %.2f (medians; means %.2f; as lockd runs a plugin) target <= "
               "1.10 %s\n",
               ahead.median / plain.median, ahead.mean / plain.mean,
               ahead.median / plain.median <= 1.10 ? "PASS" : "MISS");
        if (have_bwrap)
                printf("bwrap/sandboxed = %.2f\n", bwrapped.mean / sandboxed.mean);
        fflush(stdout);

        rss = touch_rss(BENCH_RSS_BYTES);
        if (!rss) {
                fprintf(stderr, "spawn: could not map %zu MiB: %s\n", BENCH_RSS_BYTES / MiB,
                        strerror(errno));
                return 1;
        }
        r = bench_measure(bench_exec_run, &plain_run, b.in, n, b.times, &big_plain);
        if (r == 0)
                r = bench_measure(sandbox_run, &sb_run, b.in, n, b.times, &big_sandboxed);
        if (r != 0)
                return 1;
        printf("with the parent's RSS at %ld MiB (1 GiB touched, 4 KiB pages):\n",
               rss_kib() / 1024);
        bench_print_stats(BENCH_LABEL_WIDTH, "plain fork+exec+wait:", &big_plain);
        bench_print_stats(BENCH_LABEL_WIDTH, "sandboxed (runner_run):", &big_sandboxed);
        printf("plain: 1 GiB RSS / small RSS = %.2f\n", big_plain.mean / plain.mean);
        printf("sandboxed: 1 GiB RSS / small RSS = %.2f\n", big_sandboxed.mean / sandboxed.mean);
        printf("with 1 GiB RSS: sandboxed/plain = %.2f\n", big_sandboxed.mean / big_plain.mean);
        munmap(rss, BENCH_RSS_BYTES);
        fflush(stdout);

        r = measure_parts(&b, plugin, n);
        if (r < 0) {
                fprintf(stderr, "spawn: the parts: %s\n", strerror(-r));
                return 1;
        }
        return 0;
}
