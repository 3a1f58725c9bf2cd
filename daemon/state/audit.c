/* The audit log's writer: open and recover, append with one write() and an fsync() per record,
 * segments, the journal copy. The record format and its verifier are audit-chain.c's. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "clock.h"
#include "fd-util.h"
#include "log.h"
#include "codec.h"
#include "macro.h"
#include "ratelimit.h"

typedef struct EventInfo {
        const char *name;
        const char *message_id;
        int priority;
        const char *text; /* the journal MESSAGE's words */
} EventInfo;

/* Every record's journal copy is at a priority journald stores by default (info or above): the
 * copy is how a collector rebuilds the chain (ARCHITECTURE.md, fleets), so none may be left out.
 * What keeps an agent's loop from drowning the journal's human-readable lines is the agent's rate
 * limit on the MESSAGE text (agent_copy_pass()), never on the record. */
static const EventInfo events[_AUDIT_EVENT_MAX] = {
        [AUDIT_GRANT] = {"grant", LOCKD_MESSAGE_AUDIT_GRANT, LOG_INFO,
                         "a console granted a file to an agent"},
        [AUDIT_REVOKE] = {"revoke", LOCKD_MESSAGE_AUDIT_REVOKE, LOG_INFO,
                          "a console revoked a handle"},
        [AUDIT_SUBMIT] = {"submit", LOCKD_MESSAGE_AUDIT_SUBMIT, LOG_INFO,
                          "an agent submitted a ticket"},
        [AUDIT_APPROVE] = {"approve", LOCKD_MESSAGE_AUDIT_APPROVE, LOG_INFO,
                           "a console approved a ticket"},
        [AUDIT_DENY] = {"deny", LOCKD_MESSAGE_AUDIT_DENY, LOG_NOTICE, "a console denied a ticket"},
        [AUDIT_CANCEL] = {"cancel", LOCKD_MESSAGE_AUDIT_CANCEL, LOG_INFO,
                          "an agent cancelled a ticket"},
        [AUDIT_EXPIRE] = {"expire", LOCKD_MESSAGE_AUDIT_EXPIRE, LOG_INFO,
                          "a ticket or a handle expired"},
        [AUDIT_RUN] = {"run", LOCKD_MESSAGE_AUDIT_RUN, LOG_INFO, "a plugin run finished"},
        [AUDIT_INSTALL] = {"install", LOCKD_MESSAGE_AUDIT_INSTALL, LOG_NOTICE,
                           "a console installed a plugin"},
        [AUDIT_REMOVE] = {"remove", LOCKD_MESSAGE_AUDIT_REMOVE, LOG_NOTICE,
                          "a console removed a plugin"},
        [AUDIT_SESSION_START] = {"session_start", LOCKD_MESSAGE_AUDIT_SESSION_START, LOG_INFO,
                                 "a console input session started"},
        [AUDIT_SESSION_END] = {"session_end", LOCKD_MESSAGE_AUDIT_SESSION_END, LOG_INFO,
                               "a console input session ended"},
        [AUDIT_MARKETPLACE_ADD] = {"marketplace_add", LOCKD_MESSAGE_AUDIT_MARKETPLACE_ADD,
                                   LOG_NOTICE, "a console added a marketplace"},
        [AUDIT_MARKETPLACE_REMOVE] = {"marketplace_remove", LOCKD_MESSAGE_AUDIT_MARKETPLACE_REMOVE,
                                      LOG_NOTICE, "a console removed a marketplace"},
        [AUDIT_BUDGET_RESET] = {"budget_reset", LOCKD_MESSAGE_AUDIT_BUDGET_RESET, LOG_NOTICE,
                                "a console reset a file's budget"},
        [AUDIT_RECOVERED] = {"recovered", LOCKD_MESSAGE_AUDIT_RECOVERED, LOG_WARNING,
                             "the audit log's torn last line was cut away"},
        [AUDIT_ROTATED] = {"rotated", LOCKD_MESSAGE_AUDIT_ROTATED, LOG_INFO,
                           "the audit log continues the chain of a rotated file"},
        [AUDIT_SEGMENT_REMOVED] = {"segment_removed", LOCKD_MESSAGE_AUDIT_SEGMENT_REMOVED,
                                   LOG_NOTICE, "an old audit log segment was removed"},
        [AUDIT_DONE] = {"done", LOCKD_MESSAGE_AUDIT_DONE, LOG_INFO, "a ticket is done"},
        [AUDIT_BUDGET] = {"budget", LOCKD_MESSAGE_AUDIT_BUDGET, LOG_INFO,
                          "a budget slot was reserved, answered or given back"},
};

