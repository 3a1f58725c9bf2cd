/* The daemon's logging boundary: structured journal entries, or stderr lines with "<N>" levels. */
#define SD_JOURNAL_SUPPRESS_LOCATION /* we pass the caller's CODE_* fields, not this file's */

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include "codec.h"
#include "fd-util.h"
#include "log.h"
#include "macro.h"

#define JOURNAL_SOCKET "/run/systemd/journal/socket"
#define LOG_LINE_MAX   16384 /* one stderr line, fields included, before the newline */
#define LOG_IOV_FIXED  8     /* PRIORITY, MESSAGE, MESSAGE_ID, ERRNO, SYSLOG_IDENTIFIER, CODE_* */
#define LOG_KEY_PREFIX "LOCKD_"
_Static_assert(LOG_MESSAGE_MAX * 4 + 16 < LOG_LINE_MAX, "an escaped message fits a line");

/* Set by log_open() and log_set_max_level() before other threads exist; only read afterwards. */
static LogTarget log_target = LOG_TARGET_STDERR;
static int log_max_level = LOG_INFO;
/* Keeps each stderr line whole when several threads log at once (a pipe only promises 4 KiB). */
static pthread_mutex_t log_stderr_lock = PTHREAD_MUTEX_INITIALIZER;
/* Where "stderr" lines go: fd 2, another fd (log_set_fd()), or nowhere (-1). */
static int log_fd = STDERR_FILENO;

/* Parses a decimal unsigned number that spans [s, end) exactly. */
static bool parse_u64(const char *s, const char *end, uint64_t *ret) {
        uint64_t v = 0;

        if (s == end)
                return false;
        for (; s < end; s++) {
                if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
                        return false;
                v = v * 10 + (uint64_t)(*s - '0');
        }
        *ret = v;
        return true;
}

/*
 * Whether fd 2 is the stream systemd connected to the journal: $JOURNAL_STREAM is "DEV:INO" of
 * that stream, and the variable survives into children whose stderr is something else, so the
 * device and inode must match fd 2 now.
 */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM"), *colon;
        uint64_t dev, ino;
        struct stat st;

        if (!e)
                return false;
        colon = strchr(e, ':');
        if (!colon || !parse_u64(e, colon, &dev) || !parse_u64(colon + 1, strchr(e, 0), &ino))
                return false;
        if (log_fd < 0 || fstat(log_fd, &st) < 0)
                return false;
        return (uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == ino;
}

/* LOCKD_LOG_LEVEL: a syslog level's name ("debug") or number ("7"); anything else is ignored. */
static int level_from_env(void) {
        static const char *const names[] = {"emerg",   "alert",  "crit", "err",
                                            "warning", "notice", "info", "debug"};
        const char *e = getenv("LOCKD_LOG_LEVEL");

        if (!e || !e[0])
                return -1;
        if (e[0] >= '0' && e[0] <= '7' && e[1] == 0)
                return e[0] - '0';
        for (int i = 0; i < 8; i++)
                if (strcmp(e, names[i]) == 0)
                        return i;
        return -1;
}

void log_open(bool force_journal) {
        int saved = errno, level = level_from_env();

        log_target = force_journal || log_fd < 0 || stderr_is_journal() ? LOG_TARGET_JOURNAL
                                                                        : LOG_TARGET_STDERR;
        if (level >= 0)
                log_max_level = level;
        errno = saved;
}

void log_set_fd(int fd) {
        log_fd = fd;
}

LogTarget log_get_target(void) {
        return log_target;
}

void log_set_max_level(int level) {
        log_max_level = level < LOG_EMERG ? LOG_EMERG : level > LOG_DEBUG ? LOG_DEBUG : level;
}

int log_get_max_level(void) {
        return log_max_level;
}

const char *log_format_u64(char buf[static 21], uint64_t v) {
        snprintf(buf, 21, "%" PRIu64, v);
        return buf;
}

