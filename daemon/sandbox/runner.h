/* One plugin run: spawn under the sandbox, collect stdout/stderr/detail and classify the answer
 * (classify.h), or, when another process reads the output (RunFds), only wait for its end. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "classify.h"
#include "sandbox.h"

/*
 * Called in the parent with the child's pid and pidfd after the child exists but before it may
 * enter the sandbox (it waits on its control socket for the release): the place to move it into a
 * scope. Non-zero fails the run closed with cause spawn:scope.
 */
typedef int (*RunStartHook)(pid_t pid, int pidfd, void *userdata);

/*
 * The fds of a run whose output another process reads (the engine, ARCHITECTURE.md): the child
 * gets them as they are, and runner_run() only waits for the plugin's end and reports it in
 * *exit, never reading a byte the plugin wrote.
 */
typedef struct RunFds {
        int inputs_fd; /* fd 6, read-only (only if spec.inputs) */
        int stdout_fd; /* write ends of the reader's pipes */
        int stderr_fd;
        int detail_fd; /* only if spec.detail */
        RunExit *exit; /* filled when the plugin ran */
} RunFds;

typedef struct RunParams {
        int input_fd;            /* becomes fd 3; must be open read-only, its own offset */
        const void *inputs_json; /* canonical JSON for fd 6 (only if spec.inputs) */
        size_t inputs_len;
        bool drop_to_uid; /* run as uid/gid below (requires root), else as the caller */
        uid_t uid;
        gid_t gid;
        RunStartHook start_hook; /* optional */
        void *start_hook_userdata;
        /*
         * Optional: called right after the child was reaped when SIGKILL ended it and lockd's
         * timeout did not send that: true when the scope's memory limit killed it (RUN_CAUSE_OOM).
         */
        bool (*oom_check)(void *userdata);
        void *oom_check_userdata;
        /*
         * Optional: called right after the child was reaped (same userdata): the run's memory
         * cgroup's peak in bytes, 0 with *ret, or a negative errno when it cannot tell (no
         * memory cgroup, or the manager removed it first). peak_rss_bytes is then the process's
         * maxrss where that is provably the plugin's own, else 0: unknown (run_child_start()).
         */
        int (*peak_check)(void *userdata, uint64_t *ret);
        /* Optional: the output goes to another process's pipes (inputs_json then unused). */
        const RunFds *fds;
        /*
         * Optional, run_child_start() and run_child_finish() only: called once the child is out of
         * lockd's hands (it executed the plugin, or failed to), before the wait for its end. What
         * would compete with the child's way into the sandbox for a CPU (telling the engine,
         * refilling the children made ahead) goes here, not before the release.
         */
        void (*launched)(void *userdata);
        void *launched_userdata;
} RunParams;

/*
 * Runs the plugin once, blocking until it ended, and fills *ret. Returns 0 when the run took
 * place (whatever its outcome: failures inside the sandbox are in *ret as plugin_error), or a
 * negative errno when the parent could not even try (no pipes, bad params): then *ret is
 * untouched. With p->fds, *ret holds no classification: a run that reached the plugin has
 * cause RUN_CAUSE_NONE and its end in *p->fds->exit; one that did not has RUN_CAUSE_SPAWN.
 */
int runner_run(const Sandbox *sb, const RunParams *p, RunResult *ret);

/*
 * A child made ahead of its run (ARCHITECTURE.md, scopes made ahead): cloned in our memory with
 * every fd it inherited closed but its control socket, dying with the thread that made it, it
 * waits there for the release run_child_start() sends. Its scope is the caller's business (move
 * it in before the release). Used for one run only.
 */
typedef struct RunChild RunChild;

/* Makes one waiting child. 0 or a negative errno. */
int run_child_new(RunChild **ret);
pid_t run_child_pid(const RunChild *c);
int run_child_pidfd(const RunChild *c);
uint64_t run_child_born_usec(const RunChild *c); /* CLOCK_MONOTONIC */
/* Whether it still waits for its run (it did not die meanwhile). */
bool run_child_waiting(const RunChild *c);
/*
 * Releases c into the sandbox with p's fds and limits (p->start_hook unused) and collects the
 * run as runner_run() does; wall_usec counts from the plugin's execve, setup_usec from the
 * release to it. A child that died while it waited fails the run as spawn:scope. c is spent
 * afterwards, whatever the outcome: free it.
 */
int run_child_start(RunChild *c, const Sandbox *sb, const RunParams *p, RunResult *ret);
/*
 * run_child_start() in two halves, which may run on different threads of this process (a RunChild
 * is not shared: one thread at a time). run_child_release() sends c its release and returns at
 * once: 0 (a failed send included: the finish reports it as spawn:scope), or a negative errno for
 * bad params or a run that cannot make its own fds, when nothing was sent and c is spent. p and
 * the Sandbox must stay valid until run_child_finish(), which waits for the execve and the end
 * and fills *ret as run_child_start() does.
 */
int run_child_release(RunChild *c, const Sandbox *sb, const RunParams *p);
int run_child_finish(RunChild *c, const Sandbox *sb, const RunParams *p, RunResult *ret);
/* Kills a child that never ran (or was not reaped) and frees it. */
RunChild *run_child_free(RunChild *c);
static inline void run_child_freep(RunChild **c) {
        if (*c)
                run_child_free(*c);
}
