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
        AuditLine line;    /* the record's canonical line (its newline cut) and journal fields */
        int64_t agent_uid; /* its agent_uid field; -1 for none */
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
                free(a->pending[i].line.buf);
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
        LogField lf[AUDIT_FIELDS_MAX + 8];
        char seq[21], time[21];
        const char *p = c->line.buf + c->line.len + 2;
        size_t i = 0;

        _Static_assert(AUDIT_LINE_MAX <= LOG_WHOLE_VALUE_MAX, "a record fits one journal field");
        _Static_assert(AUDIT_FIELDS_MAX + 8 <= LOG_FIELDS_MAX, "every field fits one entry");
        /* The record first: on a stderr log a line too long for every field keeps this one. */
        lf[i++] = (LogField){
                .key = "LOCKD_AUDIT_RECORD", .value = c->line.buf, .max = LOG_WHOLE_VALUE_MAX};
        lf[i++] = (LogField){.key = "LOCKD_AUDIT_SEQ", .value = log_format_u64(seq, c->seq)};
        lf[i++] = (LogField){.key = "LOCKD_AUDIT_EVENT", .value = ev->name};
        lf[i++] = (LogField){.key = "LOCKD_AUDIT_HASH", .value = c->head};
        lf[i++] = (LogField){.key = "LOCKD_AUDIT_PREV", .value = c->prev};
        lf[i++] = (LogField){.key = "LOCKD_AUDIT_TIME", .value = log_format_u64(time, c->time)};
        /* Each field as name NUL text NUL after the line (audit_line_format()). */
        for (size_t j = 0; j < c->line.n_text && j < AUDIT_FIELDS_MAX; j++) {
                const char *name = p, *value = p + strlen(p) + 1;
                size_t k;

                p = value + strlen(value) + 1;
                /* Names were checked: [a-z][a-z0-9_]*, at most AUDIT_NAME_MAX bytes. */
                memcpy(keys[j], "LOCKD_", 6);
                for (k = 0; name[k]; k++)
                        keys[j][6 + k] =
                                (char)(name[k] >= 'a' && name[k] <= 'z' ? name[k] - 'a' + 'A'
                                                                        : name[k]);
                keys[j][6 + k] = 0;
                lf[i++] = (LogField){.key = keys[j], .value = value};
        }
        lf[i].key = NULL;
        if (human)
                log_struct(ev->priority | LOG_EVERY_LEVEL, ev->message_id, lf,
                           "audit record %" PRIu64 " (%s): %s", c->seq, ev->name, ev->text);
        else
                log_struct(ev->priority | LOG_EVERY_LEVEL, ev->message_id, lf,
                           "audit record %" PRIu64 " (%s)", c->seq, ev->name);
}

/* Whether a record an agent caused (submit, cancel) gets its journal copy's human-readable
 * MESSAGE: false past the agent's burst (the copy itself is always written); the first one let
 * through after some were left out is preceded by a line with their number. */
static bool agent_copy_pass(Audit *a, AuditEvent type, int64_t uid) {
        unsigned suppressed = 0;
        char num[21];

        if ((type != AUDIT_SUBMIT && type != AUDIT_CANCEL) || uid < 0)
                return true;
        if (!ratelimit_pass(&a->agent_copies, (uint32_t)uid, clock_now_usec(CLOCK_MONOTONIC),
                            &suppressed))
                return false;
        if (suppressed > 0)
                log_struct(LOG_NOTICE, NULL,
                           LOG_FIELDS(LOG_FIELD("AGENT_UID", log_format_u64(num, (uint64_t)uid))),
                           "journal messages of agent %" PRId64
                           "'s submits and cancels: %u shortened (each record's copy is whole)",
                           uid, suppressed);
        return true;
}

