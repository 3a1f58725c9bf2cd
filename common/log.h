/* The daemon's one logging boundary: structured entries to the journal, or to stderr with levels.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <syslog.h>

#include "log-ids.h"

/*
 * Caps on what one entry may carry. Longer messages and values are cut (never split into a second
 * entry); fields past LOG_FIELDS_MAX are dropped.
 */
#define LOG_MESSAGE_MAX 2048
#define LOG_VALUE_MAX   1024
#define LOG_FIELDS_MAX  32
#define LOG_KEY_MAX     64

typedef enum LogTarget {
        LOG_TARGET_STDERR, /* "<N>message KEY="value"...\n", one write per entry */
        /* sd_journal_sendv(); stderr for an entry the journal refused. With no journal socket at
         * all libsystemd drops entries silently, so force it only where journald runs. */
        LOG_TARGET_JOURNAL,
} LogTarget;

/*
 * One extra journal field. key must be LOCKD_ followed by [A-Z0-9_] (at most LOG_KEY_MAX bytes in
 * all); an entry with another key is dropped, so a caller cannot set PRIORITY=, MESSAGE= or a
 * trusted "_" field. value may be any NUL-terminated string, untrusted bytes included: the journal
 * receives it as is (its protocol is binary-safe), stderr an escaped, quoted copy. A NULL value
 * drops the field.
 */
typedef struct LogField {
        const char *key;
        const char *value;
        size_t max; /* the value's bytes kept, at most LOG_WHOLE_VALUE_MAX; 0: LOG_VALUE_MAX */
} LogField;

/* The longest value a field may ask to keep whole (an audit record's line) in the journal; a
 * stderr line stays at most 16 KiB, and a field that no longer fits there is dropped. */
#define LOG_WHOLE_VALUE_MAX 16384

/* Or'ed into a priority: the entry is written whatever the maximum level (an audit record's
 * journal copy is the record, not a line of the log). */
#define LOG_EVERY_LEVEL 0x10000

/* LOG_FIELD("PLUGIN", name) is the field LOCKD_PLUGIN=name; the prefix is added at compile time. */
#define LOG_FIELD(k, v) ((LogField){.key = "LOCKD_" k, .value = (v)})
/* LOG_FIELD_U64("EXIT", n): the decimal number, formatted into a buffer that lives as long as
 * the enclosing full expression's block. */
#define LOG_FIELD_U64(k, n)                                                                        \
        ((LogField){.key = "LOCKD_" k, .value = log_format_u64((char[21]){0}, (uint64_t)(n))})
/* The NULL-terminated field list log_full() takes: LOG_FIELDS(LOG_FIELD(...), ...). */
#define LOG_FIELDS(...) ((const LogField[]){__VA_ARGS__, {.key = NULL}})

/*
 * Chooses the target once, before any other thread exists: the journal when force_journal is set
 * or when stderr is the journal's stream ($JOURNAL_STREAM names the device and inode of fd 2);
 * stderr otherwise; and takes the level from $LOCKD_LOG_LEVEL when it names one. May be called
 * again (SIGHUP does not need to) to re-evaluate.
 */
void log_open(bool force_journal);
/*
 * Lines that would go to stderr go to fd instead (which must stay open), or nowhere with -1;
 * $JOURNAL_STREAM is then compared with fd, and with -1 log_open() picks the journal. Before
 * log_open(). The engine's log is the fd the spawner gave it, never its fd 2 (/dev/null).
 */
void log_set_fd(int fd);
LogTarget log_get_target(void);

/* Entries above level (LOG_DEBUG is the most verbose) are skipped; LOG_INFO by default, or what
 * $LOCKD_LOG_LEVEL names ("debug", "7", ...) when log_open() ran. */
void log_set_max_level(int level);
int log_get_max_level(void);

/*
 * Writes one entry (skipped above the maximum level unless priority has LOG_EVERY_LEVEL):
 * PRIORITY=priority, MESSAGE= the formatted text (control bytes escaped, cut at
 * LOG_MESSAGE_MAX), MESSAGE_ID=message_id when it is 32 lowercase hex digits (a malformed one is
 * dropped), ERRNO= when error is not 0, SYSLOG_IDENTIFIER=lockd, CODE_FILE/LINE/FUNC, and fields
 * (NULL-terminated, may be NULL). %m in format prints strerror(|error|). Never fails and keeps
 * errno: returns -|error|, so a boundary can end with `return log_error_errno(r, ...)`.
 * Thread-safe once log_open() has run.
 */
int log_full(int priority, int error, const char *message_id, const LogField *fields,
             const char *file, int line, const char *func, const char *format, ...)
        __attribute__((format(printf, 8, 9)));

/* Writes the decimal v into buf and returns buf (for LOG_FIELD_U64). */
const char *log_format_u64(char buf[static 21], uint64_t v);

#define log_struct(priority, message_id, fields, ...)                                              \
        log_full(priority, 0, message_id, fields, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_struct_errno(priority, error, message_id, fields, ...)                                 \
        log_full(priority, error, message_id, fields, __FILE__, __LINE__, __func__, __VA_ARGS__)

#define log_debug(message_id, ...)   log_struct(LOG_DEBUG, message_id, NULL, __VA_ARGS__)
#define log_info(message_id, ...)    log_struct(LOG_INFO, message_id, NULL, __VA_ARGS__)
#define log_notice(message_id, ...)  log_struct(LOG_NOTICE, message_id, NULL, __VA_ARGS__)
#define log_warning(message_id, ...) log_struct(LOG_WARNING, message_id, NULL, __VA_ARGS__)
#define log_error(message_id, ...)   log_struct(LOG_ERR, message_id, NULL, __VA_ARGS__)

#define log_debug_errno(error, message_id, ...)                                                    \
        log_struct_errno(LOG_DEBUG, error, message_id, NULL, __VA_ARGS__)
#define log_info_errno(error, message_id, ...)                                                     \
        log_struct_errno(LOG_INFO, error, message_id, NULL, __VA_ARGS__)
#define log_warning_errno(error, message_id, ...)                                                  \
        log_struct_errno(LOG_WARNING, error, message_id, NULL, __VA_ARGS__)
#define log_error_errno(error, message_id, ...)                                                    \
        log_struct_errno(LOG_ERR, error, message_id, NULL, __VA_ARGS__)