static bool message_id_valid(const char *id) {
        size_t i;

        if (!id)
                return false;
        for (i = 0; id[i]; i++)
                if (i >= 32 || !((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
                        return false;
        return i == 32;
}

/* LOCKD_ and at least one more of [A-Z0-9_]; journald would drop (or trust) anything else. */
static bool field_key_valid(const char *key) {
        size_t n;

        if (!key || strncmp(key, LOG_KEY_PREFIX, strlen(LOG_KEY_PREFIX)) != 0)
                return false;
        n = strlen(key);
        if (n <= strlen(LOG_KEY_PREFIX) || n > LOG_KEY_MAX)
                return false;
        for (size_t i = strlen(LOG_KEY_PREFIX); i < n; i++)
                if (!((key[i] >= 'A' && key[i] <= 'Z') || (key[i] >= '0' && key[i] <= '9') ||
                      key[i] == '_'))
                        return false;
        return true;
}

/*
 * The length of the well-formed UTF-8 sequence at s (at most avail bytes) that is safe to show
 * as is, or 0: overlong forms, surrogates, code points past U+10FFFF, C1 controls (U+0080..009F,
 * which some terminals obey), and the line/paragraph separators and bidirectional overrides that
 * let text display as something else (U+2028..202E, U+2066..2069) all give 0.
 */
static size_t utf8_safe_len(const unsigned char *s, size_t avail) {
        uint32_t cp;
        int n = utf8_decode(s, avail, &cp);

        if (n < 0 || (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x2028 && cp <= 0x202e) ||
            (cp >= 0x2066 && cp <= 0x2069))
                return 0;
        return (size_t)n;
}

/*
 * Appends src (at most max bytes of it) to buf[*pos..size-1) escaped for one line: printable
 * ASCII and safe UTF-8 stay, a backslash becomes \\, with quote a double quote becomes \", every
 * other byte \xNN. Stops before an escape that would not fit, so no escape is ever cut in half,
 * and then returns false. buf stays NUL-terminated.
 */
static bool escape_append(char *buf, size_t size, size_t *pos, const char *src, size_t max,
                          bool quote) {
        const unsigned char *s = (const unsigned char *)src;
        size_t len = strnlen(src, max), p = *pos, i = 0;

        while (i < len) {
                size_t u = s[i] >= 0x80 ? utf8_safe_len(s + i, len - i) : 0;
                char esc[5];
                size_t n;

                if (u > 0) {
                        if (p + u >= size)
                                break;
                        memcpy(buf + p, s + i, u);
                        p += u, i += u;
                        continue;
                }
                if (s[i] == '\\' || (quote && s[i] == '"'))
                        esc[0] = '\\', esc[1] = (char)s[i], n = 2;
                else if (s[i] >= 0x20 && s[i] < 0x7f)
                        esc[0] = (char)s[i], n = 1;
                else
                        n = (size_t)snprintf(esc, sizeof(esc), "\\x%02x", s[i]);
                if (p + n >= size)
                        break;
                memcpy(buf + p, esc, n);
                p += n, i++;
        }
        buf[p] = 0;
        *pos = p;
        return i == len;
}

/* The bytes of f's value an entry keeps. */
static size_t value_max(const LogField *f) {
        return f->max == 0                    ? LOG_VALUE_MAX
               : f->max < LOG_WHOLE_VALUE_MAX ? f->max
                                              : LOG_WHOLE_VALUE_MAX;
}

/* The stderr form: "<N>message LOCKD_A="v" LOCKD_B="w"\n", written with one write(2). */
static void write_stderr(int priority, const char *message, const LogField *fields, size_t n) {
        char line[LOG_LINE_MAX + 1];
        size_t pos;

        /* The message was escaped already (at most LOG_MESSAGE_MAX * 4 bytes): copied as is. */
        pos = (size_t)snprintf(line, sizeof(line), "<%d>%s", priority, message);
        for (size_t i = 0; i < n; i++) {
                size_t before = pos;

                if (pos + strlen(fields[i].key) + 4 >= LOG_LINE_MAX)
                        break;
                pos += (size_t)snprintf(line + pos, LOG_LINE_MAX - pos, " %s=\"", fields[i].key);
                /* One byte stays free for the closing quote; a field that does not fit whole is
                 * dropped with everything after it. */
                if (!escape_append(line, LOG_LINE_MAX - 1, &pos, fields[i].value,
                                   value_max(&fields[i]), true)) {
                        pos = before;
                        break;
                }
                line[pos++] = '"';
        }
        line[pos++] = '\n';

        if (log_fd < 0)
                return;
        pthread_mutex_lock(&log_stderr_lock);
        (void)loop_write(log_fd, line, pos);
        pthread_mutex_unlock(&log_stderr_lock);
}

/* "KEY=value" for the journal, value cut at value_max() bytes; NULL when out of memory. */
static char *journal_field(const LogField *f) {
        size_t k = strlen(f->key), v = strnlen(f->value, value_max(f));
        char *s = malloc(k + 1 + v + 1);

        if (!s)
                return NULL;
        memcpy(s, f->key, k);
        s[k] = '=';
        memcpy(s + k + 1, f->value, v);
        s[k + 1 + v] = 0;
        return s;
}

/* Sends one entry to the journal; 0 or a negative errno (then the caller writes to stderr). */
static int write_journal(int priority, int error, const char *message_id, const char *message,
                         const LogField *fields, size_t n, const char *file, int line,
                         const char *func) {
        char prio[16], errnum[24], id[sizeof("MESSAGE_ID=") + 32], code_line[32];
        char code_file[256], code_func[128], msg[sizeof("MESSAGE=") + LOG_MESSAGE_MAX * 4];
        char *values[LOG_FIELDS_MAX] = {};
        struct iovec iov[LOG_IOV_FIXED + LOG_FIELDS_MAX];
        int k = 0, r = 0;

        /* sd_journal_sendv() drops an entry without a word when journald's socket is missing
         * (no journald, or not yet): then the line goes to stderr rather than nowhere. */
        if (access(JOURNAL_SOCKET, F_OK) < 0)
                return negative_errno();
#define IOV_STR(s) ((struct iovec){.iov_base = (void *)(s), .iov_len = strlen(s)})
        snprintf(prio, sizeof(prio), "PRIORITY=%d", priority);
        iov[k++] = IOV_STR(prio);
        snprintf(msg, sizeof(msg), "MESSAGE=%s", message);
        iov[k++] = IOV_STR(msg);
        if (message_id) {
                snprintf(id, sizeof(id), "MESSAGE_ID=%s", message_id);
                iov[k++] = IOV_STR(id);
        }
        if (error != 0) {
                snprintf(errnum, sizeof(errnum), "ERRNO=%d", error);
                iov[k++] = IOV_STR(errnum);
        }
        iov[k++] = IOV_STR("SYSLOG_IDENTIFIER=lockd");
        snprintf(code_file, sizeof(code_file), "CODE_FILE=%s", file ? file : "");
        iov[k++] = IOV_STR(code_file);
        snprintf(code_line, sizeof(code_line), "CODE_LINE=%d", line);
        iov[k++] = IOV_STR(code_line);
        snprintf(code_func, sizeof(code_func), "CODE_FUNC=%s", func ? func : "");
        iov[k++] = IOV_STR(code_func);
        for (size_t i = 0; i < n; i++) {
                values[i] = journal_field(&fields[i]);
                if (!values[i]) {
                        r = -ENOMEM;
                        goto out;
                }
                iov[k++] = IOV_STR(values[i]);
        }
#undef IOV_STR
        r = sd_journal_sendv(iov, k);
out:
        for (size_t i = 0; i < n; i++)
                free(values[i]);
        return r;
}

int log_full(int priority, int error, const char *message_id, const LogField *fields,
             const char *file, int line, const char *func, const char *format, ...) {
        int saved = errno, ret;
        bool every_level = priority & LOG_EVERY_LEVEL;
        char text[LOG_MESSAGE_MAX], message[LOG_MESSAGE_MAX * 4];
        LogField kept[LOG_FIELDS_MAX];
        size_t n = 0, pos = 0;
        va_list ap;

        /* INT_MIN has no positive counterpart; it is not an errno anyway. */
        if (error == INT_MIN)
                error = EIO;
        error = error < 0 ? -error : error;
        ret = -error;
        priority &= LOG_PRIMASK;
        if (priority > log_max_level && !every_level)
                goto done;

        /* %m prints the error passed in, not whatever errno happens to hold. */
        errno = error != 0 ? error : saved;
        va_start(ap, format);
        (void)vsnprintf(text, sizeof(text), format, ap);
        va_end(ap);
        (void)escape_append(message, sizeof(message), &pos, text, sizeof(text), false);

        for (size_t i = 0; fields && fields[i].key && n < LOG_FIELDS_MAX; i++)
                if (fields[i].value && field_key_valid(fields[i].key))
                        kept[n++] = fields[i];
        if (!message_id_valid(message_id))
                message_id = NULL;

        if (log_target == LOG_TARGET_JOURNAL &&
            write_journal(priority, error, message_id, message, kept, n, file, line, func) >= 0)
                goto done;
        write_stderr(priority, message, kept, n);
done:
        errno = saved;
        return ret;
}
