/* The budgets on disk: the per-content budget files and the checkpoint (a snapshot of every
 * budget at a position of the log), their formats, their load at open, and the batches that
 * write them off the loop (ARCHITECTURE.md, Flows: "Budgets"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "budget-internal.h"
#include "codec.h"
#include "escape.h"
#include "fd-util.h"
#include "macro.h"
#include "store.h"
#include "text-buf.h"

static void file_name(const uint8_t d[BUDGET_DIGEST_SIZE], char out[FILE_NAME_LEN + 1]) {
        hex_encode(d, BUDGET_DIGEST_SIZE, out);
        memcpy(out + HEX_SIZE, FILE_SUFFIX, sizeof(FILE_SUFFIX));
}

/*
 * The file's text: one compact JSON object, keys sorted,
 *   {"answers":[{"inputs":[["<input>","<placeholder>"],...],"outcome":"<name>","plugin":"<name>",
 *     "ran":<usec>,"time":<usec>,"version":"<version>"},...],"digest":"<hex>","format":1}
 * where "ran" (how long the producing run took from its admission to its end, for the release
 * schedule of a cached answer) is left out when unknown.
 * Every string is a validated name, version or hex digest ([a-z0-9._-]), so nothing needs escaping.
 */
static int budget_format(const uint8_t d[BUDGET_DIGEST_SIZE], const Answer *answers, size_t n,
                         TextBuf *out) {
        char hex[HEX_SIZE + 1];
        int r;

        r = text_buf_printf(out, "{\"answers\":[");
        for (size_t i = 0; r >= 0 && i < n; i++) {
                BudgetKey k;

                budget_key_decode(answers[i].key, answers[i].key_len, &k);
                r = text_buf_printf(out, "%s{\"inputs\":[", i > 0 ? "," : "");
                for (size_t j = 0; r >= 0 && j < k.n_pairs; j++)
                        r = text_buf_printf(out, "%s[\"%s\",\"%s\"]", j > 0 ? "," : "",
                                            k.pairs[j].input, k.pairs[j].placeholder);
                if (r >= 0)
                        r = text_buf_printf(out, "],\"outcome\":\"%s\",\"plugin\":\"%s\",",
                                            budget_outcome_name(answers[i].outcome), k.plugin);
                if (r >= 0 && answers[i].ran_usec > 0)
                        r = text_buf_printf(out, "\"ran\":%llu,",
                                            (unsigned long long)answers[i].ran_usec);
                if (r >= 0)
                        r = text_buf_printf(out, "\"time\":%llu,\"version\":\"%s\"}",
                                            (unsigned long long)answers[i].time_usec, k.version);
        }
        hex_encode(d, BUDGET_DIGEST_SIZE, hex);
        if (r >= 0)
                r = text_buf_printf(out, "],\"digest\":\"%s\",\"format\":%d}\n", hex,
                                    BUDGET_FORMAT);
        return r;
}

/* Formats digest d's file text into the store's buffer (loop thread only; allocated once, so a
 * write per question does not map and unmap BUDGET_FILE_MAX each time). */
static int format_file(BudgetStore *s, const uint8_t d[BUDGET_DIGEST_SIZE], const Answer *answers,
                       size_t n, TextBuf *ret) {
        if (!s->format_buf) {
                s->format_buf = malloc(BUDGET_FILE_MAX);
                if (!s->format_buf)
                        return -ENOMEM;
        }
        *ret = (TextBuf){.p = s->format_buf, .size = BUDGET_FILE_MAX, .max = BUDGET_FILE_MAX};
        return budget_format(d, answers, n, ret);
}

/*
 * Makes the file of digest d hold exactly answers[0..n): written atomically (store_write_file(),
 * which fsync()s the new file before renaming it into place) and the directory fsync()ed, or
 * removed and the directory fsync()ed when n is 0. Only after a 0 from here does the caller change
 * the budget in memory, so memory never promises what the disk does not hold.
 *
 * Without sync_dir the directory is not fsync()ed: the rename is visible at once (a lockd killed
 * right after it finds the new file), and after a power loss the file is either the old one or
 * the new one, complete either way. Only budget_commit() passes false: its old file is the
 * reservation, which already charges the slot, so losing the commit loses a cached outcome, never
 * a charge. It saves one of the miss path's fsync()s.
 */
