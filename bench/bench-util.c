/* bench-util: the timing, statistics, input and fork+exec+wait helpers the benchmarks share. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"
#include "fd-util.h"
#include "macro.h"

static const char bench_input[] = "the input every run reads on fd 3\n";

double bench_now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

bool bench_parse_args(int argc, char *argv[], const char *tag, unsigned long max_n,
                      const char *default_plugin, unsigned long *n, char plugin[static PATH_MAX],
                      int *ret_exit) {
        const char *plugin_arg = default_plugin;

        if (argc > 3 ||
            (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))) {
                fprintf(stderr, "Usage: %s [N [PLUGIN]]\n", argv[0]);
                *ret_exit = argc > 3 ? 2 : 0;
                return false;
        }
        if (argc > 1) {
                char *end;

                errno = 0;
                *n = strtoul(argv[1], &end, 10);
                if (errno || *end || *n == 0 || *n > max_n) {
                        fprintf(stderr, "%s: bad N: %s\n", tag, argv[1]);
                        *ret_exit = 2;
                        return false;
                }
        }
        if (argc > 2)
                plugin_arg = argv[2];
        if (!realpath(plugin_arg, plugin)) {
                fprintf(stderr, "%s: %s: %s\n", tag, plugin_arg, strerror(errno));
                *ret_exit = 1;
                return false;
        }
        return true;
}

int bench_setup(const char *tag, const char *plugin, unsigned long n, BenchSetup *ret) {
        _cleanup_close_ int binfd = -1;
        SandboxSpec spec = {
                .protocol = 1,
                .limits = {.cpu_s = 5, .memory_bytes = 64 * MiB, .timeout_s = 10},
        };
        int r;

        *ret = (BenchSetup){.in = -1, .devnull = -1};
        ret->times = calloc(n, sizeof(double));
        ret->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        ret->in = bench_sealed_input();
        binfd = open(plugin, O_RDONLY | O_CLOEXEC);
        if (!ret->times || ret->devnull < 0 || ret->in < 0 || binfd < 0) {
                fprintf(stderr, "%s: setup failed: %s\n", tag,
                        strerror(ret->in < 0 ? -ret->in : errno));
                return -1;
        }
        r = sandbox_new(binfd, &spec, &ret->sb);
        if (r < 0) {
                fprintf(stderr, "%s: sandbox_new(%s): %s\n", tag, plugin, sandbox_strerror(r));
                return -1;
        }
        return 0;
}

void bench_setup_done(BenchSetup *s) {
        s->sb = sandbox_free(s->sb);
        s->times = mfree(s->times);
        s->in = safe_close(s->in);
        s->devnull = safe_close(s->devnull);
}

int bench_sealed_input(void) {
        _cleanup_close_ int mfd =
                memfd_from_buffer(bench_input, strlen(bench_input), "bench-input");

        if (mfd < 0)
                return mfd;
        return fd_reopen_readonly(mfd);
}

int bench_exec(char *const argv[], char *const envp[], int in, int errfd, int *ret_status) {
        return bench_exec_prepared(argv[0], argv, envp, in, errfd, NULL, NULL, ret_status);
}

int bench_exec_prepared(const char *path, char *const argv[], char *const envp[], int in,
                        int errfd, void (*prepare)(void *userdata), void *userdata,
                        int *ret_status) {
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
                if (prepare)
                        prepare(userdata); /* _exit()s when it cannot */
                execve(path, argv, envp);
                _exit(127);
        }
        safe_close(pipefd[1]);
        for (;;) {
                ssize_t n = read(pipefd[0], out + len, sizeof(out) - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                len += (size_t)n;
                if (len == sizeof(out)) {
                        /* Too long for an answer: drained, so that the child is not cut off. */
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

int bench_exec_run(void *userdata, int in) {
        BenchExec *e = userdata;
        int status = 0, r;

        r = bench_exec(e->argv, e->envp, in, e->errfd, &status);
        if (r != 0)
                fprintf(stderr, "%s: %s: %s (wait status 0x%x)\n", e->tag, e->argv[0],
                        r < 0 ? strerror(-r) : "no answer 1", status);
        return r;
}

/* 0 when res answered 1, else 1 with why on stderr; r (a negative errno) when the call failed. */
static int run_answered(const char *tag, const char *what, const char *call, int r,
                        const RunResult *res) {
        char cause[64];

        if (r < 0) {
                fprintf(stderr, "%s: %s: %s\n", tag, call, strerror(-r));
                return r;
        }
        if (res->outcome != RUN_ONE) {
                fprintf(stderr, "%s: %s answered %s (cause %s)\n", tag, what,
                        run_outcome_name(res->outcome),
                        run_cause_format(res, cause, sizeof(cause)));
                return 1;
        }
        return 0;
}

int bench_child_run(const char *tag, const char *what, RunChild **child, const Sandbox *sb,
                    const RunParams *p) {
        RunResult res = {};
        int r;

        r = run_child_start(*child, sb, p, &res);
        *child = run_child_free(*child);
        return run_answered(tag, what, "run_child_start", r, &res);
}

int bench_runner_run(const char *tag, const char *what, const Sandbox *sb, const RunParams *p) {
        RunResult res = {};
        int r;

        r = runner_run(sb, p, &res);
        return run_answered(tag, what, "runner_run", r, &res);
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

int bench_measure(BenchRunFunc f, void *userdata, int in, unsigned n, double *times,
                  BenchStats *ret) {
        return bench_measure_prepared(NULL, f, userdata, in, n, times, ret);
}

int bench_measure_prepared(BenchRunFunc prepare, BenchRunFunc f, void *userdata, int in, unsigned n,
                           double *times, BenchStats *ret) {
        int r;

        for (unsigned i = 0; i < BENCH_WARMUP; i++) {
                if (lseek(in, 0, SEEK_SET) < 0)
                        return negative_errno();
                r = prepare ? prepare(userdata, in) : 0;
                if (r == 0)
                        r = f(userdata, in);
                if (r != 0)
                        return r;
        }
        for (unsigned i = 0; i < n; i++) {
                double t0;

                if (lseek(in, 0, SEEK_SET) < 0)
                        return negative_errno();
                r = prepare ? prepare(userdata, in) : 0;
                if (r != 0)
                        return r;
                t0 = bench_now_ms();
                r = f(userdata, in);
                times[i] = bench_now_ms() - t0;
                if (r != 0)
                        return r;
        }
        bench_stats(times, n, ret);
        return 0;
}

void bench_stats(double *times, unsigned n, BenchStats *ret) {
        double sum = 0;

        for (unsigned i = 0; i < n; i++)
                sum += times[i];
        qsort(times, n, sizeof(double), cmp_double);
        *ret = (BenchStats){
                .mean = sum / n,
                .median = times[n / 2],
                .p99 = times[(size_t)((n - 1) * 0.99)],
                .min = times[0],
        };
}

void bench_print_stats(int width, const char *what, const BenchStats *s) {
        printf("  %-*s mean %7.3f ms  median %7.3f ms  p99 %7.3f ms  min %7.3f ms\n", width, what,
               s->mean, s->median, s->p99, s->min);
}

char *bench_find_program(const char *name) {
        const char *path = getenv("PATH") ?: "/usr/local/bin:/usr/bin:/bin";
        _cleanup_free_ char *copy = strdup(path);
        char *save = NULL;

        if (!copy)
                return NULL;
        for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
                char *p;

                if (asprintf(&p, "%s/%s", dir, name) < 0)
                        return NULL;
                if (access(p, X_OK) == 0)
                        return p;
                free(p);
        }
        return NULL;
}

bool bench_probe(char *const argv[], char *const envp[], int in, char *reason, size_t size) {
        _cleanup_close_ int errfd = -1;
        char buf[512];
        ssize_t n;
        int status = 0, r;

        errfd = memfd_create("probe-stderr", MFD_CLOEXEC);
        if (errfd < 0) {
                snprintf(reason, size, "memfd_create: %s", strerror(errno));
                return false;
        }
        if (lseek(in, 0, SEEK_SET) < 0) {
                snprintf(reason, size, "lseek: %s", strerror(errno));
                return false;
        }
        r = bench_exec(argv, envp, in, errfd, &status);
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
