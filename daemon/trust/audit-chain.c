/* The audit log's record format and the pure verifier of its hash chain (audit-chain.h), shared
 * by lockd's writer and `lockctl audit verify`. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit-chain.h"
#include "codec.h"
#include "macro.h"

static const char *const event_names[_AUDIT_EVENT_MAX] = {
        [AUDIT_GRANT] = "grant",
        [AUDIT_REVOKE] = "revoke",
        [AUDIT_SUBMIT] = "submit",
        [AUDIT_APPROVE] = "approve",
        [AUDIT_DENY] = "deny",
        [AUDIT_CANCEL] = "cancel",
        [AUDIT_EXPIRE] = "expire",
        [AUDIT_RUN] = "run",
        [AUDIT_INSTALL] = "install",
        [AUDIT_REMOVE] = "remove",
        [AUDIT_SESSION_START] = "session_start",
        [AUDIT_SESSION_END] = "session_end",
        [AUDIT_MARKETPLACE_ADD] = "marketplace_add",
        [AUDIT_MARKETPLACE_REMOVE] = "marketplace_remove",
        [AUDIT_BUDGET_RESET] = "budget_reset",
        [AUDIT_RECOVERED] = "recovered",
        [AUDIT_ROTATED] = "rotated",
        [AUDIT_SEGMENT_REMOVED] = "segment_removed",
        [AUDIT_DONE] = "done",
        [AUDIT_BUDGET] = "budget",
};

static const char *const reserved_names[] = {"seq", "time", "prev", "event"};

/* Names under which a plugin's detail or a human-typed value would travel (ARCHITECTURE.md, the
 * threat model: they never reach the audit). Refusing the names makes a slip in a caller fail
 * loudly at the first test instead of writing the value into a file that is kept for ever. */
static const char *const forbidden_names[] = {"detail", "value", "values", "input", "inputs"};

static const char *const verify_errors[_AUDIT_VERIFY_MAX] = {
        [AUDIT_VERIFY_OK] = "ok",
        [AUDIT_VERIFY_TRUNCATED] = "truncated",
        [AUDIT_VERIFY_TOO_LONG] = "too long",
        [AUDIT_VERIFY_JSON] = "invalid JSON",
        [AUDIT_VERIFY_NOT_CANONICAL] = "not canonical",
        [AUDIT_VERIFY_BAD_FIELD] = "bad field",
        [AUDIT_VERIFY_FORBIDDEN_FIELD] = "forbidden field",
        [AUDIT_VERIFY_UNKNOWN_EVENT] = "unknown event",
        [AUDIT_VERIFY_CHANGED] = "changed",
        [AUDIT_VERIFY_REMOVED] = "removed",
        [AUDIT_VERIFY_REORDERED] = "reordered",
        [AUDIT_VERIFY_DUPLICATED] = "duplicated",
        [AUDIT_VERIFY_ANCHOR] = "bad anchor",
};

const char *audit_event_to_string(AuditEvent e) {
        return (unsigned)e < _AUDIT_EVENT_MAX ? event_names[e] : NULL;
}

int audit_event_from_string(const char *s) {
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < _AUDIT_EVENT_MAX; i++)
                if (strcmp(event_names[i], s) == 0)
                        return (int)i;
        return -EINVAL;
}

const char *audit_verify_error_to_string(AuditVerifyError e) {
        return (unsigned)e < _AUDIT_VERIFY_MAX ? verify_errors[e] : NULL;
}

static bool name_in(const char *name, const char *const *list, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(name, list[i]) == 0)
                        return true;
        return false;
}

