/* lockctl audit verify --journal: every host's audit chain rebuilt from a collector's journal
 * files (systemd-journal-remote's), read with sd-journal (ARCHITECTURE.md, fleets). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include "audit-chain.h"
#include "lockctl-console.h"
#include "lockctl-journal.h"
#include "lockctl.h"
#include "macro.h"

/*
 * Whose entries count. Any local process may send journald an entry with LOCKD_AUDIT_RECORD=;
 * only the fields journald adds itself (those starting with "_") say who sent it. By default an
 * entry counts when its sender's command is lockd's engine (_COMM, which journald reads from the
 * kernel), under lockd.service or started by hand alike. A local user can name a process so, but
 * cannot send with the engine's uid: every record of a host must come from one _UID (the first
 * record's), and one from another uid is reported as a rewrite, never linked into the chain.
 * Root on a host can forge anything that host sends: such a record shows as a fork or a rewrite
 * against what the collector already holds. --match _SYSTEMD_UNIT=lockd.service pins the
 * sender to the unit's cgroup as well.
 */
#define DEFAULT_MATCH "_COMM=lockd-engine"

#define ID_MAX       32 /* _MACHINE_ID, _BOOT_ID: 32 hex digits */
#define HOSTNAME_MAX 64
#define FIELD_MAX    (AUDIT_LINE_MAX + 64) /* the largest journal field read */

typedef struct Rec {
        uint64_t seq;
        char hash[AUDIT_HASH_HEX + 1];
        char prev[AUDIT_HASH_HEX + 1];
        int64_t child; /* the index of the record that continues this one; -1: none yet */
} Rec;

typedef struct Start {
        char boot_id[ID_MAX + 1];
        uint64_t pid;
        uint64_t first_seq, last_seq;
        size_t records;
} Start;

typedef struct Break {
        const char *kind; /* "gap", "rewrite", "fork" */
        uint64_t seq, seq_last;
        char what[200];
} Break;

typedef struct Host {
        char machine_id[ID_MAX + 1];
        char hostname[HOSTNAME_MAX + 1];
        Rec *recs;
        size_t n_recs, cap_recs;
        size_t *slots; /* open addressing over recs by hash: index + 1, 0 empty */
        size_t n_slots;
        Start *starts;
        size_t n_starts;
        Break *breaks;
        size_t n_breaks, n_breaks_total;
        size_t chains, duplicates;
        int64_t last; /* the last record in journal order; -1: none */
        char uid[24]; /* the _UID every record of this host comes from (the first record's) */
        /* --state-dir: the local log compared */
        bool local_checked, local_agrees;
        char local_what[200];
} Host;

typedef struct Verify {
        Host *hosts;
        size_t n_hosts;
        size_t records;
        bool error; /* a read error or a cap: the result is not a verdict */
        char error_what[256];
} Verify;

static void host_done(Host *h) {
        free(h->recs);
        free(h->slots);
        free(h->starts);
        free(h->breaks);
}

static uint64_t hex_key(const char *hex) {
        uint64_t k = 0;

        for (size_t i = 0; i < 16 && hex[i]; i++)
                k = (k << 4) | (uint64_t)(hex[i] <= '9' ? hex[i] - '0' : hex[i] - 'a' + 10);
        return k;
}

/* The index of the record with hash hex in h, or -1. */
static int64_t host_find(const Host *h, const char *hex) {
        if (h->n_slots == 0)
                return -1;
        for (size_t i = hex_key(hex) & (h->n_slots - 1);; i = (i + 1) & (h->n_slots - 1)) {
                size_t s = h->slots[i];

                if (s == 0)
                        return -1;
                if (strcmp(h->recs[s - 1].hash, hex) == 0)
                        return (int64_t)(s - 1);
        }
}

static void slots_put(size_t *slots, size_t n_slots, const Rec *recs, size_t idx) {
        size_t i = hex_key(recs[idx].hash) & (n_slots - 1);

        while (slots[i] != 0)
                i = (i + 1) & (n_slots - 1);
        slots[i] = idx + 1;
}