int budget_persist(BudgetStore *s, const uint8_t d[BUDGET_DIGEST_SIZE], const Answer *answers,
                   size_t n, bool sync_dir) {
        char name[FILE_NAME_LEN + 1];
        TextBuf buf;
        int r;

        /* A store whose budgets are a snapshot is written through its log (batch_take()). */
        if (s->snapshot)
                return -EROFS;
        /* A batch on its way to the disk is written first: this write is the newer. */
        if (s->barrier)
                s->barrier(s->barrier_userdata);
        file_name(d, name);
        if (n == 0) {
                if (unlinkat(s->dfd, name, 0) < 0 && errno != ENOENT)
                        return negative_errno();
        } else {
                r = format_file(s, d, answers, n, &buf);
                if (r < 0)
                        return r;
                r = store_write_file(s->dfd, name, buf.p, buf.len);
                if (r < 0)
                        return r;
                if (!sync_dir)
                        return 0;
        }
        return fsync(s->dfd) < 0 ? negative_errno() : 0;
}

/* Whether object o has exactly the n keys named. */
static bool object_has_exactly(json_t *o, const char *const *keys, size_t n) {
        if (!json_is_object(o) || json_object_size(o) != n)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!json_object_get(o, keys[i]))
                        return false;
        return true;
}

/* Parses one element of "answers" into a (canonical, validated) key and its entry. */
static int parse_answer(json_t *o, BudgetKey *ret_key, Answer *ret) {
        static const char *const keys[] = {"inputs", "outcome", "plugin", "time", "version", "ran"};
        json_t *inputs, *pair, *time_v, *ran_v;
        const char *plugin, *version, *outcome;
        BudgetKey k;
        size_t i;

        /* "ran" is optional: written only when known, and absent from older files. */
        ran_v = json_object_get(o, "ran");
        if (!object_has_exactly(o, keys, ELEMENTSOF(keys) - (ran_v ? 0 : 1)))
                return -EBADMSG;
        if (ran_v && (!json_is_integer(ran_v) || json_integer_value(ran_v) <= 0))
                return -EBADMSG;
        plugin = json_string_value(json_object_get(o, "plugin"));
        version = json_string_value(json_object_get(o, "version"));
        outcome = json_string_value(json_object_get(o, "outcome"));
        inputs = json_object_get(o, "inputs");
        time_v = json_object_get(o, "time");
        if (!plugin || !version || !outcome || !json_is_array(inputs) ||
            json_array_size(inputs) > BUDGET_PAIRS_MAX || !json_is_integer(time_v) ||
            json_integer_value(time_v) < 0)
                return -EBADMSG;
        if (budget_key_init(&k, plugin, version) < 0)
                return -EBADMSG;
        json_array_foreach(inputs, i, pair) {
                const char *input, *placeholder;

                if (!json_is_array(pair) || json_array_size(pair) != 2)
                        return -EBADMSG;
                input = json_string_value(json_array_get(pair, 0));
                placeholder = json_string_value(json_array_get(pair, 1));
                if (!input || !placeholder || budget_key_add(&k, input, placeholder) < 0)
                        return -EBADMSG;
                /* Written sorted: a pair out of order is not a file lockd wrote. */
                if (strcmp(k.pairs[k.n_pairs - 1].input, input) != 0)
                        return -EBADMSG;
        }
        *ret = (Answer){.time_usec = (uint64_t)json_integer_value(time_v),
                        .ran_usec = ran_v ? (uint64_t)json_integer_value(ran_v) : 0};
        if (budget_parse_outcome(outcome, &ret->outcome) < 0)
                return -EBADMSG;
        /*
         * A question bound to typed values has no answer on disk (ARCHITECTURE.md, the cache):
         * its answers depend on the values and live in memory only. An older lockd stored the
         * bit of whichever value came first; that bit is read as "answered", never given back,
         * and leaves the disk at the file's next write. "answered" without a binding is no file
         * lockd wrote.
         */
        if (k.n_pairs > 0 && budget_outcome_is_answer(ret->outcome))
                ret->outcome = BUDGET_OUTCOME_ANSWERED;
        if (k.n_pairs == 0 && ret->outcome == BUDGET_OUTCOME_ANSWERED)
                return -EBADMSG;
        *ret_key = k;
        return 0;
}

/*
 * Parses a budget file strictly: the exact shape budget_format() writes (format 1, the digest of
 * the file's name, 1..BUDGET_LIMIT_MAX answers with distinct canonical keys; key order within
 * objects free, as JSON allows), no duplicate object keys. -EBADMSG for anything else.
 */
