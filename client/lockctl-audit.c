/* lockctl audit verify: checks the hash chain of lockd's audit log, offline, from the file. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit-chain.h"
#include "lockctl-console.h"
#include "lockctl-journal.h"
#include "lockctl.h"
#include "macro.h"

/* lockd's default state directory (lockd.yaml(5) state_directory). */
#define LOCKCTL_STATE_DIR_DEFAULT "/var/lib/lockd"

#define AUDIT_USAGE                                                                                \
        "usage: lockctl audit verify [--state-dir DIR | FILE] [--json]\n"                          \
        "       lockctl audit verify --journal PATH... [--state-dir DIR] [--match FIELD=VALUE] "   \
        "[--json]\n"

static int usage_audit(void) {
        fputs(AUDIT_USAGE, stderr);
        return LOCKCTL_EXIT_USAGE;
}

/*
 * audit verify --journal PATH... [--state-dir DIR] [--match FIELD=VALUE] [--json], argv[0]
 * being "verify": every host's chain from a collector's journal files (lockctl-journal.c).
 */
static int audit_verify_journal(int argc, char **argv) {
        _cleanup_free_ char **paths = calloc((size_t)argc + 1, sizeof(char *));
        JournalVerifyOptions o = {.paths = paths, .json = console_json_global()};
        bool journal = false;

        if (!paths)
                return LOCKCTL_EXIT_FAIL;
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--journal") == 0)
                        journal = true;
                else if (strcmp(argv[i], "--json") == 0)
                        o.json = true;
                else if (strcmp(argv[i], "--state-dir") == 0 && i + 1 < argc && !o.state_dir)
                        o.state_dir = argv[++i];
                else if (strcmp(argv[i], "--match") == 0 && i + 1 < argc && !o.match &&
                         strchr(argv[i + 1], '='))
                        o.match = argv[++i];
                else if (argv[i][0] != '-' && journal)
                        paths[o.n_paths++] = argv[i];
                else
                        return usage_audit();
        }
        if (o.n_paths == 0)
                return usage_audit();
        return journal_verify(&o);
}

/*
 * Maps the regular file fd (size bytes from st) and verifies it. An empty file maps nothing.
 * Returns what audit_verify_buffer() returns, or a negative errno from mmap().
 */
static int verify_fd(int fd, const struct stat *st, AuditVerifyResult *res) {
        size_t len = (size_t)st->st_size;
        void *p;
        int r;

        if (len == 0)
                return audit_verify_buffer(NULL, 0, res);
        p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED)
                return negative_errno();
        r = audit_verify_buffer(p, len, res);
        munmap(p, len);
        return r;
}

/*
 * Verifies the file at path into *res: 0, -EBADMSG with res naming the bad line, or another
 * negative errno (printed). A log that grows while it is read is read again, a few times.
 */
static int verify_file(const char *path, AuditVerifyResult *res) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                r = negative_errno();
                fprintf(stderr, "audit: %s: %s\n", path, strerror(-r));
                return r;
        }
        for (unsigned attempt = 0;; attempt++) {
                off_t size;

                if (fstat(fd, &st) < 0) {
                        r = negative_errno();
                        fprintf(stderr, "audit: %s: %s\n", path, strerror(-r));
                        return r;
                }
                if (!S_ISREG(st.st_mode)) {
                        fprintf(stderr, "audit: %s: not a regular file\n", path);
                        return -EBADFD;
                }
                size = st.st_size;
                r = verify_fd(fd, &st, res);
                if (r == -EBADMSG && res->error == AUDIT_VERIFY_TRUNCATED && attempt < 5) {
                        nanosleep(&(struct timespec){.tv_nsec = 100 * 1000 * 1000}, NULL);
                        if (fstat(fd, &st) == 0 && st.st_size > size)
                                continue;
                }
                break;
        }
        if (r < 0 && r != -EBADMSG)
                fprintf(stderr, "audit: %s: %s\n", path, strerror(-r));
        return r;
}

static bool zero_anchor(const char *prev) {
        return strspn(prev, "0") == AUDIT_HASH_HEX;
}

static int verify_path(const char *path) {
        AuditVerifyResult res;
        int r = verify_file(path, &res);

        if (r == -EBADMSG) {
                printf("audit: line %zu: %s: %s\n", res.line,
                       audit_verify_error_to_string(res.error), res.message);
                return LOCKCTL_EXIT_FAIL;
        }
        if (r < 0)
                return LOCKCTL_EXIT_FAIL;
        printf("ok: %zu records, head %s\n", res.n_records, res.head);
        if (res.n_records > 0 && !zero_anchor(res.first_prev))
                printf("continues a rotated log from seq %" PRIu64 ", whose head was %s\n",
                       res.first_seq, res.first_prev);
        return LOCKCTL_EXIT_OK;
}