/* Appends r to h and its table; -ENOMEM. */
static int host_add(Host *h, const Rec *r) {
        if (h->n_recs == h->cap_recs) {
                size_t cap = h->cap_recs ? h->cap_recs * 2 : 64;
                Rec *v = reallocarray(h->recs, cap, sizeof(*v));

                if (!v)
                        return -ENOMEM;
                h->recs = v;
                h->cap_recs = cap;
        }
        h->recs[h->n_recs] = *r;
        /* The table stays at most half full. */
        if ((h->n_recs + 1) * 2 > h->n_slots) {
                size_t n = h->n_slots ? h->n_slots * 2 : 128;
                size_t *s = calloc(n, sizeof(*s));

                if (!s)
                        return -ENOMEM;
                for (size_t i = 0; i < h->n_recs; i++)
                        slots_put(s, n, h->recs, i);
                free(h->slots);
                h->slots = s;
                h->n_slots = n;
        }
        slots_put(h->slots, h->n_slots, h->recs, h->n_recs);
        h->n_recs++;
        return 0;
}

static void add_break(Host *h, const char *kind, uint64_t seq, uint64_t seq_last, const char *fmt,
                      ...) __attribute__((format(printf, 5, 6)));

/* Records a break of h (the first JOURNAL_VERIFY_BREAKS_MAX are listed, all are counted). */
static void add_break(Host *h, const char *kind, uint64_t seq, uint64_t seq_last, const char *fmt,
                      ...) {
        va_list ap;
        Break *b;

        h->n_breaks_total++;
        if (h->n_breaks >= JOURNAL_VERIFY_BREAKS_MAX)
                return;
        b = reallocarray(h->breaks, h->n_breaks + 1, sizeof(*b));
        if (!b)
                return; /* still counted */
        h->breaks = b;
        b = &h->breaks[h->n_breaks++];
        b->kind = kind;
        b->seq = seq;
        b->seq_last = seq_last;
        va_start(ap, fmt);
        vsnprintf(b->what, sizeof(b->what), fmt, ap);
        va_end(ap);
}

/* The value of field in the current entry (at most max bytes, no NUL inside), or -ENOENT. */
static int entry_field(sd_journal *j, const char *field, char *buf, size_t max) {
        size_t k = strlen(field), len;
        const void *d;
        int r;

        r = sd_journal_get_data(j, field, &d, &len);
        if (r < 0)
                return r;
        if (len <= k + 1 || memcmp(d, field, k) != 0 || ((const char *)d)[k] != '=')
                return -EBADMSG;
        len -= k + 1;
        if (len >= max || memchr((const char *)d + k + 1, 0, len))
                return -E2BIG;
        memcpy(buf, (const char *)d + k + 1, len);
        buf[len] = 0;
        return (int)len;
}

static bool is_hex(const char *s, size_t n) {
        return strlen(s) == n && strspn(s, "0123456789abcdef") == n;
}

/* The host of the current entry (created when new); NULL past the cap or out of memory. */
static Host *host_of(Verify *v, const char *machine_id, const char *hostname) {
        Host *h;

        /* Entries of one host come in runs: the last one found first. */
        for (size_t i = v->n_hosts; i > 0; i--)
                if (strcmp(v->hosts[i - 1].machine_id, machine_id) == 0 &&
                    strcmp(v->hosts[i - 1].hostname, hostname) == 0)
                        return &v->hosts[i - 1];
        if (v->n_hosts >= JOURNAL_VERIFY_HOSTS_MAX)
                return NULL;
        h = reallocarray(v->hosts, v->n_hosts + 1, sizeof(*h));
        if (!h)
                return NULL;
        v->hosts = h;
        h = &v->hosts[v->n_hosts++];
        *h = (Host){.last = -1};
        snprintf(h->machine_id, sizeof(h->machine_id), "%s", machine_id);
        snprintf(h->hostname, sizeof(h->hostname), "%s", hostname);
        return h;
}