static int budget_parse(const char *text, size_t len, const uint8_t d[BUDGET_DIGEST_SIZE],
                        Budget **ret) {
        static const char *const keys[] = {"answers", "digest", "format"};
        _cleanup_(json_decrefp) json_t *root = NULL;
        json_t *answers, *format, *a;
        const char *hex;
        char want[HEX_SIZE + 1];
        Budget *b = NULL;
        json_error_t jerr;
        size_t i;
        int r;

        root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!root || !object_has_exactly(root, keys, ELEMENTSOF(keys)))
                return -EBADMSG;
        format = json_object_get(root, "format");
        hex = json_string_value(json_object_get(root, "digest"));
        answers = json_object_get(root, "answers");
        hex_encode(d, BUDGET_DIGEST_SIZE, want);
        if (!json_is_integer(format) || json_integer_value(format) != BUDGET_FORMAT || !hex ||
            strcmp(hex, want) != 0 || !json_is_array(answers) || json_array_size(answers) == 0 ||
            json_array_size(answers) > BUDGET_LIMIT_MAX)
                return -EBADMSG;

        b = calloc(1, sizeof(Budget));
        if (!b)
                return -ENOMEM;
        memcpy(b->digest, d, BUDGET_DIGEST_SIZE);
        b->size = json_array_size(answers);
        b->answers = calloc(b->size, sizeof(Answer));
        if (!b->answers) {
                budget_free(b);
                return -ENOMEM;
        }
        json_array_foreach(answers, i, a) {
                char bytes[KEY_BYTES_MAX];
                BudgetKey k;
                Answer ans;

                r = parse_answer(a, &k, &ans);
                if (r < 0)
                        goto fail;
                ans.key_len = budget_key_encode(&k, bytes);
                ans.key_hash = budget_key_hash(bytes, ans.key_len);
                if (budget_find(b, bytes, ans.key_len, ans.key_hash)) {
                        r = -EBADMSG; /* the same question twice */
                        goto fail;
                }
                ans.key = malloc(ans.key_len);
                if (!ans.key) {
                        r = -ENOMEM;
                        goto fail;
                }
                memcpy(ans.key, bytes, ans.key_len);
                b->answers[b->n++] = ans;
        }
        *ret = b;
        return 0;

fail:
        budget_free(b);
        return r;
}

/* Whether name is "<64 lowercase hex>.json"; fills d. */
static bool budget_file_name(const char *name, uint8_t d[BUDGET_DIGEST_SIZE]) {
        char hex[HEX_SIZE + 1];

        if (strlen(name) != FILE_NAME_LEN || strcmp(name + HEX_SIZE, FILE_SUFFIX) != 0)
                return false;
        for (size_t i = 0; i < HEX_SIZE; i++)
                if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
                        return false;
        memcpy(hex, name, HEX_SIZE);
        hex[HEX_SIZE] = 0;
        return hex_decode(hex, strlen(hex), d, BUDGET_DIGEST_SIZE) == 0;
}

/* Whether name is a temporary file store_write_file() leaves when interrupted: ".#<file>.<hex>". */
static bool temp_file_name(const char *name) {
        static const char marker[] = ".#" BUDGET_CHECKPOINT ".";
        uint8_t d[BUDGET_DIGEST_SIZE];
        char file[FILE_NAME_LEN + 1];

        if (strncmp(name, marker, sizeof(marker) - 1) == 0 &&
            strlen(name) == sizeof(marker) - 1 + 16)
                return true;

        if (strncmp(name, ".#", 2) != 0 || strlen(name) != 2 + FILE_NAME_LEN + 1 + 16 ||
            name[2 + FILE_NAME_LEN] != '.')
                return false;
        memcpy(file, name + 2, FILE_NAME_LEN);
        file[FILE_NAME_LEN] = 0;
        return budget_file_name(file, d);
}

/* Puts b, a budget read from disk, into s's table; frees it on failure: -ENOSPC past the store's
 * cap, -ENOMEM. */
static int table_add_loaded(BudgetStore *s, Budget *b) {
        int r = s->n >= s->digests_max ? -ENOSPC : budget_table_reserve(s);

        if (r < 0) {
                budget_free(b);
                return r;
        }
        budget_table_put(s, b);
        return 0;
}