static bool name_syntax_valid(const char *name) {
        size_t n = 0;

        if (!name || name[0] < 'a' || name[0] > 'z')
                return false;
        for (const char *p = name; *p; p++, n++)
                if (n >= AUDIT_NAME_MAX ||
                    !((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
                        return false;
        return true;
}

bool audit_field_name_allowed(const char *name) {
        return name_syntax_valid(name) &&
               !name_in(name, reserved_names, ELEMENTSOF(reserved_names)) &&
               strncmp(name, "audit_", 6) != 0 &&
               !name_in(name, forbidden_names, ELEMENTSOF(forbidden_names));
}

/* A caller's value: a scalar the journal copy can carry as one field. */
bool audit_value_allowed(const json_t *v) {
        switch (json_typeof(v)) {
        case JSON_STRING: {
                size_t n = json_string_length(v);
                return n <= AUDIT_STRING_MAX && !memchr(json_string_value(v), 0, n);
        }
        case JSON_INTEGER:
        case JSON_TRUE:
        case JSON_FALSE:
        case JSON_NULL:
                return true;
        default:
                return false;
        }
}

void audit_hash_hex(const void *data, size_t len, char out[static AUDIT_HASH_HEX + 1]) {
        sha256_hex(data, len, out);
}

static bool hash_hex_valid(const char *s) {
        return strlen(s) == AUDIT_HASH_HEX && hex_lower_valid(s, AUDIT_HASH_HEX);
}

static int record_fail(AuditVerifyError *ret_error, char *msg, size_t msg_size, AuditVerifyError e,
                       const char *format, ...) __attribute__((format(printf, 5, 6)));

static int record_fail(AuditVerifyError *ret_error, char *msg, size_t msg_size, AuditVerifyError e,
                       const char *format, ...) {
        va_list ap;

        *ret_error = e;
        va_start(ap, format);
        vsnprintf(msg, msg_size, format, ap);
        va_end(ap);
        return -EBADMSG;
}

/*
 * Checks one line (len bytes, without its newline) against everything audit_append() writes by:
 * one JSON object without duplicate keys, seq >= 1, time >= 0, prev 64 lowercase hex digits, a
 * known event, allowed field names and values, and exactly the canonical bytes. 0 with *rec
 * filled; -EBADMSG with *ret_error and msg (which names fields, never quotes the line); -ENOMEM.
 */
int audit_record_check(const char *line, size_t len, AuditRecord *rec, AuditVerifyError *ret_error,
                       char *msg, size_t msg_size) {
        _cleanup_(json_decrefp) json_t *o = NULL;
        _cleanup_free_ char *canon = NULL;
        json_error_t jerr;
        json_t *seq, *t, *prev, *ev, *v;
        const char *key;
        int event;

        if (len > AUDIT_LINE_MAX)
                return record_fail(ret_error, msg, msg_size, AUDIT_VERIFY_TOO_LONG,
                                   "%zu bytes, more than a record may have (%zu)", len,
                                   AUDIT_LINE_MAX);
        if (len == 0)
                return record_fail(ret_error, msg, msg_size, AUDIT_VERIFY_JSON, "an empty line");
        /* Jansson's error text may quote the input: only its position is shown. */
        o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!o)
                return record_fail(ret_error, msg, msg_size, AUDIT_VERIFY_JSON,
                                   "not one JSON object (at byte %d)", jerr.position);
        if (!json_is_object(o))
                return record_fail(ret_error, msg, msg_size, AUDIT_VERIFY_JSON,
                                   "not a JSON object");

        seq = json_object_get(o, "seq");
        if (!json_is_integer(seq) || json_integer_value(seq) < 1)
                return record_fail(ret_error, msg, msg_size, AUDIT_VERIFY_BAD_FIELD,
                                   "seq is missing or not a positive integer");
        t = json_object_get(o, "time");
        if (!json_is_integer(t) || json_integer_value(t) < 0)
                return record_fail(ret_error, msg, msg_size, AUDIT_VERIFY_BAD_FIELD,
                                   "time is missing or not a non-negative integer");
        prev = json_object_get(o, "prev");
        if (!json_is_string(prev) || !hash_hex_valid(json_string_value(prev)))
                return record_fail(ret_error, msg, msg_size, AUDIT_VERIFY_BAD_FIELD,
                                   "prev is missing or not a lowercase hex SHA-256");
        ev = json_object_get(o, "event");
        if (!json_is_string(ev))
                return record_fail(ret_error, msg, msg_size, AUDIT_VERIFY_BAD_FIELD,
                                   "event is missing or not a string");
        event = audit_event_from_string(json_string_value(ev));
        if (event < 0)
                return record_fail(ret_error, msg, msg_size, AUDIT_VERIFY_UNKNOWN_EVENT,
                                   "the event is none lockd writes");
        if (json_object_size(o) > ELEMENTSOF(reserved_names) + AUDIT_FIELDS_MAX)
                return record_fail(ret_error, msg, msg_size, AUDIT_VERIFY_BAD_FIELD,
                                   "more than %d fields", AUDIT_FIELDS_MAX);
        json_object_foreach(o, key, v) {
                if (name_in(key, reserved_names, ELEMENTSOF(reserved_names)))
                        continue;
                /* Only names of the fixed lists or of valid syntax are printed. */
                if (name_in(key, forbidden_names, ELEMENTSOF(forbidden_names)))
                        return record_fail(ret_error, msg, msg_size, AUDIT_VERIFY_FORBIDDEN_FIELD,
                                           "a field named %s, which lockd never records", key);
                if (!audit_field_name_allowed(key))
                        return record_fail(ret_error, msg, msg_size, AUDIT_VERIFY_BAD_FIELD,
                                           "a field name lockd never writes");
                if (!audit_value_allowed(v))
                        return record_fail(ret_error, msg, msg_size, AUDIT_VERIFY_BAD_FIELD,
                                           "field %s has a value lockd never writes", key);
        }

        /* The hash covers the bytes: only one spelling of a record may verify. */
        canon = json_dumps(o, AUDIT_JSON_FLAGS);
        if (!canon)
                return -ENOMEM;
        if (strlen(canon) != len || memcmp(canon, line, len) != 0)
                return record_fail(ret_error, msg, msg_size, AUDIT_VERIFY_NOT_CANONICAL,
                                   "not in canonical form (compact, keys sorted, ASCII)");

        rec->seq = (uint64_t)json_integer_value(seq);
        rec->event = (AuditEvent)event;
        memcpy(rec->prev, json_string_value(prev), sizeof(rec->prev));
        return 0;
}

/* Whether a complete line of buf[off..len) is a record with a seq in [lo, hi). */
static bool seq_comes_later(const char *buf, size_t off, size_t len, uint64_t lo, uint64_t hi) {
        while (off < len) {
                const char *line = buf + off, *nl = memchr(line, '\n', len - off);
                _cleanup_(json_decrefp) json_t *o = NULL;
                json_t *seq;

                if (!nl)
                        return false;
                o = json_loadb(line, (size_t)(nl - line), 0, NULL);
                seq = json_object_get(o, "seq");
                if (json_is_integer(seq) && json_integer_value(seq) >= 0 &&
                    (uint64_t)json_integer_value(seq) >= lo &&
                    (uint64_t)json_integer_value(seq) < hi)
                        return true;
                off = (size_t)(nl - buf) + 1;
        }
        return false;
}

static int verify_fail(AuditVerifyResult *res, const AuditVerifyResult *state, size_t line,
                       AuditVerifyError e, const char *format, ...)
        __attribute__((format(printf, 5, 6)));

static int verify_fail(AuditVerifyResult *res, const AuditVerifyResult *state, size_t line,
                       AuditVerifyError e, const char *format, ...) {
        va_list ap;

        *res = *state;
        res->error = e;
        res->line = line;
        va_start(ap, format);
        vsnprintf(res->message, sizeof(res->message), format, ap);
        va_end(ap);
        return -EBADMSG;
}

int audit_verify_buffer(const char *buf, size_t len, AuditVerifyResult *res) {
        /* r: the records accepted so far; before: the same without the last of them, which is
         * what a "changed" verdict on that last record reports. */
        AuditVerifyResult r = {.first_prev = AUDIT_ZERO_HASH, .head = AUDIT_ZERO_HASH}, before = r;
        size_t off = 0, lineno = 0;

        if ((!buf && len > 0) || !res)
                return -EINVAL;

        while (off < len) {
                const char *line = buf + off, *nl = memchr(line, '\n', len - off);
                size_t n = nl ? (size_t)(nl - line) : len - off;
                AuditVerifyError e;
                AuditRecord rec;
                char msg[sizeof(r.message)];
                uint64_t expect = r.n_records == 0 ? 1 : r.last_seq + 1;
                const char *anchor = r.head; /* the prev this record must carry */
                int k;

                lineno++;
                if (!nl)
                        return verify_fail(res, &r, lineno, AUDIT_VERIFY_TRUNCATED,
                                           "the last line has no newline: a record cut short");
                k = audit_record_check(line, n, &rec, &e, msg, sizeof(msg));
                if (k == -ENOMEM)
                        return k;
                if (k < 0)
                        return verify_fail(res, &r, lineno, e, "%s", msg);

                if (lineno == 1 && rec.event == AUDIT_ROTATED) {
                        /* A rotated file continues a chain whose head its first record names. */
                        anchor = rec.prev;
                        expect = rec.seq;
                } else if (rec.event == AUDIT_ROTATED)
                        return verify_fail(res, &r, lineno, AUDIT_VERIFY_ANCHOR,
                                           "a rotation record after the first line");

                if (lineno > 1 && rec.seq == r.last_seq)
                        return verify_fail(res, &r, lineno, AUDIT_VERIFY_DUPLICATED,
                                           "seq %" PRIu64 " again", rec.seq);
                if (lineno > 1 && rec.seq < r.last_seq)
                        return verify_fail(res, &r, lineno, AUDIT_VERIFY_REORDERED,
                                           "seq %" PRIu64 " after seq %" PRIu64, rec.seq,
                                           r.last_seq);
                if (rec.seq > expect) {
                        if (seq_comes_later(buf, off + n + 1, len, expect, rec.seq))
                                return verify_fail(res, &r, lineno, AUDIT_VERIFY_REORDERED,
                                                   "seq %" PRIu64 " where %" PRIu64
                                                   " belongs, which comes later",
                                                   rec.seq, expect);
                        if (rec.seq - expect == 1)
                                return verify_fail(res, &r, lineno, AUDIT_VERIFY_REMOVED,
                                                   "seq %" PRIu64 " is missing before this record",
                                                   expect);
                        return verify_fail(res, &r, lineno, AUDIT_VERIFY_REMOVED,
                                           "seqs %" PRIu64 " to %" PRIu64
                                           " are missing before this record",
                                           expect, rec.seq - 1);
                }
                if (strcmp(rec.prev, anchor) != 0) {
                        if (lineno == 1)
                                return verify_fail(res, &r, lineno, AUDIT_VERIFY_ANCHOR,
                                                   "the first record's prev is not zero");
                        /* The seqs are in order, so the record before was changed (or this
                         * record's prev): the hash chain is broken between the two. */
                        return verify_fail(res, &before, lineno - 1, AUDIT_VERIFY_CHANGED,
                                           "its hash is not the prev of line %zu", lineno);
                }

                before = r;
                if (r.n_records == 0) {
                        r.first_seq = rec.seq;
                        memcpy(r.first_prev, rec.prev, sizeof(r.first_prev));
                }
                r.n_records++;
                r.last_seq = rec.seq;
                audit_hash_hex(line, n, r.head);
                off += n + 1;
        }

        *res = r;
        return 0;
}

/* Reads len bytes at offset, retrying EINTR; -EIO when the file is shorter. */
bool audit_segment_name_valid(const char *name) {
        return name && strlen(name) == 6 + 20 + 6 && strncmp(name, "audit-", 6) == 0 &&
               strspn(name + 6, "0123456789") == 20 && strcmp(name + 26, ".jsonl") == 0;
}