/*
 * Whether each LOCKD_<NAME> field of the entry says what the record line says (the copy's own
 * mirror of the record's fields, audit.c's journal_copy()). A field left out is no break: the
 * line is what counts. 0, or the name of the first field that differs in bad (a rewrite).
 */
static int mirror_check(sd_journal *j, const char *line, char *bad, size_t bad_len) {
        _cleanup_(json_decrefp) json_t *o = json_loads(line, 0, NULL);
        char field[sizeof("LOCKD_") + AUDIT_NAME_MAX], want[32];
        static char got[AUDIT_STRING_MAX + 1];
        const char *key;
        json_t *val;

        if (!o)
                return -EBADMSG;
        json_object_foreach(o, key, val) {
                const char *w;
                size_t k;
                int r;

                if (!audit_field_name_allowed(key))
                        continue; /* seq, time, prev, event: checked as the record's own */
                memcpy(field, "LOCKD_", 6);
                for (k = 0; key[k] && k < AUDIT_NAME_MAX; k++)
                        field[6 + k] =
                                (char)(key[k] >= 'a' && key[k] <= 'z' ? key[k] - 32 : key[k]);
                field[6 + k] = 0;
                switch (json_typeof(val)) {
                case JSON_STRING:
                        w = json_string_value(val);
                        break;
                case JSON_INTEGER:
                        snprintf(want, sizeof(want), "%" JSON_INTEGER_FORMAT,
                                 json_integer_value(val));
                        w = want;
                        break;
                case JSON_TRUE:
                        w = "true";
                        break;
                case JSON_FALSE:
                        w = "false";
                        break;
                default:
                        w = "null";
                        break;
                }
                r = entry_field(j, field, got, sizeof(got));
                if (r == -ENOENT)
                        continue;
                if (r < 0 || strcmp(got, w) != 0) {
                        snprintf(bad, bad_len, "%s", field);
                        return 1;
                }
        }
        return 0;
}

/* Notes the lockd start (boot, pid) of a record of h. */
static int note_start(Host *h, const char *boot_id, uint64_t pid, uint64_t seq) {
        Start *s = h->n_starts > 0 ? &h->starts[h->n_starts - 1] : NULL;

        if (!s || strcmp(s->boot_id, boot_id) != 0 || s->pid != pid) {
                s = reallocarray(h->starts, h->n_starts + 1, sizeof(*s));
                if (!s)
                        return -ENOMEM;
                h->starts = s;
                s = &h->starts[h->n_starts++];
                *s = (Start){.pid = pid, .first_seq = seq};
                snprintf(s->boot_id, sizeof(s->boot_id), "%s", boot_id);
        }
        s->last_seq = seq;
        s->records++;
        return 0;
}

/*
 * Where rec, new to h, joins h's chains: counts a chain it starts and notes the fork, gap or
 * rewrite it shows against the record it links to or h's last one. The index of the record rec
 * links to in h->recs, or -1 when h holds none.
 */
static int64_t chain_place(Host *h, const Rec *rec) {
        int64_t x = host_find(h, rec->prev);

        if (rec->seq == 1 && strcmp(rec->prev, AUDIT_ZERO_HASH) == 0)
                h->chains++; /* a chain's first record: a new state directory */
        else if (x >= 0) {
                Rec *p = &h->recs[x];

                if (p->child >= 0)
                        add_break(h, "fork", rec->seq, rec->seq,
                                  "a second record %" PRIu64 " continues record %" PRIu64
                                  " (the first is %.12s..., this one %.12s...)",
                                  rec->seq, p->seq, h->recs[p->child].hash, rec->hash);
                else if (rec->seq != p->seq + 1)
                        add_break(h, "rewrite", rec->seq, rec->seq,
                                  "record %" PRIu64 " links to record %" PRIu64, rec->seq, p->seq);
        } else if (h->last < 0)
                h->chains++; /* the collector's first record of this host, mid-chain */
        else {
                const Rec *l = &h->recs[h->last];

                if (rec->seq > l->seq + 1)
                        add_break(h, "gap", l->seq + 1, rec->seq - 1,
                                  "records %" PRIu64 " to %" PRIu64 " are missing", l->seq + 1,
                                  rec->seq - 1);
                else if (rec->seq == l->seq + 1)
                        add_break(h, "rewrite", l->seq, l->seq,
                                  "record %" PRIu64 " is not the one record %" PRIu64 " links to",
                                  l->seq, rec->seq);
                else
                        add_break(h, "rewrite", rec->seq, rec->seq,
                                  "record %" PRIu64 " after record %" PRIu64
                                  " links to no record the collector holds",
                                  rec->seq, l->seq);
        }
        return x;
}