/* Loads one budget file of s->dfd into s. */
static int load_one(BudgetStore *s, const char *name, BudgetError *err) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL;
        uint8_t d[BUDGET_DIGEST_SIZE];
        struct stat st;
        size_t len;
        Budget *b = NULL;
        int r;

        if (!budget_file_name(name, d)) {
                /* The name goes to the log: escaped, and cut short. */
                _cleanup_free_ char *shown = escape_bytes(name, MIN(strlen(name), 80));

                return budget_fail(err, -EINVAL,
                                   BUDGET_DIR "/%s: not a budget file (refusing to start with an "
                                              "unknown file among the budgets)",
                                   shown ? shown : "?");
        }
        fd = openat(s->dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return budget_fail(err, negative_errno(), BUDGET_DIR "/%s: %m", name);
        if (fstat(fd, &st) < 0)
                return budget_fail(err, negative_errno(), BUDGET_DIR "/%s: %m", name);
        if (!S_ISREG(st.st_mode))
                return budget_fail(err, -EINVAL, BUDGET_DIR "/%s: not a regular file", name);
        r = read_full_fd(fd, BUDGET_FILE_MAX, &text, &len);
        if (r < 0)
                return budget_fail(err, r, BUDGET_DIR "/%s: %s", name,
                                   r == -EFBIG ? "larger than a budget can be" : strerror(-r));
        r = budget_parse(text, len, d, &b);
        if (r == -ENOMEM)
                return budget_fail(err, r, BUDGET_DIR "/%s: out of memory", name);
        if (r < 0)
                return budget_fail(err, r,
                                   BUDGET_DIR "/%s: corrupt budget (refusing to start rather than "
                                              "reset it; lockctl budget reset or removing the file "
                                              "resets it)",
                                   name);
        r = table_add_loaded(s, b);
        if (r == -ENOSPC)
                return budget_fail(err, r, BUDGET_DIR ": more than %zu budgets", s->digests_max);
        if (r < 0)
                return budget_fail(err, r, BUDGET_DIR ": out of memory");
        return 0;
}

/*
 * Parses a checkpoint's position strictly: {"format":1,"head":"<64 lowercase hex>","seq":S} for
 * format 1 (the position alone), and with "budgets":N too, N in 0..max, for a snapshot's header
 * (SNAPSHOT_FORMAT; *ret_n is N, else 0). S >= 0. -EBADMSG for anything else.
 */
static int position_parse(const char *text, size_t len, int format, size_t max, size_t *ret_n,
                          uint64_t *ret_seq, char ret_head[BUDGET_HEAD_HEX + 1]) {
        static const char *const keys[] = {"format", "head", "seq", "budgets"};
        bool snapshot = format == SNAPSHOT_FORMAT;
        _cleanup_(json_decrefp) json_t *root = NULL;
        json_t *format_v, *seq, *n;
        const char *head;
        json_error_t jerr;

        root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!root || !object_has_exactly(root, keys, ELEMENTSOF(keys) - (snapshot ? 0 : 1)))
                return -EBADMSG;
        format_v = json_object_get(root, "format");
        seq = json_object_get(root, "seq");
        n = json_object_get(root, "budgets");
        head = json_string_value(json_object_get(root, "head"));
        if (!json_is_integer(format_v) || json_integer_value(format_v) != format ||
            !json_is_integer(seq) || json_integer_value(seq) < 0 || !head ||
            strlen(head) != BUDGET_HEAD_HEX || !hex_lower_valid(head, BUDGET_HEAD_HEX) ||
            (snapshot && (!json_is_integer(n) || json_integer_value(n) < 0 ||
                          (uint64_t)json_integer_value(n) > max)))
                return -EBADMSG;
        *ret_n = snapshot ? (size_t)json_integer_value(n) : 0;
        *ret_seq = (uint64_t)json_integer_value(seq);
        memcpy(ret_head, head, BUDGET_HEAD_HEX + 1);
        return 0;
}

/* The digest a budget's line names ("digest":"<64 hex>", as budget_format() writes it). */
static int line_digest(const char *line, size_t len, uint8_t d[BUDGET_DIGEST_SIZE]) {
        static const char key[] = "\"digest\":\"";
        const char *p = memmem(line, len, key, sizeof(key) - 1);

        if (!p || (size_t)(line + len - (p + sizeof(key) - 1)) < HEX_SIZE + 1 ||
            p[sizeof(key) - 1 + HEX_SIZE] != '"' || !hex_lower_valid(p + sizeof(key) - 1, HEX_SIZE))
                return -EBADMSG;
        return hex_decode(p + sizeof(key) - 1, HEX_SIZE, d, BUDGET_DIGEST_SIZE) < 0 ? -EBADMSG : 0;
}

