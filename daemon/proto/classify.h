/* A run's outcome and its precise cause: the types the spawner, the engine and lockctl report a
 * run in, and the pure classification of what a plugin printed and how it ended. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RUN_DETAIL_MAX 4096 /* bytes of fd 7 kept; the rest is drained unread */
/* Bytes of stdout kept: "1\n" is 2 bytes, a third is enough to know it is bad output. */
#define RUN_STDOUT_KEEP 3

typedef enum RunOutcome {
        RUN_ZERO = 0,
        RUN_ONE = 1,
        RUN_PLUGIN_ERROR = 2, /* every failure: the agent sees plugin_error, never a 0 */
} RunOutcome;

/* The precise cause of a plugin_error, for the audit and the human only (ARCHITECTURE.md, the
 * sandbox). */
typedef enum RunCause {
        RUN_CAUSE_NONE = 0,   /* a valid answer */
        RUN_CAUSE_BAD_OUTPUT, /* stdout held something other than 1 or 0 (+ one \n) */
        RUN_CAUSE_NO_OUTPUT,  /* exit 0 with nothing on stdout */
        RUN_CAUSE_EXIT,       /* non-zero exit status (exit_status) */
        RUN_CAUSE_SIGNAL,     /* killed by a signal (signal) */
        RUN_CAUSE_TIMEOUT,    /* the wall-clock timeout passed; lockd sent SIGKILL */
        RUN_CAUSE_OOM,        /* the scope's memory limit killed it */
        RUN_CAUSE_SPAWN,      /* the sandbox could not be entered (spawn_stage, spawn_errno) */
} RunCause;

/* The stages of entering the sandbox, in the order the child runs them. */
typedef enum SpawnStage {
        SPAWN_STAGE_NONE = 0,
        SPAWN_STAGE_CLONE,
        SPAWN_STAGE_SCOPE,
        SPAWN_STAGE_GROUPS,
        SPAWN_STAGE_GID,
        SPAWN_STAGE_UID,
        SPAWN_STAGE_PDEATHSIG,
        SPAWN_STAGE_CAPS,
        SPAWN_STAGE_RLIMIT,
        SPAWN_STAGE_FDS,
        SPAWN_STAGE_CWD,
        SPAWN_STAGE_NO_NEW_PRIVS,
        SPAWN_STAGE_LANDLOCK,
        SPAWN_STAGE_CLOSE_FDS,
        SPAWN_STAGE_SECCOMP,
        SPAWN_STAGE_EXEC,
        _SPAWN_STAGE_MAX,
} SpawnStage;

typedef struct RunResult {
        RunOutcome outcome;
        RunCause cause;
        int exit_status; /* RUN_CAUSE_EXIT */
        int signal;      /* RUN_CAUSE_SIGNAL (also the SIGKILL of a timeout) */
        SpawnStage spawn_stage;
        int spawn_errno;
        uint64_t stdout_bytes;
        uint64_t stderr_bytes;    /* drained and discarded; only the count is kept */
        uint64_t cpu_usec;        /* user + system */
        uint64_t peak_rss_bytes;  /* the plugin's own peak memory; 0: unknown (runner.h) */
        uint64_t wall_usec;       /* from the plugin's execve to its end */
        uint64_t setup_usec;      /* before that: the scope, the release, the sandbox's entry */
        uint64_t scope_wait_usec; /* the part of setup_usec spent waiting for the scope */
        int landlock_abi;
        uid_t uid;             /* the uid the plugin ran as */
        size_t detail_len;     /* bytes kept in detail */
        uint64_t detail_total; /* bytes the plugin wrote to fd 7 */
        char detail[RUN_DETAIL_MAX];
} RunResult;

/* How the child ended, as the parent saw it, for run_classify(). */
typedef struct RunExit {
        bool exited; /* exit_status valid */
        int exit_status;
        int signal; /* non-zero: killed by this signal */
        bool timed_out;
        bool oom;
} RunExit;

/*
 * Classifies one run from what stdout held (the first out_len bytes of out_total) and how the
 * child ended. Pure. Exactly "1" or "0", optionally followed by one "\n", with exit status 0 is an
 * answer; everything else is a plugin_error with its cause. Timeouts and OOM take precedence over
 * the signal they caused.
 */
void run_classify(const uint8_t *out, size_t out_len, uint64_t out_total, const RunExit *e,
                  RunResult *r);

/* Writes the cause as the audit spells it ("exit:3", "signal:SIGSYS", "spawn:seccomp:1"). */
const char *run_cause_format(const RunResult *r, char *buf, size_t size);
const char *spawn_stage_name(SpawnStage s);
const char *run_outcome_name(RunOutcome o); /* "0", "1", "plugin_error" */

/* Drains one non-blocking pipe, keeping at most keep bytes in buf (NULL: count only) and counting
 * every byte in *total; false at EOF (or a read error other than EAGAIN/EINTR), true while open. */
bool run_drain(int fd, uint8_t *buf, size_t keep, size_t *kept, uint64_t *total);