/*
 * One entry that carries a record: checked on its own (lockd's canonical form, its hash and
 * seq fields, its mirrored fields), then linked into its host's chain in journal order.
 */
static int take_entry(Verify *v, sd_journal *j, const char *line, size_t len) {
        static char buf[FIELD_MAX];
        char machine[ID_MAX + 1] = "", boot[ID_MAX + 1] = "", hostname[HOSTNAME_MAX + 1] = "";
        char msg[192], bad[64];
        AuditVerifyError e;
        AuditRecord ar;
        Rec rec = {.child = -1};
        uint64_t pid = 0, claimed_seq = 0;
        char uid[24];
        int64_t x;
        Host *h;
        int r;

        /* Trusted fields, journald's own: an entry without a machine is nobody's. */
        if (entry_field(j, "_MACHINE_ID", machine, sizeof(machine)) < 0 || !is_hex(machine, ID_MAX))
                return 0;
        if (entry_field(j, "_HOSTNAME", hostname, sizeof(hostname)) < 0)
                snprintf(hostname, sizeof(hostname), "?");
        if (entry_field(j, "_BOOT_ID", boot, sizeof(boot)) < 0 || !is_hex(boot, ID_MAX))
                snprintf(boot, sizeof(boot), "?");
        if (entry_field(j, "_PID", buf, 24) > 0)
                pid = strtoull(buf, NULL, 10);
        if (entry_field(j, "_UID", uid, sizeof(uid)) < 0)
                snprintf(uid, sizeof(uid), "?");
        h = host_of(v, machine, hostname);
        if (!h) {
                v->error = true;
                snprintf(v->error_what, sizeof(v->error_what), "more than %d hosts",
                         JOURNAL_VERIFY_HOSTS_MAX);
                return -E2BIG;
        }
        if (entry_field(j, "LOCKD_AUDIT_SEQ", buf, 24) > 0)
                claimed_seq = strtoull(buf, NULL, 10);
        if (!h->uid[0])
                snprintf(h->uid, sizeof(h->uid), "%s", uid);
        else if (strcmp(h->uid, uid) != 0) {
                add_break(h, "rewrite", claimed_seq, claimed_seq,
                          "an entry sent by uid %s (the host's lockd sends as uid %s)", uid,
                          h->uid);
                return 0;
        }

        r = audit_record_check(line, len, &ar, &e, msg, sizeof(msg));
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                add_break(h, "rewrite", claimed_seq, claimed_seq,
                          "an entry's record is not one lockd writes (%s: %s)",
                          audit_verify_error_to_string(e), msg);
                return 0;
        }
        rec.seq = ar.seq;
        memcpy(rec.prev, ar.prev, sizeof(rec.prev));
        audit_hash_hex(line, len, rec.hash);

        if (entry_field(j, "LOCKD_AUDIT_HASH", buf, AUDIT_HASH_HEX + 1) > 0 &&
            strcmp(buf, rec.hash) != 0)
                add_break(h, "rewrite", rec.seq, rec.seq,
                          "the record does not hash to its entry's LOCKD_AUDIT_HASH");
        if (claimed_seq != 0 && claimed_seq != rec.seq)
                add_break(h, "rewrite", rec.seq, rec.seq,
                          "the entry's LOCKD_AUDIT_SEQ (%" PRIu64 ") is not the record's",
                          claimed_seq);
        r = mirror_check(j, line, bad, sizeof(bad));
        if (r > 0)
                add_break(h, "rewrite", rec.seq, rec.seq,
                          "the entry's %s is not the record's value", bad);

        if (host_find(h, rec.hash) >= 0) {
                h->duplicates++; /* the same record twice: nothing new */
                return 0;
        }
        if (v->records >= JOURNAL_VERIFY_RECORDS_MAX) {
                v->error = true;
                snprintf(v->error_what, sizeof(v->error_what), "more than %u records",
                         JOURNAL_VERIFY_RECORDS_MAX);
                return -E2BIG;
        }

        x = chain_place(h, &rec);
        if (x >= 0 && h->recs[x].child < 0)
                h->recs[x].child = (int64_t)h->n_recs;
        r = host_add(h, &rec);
        if (r < 0)
                return r;
        h->last = (int64_t)h->n_recs - 1;
        v->records++;
        return note_start(h, boot, pid, rec.seq);
}

