/* The audit log: an append-only, hash-chained JSON-lines file in the state directory, with a
 * journal copy of every record, and the pure verifier `lockctl audit verify` runs over it. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runner.h"

/*
 * The file is AUDIT_DIR/AUDIT_FILE below lockd's state directory; older segments beside it are
 * AUDIT_DIR/audit-<seq of their last record, 20 digits>.jsonl (audit_set_segments()), each
 * after the first beginning with a "rotated" record. Each record is one line: the
 * canonical JSON (compact, keys sorted, ASCII only, so a terminal shows no raw control or bidi
 * characters) of an object holding
 *
 *   seq    1, 2, 3, ... (a rotated file goes on from the previous file's last seq),
 *   time   CLOCK_REALTIME in microseconds,
 *   prev   the lowercase hex SHA-256 of the previous line's bytes (without its newline); 64
 *          zeros for the first record of a chain; for a file's first "rotated" record, the head of
 *          the file before it,
 *   event  the event's name (audit_event_to_string()),
 *
 * and the caller's fields beside them, followed by "\n". The head of the chain is the hash of the
 * last line; the journal copy of each record carries its hash (LOCKD_AUDIT_HASH), so a change to
 * the last record, which no later prev covers, still shows against the journal.
 *
 * What never enters a record: a plugin's detail and the values a human typed (the plugin contract
 * keeps both away from every log). A record carries no field named detail, value, values, input
 * or inputs: audit_append() refuses such a field with -EINVAL whatever its value, and the verifier
 * flags one in the file. The rule is about names only; callers pass metadata (names, digests,
 * ids, counts, causes), never a value a human or a plugin chose.
 */
#define AUDIT_DIR  "audit"
#define AUDIT_FILE "audit.jsonl"

/* Caps on a record, the same for the writer and the verifier. */
#define AUDIT_LINE_MAX   ((size_t)16384) /* one line's bytes, without the newline */
#define AUDIT_FIELDS_MAX 24              /* caller fields per record */
#define AUDIT_NAME_MAX   32              /* a field name: [a-z][a-z0-9_]{0,31} */
#define AUDIT_STRING_MAX ((size_t)1024)  /* a string value's bytes */
#define AUDIT_HASH_HEX   64

/* The closed set of events. A new event needs a name, a MESSAGE_ID (log-ids.h) and a catalog
 * entry; a name is never reused for another meaning. */
typedef enum AuditEvent {
        AUDIT_GRANT,
        AUDIT_REVOKE,
        AUDIT_SUBMIT,
        AUDIT_APPROVE,
        AUDIT_DENY,
        AUDIT_CANCEL,
        AUDIT_EXPIRE,
        AUDIT_RUN,
        AUDIT_INSTALL,
        AUDIT_REMOVE,
        AUDIT_SESSION_START,
        AUDIT_SESSION_END,
        AUDIT_MARKETPLACE_ADD,
        AUDIT_MARKETPLACE_REMOVE,
        AUDIT_BUDGET_RESET,
        AUDIT_RECOVERED, /* written by audit_open() itself: a torn last line was cut away */
        AUDIT_ROTATED,   /* the first record of a file that continues another (a segment) */
        AUDIT_SEGMENT_REMOVED, /* an old segment was removed by the retention setting */
        AUDIT_DONE,            /* every step of a ticket has its outcome */
        _AUDIT_EVENT_MAX,
} AuditEvent;

/* "grant", "session_start", ...; NULL out of range. */
const char *audit_event_to_string(AuditEvent e);
/* The event named s, or -EINVAL for NULL or an unknown name. */
int audit_event_from_string(const char *s);

/*
 * Whether name may be a caller's field: [a-z][a-z0-9_]{0,31}, not one of the record's own keys
 * (seq, time, prev, event), not starting with "audit_" (the journal copy's own LOCKD_AUDIT_*
 * fields), and not a forbidden name (detail, value, values, input, inputs).
 */
bool audit_field_name_allowed(const char *name);

typedef struct Audit Audit;

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
 * Not thread-safe: lockd calls it (and everything else here) from its event loop thread only,
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
        uint64_t peak_memory_bytes;
        const char *unit;   /* the transient scope; NULL without one */
        const char *ticket; /* NULL for a console test run */
        int64_t step;       /* the step's index in its ticket; < 0 for none */
} AuditRun;