/*
 * Loads a snapshot's budgets (text: the lines after its header): exactly n lines, each a budget
 * as its own file would hold it (budget_parse()), in strictly increasing digest order (so none
 * twice). The line that does not parse in *ret_line (1 is the header's). -EBADMSG, -ENOSPC past
 * the store's cap, or -ENOMEM.
 */
static int snapshot_load(BudgetStore *s, const char *text, size_t len, size_t n, size_t *ret_line) {
        uint8_t prev[BUDGET_DIGEST_SIZE] = {};
        size_t off = 0, i;
        int r;

        for (i = 0; i < n; i++) {
                const char *line = text + off, *nl = memchr(line, '\n', len - off);
                uint8_t d[BUDGET_DIGEST_SIZE];
                size_t l;
                Budget *b = NULL;

                *ret_line = i + 2;
                if (!nl)
                        return -EBADMSG;
                l = (size_t)(nl - line) + 1;
                off += l;
                r = line_digest(line, l, d);
                if (r >= 0 && i > 0 && memcmp(prev, d, BUDGET_DIGEST_SIZE) >= 0)
                        r = -EBADMSG;
                if (r >= 0)
                        r = budget_parse(line, l, d, &b);
                if (r >= 0)
                        r = table_add_loaded(s, b);
                if (r < 0)
                        return r;
                memcpy(prev, d, BUDGET_DIGEST_SIZE);
        }
        *ret_line = n + 2;
        return off == len ? 0 : -EBADMSG;
}

/*
 * Loads BUDGET_CHECKPOINT, if there is one: a position alone (format 1, the budgets in files of
 * their own), or a snapshot (format 2, the budgets in it; files beside it are an older layout's,
 * removed by the next snapshot). A file that does not parse fails the start, as a budget's does.
 */
static int load_checkpoint(BudgetStore *s, BudgetError *err) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL;
        _cleanup_(json_decrefp) json_t *first = NULL;
        const char *nl;
        size_t len, n = 0, line = 1;
        struct stat st;
        json_error_t jerr;
        int r;

        fd = openat(s->dfd, BUDGET_CHECKPOINT,
                    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
                return 0;
        if (fd < 0)
                return budget_fail(err, negative_errno(), BUDGET_DIR "/" BUDGET_CHECKPOINT ": %m");
        if (fstat(fd, &st) < 0)
                return budget_fail(err, negative_errno(), BUDGET_DIR "/" BUDGET_CHECKPOINT ": %m");
        if (!S_ISREG(st.st_mode))
                return budget_fail(err, -EINVAL,
                                   BUDGET_DIR "/" BUDGET_CHECKPOINT ": not a regular file");
        r = read_full_fd(fd, SNAPSHOT_MAX, &text, &len);
        if (r < 0)
                return budget_fail(err, r, BUDGET_DIR "/" BUDGET_CHECKPOINT ": %s",
                                   r == -EFBIG ? "larger than a snapshot can be" : strerror(-r));
        nl = memchr(text, '\n', len);
        first = json_loadb(text, nl ? (size_t)(nl - text) : len, 0, &jerr);
        if (json_integer_value(json_object_get(first, "format")) != SNAPSHOT_FORMAT) {
                r = position_parse(text, len, BUDGET_FORMAT, 0, &n, &s->checkpoint_seq,
                                   s->checkpoint_head);
                if (r < 0)
                        return budget_fail(err, r,
                                           BUDGET_DIR
                                           "/" BUDGET_CHECKPOINT ": corrupt checkpoint "
                                           "(refusing to start rather than guess which "
                                           "budget changes it covers; removing it takes the "
                                           "budget files as they are)");
                s->has_checkpoint = true;
                return 0;
        }
        r = nl ? position_parse(text, (size_t)(nl - text), SNAPSHOT_FORMAT, s->digests_max, &n,
                                &s->checkpoint_seq, s->checkpoint_head)
               : -EBADMSG;
        if (r >= 0)
                r = snapshot_load(s, nl + 1, len - (size_t)(nl + 1 - text), n, &line);
        if (r == -ENOMEM)
                return budget_fail(err, r, BUDGET_DIR "/" BUDGET_CHECKPOINT ": out of memory");
        if (r == -ENOSPC)
                return budget_fail(err, r, BUDGET_DIR ": more than %zu budgets", s->digests_max);
        if (r < 0)
                return budget_fail(err, r,
                                   BUDGET_DIR
                                   "/" BUDGET_CHECKPOINT ": corrupt budget snapshot at line "
                                   "%zu (refusing to start rather than reset the budgets; "
                                   "removing the file resets every one of them)",
                                   line);
        s->has_checkpoint = true;
        s->snapshot = true;
        return 0;
}