/* Adds path, or the journal files under it (two levels: journal-remote's directory and a
 * machine's), to files. */
static int collect(const char *path, int depth, char ***files, size_t *n) {
        struct stat st;
        struct dirent **list = NULL;
        int k, r = 0;

        if (stat(path, &st) < 0)
                return negative_errno();
        if (!S_ISDIR(st.st_mode)) {
                char **f;

                if (*n >= JOURNAL_VERIFY_FILES_MAX)
                        return -E2BIG;
                f = reallocarray(*files, *n + 2, sizeof(*f));
                if (!f)
                        return -ENOMEM;
                *files = f;
                f[*n] = strdup(path);
                if (!f[*n])
                        return -ENOMEM;
                f[++*n] = NULL;
                return 0;
        }
        if (depth > 1)
                return 0;
        k = scandir(path, &list, NULL, alphasort);
        if (k < 0)
                return negative_errno();
        for (int i = 0; i < k; i++) {
                const char *name = list[i]->d_name;
                size_t len = strlen(name);
                _cleanup_free_ char *sub = NULL;
                struct stat s;

                if (r >= 0 && name[0] != '.' && asprintf(&sub, "%s/%s", path, name) >= 0 &&
                    stat(sub, &s) == 0 &&
                    (S_ISDIR(s.st_mode) || (len > 8 && strcmp(name + len - 8, ".journal") == 0) ||
                     (len > 9 && strcmp(name + len - 9, ".journal~") == 0)))
                        r = collect(sub, depth + 1, files, n);
                free(list[i]);
        }
        free(list);
        return r;
}

/* Reads every record of the files into v. 0, or a negative errno with v->error_what set. */
static int read_journal(Verify *v, char **files, const char *match) {
        _cleanup_free_ char *line = malloc(FIELD_MAX);
        sd_journal *j = NULL;
        int r;

        if (!line)
                return -ENOMEM;
        r = sd_journal_open_files(&j, (const char **)files, 0);
        if (r < 0) {
                snprintf(v->error_what, sizeof(v->error_what), "cannot open the journal files: %s",
                         strerror(-r));
                return r;
        }
        /* Fields up to a whole record are read; a larger one is cut, then refused below. */
        (void)sd_journal_set_data_threshold(j, FIELD_MAX);
        r = sd_journal_add_match(j, "SYSLOG_IDENTIFIER=lockd", 0);
        if (r >= 0 && match[0])
                r = sd_journal_add_match(j, match, 0);
        if (r < 0) {
                snprintf(v->error_what, sizeof(v->error_what), "bad match '%s': %s", match,
                         strerror(-r));
                sd_journal_close(j);
                return r;
        }
        SD_JOURNAL_FOREACH(j) {
                int n = entry_field(j, "LOCKD_AUDIT_RECORD", line, FIELD_MAX);

                if (n == -ENOENT || n == -EBADMSG)
                        continue; /* another of lockd's lines */
                if (n < 0) {
                        /* A record field no record can be: too long, or with a NUL. */
                        Host *h;
                        char machine[ID_MAX + 1] = "", hostname[HOSTNAME_MAX + 1] = "?";

                        if (entry_field(j, "_MACHINE_ID", machine, sizeof(machine)) < 0 ||
                            !is_hex(machine, ID_MAX))
                                continue;
                        (void)entry_field(j, "_HOSTNAME", hostname, sizeof(hostname));
                        h = host_of(v, machine, hostname);
                        if (h)
                                add_break(h, "rewrite", 0, 0,
                                          "an entry's LOCKD_AUDIT_RECORD is longer than any "
                                          "record or holds a NUL");
                        continue;
                }
                r = take_entry(v, j, line, (size_t)n);
                if (r < 0)
                        break;
        }
        sd_journal_close(j);
        if (r < 0 && !v->error_what[0])
                snprintf(v->error_what, sizeof(v->error_what), "%s", strerror(-r));
        return r < 0 ? r : 0;
}