/* audit_append(a, AUDIT_RUN, ...) with run's fields (plugin, version, handle_sha256, peer_uid,
 * peer_pid, outcome, cause, stderr_bytes, cpu_usec, peak_memory_bytes, unit, ticket, step; NULL
 * strings and a negative step written as null). Same returns. */
int audit_append_run(Audit *a, const AuditRun *run);

/* The last record's seq (0 for an empty log) and the chain head (hex, 64 zeros when empty). */
uint64_t audit_get_seq(const Audit *a);
const char *audit_get_head(const Audit *a);

/*
 * The function audit_append() calls to make a record durable: fsync() unless set otherwise, so a
 * test can count the calls or fail one. NULL restores fsync().
 */
typedef int (*AuditSyncFn)(int fd, void *userdata);
void audit_set_sync_function(Audit *a, AuditSyncFn fn, void *userdata);

/* Why a log does not verify: the first failure in file order. */
typedef enum AuditVerifyError {
        AUDIT_VERIFY_OK = 0,
        AUDIT_VERIFY_TRUNCATED,       /* the last line has no newline: cut or torn */
        AUDIT_VERIFY_TOO_LONG,        /* a line longer than AUDIT_LINE_MAX */
        AUDIT_VERIFY_JSON,            /* not one JSON object (empty line, duplicate key, ...) */
        AUDIT_VERIFY_NOT_CANONICAL,   /* valid JSON, but not the bytes the writer produces */
        AUDIT_VERIFY_BAD_FIELD,       /* seq, time, prev or event missing or malformed; a field
                                       * name or value the writer refuses */
        AUDIT_VERIFY_FORBIDDEN_FIELD, /* detail, value(s), input(s): must never be there */
        AUDIT_VERIFY_UNKNOWN_EVENT,
        AUDIT_VERIFY_CHANGED,    /* this record's hash is not the next record's prev */
        AUDIT_VERIFY_REMOVED,    /* seq jumps and the missing seqs are nowhere later */
        AUDIT_VERIFY_REORDERED,  /* seq goes back, or a missing seq comes later */
        AUDIT_VERIFY_DUPLICATED, /* the same seq as the record before */
        AUDIT_VERIFY_ANCHOR,     /* the first record is not seq 1 with a zero prev (nor a
                                  * rotation), or a rotation record after the first line */
        _AUDIT_VERIFY_MAX,
} AuditVerifyError;

/* "changed", "removed", ...; NULL out of range. */
const char *audit_verify_error_to_string(AuditVerifyError e);

typedef struct AuditVerifyResult {
        AuditVerifyError error;
        size_t line;      /* 1-based line of the first failure; 0 when the log verifies */
        size_t n_records; /* the records before that line (all of them when the log verifies) */
        uint64_t first_seq, last_seq;        /* of those records; 0 when there are none */
        char first_prev[AUDIT_HASH_HEX + 1]; /* the chain's anchor: zeros, or a rotation's */
        char head[AUDIT_HASH_HEX + 1];       /* the hash of the last of those records */
        char message[192]; /* what is wrong, in words; names fields, never quotes a value */
} AuditVerifyResult;

/*
 * Verifies the whole log in buf (len bytes, no NUL needed; an empty buffer is an empty, valid
 * log) against every rule audit_append() writes by. Pure: no I/O, no logging. Returns 0 with res
 * describing the chain, -EBADMSG with res naming the first bad line and why, -EINVAL for bad
 * arguments (res untouched), -ENOMEM.
 */
int audit_verify_buffer(const char *buf, size_t len, AuditVerifyResult *res);

/* Whether name is a segment's file name, "audit-" + 20 digits + ".jsonl". */
bool audit_segment_name_valid(const char *name);

/*
 * Keeps the log in segments: once the current file holds segment_bytes (0: never), the next
 * append first closes it as AUDIT_DIR/audit-<its last seq>.jsonl and starts a new file whose first
 * record ("rotated", naming that segment) continues the chain; the switch is atomic (a crash
 * leaves either file whole, and audit_open() tidies up after it). Past retain (0: keep all)
 * segments the oldest go, each after a "segment_removed" record naming it.
 */
void audit_set_segments(Audit *a, uint64_t segment_bytes, unsigned retain);