int budget_load_all(BudgetStore *s, BudgetError *err) {
        DIR *dir = fd_opendir_dup(s->dfd);
        struct dirent *de;
        int r = 0;

        if (!dir)
                return budget_fail(err, negative_errno(), BUDGET_DIR ": %m");
        r = load_checkpoint(s, err);
        while (r == 0 && (errno = 0, de = readdir(dir))) {
                uint8_t d[BUDGET_DIGEST_SIZE];
                bool per_budget;

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
                    strcmp(de->d_name, BUDGET_CHECKPOINT) == 0)
                        continue;
                if (temp_file_name(de->d_name)) {
                        /* An interrupted write: the budget file it was replacing is intact. */
                        if (unlinkat(s->dfd, de->d_name, 0) < 0 && errno != ENOENT) {
                                r = budget_fail(err, negative_errno(), BUDGET_DIR "/%s: %m",
                                                de->d_name);
                                break;
                        }
                        continue;
                }
                /* A file per budget is the layout of a store without a log: a snapshot removes
                 * them (after it is in place). Beside a snapshot one is older than it, and left
                 * for the next snapshot to remove. */
                per_budget = budget_file_name(de->d_name, d);
                s->legacy_files = s->legacy_files || per_budget;
                if (!s->snapshot || !per_budget)
                        r = load_one(s, de->d_name, err); /* beside a snapshot: refuses it */
        }
        if (r == 0 && errno != 0)
                r = budget_fail(err, negative_errno(), BUDGET_DIR ": %m");
        closedir(dir);
        return r;
}

static BudgetBatch *batch_free(BudgetBatch *b) {
        if (!b)
                return NULL;
        for (size_t i = 0; i < b->n; i++)
                free(b->files[i].text);
        free(b->gone);
        free(b);
        return NULL;
}

/* Room for one more emptied budget in s->gone: before memory changes, so nothing fails after. */
int budget_gone_room(BudgetStore *s) {
        uint8_t(*g)[BUDGET_DIGEST_SIZE] =
                budget_room_for_one(s->gone, &s->gone_size, s->n_gone, sizeof(*s->gone));

        if (!g)
                return -ENOMEM;
        s->gone = g;
        return 0;
}

/* A budget emptied under a log: its file goes at the next batch (room made by budget_gone_room()).
 */
void budget_gone_add(BudgetStore *s, const uint8_t d[BUDGET_DIGEST_SIZE]) {
        memcpy(s->gone[s->n_gone++], d, BUDGET_DIGEST_SIZE);
        s->gen++;
}

/* A batch holds every change made so far: nothing is dirty or gone any more, until the next. */
static void batch_taken(BudgetStore *s) {
        for (size_t i = 0; i < s->n_dirty; i++)
                s->dirty[i]->dirty = s->dirty[i]->dirty_slot = false;
        s->n_dirty = 0;
        s->n_gone = 0;
        s->taken_gen = s->gen;
}

static int budget_digest_cmp(const void *x, const void *y) {
        const Budget *a = *(const Budget *const *)x, *b = *(const Budget *const *)y;

        return memcmp(a->digest, b->digest, BUDGET_DIGEST_SIZE);
}

/*
 * The batch of a store with a log: one file, BUDGET_CHECKPOINT, that holds the log's position and
 * every budget, each on a line of its own as its own file would hold it (budget_format()), in
 * the order of their digests:
 *   {"budgets":N,"format":2,"head":"<hex>","seq":S}\n<budget>\n...
 * One rename puts the position and the budgets it covers in place together, so a checkpoint costs
 * two fsync()s (the file, the directory) however many budgets changed, where a file per budget
 * cost one each and two more for the position. Budgets emptied since are simply not in it.
 */