/* A record written but not yet made durable: its journal copy waits for audit_sync(). */
typedef struct PendingCopy {
        AuditEvent type;
        json_t *fields; /* a reference; NULL for none */
        char *line;     /* the record's canonical line, without its newline */
        uint64_t seq;
        uint64_t time; /* the record's "time" */
        char head[AUDIT_HASH_HEX + 1];
        char prev[AUDIT_HASH_HEX + 1]; /* the record's "prev" */
} PendingCopy;

#define AUDIT_NEW_FILE ".audit.jsonl.new" /* a segment switch under way */

struct Audit {
        int dfd;                /* AUDIT_DIR */
        int fd;                 /* O_RDWR | O_APPEND, flock()ed */
        uint64_t segment_bytes; /* 0: one file for ever */
        unsigned retain;        /* segments kept; 0: all */
        bool rotating;
        uint64_t seq;
        char head[AUDIT_HASH_HEX + 1];
        off_t size; /* what the file holds: the length a failed write is cut back to */
        bool broken;
        int broken_error; /* the errno that broke it (ENOSPC, EIO...): told to every caller */
        AuditSyncFn sync;
        void *sync_userdata;
        int (*before_rotate)(void *userdata); /* audit_set_rotate_hook() */
        void *before_rotate_userdata;
        PendingCopy pending[AUDIT_PENDING_MAX];
        size_t n_pending;       /* records written since the last sync */
        uint64_t durable_seq;   /* the last record known to be on disk */
        RateLimit agent_copies; /* journal copies of what agents do, per agent uid */
};

/* An agent may submit and cancel in a loop: the journal gets a burst of copies per agent and
 * interval, then one line saying how many were left out. The audit file keeps every record. */
#define AGENT_COPY_INTERVAL_USEC (60 * 1000000ULL)
#define AGENT_COPY_BURST         20

static int pread_full(int fd, void *buf, size_t len, off_t offset) {
        uint8_t *p = buf;

        while (len > 0) {
                ssize_t k = pread(fd, p, len, offset);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return negative_errno();
                if (k == 0)
                        return -EIO;
                p += k;
                len -= (size_t)k;
                offset += k;
        }
        return 0;
}

/*
 * Finds the chain's state at the end of the file of size bytes: a->seq and a->head from the last
 * complete line, a->size. A torn tail (bytes after the last newline) is cut away; *ret_cut and
 * cut_hash say what was cut so the caller records it. Reads at most two lines' worth from the end.
 */
static int recover(Audit *a, off_t size, size_t *ret_cut,
                   char cut_hash[static AUDIT_HASH_HEX + 1]) {
        const size_t window = 2 * (AUDIT_LINE_MAX + 1);
        size_t w = (uint64_t)size < window ? (size_t)size : window, end, start, cut = 0;
        off_t base = size - (off_t)w;
        _cleanup_free_ char *buf = NULL;
        const char *nl;
        int r;

        a->seq = 0;
        memcpy(a->head, AUDIT_ZERO_HASH, sizeof(a->head));
        a->size = size;
        if (w == 0)
                return 0;
        buf = malloc(w);
        if (!buf)
                return -ENOMEM;
        r = pread_full(a->fd, buf, w, base);
        if (r < 0)
                return r;

        end = w;
        if (buf[w - 1] != '\n') {
                /* Appends are single write()s of whole lines: only a crash during one leaves a
                 * tail without a newline, and that tail is shorter than a line. Anything longer
                 * was not written by lockd, and nothing is cut then. */
                nl = memrchr(buf, '\n', w);
                end = nl ? (size_t)(nl - buf) + 1 : 0;
                if ((!nl && base > 0) || w - end > AUDIT_LINE_MAX)
                        return -EBADMSG;
                cut = w - end;
                audit_hash_hex(buf + end, cut, cut_hash);
        }

        if (end > 0) {
                AuditVerifyError e;
                AuditRecord rec;
                char msg[192];

                nl = end >= 2 ? memrchr(buf, '\n', end - 1) : NULL;
                if (!nl && base > 0)
                        return -EBADMSG;
                start = nl ? (size_t)(nl - buf) + 1 : 0;
                r = audit_record_check(buf + start, end - 1 - start, &rec, &e, msg, sizeof(msg));
                if (r < 0)
                        return r;
                if (rec.seq >= INT64_MAX)
                        return -EBADMSG;
                a->seq = rec.seq;
                /* What an earlier lockd left is on disk: nothing of it waits for a sync. */
                a->durable_seq = rec.seq;
                audit_hash_hex(buf + start, end - 1 - start, a->head);
        }

        if (cut > 0) {
                if (ftruncate(a->fd, size - (off_t)cut) < 0)
                        return negative_errno();
                if (fsync(a->fd) < 0)
                        return negative_errno();
                a->size = size - (off_t)cut;
        }
        *ret_cut = cut;
        return 0;
}

