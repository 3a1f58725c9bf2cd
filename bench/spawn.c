/*
 * bench/spawn: what the sandbox costs per answer. Runs N sequential answers of a static C plugin
 * (bench/answer-plugin) through runner_run(), the same binary by plain fork+exec+wait, and through
 * `bwrap --unshare-all` where bwrap works here, and prints per-run times and the ratios
 * (issue 2's target: sandboxed <= 1.5x plain). Then repeats plain and sandboxed with ~1 GiB of
 * touched RSS in the parent, to show that fork's cost grows with the parent's memory and the
 * runner's does not.
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
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "runner.h"
#include "sandbox.h"

#ifndef BENCH_PLUGIN_PATH
#error "BENCH_PLUGIN_PATH must name the answer plugin"
#endif

#define BENCH_UID       655501 /* a fixed uid of the default ephemeral range (as root) */
#define BENCH_RSS_BYTES (1 * GiB)
#define BENCH_WARMUP    10

static const char bench_input[] = "the input every run reads on fd 3\n";

typedef struct Stats {
        double mean, median, p99, min; /* ms */
} Stats;

typedef int (*RunFunc)(void *userdata, int in);

static double now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

/* Returns a read-only fd with its own offset on a sealed memfd holding bench_input: lockd's fd 3.
 */
static int sealed_input(void) {
        _cleanup_close_ int mfd =
                memfd_from_buffer(bench_input, strlen(bench_input), "bench-input");

        if (mfd < 0)
                return mfd;
        return fd_reopen_readonly(mfd);
}

/*
 * Plain fork+exec+wait of argv with fd 3 = in, stdout a pipe, stderr errfd. Reads stdout to its
 * end and waits. Returns 0 when the child printed "1\n" and exited 0, 1 when it did not (with
 * *ret_status), a negative errno when it could not be started.
 */
static int run_exec(char *const argv[], int in, int errfd, int *ret_status) {
        static char *const envp[] = {NULL};
        char out[16];
        size_t len = 0;
        int pipefd[2], status;
        pid_t pid;

        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return negative_errno();
        pid = fork();
        if (pid < 0) {
                int r = negative_errno();
                safe_close(pipefd[0]);
                safe_close(pipefd[1]);
                return r;
        }
        if (pid == 0) {
                /* The order matters: pipefd[1] or errfd may be fd 3 until in is put there. */
                if (dup2(pipefd[1], STDOUT_FILENO) < 0 || dup2(errfd, STDERR_FILENO) < 0 ||
                    dup2(in, 3) < 0)
                        _exit(126);
                execve(argv[0], argv, envp);
                _exit(127);
        }
        safe_close(pipefd[1]);
        for (;;) {
                ssize_t n = read(pipefd[0], out + len, len < sizeof(out) ? sizeof(out) - len : 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                len += (size_t)n;
                if (len == sizeof(out)) {
                        char drain[256];
                        while (read(pipefd[0], drain, sizeof(drain)) > 0)
                                ;
                        break;
                }
        }
        safe_close(pipefd[0]);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return negative_errno();
        if (ret_status)
                *ret_status = status;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 && len == 2 &&
                               memcmp(out, "1\n", 2) == 0
                       ? 0
                       : 1;
}

typedef struct ExecRun {
        char *const *argv;
        int devnull;
} ExecRun;

static int exec_run(void *userdata, int in) {
        ExecRun *e = userdata;
        int status = 0, r;

        r = run_exec(e->argv, in, e->devnull, &status);
        if (r != 0)
                fprintf(stderr, "spawn: %s: %s (wait status 0x%x)\n", e->argv[0],
                        r < 0 ? strerror(-r) : "no answer 1", status);
        return r;
}

typedef struct SandboxRun {
        const Sandbox *sb;
} SandboxRun;

static int sandbox_run(void *userdata, int in) {
        SandboxRun *s = userdata;
        RunParams p = {
                .input_fd = in,
                .drop_to_uid = geteuid() == 0,
                .uid = BENCH_UID,
                .gid = BENCH_UID,
        };
        RunResult res;
        char cause[64];
        int r;

        r = runner_run(s->sb, &p, &res);
        if (r < 0) {
                fprintf(stderr, "spawn: runner_run: %s\n", strerror(-r));
                return r;
        }
        if (res.outcome != RUN_ONE) {
                fprintf(stderr, "spawn: sandboxed run answered %s (cause %s)\n",
                        run_outcome_name(res.outcome),
                        run_cause_format(&res, cause, sizeof(cause)));
                return 1;
        }
        return 0;
}

/* Times n runs of f (after a short warm-up). Returns 0, or the first failed run's code. */
static int measure(RunFunc f, void *userdata, int in, unsigned n, double *times, Stats *ret) {
        double sum = 0;
        int r;

        for (unsigned i = 0; i < BENCH_WARMUP; i++) {
                if (lseek(in, 0, SEEK_SET) < 0)
                        return negative_errno();
                r = f(userdata, in);
                if (r != 0)
                        return r;
        }
        for (unsigned i = 0; i < n; i++) {
                double t0;

                if (lseek(in, 0, SEEK_SET) < 0)
                        return negative_errno();
                t0 = now_ms();
                r = f(userdata, in);
                times[i] = now_ms() - t0;
                if (r != 0)
                        return r;
                sum += times[i];
        }
        qsort(times, n, sizeof(double), cmp_double);
        *ret = (Stats){
                .mean = sum / n,
                .median = times[n / 2],
                .p99 = times[(size_t)((n - 1) * 0.99)],
                .min = times[0],
        };
        return 0;
}

static void print_stats(const char *what, const Stats *s) {
        printf("  %-30s mean %7.3f ms  median %7.3f ms  p99 %7.3f ms  min %7.3f ms\n", what,
               s->mean, s->median, s->p99, s->min);
}

/* Finds bwrap in $PATH; NULL when there is none. */
static char *find_bwrap(void) {
        const char *path = getenv("PATH") ?: "/usr/local/bin:/usr/bin:/bin";
        _cleanup_free_ char *copy = strdup(path);
        char *save = NULL;

        if (!copy)
                return NULL;
        for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
                char *p;

                if (asprintf(&p, "%s/bwrap", dir) < 0)
                        return NULL;
                if (access(p, X_OK) == 0)
                        return p;
                free(p);
        }
        return NULL;
}