static int snapshot_take(BudgetStore *s, BudgetBatch **ret) {
        _cleanup_free_ Budget **sorted = NULL;
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        TextBuf buf = {.size = SNAPSHOT_START, .max = SNAPSHOT_MAX};
        uint64_t seq;
        char head[BUDGET_HEAD_HEX + 1];
        BudgetBatch *b;
        int r;

        sorted = calloc(MAX(s->n, (size_t)1), sizeof(Budget *));
        if (!sorted)
                return -ENOMEM;
        for (size_t i = 0; i < s->table_size; i++)
                if (s->table[i] && s->table[i]->n > 0)
                        sorted[n++] = s->table[i];
        qsort(sorted, n, sizeof(Budget *), budget_digest_cmp);
        s->log->position(&seq, head, s->log_userdata);
        /* Every budget formatted in place, after the header: as in a file of its own, a budget
         * of BUDGET_FILE_MAX bytes or more is refused (format_file()). */
        text = buf.p = malloc(buf.size);
        if (!text)
                return -ENOMEM;
        r = text_buf_printf(&buf, "{\"budgets\":%zu,\"format\":%d,\"head\":\"%s\",\"seq\":%llu}\n",
                            n, SNAPSHOT_FORMAT, head, (unsigned long long)seq);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                size_t start = buf.len;

                r = budget_format(sorted[i]->digest, sorted[i]->answers, sorted[i]->n, &buf);
                if (r >= 0 && buf.len - start >= BUDGET_FILE_MAX)
                        r = -E2BIG;
        }
        text = buf.p; /* where realloc() moved it, also on failure */
        if (r < 0)
                return r;
        b = calloc(1, sizeof(*b) + sizeof(BatchFile));
        if (!b)
                return -ENOMEM;
        *b = (BudgetBatch){.dfd = s->dfd,
                           .gen = s->gen,
                           .seq = seq,
                           .snapshot = true,
                           .legacy = s->legacy_files,
                           .n = 1};
        memcpy(b->head, head, sizeof(head));
        b->files[0] = (BatchFile){.text = TAKE_PTR(text), .len = buf.len};
        strcpy(b->files[0].name, BUDGET_CHECKPOINT);
        batch_taken(s);
        s->unsaved = false;
        *ret = b;
        return 0;
}

/* budget_batch_take(), with the checkpoint written even when nothing changed (force). */
static int batch_take(BudgetStore *s, bool force, BudgetBatch **ret) {
        BudgetBatch *b;

        if (!s || !ret)
                return -EINVAL;
        if (s->n_dirty == 0 && s->n_gone == 0 &&
            !(s->log && (force || s->unsaved || s->legacy_files))) {
                /* Nothing waits and no batch is out (the caller's rule): all of it is on disk. */
                s->durable_gen = s->gen;
                *ret = NULL;
                return 0;
        }
        if (s->log)
                return snapshot_take(s, ret);
        /* Files of their own beside a snapshot would be taken for an older layout's and removed
         * at the next start: a store whose budgets are a snapshot is written through its log. */
        if (s->snapshot)
                return -EROFS;
        b = calloc(1, sizeof(*b) + s->n_dirty * sizeof(BatchFile));
        if (!b)
                return -ENOMEM;
        *b = (BudgetBatch){.dfd = s->dfd, .gen = s->gen};
        if (s->n_gone > 0) {
                b->gone = malloc(s->n_gone * sizeof(*b->gone));
                if (!b->gone) {
                        batch_free(b);
                        return -ENOMEM;
                }
                memcpy(b->gone, s->gone, s->n_gone * sizeof(*b->gone));
                b->n_gone = s->n_gone;
                b->sync_dir = true;
        }
        for (size_t i = 0; i < s->n_dirty; i++) {
                Budget *d = s->dirty[i];
                BatchFile *f = &b->files[b->n];
                TextBuf buf;
                int r;

                /* The batch keeps a copy at its length: the writer thread reads it, while the
                 * store's buffer serves the loop's next format. */
                r = format_file(s, d->digest, d->answers, d->n, &buf);
                if (r < 0) {
                        batch_free(b);
                        return r;
                }
                f->text = malloc(buf.len);
                if (f->text)
                        memcpy(f->text, buf.p, buf.len);
                if (!f->text) {
                        batch_free(b);
                        return -ENOMEM;
                }
                file_name(d->digest, f->name);
                memcpy(f->digest, d->digest, BUDGET_DIGEST_SIZE);
                f->len = buf.len;
                f->slot = d->dirty_slot;
                b->sync_dir = b->sync_dir || d->dirty_slot;
                b->n++;
        }
        batch_taken(s);
        *ret = b;
        return 0;
}

int budget_batch_take(BudgetStore *s, BudgetBatch **ret) {
        return batch_take(s, false, ret);
}

/* Removes every budget file of dfd (an older layout's, once a snapshot holds the budgets), then
 * syncs the directory. */