/* This machine's id (/etc/machine-id), in buf; -errno. */
static int local_machine_id(char buf[static ID_MAX + 1]) {
        _cleanup_close_ int fd = open("/etc/machine-id", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        ssize_t n;

        if (fd < 0)
                return negative_errno();
        n = read(fd, buf, ID_MAX);
        if (n != ID_MAX)
                return -EBADMSG;
        buf[ID_MAX] = 0;
        return is_hex(buf, ID_MAX) ? 0 : -EBADMSG;
}

/*
 * Finds record seq in one audit file (mapped): its hash in out and 1, 0 when the file does not
 * hold it, -EBADMSG for a line that is not a record. *last gets the file's last seq.
 */
static int find_in_file(const char *path, uint64_t seq, char out[static AUDIT_HASH_HEX + 1],
                        uint64_t *last) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        struct stat st;
        const char *p, *end;
        void *m;
        int r = 0;

        if (fd < 0)
                return errno == ENOENT ? 0 : negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EBADMSG;
        if (st.st_size == 0)
                return 0;
        m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED)
                return negative_errno();
        end = (const char *)m + st.st_size;
        for (p = m; p < end;) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                AuditVerifyError e;
                AuditRecord ar;
                char msg[192];

                if (!nl)
                        break; /* a torn tail: lockd cuts it at its next start */
                if (audit_record_check(p, (size_t)(nl - p), &ar, &e, msg, sizeof(msg)) < 0) {
                        r = -EBADMSG;
                        break;
                }
                *last = ar.seq;
                if (ar.seq == seq) {
                        audit_hash_hex(p, (size_t)(nl - p), out);
                        r = 1;
                }
                p = nl + 1;
        }
        munmap(m, (size_t)st.st_size);
        return r;
}

/*
 * Compares h's head with the local log of state_dir: the record at the collector's last seq must
 * be in the local log (its segments or the current file) with the same hash. Hash-linked, that
 * one equality says both agree on every record up to it.
 */
static void compare_local(Host *h, const char *state_dir) {
        _cleanup_free_ char *dir = NULL;
        struct dirent **list = NULL;
        const Rec *head = &h->recs[h->last];
        char hash[AUDIT_HASH_HEX + 1] = "";
        uint64_t last = 0;
        int k, found = 0;

        h->local_checked = true;
        if (asprintf(&dir, "%s/%s", state_dir, AUDIT_DIR) < 0) {
                dir = NULL;
                snprintf(h->local_what, sizeof(h->local_what), "out of memory");
                return;
        }
        k = scandir(dir, &list, NULL, alphasort);
        if (k < 0) {
                snprintf(h->local_what, sizeof(h->local_what), "%s: %s", dir, strerror(errno));
                return;
        }
        /* Segments in name order (their names carry their first seq), then the current file. */
        for (int i = 0; i <= k; i++) {
                const char *name = i < k ? list[i]->d_name : AUDIT_FILE;
                _cleanup_free_ char *path = NULL;

                if (found == 0 && (i == k || audit_segment_name_valid(name)) &&
                    asprintf(&path, "%s/%s", dir, name) >= 0) {
                        found = find_in_file(path, head->seq, hash, &last);
                        if (found < 0)
                                snprintf(h->local_what, sizeof(h->local_what),
                                         "the local log's %.64s does not verify", name);
                }
                if (i < k)
                        free(list[i]);
        }
        free(list);
        if (found < 0)
                return;
        if (found == 0) {
                snprintf(h->local_what, sizeof(h->local_what),
                         "the collector holds record %" PRIu64
                         ", beyond the local log's last (%" PRIu64 ")",
                         head->seq, last);
                return;
        }
        if (strcmp(hash, head->hash) != 0) {
                snprintf(h->local_what, sizeof(h->local_what),
                         "record %" PRIu64 " differs: the local log's hash is %s", head->seq, hash);
                return;
        }
        h->local_agrees = true;
        snprintf(h->local_what, sizeof(h->local_what),
                 "the local log agrees up to the collector's head (record %" PRIu64 ")", head->seq);
}