/* The journal copies of the pending records up to seq, in order; the rest move to the front. */
static void copy_pending(Audit *a, uint64_t seq) {
        size_t i = 0;

        for (; i < a->n_pending && a->pending[i].seq <= seq; i++) {
                PendingCopy *c = &a->pending[i];

                journal_copy(c, agent_copy_pass(a, c->type, c->agent_uid));
                c->line.buf = mfree(c->line.buf);
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

int audit_append_fields(Audit *a, AuditEvent type, const AuditField *fields, size_t n) {
        uint64_t seq = a ? a->seq : 0;
        char head[AUDIT_HASH_HEX + 1];
        int r;

        if (a)
                memcpy(head, a->head, sizeof(head));
        r = audit_append_fields_nosync(a, type, fields, n);
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

int audit_append(Audit *a, AuditEvent type, json_t *fields) {
        AuditField f[AUDIT_FIELDS_MAX];
        int n = audit_line_fields_from_json(fields, f);

        return n < 0 ? n : audit_append_fields(a, type, f, (size_t)n);
}

int audit_append_nosync(Audit *a, AuditEvent type, json_t *fields) {
        AuditField f[AUDIT_FIELDS_MAX];
        int n = audit_line_fields_from_json(fields, f);

        return n < 0 ? n : audit_append_fields_nosync(a, type, f, (size_t)n);
}

/* The agent_uid among fields, or -1. */
static int64_t agent_uid_of(const AuditField *fields, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (fields[i].kind == AUDIT_VALUE_INTEGER &&
                    strcmp(fields[i].name, "agent_uid") == 0)
                        return fields[i].integer;
        return -1;
}

int audit_append_fields_nosync(Audit *a, AuditEvent type, const AuditField *fields, size_t n) {
        _cleanup_free_ char *buf = NULL;
        char head[AUDIT_HASH_HEX + 1];
        AuditLine line;
        PendingCopy *c;
        uint64_t t;
        ssize_t k = 0;
        int r;

        if (!a || (unsigned)type >= _AUDIT_EVENT_MAX)
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

        t = clock_realtime_usec();
        r = audit_line_format(a->seq + 1, t, a->head, type, fields, n, &line);
        if (r < 0)
                return r;
        buf = line.buf;
        audit_hash_hex(buf, line.len, head);

        /* The whole line in one write() on an O_APPEND fd: a crash leaves at most one torn tail,
         * which audit_open() recognizes, and a failure is cut off below. */
        for (size_t done = 0; done < line.len + 1; done += (size_t)k) {
                /* A short write (a disk that filled up in the middle of the line) is followed
                 * by one more, so that the cause reported is the real one (ENOSPC, EDQUOT). */
                k = write(a->fd, buf + done, line.len + 1 - done);
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
        a->size += (off_t)(line.len + 1);
        /* The line is kept for the journal copy, without its newline (the record hashed). */
        buf[line.len] = 0;
        c->type = type;
        c->agent_uid = agent_uid_of(fields, n);
        c->line = line;
        TAKE_PTR(buf);
        c->seq = a->seq;
        c->time = t;
        memcpy(c->head, head, sizeof(head));
        a->n_pending++;
        return 0;
}

/* A run record's fields (audit_append_run()) into f (room for AUDIT_FIELDS_MAX): their number,
 * or -EINVAL. */
static int run_fields(const AuditRun *run, AuditField *f) {
        const char *outcome;
        size_t n = 0;

        if (!run)
                return -EINVAL;
        outcome = run_outcome_name(run->outcome);
        if (!outcome)
                return -EINVAL;
        f[n++] = audit_field_string("plugin", run->plugin);
        f[n++] = audit_field_string("version", run->version);
        f[n++] = audit_field_string("handle_sha256", run->handle_sha256);
        f[n++] = audit_field_counter("peer_uid", (uint64_t)run->peer_uid);
        f[n++] = audit_field_counter("peer_pid", (uint64_t)(run->peer_pid < 0 ? 0 : run->peer_pid));
        f[n++] = audit_field_string("outcome", outcome);
        f[n++] = audit_field_string("cause", run->cause);
        f[n++] = audit_field_counter("stderr_bytes", run->stderr_bytes);
        f[n++] = audit_field_counter("cpu_usec", run->cpu_usec);
        f[n++] = audit_field_counter("wall_usec", run->wall_usec);
        f[n++] = audit_field_counter("setup_usec", run->setup_usec);
        f[n++] = audit_field_counter("scope_wait_usec", run->scope_wait_usec);
        f[n++] = audit_field_string("unit", run->unit);
        f[n++] = audit_field_string("ticket", run->ticket);
        f[n++] = run->step >= 0 ? audit_field_integer("step", run->step) : audit_field_null("step");
        /* null when unknown: never a figure that is not the plugin's own (classify.h). */
        f[n++] = run->peak_memory_bytes > 0
                         ? audit_field_counter("peak_memory_bytes", run->peak_memory_bytes)
                         : audit_field_null("peak_memory_bytes");
        return (int)n;
}

/* A run record through append (audit_append_fields() or audit_append_fields_nosync()). */
static int append_run(Audit *a, const AuditRun *run,
                      int (*append)(Audit *a, AuditEvent type, const AuditField *f, size_t n)) {
        AuditField f[AUDIT_FIELDS_MAX];
        int n;

        if (!a)
                return -EINVAL;
        n = run_fields(run, f);
        return n < 0 ? n : append(a, AUDIT_RUN, f, (size_t)n);
}

int audit_append_run(Audit *a, const AuditRun *run) {
        return append_run(a, run, audit_append_fields);
}

int audit_append_run_nosync(Audit *a, const AuditRun *run) {
        return append_run(a, run, audit_append_fields_nosync);
}
