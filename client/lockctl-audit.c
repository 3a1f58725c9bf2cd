/* lockctl audit verify: checks the hash chain of lockd's audit log, offline, from the file. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "lockctl.h"
#include "macro.h"

/* lockd's default state directory (lockd.yaml(5) state_directory). */
#define LOCKCTL_STATE_DIR_DEFAULT "/var/lib/lockd"

static int usage_audit(void) {
        fprintf(stderr, "usage: lockctl audit verify [--state-dir DIR | FILE]\n");
        return LOCKCTL_EXIT_USAGE;
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
 * Verifies the log at path. lockd may be appending while we read: a record caught half-written
 * reads as a truncated last line, so that verdict is re-checked (a few times, 100 ms apart) for
 * as long as the file keeps growing. A torn tail that stays is reported.
 */
static int verify_path(const char *path) {
        _cleanup_close_ int fd = -1;
        AuditVerifyResult res;
        struct stat st;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                fprintf(stderr, "audit: %s: %m\n", path);
                return LOCKCTL_EXIT_FAIL;
        }
        for (unsigned attempt = 0;; attempt++) {
                off_t size;

                if (fstat(fd, &st) < 0) {
                        fprintf(stderr, "audit: %s: %m\n", path);
                        return LOCKCTL_EXIT_FAIL;
                }
                if (!S_ISREG(st.st_mode)) {
                        fprintf(stderr, "audit: %s: not a regular file\n", path);
                        return LOCKCTL_EXIT_FAIL;
                }
                size = st.st_size;
                r = verify_fd(fd, &st, &res);
                if (r == -EBADMSG && res.error == AUDIT_VERIFY_TRUNCATED && attempt < 5) {
                        nanosleep(&(struct timespec){.tv_nsec = 100 * 1000 * 1000}, NULL);
                        if (fstat(fd, &st) == 0 && st.st_size > size)
                                continue;
                }
                break;
        }
        if (r == -EBADMSG) {
                printf("audit: line %zu: %s: %s\n", res.line,
                       audit_verify_error_to_string(res.error), res.message);
                return LOCKCTL_EXIT_FAIL;
        }
        if (r < 0) {
                fprintf(stderr, "audit: %s: %s\n", path, strerror(-r));
                return LOCKCTL_EXIT_FAIL;
        }
        printf("ok: %zu records, head %s\n", res.n_records, res.head);
        if (res.n_records > 0 && strcmp(res.first_prev, "00000000000000000000000000000000"
                                                        "00000000000000000000000000000000") != 0)
                printf("continues a rotated log from seq %" PRIu64 ", whose head was %s\n",
                       res.first_seq, res.first_prev);
        return LOCKCTL_EXIT_OK;
}

int verb_audit(int argc, char **argv) {
        _cleanup_free_ char *path = NULL;
        const char *state_dir = NULL, *file = NULL;

        if (argc < 1 || strcmp(argv[0], "verify") != 0)
                return usage_audit();
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--state-dir") == 0 && i + 1 < argc && !state_dir)
                        state_dir = argv[++i];
                else if (strcmp(argv[i], "--help") == 0) {
                        printf("usage: lockctl audit verify [--state-dir DIR | FILE]\n");
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
        if (asprintf(&path, "%s/%s/%s", state_dir ? state_dir : LOCKCTL_STATE_DIR_DEFAULT,
                     AUDIT_DIR, AUDIT_FILE) < 0) {
                path = NULL;
                fprintf(stderr, "audit: out of memory\n");
                return LOCKCTL_EXIT_FAIL;
        }
        return verify_path(path);
}
