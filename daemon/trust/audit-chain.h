/* The audit log's record format and the pure verifier of its hash chain: what lockd's writer
 * (audit.h) writes by and `lockctl audit verify` checks. No I/O, no logging. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
        AUDIT_RECOVERED,       /* written by audit_open() itself: a torn last line was cut away */
        AUDIT_ROTATED,         /* the first record of a file that continues another (a segment) */
        AUDIT_SEGMENT_REMOVED, /* an old segment was removed by the retention setting */
        AUDIT_DONE,            /* every step of a ticket has its outcome */
        AUDIT_BUDGET,          /* a budget change: the log is the budgets' write-ahead log */
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

/* The one serialization of a record: compact, sorted keys, every non-ASCII character escaped. */
#define AUDIT_JSON_FLAGS (JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII)
#define AUDIT_ZERO_HASH  "0000000000000000000000000000000000000000000000000000000000000000"

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

/* The record keys every line carries, as audit_record_check() found them. */
typedef struct AuditRecord {
        uint64_t seq;
        AuditEvent event;
        char prev[AUDIT_HASH_HEX + 1];
} AuditRecord;

/*
 * Checks one line (len bytes, without its newline) against everything the writer writes by: one
 * JSON object without duplicate keys, seq >= 1, time >= 0, prev 64 lowercase hex digits, a known
 * event, allowed field names and values, and exactly the canonical bytes. 0 with *rec filled;
 * -EBADMSG with *ret_error and msg (which names fields, never quotes the line); -ENOMEM.
 */
int audit_record_check(const char *line, size_t len, AuditRecord *rec, AuditVerifyError *ret_error,
                       char *msg, size_t msg_size);
/* Whether v may be a caller field's value: a string of at most AUDIT_STRING_MAX bytes, an integer,
 * a bool or null. */
bool audit_value_allowed(const json_t *v);
/* The lowercase hex SHA-256 of a line: the next record's prev. */
void audit_hash_hex(const void *data, size_t len, char out[static AUDIT_HASH_HEX + 1]);