static bool host_ok(const Host *h) {
        return h->n_breaks_total == 0 && (!h->local_checked || h->local_agrees);
}

static json_t *host_json(const Host *h) {
        json_t *o = json_object(), *breaks = json_array(), *starts = json_array();
        const Rec *head = h->last >= 0 ? &h->recs[h->last] : NULL;

        if (!o || !breaks || !starts) {
                json_decref(o);
                json_decref(breaks);
                json_decref(starts);
                return NULL;
        }
        for (size_t i = 0; i < h->n_breaks; i++) {
                const Break *b = &h->breaks[i];

                json_array_append_new(breaks, json_pack("{s:s, s:I, s:I, s:s}", "kind", b->kind,
                                                        "seq", (json_int_t)b->seq, "seq_last",
                                                        (json_int_t)b->seq_last, "what", b->what));
        }
        for (size_t i = 0; i < h->n_starts; i++) {
                const Start *s = &h->starts[i];

                json_array_append_new(starts, json_pack("{s:s, s:I, s:I, s:I, s:I}", "boot_id",
                                                        s->boot_id, "pid", (json_int_t)s->pid,
                                                        "first_seq", (json_int_t)s->first_seq,
                                                        "last_seq", (json_int_t)s->last_seq,
                                                        "records", (json_int_t)s->records));
        }
        json_object_set_new(o, "machine_id", json_string(h->machine_id));
        json_object_set_new(o, "hostname", json_string(h->hostname));
        json_object_set_new(o, "uid", h->uid[0] ? json_string(h->uid) : json_null());
        json_object_set_new(o, "ok", json_boolean(host_ok(h)));
        json_object_set_new(o, "records", json_integer((json_int_t)h->n_recs));
        json_object_set_new(o, "first_seq",
                            h->n_recs ? json_integer((json_int_t)h->recs[0].seq) : json_null());
        json_object_set_new(o, "last_seq",
                            head ? json_integer((json_int_t)head->seq) : json_null());
        json_object_set_new(o, "head", head ? json_string(head->hash) : json_null());
        json_object_set_new(o, "chains", json_integer((json_int_t)h->chains));
        json_object_set_new(o, "duplicates", json_integer((json_int_t)h->duplicates));
        json_object_set_new(o, "starts", starts);
        json_object_set_new(o, "breaks", breaks);
        json_object_set_new(o, "breaks_total", json_integer((json_int_t)h->n_breaks_total));
        if (h->local_checked)
                json_object_set_new(
                        o, "local",
                        json_pack("{s:b, s:s}", "agrees", h->local_agrees, "what", h->local_what));
        return o;
}