/* Opens (creating) AUDIT_DIR below statefd; *ret_created says whether it is new. */
static int open_audit_dir(int statefd, bool *ret_created) {
        _cleanup_close_ int dfd = -1;
        bool created = false;
        struct stat st;

        if (mkdirat(statefd, AUDIT_DIR, 0700) == 0)
                created = true;
        else if (errno != EEXIST)
                return negative_errno();
        dfd = openat(statefd, AUDIT_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return negative_errno();
        if (fstat(dfd, &st) < 0)
                return negative_errno();
        /* Whoever else may write here could replace the log. */
        if (st.st_uid != geteuid() || (st.st_mode & 0022))
                return -EPERM;
        if (created && fsync(statefd) < 0)
                return negative_errno();
        *ret_created = created;
        return TAKE_FD(dfd);
}

static int list_segments(int dfd, char ***ret, size_t *ret_n);

/*
 * After a crash in the middle of a segment switch: a new file not yet in place goes (its records
 * were never answered), and a segment that is still the current file under a second name (the
 * switch stopped after the link) loses that name. Either way the log is whole again.
 */
static void tidy_rotation(int dfd) {
        struct stat cur, last;
        bool changed;
        size_t n = 0;
        char **v = NULL;

        changed = unlinkat(dfd, AUDIT_NEW_FILE, 0) == 0;
        if (list_segments(dfd, &v, &n) >= 0 && n > 0 && fstatat(dfd, AUDIT_FILE, &cur, AT_SYMLINK_NOFOLLOW) == 0 &&
            fstatat(dfd, v[n - 1], &last, AT_SYMLINK_NOFOLLOW) == 0 && cur.st_ino == last.st_ino &&
            cur.st_dev == last.st_dev && unlinkat(dfd, v[n - 1], 0) == 0)
                changed = true;
        strv_free_n(v, n);
        if (changed)
                (void)fsync(dfd);
}

int audit_open(int statefd, Audit **ret) {
        _cleanup_close_ int dfd = -1, fd = -1;
        _cleanup_(json_decrefp) json_t *fields = NULL;
        _cleanup_(audit_closep) Audit *a = NULL;
        char cut_hash[AUDIT_HASH_HEX + 1];
        bool created;
        struct stat st;
        size_t cut = 0;
        int r;

        if (statefd < 0 || !ret)
                return -EINVAL;

        dfd = open_audit_dir(statefd, &created);
        if (dfd < 0)
                return dfd;
        fd = openat(dfd, AUDIT_FILE, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 && errno == ENOENT) {
                fd = openat(dfd, AUDIT_FILE,
                            O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC |
                                    O_NOCTTY,
                            0600);
                if (fd < 0)
                        return negative_errno();
                if (fsync(dfd) < 0)
                        return negative_errno();
        } else if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        if (st.st_uid != geteuid() || (st.st_mode & 0022))
                return -EPERM;
        /* One writer: a second lockd on the same state directory would fork the chain. */
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return errno == EWOULDBLOCK ? -EBUSY : negative_errno();

        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->fd = TAKE_FD(fd);
        a->dfd = -1;
        a->agent_copies = RATELIMIT_INIT(AGENT_COPY_INTERVAL_USEC, AGENT_COPY_BURST);
        tidy_rotation(dfd);
        a->dfd = TAKE_FD(dfd);

        /* The size read after the lock is taken: nobody appends any more. */
        if (fstat(a->fd, &st) < 0)
                return negative_errno();
        r = recover(a, st.st_size, &cut, cut_hash);
        if (r < 0)
                return r;
        if (cut > 0) {
                /* Never silent: the cut bytes' size and digest go into the chain itself. */
                fields = json_pack("{s:I, s:s}", "truncated_bytes", (json_int_t)cut,
                                   "truncated_sha256", cut_hash);
                if (!fields)
                        return -ENOMEM;
                r = audit_append(a, AUDIT_RECOVERED, fields);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(a);
        return 0;
}

Audit *audit_close(Audit *a) {
        if (!a)
                return NULL;
        /* Whatever was written is made durable on the way out, as a clean stop should. */
        (void)audit_sync(a);
        for (size_t i = 0; i < a->n_pending; i++) {
                json_decref(a->pending[i].fields);
                free(a->pending[i].line);
        }
        safe_close(a->fd);
        safe_close(a->dfd);
        free(a);
        return NULL;
}

void audit_set_segments(Audit *a, uint64_t segment_bytes, unsigned retain) {
        if (!a)
                return;
        a->segment_bytes = segment_bytes;
        a->retain = retain;
}

/* The segments' names, sorted (oldest first): dir_names_sorted() of the valid ones. */
static int list_segments(int dfd, char ***ret, size_t *ret_n) {
        return dir_names_sorted(dfd, audit_segment_name_valid, SIZE_MAX, ret, ret_n);
}

/*
 * Removes the oldest segments past the retention, each after a durable "segment_removed" record
 * naming it: the chain itself says what went. A failure leaves the segment (and is returned).
 */
static int prune(Audit *a) {
        size_t n = 0;
        char **v = NULL;
        int r = list_segments(a->dfd, &v, &n);

        if (r < 0)
                return r;
        for (size_t i = 0; a->retain > 0 && n - i > a->retain; i++) {
                _cleanup_(json_decrefp) json_t *f = json_pack("{s:s}", "segment", v[i]);

                r = f ? audit_append(a, AUDIT_SEGMENT_REMOVED, f) : -ENOMEM;
                if (r < 0)
                        break;
                if (unlinkat(a->dfd, v[i], 0) < 0 || fsync(a->dfd) < 0) {
                        r = negative_errno();
                        break;
                }
        }
        strv_free_n(v, n);
        return r;
}

/*
 * Closes the current file as a segment and starts the next. The full file gets a second name
 * (link), the new one is written and synced under AUDIT_NEW_FILE with its "rotated" record, then
 * renamed over AUDIT_FILE: each step leaves a whole log behind, and audit_open() tidies a switch
 * cut short. On failure the current file stays the log.
 */
static int rotate(Audit *a) {
        _cleanup_(json_decrefp) json_t *fields = NULL;
        char seg[64], head[AUDIT_HASH_HEX + 1];
        uint64_t seq = a->seq;
        off_t size = a->size;
        int old = a->fd, fd, r;

        r = audit_sync(a);
        if (r < 0)
                return r;
        /* Whoever replays this file's records at start (the budgets) checkpoints first: a replay
         * then never needs what goes into the segment, which retention may remove. */
        if (a->before_rotate) {
                r = a->before_rotate(a->before_rotate_userdata);
                if (r < 0)
                        return r;
        }
        snprintf(seg, sizeof(seg), "audit-%020" PRIu64 ".jsonl", a->seq);
        (void)unlinkat(a->dfd, AUDIT_NEW_FILE, 0);
        if (linkat(a->dfd, AUDIT_FILE, a->dfd, seg, 0) < 0)
                return negative_errno();
        fd = openat(a->dfd, AUDIT_NEW_FILE,
                    O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
                r = negative_errno();
                safe_close(fd);
                goto undo_link;
        }
        fields = json_pack("{s:s}", "segment", seg);
        memcpy(head, a->head, sizeof(head));
        a->fd = fd;
        a->size = 0;
        a->rotating = true;
        r = fields ? audit_append(a, AUDIT_ROTATED, fields) : -ENOMEM;
        a->rotating = false;
        if (r >= 0 && renameat(a->dfd, AUDIT_NEW_FILE, a->dfd, AUDIT_FILE) < 0)
                r = negative_errno();
        if (r >= 0 && fsync(a->dfd) < 0)
                r = negative_errno();
        if (r < 0) {
                /* The old file stays the log, as it was. */
                safe_close(a->fd);
                a->fd = old;
                a->size = size;
                a->seq = seq;
                memcpy(a->head, head, sizeof(head));
                (void)unlinkat(a->dfd, AUDIT_NEW_FILE, 0);
                goto undo_link;
        }
        safe_close(old);
        return prune(a);

undo_link:
        (void)unlinkat(a->dfd, seg, 0);
        return r;
}

uint64_t audit_get_seq(const Audit *a) {
        return a ? a->seq : 0;
}

const char *audit_get_head(const Audit *a) {
        return a ? a->head : NULL;
}

void audit_set_rotate_hook(Audit *a, int (*fn)(void *userdata), void *userdata) {
        if (!a)
                return;
        a->before_rotate = fn;
        a->before_rotate_userdata = userdata;
}

void audit_set_sync_function(Audit *a, AuditSyncFn fn, void *userdata) {
        if (!a)
                return;
        a->sync = fn;
        a->sync_userdata = userdata;
}

/* The canonical JSON text of a value that is not a scalar (null, an array): in *ret, to free. */
static int value_text(json_t *v, char **ret) {
        char *t = json_dumps(v, AUDIT_JSON_FLAGS | JSON_ENCODE_ANY);

        if (!t)
                return -ENOMEM;
        *ret = t;
        return 0;
}

/*
 * The journal copy of a record made durable: LOCKD_AUDIT_RECORD= the record's exact canonical
 * line (what a collector hashes and links, `lockctl audit verify --journal`), LOCKD_AUDIT_SEQ,
 * _HASH, _PREV, _TIME, _EVENT, and each field as LOCKD_<NAME> for journalctl's matches (scalars
 * as text, null and arrays as their JSON). The record is sent whatever lockd's log level
 * (LOG_EVERY_LEVEL) and whole (LOG_WHOLE_VALUE_MAX covers AUDIT_LINE_MAX). Records hold no typed
 * value and no detail (audit-chain.c refuses their names), so neither reaches the journal. With
 * human false (an agent past its burst) the MESSAGE is the record's number and event only.
 */
static void journal_copy(const PendingCopy *c, bool human) {
        const EventInfo *ev = &events[c->type];
        char keys[AUDIT_FIELDS_MAX][sizeof("LOCKD_") + AUDIT_NAME_MAX];
        char nums[AUDIT_FIELDS_MAX][32];
        char *texts[AUDIT_FIELDS_MAX] = {};
        LogField lf[AUDIT_FIELDS_MAX + 8];
        char seq[21], time[21];
        size_t i = 0, j = 0, n_texts = 0;
        const char *key;
        json_t *v;

        _Static_assert(AUDIT_LINE_MAX <= LOG_WHOLE_VALUE_MAX, "a record fits one journal field");
        _Static_assert(AUDIT_FIELDS_MAX + 8 <= LOG_FIELDS_MAX, "every field fits one entry");
        /* The record first: on a stderr log a line too long for every field keeps this one. */
        lf[i++] = (LogField){
                .key = "LOCKD_AUDIT_RECORD", .value = c->line, .max = LOG_WHOLE_VALUE_MAX};
        lf[i++] = (LogField){.key = "LOCKD_AUDIT_SEQ", .value = log_format_u64(seq, c->seq)};
        lf[i++] = (LogField){.key = "LOCKD_AUDIT_EVENT", .value = ev->name};
        lf[i++] = (LogField){.key = "LOCKD_AUDIT_HASH", .value = c->head};
        lf[i++] = (LogField){.key = "LOCKD_AUDIT_PREV", .value = c->prev};
        lf[i++] = (LogField){.key = "LOCKD_AUDIT_TIME", .value = log_format_u64(time, c->time)};
        json_object_foreach(c->fields, key, v) {
                const char *value;
                size_t k;

                if (j >= AUDIT_FIELDS_MAX)
                        break;
                switch (json_typeof(v)) {
                case JSON_STRING:
                        value = json_string_value(v);
                        break;
                case JSON_INTEGER:
                        snprintf(nums[j], sizeof(nums[j]), "%" JSON_INTEGER_FORMAT,
                                 json_integer_value(v));
                        value = nums[j];
                        break;
                case JSON_TRUE:
                        value = "true";
                        break;
                case JSON_FALSE:
                        value = "false";
                        break;
                default:
                        if (value_text(v, &texts[n_texts]) < 0)
                                continue;
                        value = texts[n_texts++];
                        break;
                }
                /* Names were checked: [a-z][a-z0-9_]*, at most AUDIT_NAME_MAX bytes. */
                memcpy(keys[j], "LOCKD_", 6);
                for (k = 0; key[k]; k++)
                        keys[j][6 + k] = (char)(key[k] >= 'a' && key[k] <= 'z' ? key[k] - 'a' + 'A'
                                                                               : key[k]);
                keys[j][6 + k] = 0;
                lf[i++] = (LogField){.key = keys[j], .value = value};
                j++;
        }
        lf[i].key = NULL;
        if (human)
                log_struct(ev->priority | LOG_EVERY_LEVEL, ev->message_id, lf,
                           "audit record %" PRIu64 " (%s): %s", c->seq, ev->name, ev->text);
        else
                log_struct(ev->priority | LOG_EVERY_LEVEL, ev->message_id, lf,
                           "audit record %" PRIu64 " (%s)", c->seq, ev->name);
        for (size_t t = 0; t < n_texts; t++)
                free(texts[t]);
}

/* Whether a record an agent caused (submit, cancel) gets its journal copy's human-readable
 * MESSAGE: false past the agent's burst (the copy itself is always written); the first one let
 * through after some were left out is preceded by a line with their number. */
static bool agent_copy_pass(Audit *a, AuditEvent type, json_t *fields) {
        json_t *uid = json_object_get(fields, "agent_uid");
        unsigned suppressed = 0;
        char num[21];

        if ((type != AUDIT_SUBMIT && type != AUDIT_CANCEL) || !json_is_integer(uid))
                return true;
        if (!ratelimit_pass(&a->agent_copies, (uint32_t)json_integer_value(uid),
                            clock_now_usec(CLOCK_MONOTONIC), &suppressed))
                return false;
        if (suppressed > 0)
                log_struct(LOG_NOTICE, NULL,
                           LOG_FIELDS(LOG_FIELD(
                                   "AGENT_UID",
                                   log_format_u64(num, (uint64_t)json_integer_value(uid)))),
                           "journal messages of agent %" JSON_INTEGER_FORMAT
                           "'s submits and cancels: %u shortened (each record's copy is whole)",
                           json_integer_value(uid), suppressed);
        return true;
}

/* The journal copies of the pending records up to seq, in order; the rest move to the front. */
static void copy_pending(Audit *a, uint64_t seq) {
        size_t i = 0;

        for (; i < a->n_pending && a->pending[i].seq <= seq; i++) {
                PendingCopy *c = &a->pending[i];

                journal_copy(c, agent_copy_pass(a, c->type, c->fields));
                json_decref(c->fields);
                c->fields = NULL;
                c->line = mfree(c->line);
        }
        memmove(a->pending, a->pending + i, (a->n_pending - i) * sizeof(PendingCopy));
        a->n_pending -= i;
        if (seq > a->durable_seq)
                a->durable_seq = seq;
}

/* A failed fsync(): the log takes nothing more. */
static int set_broken(Audit *a, int r) {
        /* After a failed fsync() the kernel may have dropped the dirty pages and cleared the
         * error: nothing says what is on disk, so no record may follow before a reopen. The
         * cause is kept, so that a full disk is named as such (ENOSPC, EDQUOT), not as EIO. */
        if (!a->broken) {
                a->broken = true;
                a->broken_error = r;
        }
        return a->broken_error;
}

int audit_sync(Audit *a) {
        int r;

        if (!a)
                return -EINVAL;
        if (a->broken)
                return a->broken_error;
        if (a->n_pending == 0 && a->durable_seq == a->seq)
                return 0;
        r = a->sync ? a->sync(a->fd, a->sync_userdata) : (fsync(a->fd) < 0 ? negative_errno() : 0);
        if (r < 0)
                return set_broken(a, r);
        copy_pending(a, a->seq);
        return 0;
}

int audit_sync_prepare(Audit *a, AuditSyncJob *ret) {
        int fd;

        if (!a || !ret)
                return -EINVAL;
        if (a->broken)
                return a->broken_error;
        if (a->durable_seq == a->seq)
                return 0;
        /* A descriptor of its own: a segment switch may close the log's own meanwhile (it makes
         * everything durable first, so this fsync() then covers what it must either way). */
        fd = fcntl(a->fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return negative_errno();
        *ret = (AuditSyncJob){
                .fd = fd, .seq = a->seq, .sync = a->sync, .sync_userdata = a->sync_userdata};
        return 1;
}

int audit_sync_job_run(AuditSyncJob *j) {
        if (j->sync)
                return j->sync(j->fd, j->sync_userdata);
        return fsync(j->fd) < 0 ? negative_errno() : 0;
}

int audit_sync_complete(Audit *a, AuditSyncJob *j, int r) {
        j->fd = safe_close(j->fd);
        if (!a)
                return -EINVAL;
        if (a->broken)
                return a->broken_error;
        if (r < 0)
                return set_broken(a, r);
        copy_pending(a, j->seq);
        return 0;
}

uint64_t audit_get_durable_seq(const Audit *a) {
        return a ? a->durable_seq : 0;
}

int audit_append(Audit *a, AuditEvent type, json_t *fields) {
        uint64_t seq = a ? a->seq : 0;
        char head[AUDIT_HASH_HEX + 1];
        int r;

        if (a)
                memcpy(head, a->head, sizeof(head));
        r = audit_append_nosync(a, type, fields);
        if (r < 0)
                return r;
        r = audit_sync(a);
        if (r < 0) {
                /* Not durable, so not counted: the log is broken and takes nothing more. */
                a->seq = seq;
                memcpy(a->head, head, sizeof(head));
        }
        return r;
}

int audit_append_nosync(Audit *a, AuditEvent type, json_t *fields) {
        _cleanup_(json_decrefp) json_t *rec = NULL;
        _cleanup_free_ char *line = NULL;
        char head[AUDIT_HASH_HEX + 1];
        PendingCopy *c;
        uint64_t t;
        const char *key;
        json_t *v;
        size_t n;
        ssize_t k;
        char *p;
        int r;

        if (!a || (unsigned)type >= _AUDIT_EVENT_MAX || (fields && !json_is_object(fields)))
                return -EINVAL;
        if (a->broken)
                return a->broken_error;
        /* A full segment is closed before the next record: no record is written past the size
         * (but for the records of the switch itself). */
        if (a->segment_bytes > 0 && !a->rotating && type != AUDIT_SEGMENT_REMOVED &&
            (uint64_t)a->size >= a->segment_bytes) {
                r = rotate(a);
                if (r < 0)
                        return r;
        }
        if (a->seq >= INT64_MAX)
                return -EOVERFLOW;
        /* Room for the journal copy: a full list is made durable first. */
        if (a->n_pending == AUDIT_PENDING_MAX) {
                r = audit_sync(a);
                if (r < 0)
                        return r;
        }
        if (fields) {
                if (json_object_size(fields) > AUDIT_FIELDS_MAX)
                        return -EINVAL;
                json_object_foreach(fields, key, v) if (!audit_field_name_allowed(key) ||
                                                        !audit_value_allowed(v)) return -EINVAL;
        }

        t = clock_realtime_usec();
        rec = json_pack("{s:I, s:I, s:s, s:s}", "seq", (json_int_t)(a->seq + 1), "time",
                        (json_int_t)t, "prev", a->head, "event", audit_event_to_string(type));
        if (!rec)
                return -ENOMEM;
        if (fields && json_object_update(rec, fields) < 0)
                return -ENOMEM;
        line = json_dumps(rec, AUDIT_JSON_FLAGS);
        if (!line)
                return -ENOMEM;
        n = strlen(line);
        if (n > AUDIT_LINE_MAX)
                return -E2BIG;
        p = realloc(line, n + 2);
        if (!p)
                return -ENOMEM;
        line = p;
        line[n] = '\n';
        line[n + 1] = 0;
        audit_hash_hex(line, n, head);

        /* The whole line in one write() on an O_APPEND fd: a crash leaves at most one torn tail,
         * which audit_open() recognizes, and a failure is cut off below. */
        for (size_t done = 0; done < n + 1; done += (size_t)k) {
                /* A short write (a disk that filled up in the middle of the line) is followed
                 * by one more, so that the cause reported is the real one (ENOSPC, EDQUOT). */
                k = write(a->fd, line + done, n + 1 - done);
                if (k < 0 && errno == EINTR) {
                        k = 0;
                        continue;
                }
                if (k <= 0)
                        break;
        }
        if (k <= 0) {
                r = k < 0 ? negative_errno() : -EIO;
                if (ftruncate(a->fd, a->size) < 0) {
                        a->broken = true;
                        a->broken_error = r;
                }
                return r;
        }
        c = &a->pending[a->n_pending];
        memcpy(c->prev, a->head, sizeof(c->prev));
        a->seq++;
        memcpy(a->head, head, sizeof(a->head));
        a->size += (off_t)(n + 1);
        /* The line is kept for the journal copy, without its newline (the record hashed). */
        line[n] = 0;
        c->type = type;
        c->fields = json_incref(fields);
        c->line = TAKE_PTR(line);
        c->seq = a->seq;
        c->time = t;
        memcpy(c->head, head, sizeof(head));
        a->n_pending++;
        return 0;
}

/* Sets key to the string s, or to null when s is NULL; -EINVAL for a string that is not UTF-8. */
static int set_string(json_t *o, const char *key, const char *s) {
        json_t *v = s ? json_string(s) : json_null();

        if (!v)
                return -EINVAL;
        return json_object_set_new(o, key, v) < 0 ? -ENOMEM : 0;
}

/* Sets key to the counter i (capped at the largest JSON integer). */
static int set_integer(json_t *o, const char *key, uint64_t i) {
        return json_object_set_new(o, key,
                                   json_integer(i > INT64_MAX ? INT64_MAX : (json_int_t)i)) < 0
                       ? -ENOMEM
                       : 0;
}

/* A run record's fields (audit_append_run()), in *ret. */
static int run_fields(const AuditRun *run, json_t **ret) {
        _cleanup_(json_decrefp) json_t *o = NULL;
        const char *outcome;
        int r;

        if (!run)
                return -EINVAL;
        outcome = run_outcome_name(run->outcome);
        if (!outcome)
                return -EINVAL;
        o = json_object();
        if (!o)
                return -ENOMEM;
        if ((r = set_string(o, "plugin", run->plugin)) < 0 ||
            (r = set_string(o, "version", run->version)) < 0 ||
            (r = set_string(o, "handle_sha256", run->handle_sha256)) < 0 ||
            (r = set_integer(o, "peer_uid", (uint64_t)run->peer_uid)) < 0 ||
            (r = set_integer(o, "peer_pid", (uint64_t)(run->peer_pid < 0 ? 0 : run->peer_pid))) <
                    0 ||
            (r = set_string(o, "outcome", outcome)) < 0 ||
            (r = set_string(o, "cause", run->cause)) < 0 ||
            (r = set_integer(o, "stderr_bytes", run->stderr_bytes)) < 0 ||
            (r = set_integer(o, "cpu_usec", run->cpu_usec)) < 0 ||
            (r = set_integer(o, "wall_usec", run->wall_usec)) < 0 ||
            (r = set_integer(o, "setup_usec", run->setup_usec)) < 0 ||
            (r = set_integer(o, "scope_wait_usec", run->scope_wait_usec)) < 0 ||
            (r = set_string(o, "unit", run->unit)) < 0 ||
            (r = set_string(o, "ticket", run->ticket)) < 0)
                return r;
        r = json_object_set_new(o, "step", run->step >= 0 ? json_integer(run->step) : json_null());
        /* null when unknown: never a figure that is not the plugin's own (classify.h). */
        if (r >= 0)
                r = json_object_set_new(o, "peak_memory_bytes",
                                        run->peak_memory_bytes > 0
                                                ? json_integer((json_int_t)run->peak_memory_bytes)
                                                : json_null());
        if (r < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

/* A run record through append (audit_append() or audit_append_nosync()). */
static int append_run(Audit *a, const AuditRun *run,
                      int (*append)(Audit *a, AuditEvent type, json_t *fields)) {
        _cleanup_(json_decrefp) json_t *o = NULL;
        int r;

        if (!a)
                return -EINVAL;
        r = run_fields(run, &o);
        return r < 0 ? r : append(a, AUDIT_RUN, o);
}

int audit_append_run(Audit *a, const AuditRun *run) {
        return append_run(a, run, audit_append);
}

int audit_append_run_nosync(Audit *a, const AuditRun *run) {
        return append_run(a, run, audit_append_nosync);
}
