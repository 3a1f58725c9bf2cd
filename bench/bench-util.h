/* bench-util: the timing, statistics, input and fork+exec+wait helpers the benchmarks share. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "runner.h"
#include "sandbox.h"

#define BENCH_WARMUP 10 /* untimed runs before each measured series */

/* Per-run times of one series, in milliseconds. */
typedef struct BenchStats {
        double mean, median, p99, min;
} BenchStats;

/* One run of whatever is measured, reading its input on fd in: 0 when it answered 1, else not. */
typedef int (*BenchRunFunc)(void *userdata, int in);

/* A fork+exec+wait run as a BenchRunFunc; tag starts its error messages ("spawn", "scope"). */
typedef struct BenchExec {
        const char *tag;
        char *const *argv;
        char *const *envp;
        int errfd;
} BenchExec;

/* What every benchmark sets up before its first run. */
typedef struct BenchSetup {
        Sandbox *sb;   /* the plugin's sandbox, for runner_run() */
        double *times; /* room for n times, for bench_measure() */
        int in;        /* the sealed input, lockd's fd 3 */
        int devnull;   /* stderr of the exec runs */
} BenchSetup;

/* CLOCK_MONOTONIC in milliseconds. */
double bench_now_ms(void);

/*
 * Parses "[N [PLUGIN]]": N (default *n, 1 to max_n) into *n, the real path of PLUGIN (default
 * default_plugin) into plugin. true to go on; false with the exit status in *ret_exit after usage
 * (0 for --help) or an error, said on stderr after "tag: ".
 */
bool bench_parse_args(int argc, char *argv[], const char *tag, unsigned long max_n,
                      const char *default_plugin, unsigned long *n, char plugin[static PATH_MAX],
                      int *ret_exit);

/*
 * Opens /dev/null, the sealed input and plugin's sandbox and allocates n times. 0, or -1 after
 * saying on stderr, after "tag: ", what failed. Release it with bench_setup_done() either way.
 */
int bench_setup(const char *tag, const char *plugin, unsigned long n, BenchSetup *ret);
void bench_setup_done(BenchSetup *s);

/* A read-only fd with its own offset on a sealed memfd holding the bench input: lockd's fd 3. */
int bench_sealed_input(void);

/*
 * fork+exec+wait of argv with environment envp, fd 3 = in, stdout a pipe read to its end, stderr
 * errfd. 0 when the child printed exactly "1\n" and exited 0, 1 when it did not (with its wait
 * status in *ret_status), a negative errno when it could not be started.
 */
int bench_exec(char *const argv[], char *const envp[], int in, int errfd, int *ret_status);
/* bench_exec() of path, with prepare(userdata) called in the child after its fds are laid out
 * and before the execve (it _exit()s when it fails). */
int bench_exec_prepared(const char *path, char *const argv[], char *const envp[], int in,
                        int errfd, void (*prepare)(void *userdata), void *userdata,
                        int *ret_status);

/* bench_exec() of the BenchExec userdata, saying on stderr why a run failed. */
int bench_exec_run(void *userdata, int in);

/*
 * runner_run() of sb with p, saying on stderr (after "tag: ", with what as the run's name) why a
 * run failed. 0 when it answered 1, 1 when it answered otherwise, a negative errno on error.
 */
int bench_runner_run(const char *tag, const char *what, const Sandbox *sb, const RunParams *p);

/*
 * The same for a child made ahead: run_child_start() of *child with sb and p, then the child
 * freed (*child set to NULL). 0 when it answered 1, 1 when it answered otherwise, a negative errno
 * on error.
 */
int bench_child_run(const char *tag, const char *what, RunChild **child, const Sandbox *sb,
                    const RunParams *p);

/*
 * Times n runs of f after BENCH_WARMUP untimed ones, each with in rewound, into times (n of them,
 * left sorted) and *ret. 0, or the first failed run's code.
 */
int bench_measure(BenchRunFunc f, void *userdata, int in, unsigned n, double *times,
                  BenchStats *ret);

/* The same with prepare(userdata, in) run before each run, untimed (0 to go on). */
int bench_measure_prepared(BenchRunFunc prepare, BenchRunFunc f, void *userdata, int in, unsigned n,
                           double *times, BenchStats *ret);

/* The statistics of n times (n > 0), which are left sorted. */
void bench_stats(double *times, unsigned n, BenchStats *ret);

/* Prints one row of statistics with what left-aligned in width columns. */
void bench_print_stats(int width, const char *what, const BenchStats *s);

/* Finds name in $PATH: a new string, or NULL when there is none. */
char *bench_find_program(const char *name);

/* Runs argv once; false when it did not answer 1, with why in reason (its first stderr line, or
 * how it ended). */
bool bench_probe(char *const argv[], char *const envp[], int in, char *reason, size_t size);