static void host_print(const Host *h) {
        const Rec *head = h->last >= 0 ? &h->recs[h->last] : NULL;

        printf("host %s (%s): %s: %zu records", h->machine_id, h->hostname,
               host_ok(h) ? "ok" : "BROKEN", h->n_recs);
        if (head)
                printf(", seq %" PRIu64 " to %" PRIu64 ", head %s", h->recs[0].seq, head->seq,
                       head->hash);
        printf(", %zu lockd start(s)", h->n_starts);
        if (h->chains > 1)
                printf(", %zu chains (a chain started afresh: a new state directory)", h->chains);
        if (h->duplicates)
                printf(", %zu duplicate entries", h->duplicates);
        printf("\n");
        for (size_t i = 0; i < h->n_breaks; i++)
                printf("  %s: %s\n", h->breaks[i].kind, h->breaks[i].what);
        if (h->n_breaks_total > h->n_breaks)
                printf("  ... and %zu more breaks\n", h->n_breaks_total - h->n_breaks);
        if (h->local_checked)
                printf("  local: %s\n", h->local_what);
}

int journal_verify(const JournalVerifyOptions *o) {
        char **files = NULL;
        size_t n_files = 0;
        Verify v = {};
        bool ok = true;
        int r = 0, rc;

        for (size_t i = 0; i < o->n_paths && r >= 0; i++) {
                r = collect(o->paths[i], 0, &files, &n_files);
                if (r < 0)
                        snprintf(v.error_what, sizeof(v.error_what), "%s: %s", o->paths[i],
                                 r == -E2BIG ? "too many journal files" : strerror(-r));
        }
        if (r >= 0 && n_files == 0) {
                r = -ENOENT;
                snprintf(v.error_what, sizeof(v.error_what), "no journal files");
        }
        if (r >= 0)
                r = read_journal(&v, files, o->match ? o->match : DEFAULT_MATCH);
        if (r >= 0 && v.n_hosts == 0) {
                /* Nothing to vouch for is no verdict of "ok". */
                r = -ENOENT;
                snprintf(v.error_what, sizeof(v.error_what),
                         "no audit record of lockd in the journal files (entries with %s)",
                         o->match ? o->match : DEFAULT_MATCH);
        }
        for (size_t i = 0; i < n_files; i++)
                free(files[i]);
        free(files);

        if (r >= 0 && o->state_dir) {
                char mid[ID_MAX + 1];
                Host *local = NULL;

                /* The local host: this machine's id among the collector's hosts, or the only
                 * host there is. */
                if (local_machine_id(mid) >= 0)
                        for (size_t i = 0; i < v.n_hosts; i++)
                                if (strcmp(v.hosts[i].machine_id, mid) == 0)
                                        local = &v.hosts[i];
                if (!local && v.n_hosts == 1)
                        local = &v.hosts[0];
                if (local && local->last >= 0)
                        compare_local(local, o->state_dir);
                else {
                        r = -ENOENT;
                        snprintf(v.error_what, sizeof(v.error_what),
                                 "--state-dir: no host of the journal is this machine");
                }
        }

        for (size_t i = 0; i < v.n_hosts; i++)
                ok = ok && host_ok(&v.hosts[i]);
        ok = ok && r >= 0 && !v.error;
        if (o->json) {
                json_t *out = json_object(), *hosts = json_array();

                for (size_t i = 0; out && hosts && i < v.n_hosts; i++)
                        json_array_append_new(hosts, host_json(&v.hosts[i]));
                if (out && hosts) {
                        json_object_set_new(out, "ok", json_boolean(ok));
                        json_object_set_new(out, "records", json_integer((json_int_t)v.records));
                        json_object_set_new(out, "hosts", hosts);
                        if (v.error_what[0])
                                json_object_set_new(out, "error", json_string(v.error_what));
                } else
                        json_decref(hosts);
                rc = console_print_json_steal(out);
                if (rc != 0)
                        ok = false;
        } else {
                for (size_t i = 0; i < v.n_hosts; i++)
                        host_print(&v.hosts[i]);
                if (v.error_what[0])
                        fprintf(stderr, "audit: %s\n", v.error_what);
                else if (ok)
                        printf("ok: %zu host(s), %zu records\n", v.n_hosts, v.records);
                else
                        printf("audit: a chain does not verify\n");
        }
        for (size_t i = 0; i < v.n_hosts; i++)
                host_done(&v.hosts[i]);
        free(v.hosts);
        return ok ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
}
