/* The audit log's writer: an append-only, hash-chained JSON-lines file in the state directory
 * (its format and verifier: audit-chain.h), with a journal copy of every record. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "audit-chain.h"
#include "audit-line.h"
#include "classify.h"

typedef struct Audit Audit;

/* The function that makes the log durable (audit_set_sync_function()). */
typedef int (*AuditSyncFn)(int fd, void *userdata);

/*
 * Opens (creating it, mode 0600, in a 0700 AUDIT_DIR, both fsync()ed into their directories) the
 * audit file below the directory statefd and takes an exclusive flock() on it for as long as it
 * stays open. Recovers the chain from the last line: its seq and its hash become the next
 * record's seq - 1 and prev. A last line without a newline is a record torn by a crash: it is cut
 * away (ftruncate + fsync) and a "recovered" record saying how many bytes were cut (and their
 * SHA-256) is appended before anything else, so the cut is never silent.
 *
 * Returns 0 with *ret, or a negative errno with *ret untouched: -EINVAL for bad arguments or an
 * audit file that is not a regular file, -EPERM when the directory or file is not lockd's own or
 * is writable by group or others, -EBUSY when another process holds the file, -EBADMSG when the
 * last complete line is not a valid record or the torn tail is longer than any record could be
 * (not a crash: lockd must not write after it; the operator moves the file aside), -ENOMEM, I/O
 * errnos.
 */
int audit_open(int statefd, Audit **ret);

/* Closes the file (releasing the lock); NULL-safe; returns NULL. */
Audit *audit_close(Audit *a);
static inline void audit_closep(Audit **a) {
        if (*a)
                audit_close(*a);
}

/*
 * Appends one record of event type with fields (a JSON object, borrowed; NULL for none): its
 * names as audit_field_name_allowed() says, at most AUDIT_FIELDS_MAX of them, each value a string
 * (valid UTF-8 as jansson holds it, no NUL, at most AUDIT_STRING_MAX bytes), an integer, true,
 * false or null. Writes the line with one write() on an O_APPEND fd and fsync()s it before
 * returning; then logs the journal copy (log_struct() with the event's MESSAGE_ID, LOCKD_AUDIT_SEQ,
 * LOCKD_AUDIT_EVENT, LOCKD_AUDIT_HASH and LOCKD_<NAME> for each field; null fields left out).
 *
 * Returns 0 once the record is on disk. -EINVAL: bad arguments, a refused field name (a forbidden
 * one included), value or type; -E2BIG: the line would exceed AUDIT_LINE_MAX; -ENOMEM. A failed
 * or short write is undone (the file cut back to its previous size) and its errno returned (-EIO
 * for a short write); the log stays usable. When the undo or the fsync() fails, nobody can tell
 * what the file holds: the Audit turns broken, this and every later call return -EIO, and only a
 * reopen (which recovers from what is on disk) writes again. A caller that must not act without
 * a record (a run's outcome) fails closed on any error.
 *
 * Not thread-safe: the engine calls it (and everything else here) from its event loop thread only,
 * runs that finish on worker threads included.
 */
int audit_append(Audit *a, AuditEvent type, json_t *fields);

/*
 * Group commit. audit_append_nosync() writes a record like audit_append() but does not make it
 * durable: the caller must not act on it (answer a peer, start a run) before a later
 * audit_sync() (or any audit_append()) returned 0. audit_sync() makes every record written so
 * far durable with one fsync() and then logs their journal copies, in order; -EIO leaves the log
 * broken as a failed audit_append() does. At most AUDIT_PENDING_MAX records wait: the next one
 * syncs first. audit_close() syncs what waits.
 */
#define AUDIT_PENDING_MAX 256
int audit_append_nosync(Audit *a, AuditEvent type, json_t *fields);
int audit_sync(Audit *a);

/* audit_append() and audit_append_nosync() with the fields as an array (audit-line.h): no JSON
 * object is built, and the line is written as audit_line_format() makes it. What an answer writes
 * (a submit, a budget change, a run, a ticket's end) goes this way. Same rules, same returns. */
int audit_append_fields(Audit *a, AuditEvent type, const AuditField *fields, size_t n);
int audit_append_fields_nosync(Audit *a, AuditEvent type, const AuditField *fields, size_t n);