/* Runs bwrap once; on failure says why in reason (its first line of stderr, or how it ended). */
static bool bwrap_probe(char *const argv[], int in, char *reason, size_t size) {
        _cleanup_close_ int errfd = -1;
        char buf[512];
        ssize_t n;
        int status = 0, r;

        errfd = memfd_create("bwrap-stderr", MFD_CLOEXEC);
        if (errfd < 0) {
                snprintf(reason, size, "memfd_create: %s", strerror(errno));
                return false;
        }
        if (lseek(in, 0, SEEK_SET) < 0) {
                snprintf(reason, size, "lseek: %s", strerror(errno));
                return false;
        }
        r = run_exec(argv, in, errfd, &status);
        if (r == 0)
                return true;
        if (r < 0) {
                snprintf(reason, size, "%s", strerror(-r));
                return false;
        }
        n = pread(errfd, buf, sizeof(buf) - 1, 0);
        buf[n > 0 ? n : 0] = 0;
        buf[strcspn(buf, "\n")] = 0;
        if (buf[0])
                snprintf(reason, size, "%.200s", buf);
        else if (WIFEXITED(status))
                snprintf(reason, size, "exit status %d without the answer 1", WEXITSTATUS(status));
        else
                snprintf(reason, size, "killed by signal %d", WTERMSIG(status));
        return false;
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

int main(int argc, char *argv[]) {
        _cleanup_(sandbox_freep) Sandbox *sb = NULL;
        _cleanup_close_ int in = -1, devnull = -1, binfd = -1;
        _cleanup_free_ double *times = NULL;
        _cleanup_free_ char *bwrap = NULL;
        char plugin[PATH_MAX], reason[256];
        const char *plugin_arg = BENCH_PLUGIN_PATH;
        SandboxSpec spec = {
                .protocol = 1,
                .limits = {.cpu_s = 5, .memory_bytes = 64 * MiB, .timeout_s = 10},
        };
        Stats sandboxed, plain, bwrapped, big_plain, big_sandboxed;
        bool have_bwrap = false;
        unsigned long n = 1000;
        void *rss;
        int r;

        if (argc > 3 ||
            (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))) {
                fprintf(stderr, "Usage: %s [N [PLUGIN]]\n", argv[0]);
                return argc > 3 ? 2 : 0;
        }
        if (argc > 1) {
                char *end;

                errno = 0;
                n = strtoul(argv[1], &end, 10);
                if (errno || *end || n == 0 || n > 10000000) {
                        fprintf(stderr, "spawn: bad N: %s\n", argv[1]);
                        return 2;
                }
        }
        if (argc > 2)
                plugin_arg = argv[2];
        if (!realpath(plugin_arg, plugin)) {
                fprintf(stderr, "spawn: %s: %s\n", plugin_arg, strerror(errno));
                return 1;
        }

        times = calloc(n, sizeof(double));
        devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        in = sealed_input();
        binfd = open(plugin, O_RDONLY | O_CLOEXEC);
        if (!times || devnull < 0 || in < 0 || binfd < 0) {
                fprintf(stderr, "spawn: setup failed: %s\n", strerror(in < 0 ? -in : errno));
                return 1;
        }
        r = sandbox_new(binfd, &spec, &sb);
        if (r < 0) {
                fprintf(stderr, "spawn: sandbox_new(%s): %s\n", plugin, sandbox_strerror(r));
                return 1;
        }

        char *plain_argv[] = {plugin, NULL};
        ExecRun plain_run = {.argv = plain_argv, .devnull = devnull};
        SandboxRun sb_run = {.sb = sb};

        printf("spawn: %lu sequential answers of %s (static C), %ld CPUs, Landlock ABI %d, ", n,
               plugin, sysconf(_SC_NPROCESSORS_ONLN), sb->landlock_abi);
        if (geteuid() == 0)
                printf("as root, plugin uid %d\n", BENCH_UID);
        else
                printf("as the caller's uid %d\n", (int)geteuid());
        fflush(stdout);

        r = measure(sandbox_run, &sb_run, in, n, times, &sandboxed);
        if (r != 0)
                return 1;
        r = measure(exec_run, &plain_run, in, n, times, &plain);
        if (r != 0)
                return 1;

        bwrap = find_bwrap();
        char *bwrap_argv[] = {bwrap,     "--unshare-all", "--ro-bind", plugin,
                              "/plugin", "/plugin",       NULL};
        ExecRun bwrap_run = {.argv = bwrap_argv, .devnull = devnull};
        if (!bwrap)
                snprintf(reason, sizeof(reason), "bwrap not found in PATH");
        else if (bwrap_probe(bwrap_argv, in, reason, sizeof(reason))) {
                r = measure(exec_run, &bwrap_run, in, n, times, &bwrapped);
                if (r != 0)
                        return 1;
                have_bwrap = true;
        }

        print_stats("sandboxed (runner_run):", &sandboxed);
        print_stats("plain fork+exec+wait:", &plain);
        if (have_bwrap)
                print_stats("bwrap --unshare-all:", &bwrapped);
        else
                printf("bwrap: unavailable (%s)\n", reason);
        printf("sandboxed/plain = %.2f (target <= 1.50)\n", sandboxed.mean / plain.mean);
        if (have_bwrap)
                printf("bwrap/sandboxed = %.2f\n", bwrapped.mean / sandboxed.mean);
        fflush(stdout);

        rss = touch_rss(BENCH_RSS_BYTES);
        if (!rss) {
                fprintf(stderr, "spawn: could not map %zu MiB: %s\n", BENCH_RSS_BYTES / MiB,
                        strerror(errno));
                return 1;
        }
        r = measure(exec_run, &plain_run, in, n, times, &big_plain);
        if (r == 0)
                r = measure(sandbox_run, &sb_run, in, n, times, &big_sandboxed);
        if (r != 0)
                return 1;
        printf("with the parent's RSS at %ld MiB (1 GiB touched, 4 KiB pages):\n",
               rss_kib() / 1024);
        print_stats("plain fork+exec+wait:", &big_plain);
        print_stats("sandboxed (runner_run):", &big_sandboxed);
        printf("plain: 1 GiB RSS / small RSS = %.2f\n", big_plain.mean / plain.mean);
        printf("sandboxed: 1 GiB RSS / small RSS = %.2f\n", big_sandboxed.mean / sandboxed.mean);
        printf("with 1 GiB RSS: sandboxed/plain = %.2f\n", big_sandboxed.mean / big_plain.mean);
        munmap(rss, BENCH_RSS_BYTES);
        return 0;
}