static int legacy_remove(int dfd) {
        DIR *dir = fd_opendir_dup(dfd);
        struct dirent *de;
        uint8_t d[BUDGET_DIGEST_SIZE];
        int r = 0;

        if (!dir)
                return negative_errno();
        while ((errno = 0, de = readdir(dir)))
                if (budget_file_name(de->d_name, d) && unlinkat(dfd, de->d_name, 0) < 0 &&
                    errno != ENOENT) {
                        r = negative_errno();
                        break;
                }
        if (r == 0 && errno != 0)
                r = negative_errno();
        closedir(dir);
        if (r == 0 && fsync(dfd) < 0)
                r = negative_errno();
        return r;
}

int budget_batch_write(BudgetBatch *b) {
        int r;

        if (b->snapshot) {
                /* The snapshot in place (written, fsync()ed, renamed), then the directory: only
                 * then does an older layout's file go, so a crash leaves one or the other. */
                r = store_write_file(b->dfd, b->files[0].name, b->files[0].text, b->files[0].len);
                if (r < 0)
                        return r;
                if (fsync(b->dfd) < 0)
                        return negative_errno();
                return b->legacy ? legacy_remove(b->dfd) : 0;
        }

        /* Emptied budgets first: a budget emptied and taken again since is among the files. */
        for (size_t i = 0; i < b->n_gone; i++) {
                char name[FILE_NAME_LEN + 1];

                file_name(b->gone[i], name);
                if (unlinkat(b->dfd, name, 0) < 0 && errno != ENOENT)
                        return negative_errno();
        }
        /* Each file written and fsync()ed (store_write_file()), then one fsync() of the directory
         * for them all when one holds a new slot: a commit's rename alone may be lost to a power
         * cut, leaving the reservation, which charges the slot already (budget_persist()). */
        for (size_t i = 0; i < b->n; i++) {
                r = store_write_file(b->dfd, b->files[i].name, b->files[i].text, b->files[i].len);
                if (r < 0)
                        return r;
        }
        return b->sync_dir && fsync(b->dfd) < 0 ? negative_errno() : 0;
}

uint64_t budget_batch_generation(const BudgetBatch *b) {
        return b ? b->gen : 0;
}

BudgetBatch *budget_batch_done(BudgetStore *s, BudgetBatch *b, int r) {
        if (!s || !b)
                return batch_free(b);
        if (r >= 0) {
                if (b->gen > s->durable_gen)
                        s->durable_gen = b->gen;
                if (b->snapshot) {
                        s->has_checkpoint = s->snapshot = true;
                        s->checkpoint_seq = b->seq;
                        memcpy(s->checkpoint_head, b->head, sizeof(s->checkpoint_head));
                        if (b->legacy)
                                s->legacy_files = false;
                }
                return batch_free(b);
        }
        /* A snapshot holds every budget: the next one, whatever changes, writes them again. */
        if (b->snapshot) {
                s->unsaved = true;
                return batch_free(b);
        }
        /* Not on disk: the budgets go into the next batch again (memory is the newer state);
         * what waited for this one is the caller's to fail. */
        for (size_t i = 0; i < b->n; i++) {
                Budget *d = budget_table_find(s, b->files[i].digest, NULL);

                if (d && budget_dirty_room(s, d) >= 0)
                        budget_dirty_add(s, d, b->files[i].slot);
        }
        for (size_t i = 0; i < b->n_gone; i++)
                if (!budget_table_find(s, b->gone[i], NULL) && budget_gone_room(s) >= 0)
                        memcpy(s->gone[s->n_gone++], b->gone[i], BUDGET_DIGEST_SIZE);
        /* They wait for the next checkpoint, which a new change or the caller's timer starts: a
         * disk that keeps failing is not written to on every change (the log holds them). */
        return batch_free(b);
}

static int flush(BudgetStore *s, bool force) {
        BudgetBatch *b = NULL;
        int r;

        if (!s)
                return -EINVAL;
        if (s->barrier)
                s->barrier(s->barrier_userdata);
        r = batch_take(s, force, &b);
        if (r < 0 || !b)
                return r;
        r = budget_batch_write(b);
        budget_batch_done(s, b, r);
        return r;
}

int budget_flush(BudgetStore *s) {
        return flush(s, false);
}

int budget_checkpoint(BudgetStore *s) {
        return flush(s, true);
}

int budget_checkpoint_position(const BudgetStore *s, uint64_t *ret_seq) {
        if (!s || !ret_seq)
                return -EINVAL;
        if (!s->has_checkpoint)
                return -ENOENT;
        *ret_seq = s->checkpoint_seq;
        return 0;
}