/*
 * The group commit off the event loop, in three steps. audit_sync_prepare() returns 1 and fills
 * *ret for a sync of every record written so far (0: all durable already, nothing to do; a
 * negative errno: the log is broken). audit_sync_job_run() does the fsync(), and touches nothing
 * but the job: it may run on another thread while the loop appends more records. Back on the
 * loop, audit_sync_complete() with the job's result makes the records up to the job's seq
 * durable (their journal copies logged) or breaks the log as a failed audit_sync() does; it
 * returns 0 or the log's error, and frees what the job held. An audit_sync() in between is fine:
 * seqs, not counts, say what is durable.
 */
typedef struct AuditSyncJob {
        int fd;       /* a duplicate of the log's descriptor, closed by audit_sync_complete() */
        uint64_t seq; /* the last record the fsync() covers */
        AuditSyncFn sync;
        void *sync_userdata;
} AuditSyncJob;
int audit_sync_prepare(Audit *a, AuditSyncJob *ret);
int audit_sync_job_run(AuditSyncJob *j);
int audit_sync_complete(Audit *a, AuditSyncJob *j, int r);
/* The last record known to be on disk (0 for none). */
uint64_t audit_get_durable_seq(const Audit *a);

/* The fields of a run record, as audit_append_run() writes them. */
typedef struct AuditRun {
        const char *plugin;        /* name */
        const char *version;       /* SemVer */
        const char *handle_sha256; /* hex SHA-256 of the handle's snapshot */
        uid_t peer_uid;            /* the agent's (or console's) credentials at accept */
        pid_t peer_pid;
        RunOutcome outcome;    /* written as run_outcome_name(): "1", "0", "plugin_error" */
        const char *cause;     /* the precise failure cause; NULL for a valid answer */
        uint64_t stderr_bytes; /* counted, never kept */
        uint64_t cpu_usec;     /* user + system */
        uint64_t peak_memory_bytes; /* the plugin's own; 0: unknown */
        uint64_t wall_usec;       /* from the plugin's execve to its end */
        uint64_t setup_usec;      /* lockd's part before the execve */
        uint64_t scope_wait_usec; /* of which the wait for the scope */
        const char *unit;   /* the transient scope; NULL without one */
        const char *ticket; /* NULL for a console test run */
        int64_t step;       /* the step's index in its ticket; < 0 for none */
} AuditRun;

/* audit_append(a, AUDIT_RUN, ...) with run's fields (plugin, version, handle_sha256, peer_uid,
 * peer_pid, outcome, cause, stderr_bytes, cpu_usec, peak_memory_bytes, wall_usec, setup_usec,
 * scope_wait_usec, unit, ticket, step; NULL strings, a negative step and an unknown (0) peak
 * written as null). Same returns. */
int audit_append_run(Audit *a, const AuditRun *run);
/* The same, written like audit_append_nosync(): the caller acts on it after a later sync. */
int audit_append_run_nosync(Audit *a, const AuditRun *run);

/* The last record's seq (0 for an empty log) and the chain head (hex, 64 zeros when empty). */
uint64_t audit_get_seq(const Audit *a);
const char *audit_get_head(const Audit *a);

/*
 * The function audit_append() calls to make a record durable: fsync() unless set otherwise, so a
 * test can count the calls or fail one. NULL restores fsync().
 */
void audit_set_sync_function(Audit *a, AuditSyncFn fn, void *userdata);

/*
 * Keeps the log in segments: once the current file holds segment_bytes (0: never), the next
 * append first closes it as AUDIT_DIR/audit-<its last seq>.jsonl and starts a new file whose first
 * record ("rotated", naming that segment) continues the chain; the switch is atomic (a crash
 * leaves either file whole, and audit_open() tidies up after it). Past retain (0: keep all)
 * segments the oldest go, each after a "segment_removed" record naming it.
 */
void audit_set_segments(Audit *a, uint64_t segment_bytes, unsigned retain);

/*
 * fn is called before each segment switch, once every record so far is durable (the seq and
 * head it sees are the old file's last): the budgets checkpoint there, so that the records a
 * start replays are all in the current file. A negative errno from fn fails the switch, and so
 * the append that wanted it. NULL: none.
 */
void audit_set_rotate_hook(Audit *a, int (*fn)(void *userdata), void *userdata);