/* The names of dir's segments, oldest first, then the current file: a NULL-terminated list. */
static int dir_files(const char *dir, char ***ret, size_t *ret_n) {
        _cleanup_free_ char **v = NULL;
        struct dirent **list = NULL;
        size_t n = 0;
        int k;

        k = scandir(dir, &list, NULL, alphasort);
        if (k < 0)
                return negative_errno();
        v = calloc((size_t)k + 2, sizeof(*v));
        for (int i = 0; i < k; i++) {
                if (v && audit_segment_name_valid(list[i]->d_name))
                        v[n++] = strdup(list[i]->d_name);
                free(list[i]);
        }
        free(list);
        if (!v)
                return -ENOMEM;
        v[n++] = strdup(AUDIT_FILE);
        for (size_t i = 0; i < n; i++)
                if (!v[i]) {
                        for (size_t j = 0; j < n; j++)
                                free(v[j]);
                        return -ENOMEM;
                }
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

/*
 * Every segment of the audit directory in order, then the current file: each must verify, and
 * each must continue the one before (its rotation record anchored at that one's head, its seqs
 * following on). The oldest may continue segments that were removed by the retention setting:
 * their removal is in the chain ("segment_removed" records), which is said.
 */
static int verify_dir(const char *dir) {
        AuditVerifyResult res, prev = {};
        char **files = NULL;
        size_t n = 0, records = 0;
        int r, rc = LOCKCTL_EXIT_FAIL;

        r = dir_files(dir, &files, &n);
        if (r < 0) {
                fprintf(stderr, "audit: %s: %s\n", dir, strerror(-r));
                return LOCKCTL_EXIT_FAIL;
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;

                if (asprintf(&path, "%s/%s", dir, files[i]) < 0) {
                        path = NULL;
                        fprintf(stderr, "audit: out of memory\n");
                        goto done;
                }
                r = verify_file(path, &res);
                if (r == -EBADMSG) {
                        printf("audit: %s: line %zu: %s: %s\n", files[i], res.line,
                               audit_verify_error_to_string(res.error), res.message);
                        goto done;
                }
                if (r < 0)
                        goto done;
                if (i > 0 && res.n_records > 0 &&
                    (strcmp(res.first_prev, prev.head) != 0 ||
                     res.first_seq != prev.last_seq + 1)) {
                        printf("audit: %s does not continue %s: its first record is anchored at "
                               "%s (seq %" PRIu64 "), the segment before ends at %s (seq %" PRIu64
                               ")\n",
                               files[i], files[i - 1], res.first_prev, res.first_seq, prev.head,
                               prev.last_seq);
                        goto done;
                }
                if (i == 0 && res.n_records > 0 && !zero_anchor(res.first_prev))
                        printf("the oldest file, %s, continues segments removed by the retention "
                               "setting, from seq %" PRIu64 " (see its segment_removed records)\n",
                               files[i], res.first_seq);
                records += res.n_records;
                if (res.n_records > 0)
                        prev = res;
        }
        printf("ok: %zu records in %zu file(s), head %s\n", records, n, prev.head);
        rc = LOCKCTL_EXIT_OK;
done:
        for (size_t i = 0; i < n; i++)
                free(files[i]);
        free(files);
        return rc;
}

static int audit_verify(int argc, char **argv);

int verb_audit(int argc, char **argv) {
        if (argc < 1 || strcmp(argv[0], "verify") != 0)
                return usage_audit();
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], "--journal") == 0)
                        return audit_verify_journal(argc, argv);
        if (console_take_json(&argc, argv))
                return console_report_json(audit_verify, argc, argv);
        return audit_verify(argc, argv);
}

/* audit verify [--state-dir DIR | FILE], argv[0] being "verify". */
static int audit_verify(int argc, char **argv) {
        _cleanup_free_ char *path = NULL;
        const char *state_dir = NULL, *file = NULL;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--state-dir") == 0 && i + 1 < argc && !state_dir)
                        state_dir = argv[++i];
                else if (strcmp(argv[i], "--help") == 0) {
                        fputs(AUDIT_USAGE, stdout);
                        return LOCKCTL_EXIT_OK;
                } else if (argv[i][0] != '-' && !file)
                        file = argv[i];
                else
                        return usage_audit();
        }
        if (state_dir && file)
                return usage_audit();
        if (file)
                return verify_path(file);
        if (asprintf(&path, "%s/%s", state_dir ? state_dir : LOCKCTL_STATE_DIR_DEFAULT,
                     AUDIT_DIR) < 0) {
                path = NULL;
                fprintf(stderr, "audit: out of memory\n");
                return LOCKCTL_EXIT_FAIL;
        }
        return verify_dir(path);
}
