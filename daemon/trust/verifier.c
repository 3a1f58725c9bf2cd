/* The verification helper, both sides: lockd spawns lockd-verify on sealed memfds and trusts only
 * its fixed-size answer checked against its own digests; the helper drops every privilege, then
 * parses the bundles, certificates and trusted roots that lockd never parses itself. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fd-util.h"
#include "identity.h"
#include "index.h"
#include "codec.h"
#include "macro.h"
#include "sigstore-util.h"
#include "verifier.h"

#ifndef LOCKD_VERIFY_PATH
#define LOCKD_VERIFY_PATH "/usr/local/libexec/lockd/lockd-verify"
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif
#ifndef __NR_pidfd_send_signal
#define __NR_pidfd_send_signal 424
#endif
#ifndef __NR_close_range
#define __NR_close_range 436
#endif

extern char **environ;

static char *helper_path_override;
static uint64_t timeout_usec = VERIFIER_TIMEOUT_USEC;

void verified_release_done(VerifiedRelease *v) {
        if (!v)
                return;
        v->san = mfree(v->san);
        v->source_ref = mfree(v->source_ref);
}

const char *verifier_helper_path(void) {
        if (helper_path_override)
                return helper_path_override;
#if defined(LOCKD_BUILD_LOCKD_PATH) && defined(LOCKD_BUILD_VERIFY_PATH)
        /*
         * The build tree's lockd runs the build tree's helper, so the tests exercise the helper
         * they built; any other binary (the installed lockd) runs the installed one. /proc/self/exe
         * is the kernel's word on which binary this is: no peer and no environment variable decides
         * which program lockd hands the releases to.
         */
        static int is_build_tree = -1;
        if (is_build_tree < 0) {
                char exe[PATH_MAX];
                ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

                is_build_tree = n > 0 && (exe[n] = 0, strcmp(exe, LOCKD_BUILD_LOCKD_PATH) == 0);
        }
        if (is_build_tree)
                return LOCKD_BUILD_VERIFY_PATH;
#endif
        return LOCKD_VERIFY_PATH;
}

int verifier_set_helper_path(const char *path) {
        char *copy = NULL;

        if (path && path[0] != '/')
                return -EINVAL;
        if (path && !(copy = strdup(path)))
                return -ENOMEM;
        free(helper_path_override);
        helper_path_override = copy;
        return 0;
}

void verifier_set_timeout_usec(uint64_t usec) {
        timeout_usec = usec > 0 ? usec : VERIFIER_TIMEOUT_USEC;
}

/* ---------------------------------------------------------------------------------------------
 * lockd's side. */

static uint64_t now_usec(void) {
        return clock_now_usec(CLOCK_MONOTONIC);
}

/* Fills err with RELEASE_E_VERIFIER: the helper, not the release, failed. Returns -EPROTO. */
__attribute__((format(printf, 2, 3))) static int helper_failed(ReleaseError *err, const char *fmt,
                                                               ...) {
        char msg[200];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        release_error_set(err, RELEASE_E_VERIFIER, "the verification helper failed: %s", msg);
        return -EPROTO;
}

typedef struct Helper {
        pid_t pid;
        int pidfd;
        int reply_fd;
        bool reaped;
} Helper;

/* Kills the helper if it still runs and reaps it: no helper outlives the request. */
static void helper_done(Helper *h) {
        if (h->pidfd >= 0 && !h->reaped) {
                siginfo_t si = {};

                (void)syscall(__NR_pidfd_send_signal, h->pidfd, SIGKILL, NULL, 0);
                while (waitid((idtype_t)P_PIDFD, (id_t)h->pidfd, &si, WEXITED) < 0 &&
                       errno == EINTR)
                        ;
                h->reaped = true;
        }
        h->pidfd = safe_close(h->pidfd);
        h->reply_fd = safe_close(h->reply_fd);
}

/*
 * Starts the helper with fds[i] (borrowed; -1 for /dev/null) as its fd i for i >= 3, the write
 * end of a new pipe as fd 1 and /dev/null as 0 and 2, nothing else open, an empty environment,
 * a session of its own, default signal dispositions and an empty mask. posix_spawn(): lockd has
 * worker threads, so no fork that goes on in C; glibc's CLONE_VM|CLONE_VFORK child also costs
 * nothing per MiB of lockd.
 * The helper drops its privileges itself, first thing, before it reads a byte
 * (verifier_helper_main).
 */
static int helper_spawn(const int fds[_VERIFIER_FD_MAX], Helper *h, ReleaseError *err) {
        _cleanup_close_ int devnull = -1;
        int lifted[_VERIFIER_FD_MAX], pipefd[2] = {-1, -1};
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t none, all;
        char *argv[] = {(char *)"lockd-verify", NULL};
        char *envp[] = {NULL};
        const char *path = verifier_helper_path();
        pid_t pid;
        int r;

        *h = (Helper){.pid = -1, .pidfd = -1, .reply_fd = -1};
        for (size_t i = 0; i < ELEMENTSOF(lifted); i++)
                lifted[i] = -1;

        devnull = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (devnull < 0)
                return helper_failed(err, "/dev/null: %s", strerror(errno));
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return helper_failed(err, "pipe: %s", strerror(errno));

        /* Every source is lifted above the fixed numbers first, so no dup2() clobbers another. */
        r = 0;
        for (int i = 0; i < _VERIFIER_FD_MAX && r == 0; i++) {
                int src = i == VERIFIER_FD_REPLY                  ? pipefd[1]
                          : i < VERIFIER_FD_REQUEST || fds[i] < 0 ? devnull
                                                                  : fds[i];

                lifted[i] = fcntl(src, F_DUPFD_CLOEXEC, _VERIFIER_FD_MAX);
                if (lifted[i] < 0)
                        r = negative_errno();
        }
        pipefd[1] = safe_close(pipefd[1]);
        if (r < 0) {
                for (size_t i = 0; i < ELEMENTSOF(lifted); i++)
                        safe_close(lifted[i]);
                safe_close(pipefd[0]);
                return helper_failed(err, "fds: %s", strerror(-r));
        }

        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
        for (int i = 0; i < _VERIFIER_FD_MAX; i++)
                posix_spawn_file_actions_adddup2(&fa, lifted[i], i);
        posix_spawn_file_actions_addclosefrom_np(&fa, _VERIFIER_FD_MAX);
        sigemptyset(&none);
        sigfillset(&all);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &all);
        /* A session of its own, as the engine's (ARCHITECTURE.md, two processes): no terminal. */
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                                POSIX_SPAWN_SETSID);
        r = posix_spawn(&pid, path, &fa, &attr, argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        for (size_t i = 0; i < ELEMENTSOF(lifted); i++)
                safe_close(lifted[i]);
        if (r != 0) {
                safe_close(pipefd[0]);
                if (r == ENOMEM) {
                        release_error_set(err, RELEASE_E_NOMEM, "out of memory");
                        return -ENOMEM;
                }
                return helper_failed(err, "%s: %s", path, strerror(r));
        }

        /*
         * Nobody else reaps lockd's children (every child is waited for by its pidfd, never with
         * P_ALL or SIGCHLD ignored), so the pid still names our child here.
         */
        h->pid = pid;
        h->reply_fd = pipefd[0];
        h->pidfd = (int)syscall(__NR_pidfd_open, pid, 0);
        if (h->pidfd < 0) {
                r = errno;
                (void)kill(pid, SIGKILL);
                (void)waitpid(pid, NULL, 0);
                h->reaped = true;
                return helper_failed(err, "pidfd_open: %s", strerror(r));
        }
        return 0;
}

/*
 * Reads the helper's one reply and waits for its exit, both before the deadline. Exactly
 * sizeof(VerifierReply) bytes then EOF, and exit status 0: anything else (fewer or more bytes, a
 * crash, a non-zero exit, the deadline) fails closed. 0 or -EPROTO with err filled.
 */
static int helper_collect(Helper *h, VerifierReply *ret, ReleaseError *err) {
        uint8_t buf[sizeof(VerifierReply) + 1];
        uint64_t deadline = now_usec() + timeout_usec;
        bool eof = false, exited = false;
        siginfo_t si = {};
        size_t got = 0;

        if (fcntl(h->reply_fd, F_SETFL, O_NONBLOCK) < 0)
                return helper_failed(err, "pipe: %s", strerror(errno));
        while (!eof || !exited) {
                struct pollfd p[2] = {
                        {.fd = eof ? -1 : h->reply_fd, .events = POLLIN},
                        {.fd = exited ? -1 : h->pidfd, .events = POLLIN},
                };
                uint64_t now = now_usec();

                if (now >= deadline)
                        return helper_failed(err, "no answer within %llu s",
                                             (unsigned long long)(timeout_usec / 1000000));
                if (poll(p, 2, (int)((deadline - now + 999) / 1000)) < 0) {
                        if (errno == EINTR)
                                continue;
                        return helper_failed(err, "poll: %s", strerror(errno));
                }
                if (!eof && p[0].revents) {
                        ssize_t n = read(h->reply_fd, buf + got, sizeof(buf) - got);

                        if (n < 0 && errno != EAGAIN && errno != EINTR)
                                return helper_failed(err, "read: %s", strerror(errno));
                        if (n == 0)
                                eof = true;
                        if (n > 0) {
                                got += (size_t)n;
                                if (got == sizeof(buf))
                                        return helper_failed(err, "it answered more than a reply");
                        }
                }
                if (!exited && p[1].revents) {
                        si = (siginfo_t){};
                        if (waitid((idtype_t)P_PIDFD, (id_t)h->pidfd, &si, WEXITED | WNOHANG) < 0) {
                                if (errno == EINTR)
                                        continue;
                                return helper_failed(err, "waitid: %s", strerror(errno));
                        }
                        if (si.si_pid != 0) {
                                exited = true;
                                h->reaped = true;
                        }
                }
        }
        if (si.si_code != CLD_EXITED)
                return helper_failed(err, "killed by signal %d", si.si_status);
        if (si.si_status != 0)
                return helper_failed(err, "exit status %d", si.si_status);
        if (got != sizeof(VerifierReply))
                return helper_failed(err, "it answered %zu bytes, not %zu", got,
                                     sizeof(VerifierReply));
        memcpy(ret, buf, sizeof(*ret));
        return 0;
}

/* Whether the string field s (size bytes) is NUL-terminated, zero after the NUL, and made of
 * bytes in [lo, 0x7e]. */
static bool field_valid(const char *s, size_t size, char lo) {
        const char *end = memchr(s, 0, size);

        if (!end)
                return false;
        for (const char *p = s; p < end; p++)
                if (*p < lo || *p > 0x7e)
                        return false;
        for (const char *p = end; p < s + size; p++)
                if (*p != 0)
                        return false;
        return true;
}

/*
 * Checks the shape of a reply: magic, version, kind, a known code that agrees with the errno,
 * every string terminated, printable and zero-padded. A refusal from a well-formed reply is
 * passed on as the release's (the negative errno, err filled); a helper that reports its own
 * failure, or a malformed reply, is -EPROTO. 0 for a success.
 */
static int reply_check(const VerifierReply *r, VerifierKind kind, ReleaseError *err) {
        if (r->magic != VERIFIER_MAGIC || r->version != VERIFIER_VERSION || r->reserved != 0)
                return helper_failed(err, "malformed answer (header)");
        /* A helper that could not sandbox itself or read the request says so, and nothing else. */
        if (r->code == RELEASE_E_VERIFIER && field_valid(r->message, sizeof(r->message), 0x20))
                return helper_failed(err, "%.160s", r->message);
        if (r->kind != kind)
                return helper_failed(err, "malformed answer (kind)");
        if (r->code >= _RELEASE_E_MAX || (r->code == RELEASE_OK) != (r->error == 0) ||
            r->error > 0 || r->error < -4095)
                return helper_failed(err, "malformed answer (code %u, errno %d)", r->code,
                                     r->error);
        if (!field_valid(r->message, sizeof(r->message), 0x20) ||
            !field_valid(r->san, sizeof(r->san), 0x21) ||
            !field_valid(r->source_ref, sizeof(r->source_ref), 0x21))
                return helper_failed(err, "malformed answer (strings)");
        if (r->code == RELEASE_E_VERIFIER)
                return helper_failed(err, "malformed answer (code)");
        if (r->code != RELEASE_OK) {
                release_error_set(err, (ReleaseErrorCode)r->code, "%s", r->message);
                return r->error;
        }
        return 0;
}

/* Runs one request with the helper fds (index >= VERIFIER_FD_ROOT; -1 for none): reopened
 * read-only, so the helper can neither write them nor move lockd's offsets. */
static int helper_run(const VerifierRequest *req, const int fds[_VERIFIER_FD_MAX],
                      VerifierReply *ret, ReleaseError *err) {
        _cleanup_(helper_done) Helper h = {.pid = -1, .pidfd = -1, .reply_fd = -1};
        int child_fds[_VERIFIER_FD_MAX];
        int r;

        for (int i = 0; i < _VERIFIER_FD_MAX; i++)
                child_fds[i] = -1;
        r = memfd_from_buffer(req, sizeof(*req), "lockd-verify-request");
        if (r < 0) {
                if (r == -ENOMEM)
                        release_error_set(err, RELEASE_E_NOMEM, "out of memory");
                return r == -ENOMEM ? r : helper_failed(err, "request: %s", strerror(-r));
        }
        child_fds[VERIFIER_FD_REQUEST] = r;
        for (int i = VERIFIER_FD_ROOT; i < _VERIFIER_FD_MAX && r >= 0; i++)
                if (fds[i] >= 0) {
                        r = fd_reopen_readonly(fds[i]);
                        child_fds[i] = r;
                }
        if (r >= 0)
                r = helper_spawn(child_fds, &h, err);
        for (int i = 0; i < _VERIFIER_FD_MAX; i++)
                safe_close(child_fds[i]);
        if (r == -EPROTO || r == -ENOMEM)
                return r;
        if (r < 0)
                return helper_failed(err, "reopening a file: %s", strerror(-r));
        return helper_collect(&h, ret, err);
}

static void request_init(VerifierRequest *req, VerifierKind kind) {
        *req = (VerifierRequest){
                .magic = VERIFIER_MAGIC,
                .version = VERIFIER_VERSION,
                .kind = kind,
        };
}

int verifier_check_root(int root_fd, const uint8_t root_sha256[32], ReleaseError *err) {
        _cleanup_free_ VerifierReply *reply = NULL;
        VerifierRequest req;
        int fds[_VERIFIER_FD_MAX];
        int r;

        if (root_fd < 0 || !root_sha256) {
                release_error_set(err, RELEASE_E_IO, "invalid arguments");
                return -EINVAL;
        }
        reply = calloc(1, sizeof(*reply));
        if (!reply)
                return -ENOMEM;
        request_init(&req, VERIFIER_KIND_ROOT);
        for (int i = 0; i < _VERIFIER_FD_MAX; i++)
                fds[i] = -1;
        fds[VERIFIER_FD_ROOT] = root_fd;
        r = helper_run(&req, fds, reply, err);
        if (r < 0)
                return r;
        r = reply_check(reply, VERIFIER_KIND_ROOT, err);
        if (r == -EPROTO || r == -ENOMEM)
                return r;
        if (r < 0)
                return -EINVAL;
        if (memcmp(reply->root_sha256, root_sha256, 32) != 0)
                return helper_failed(err, "it checked other bytes than the trusted root's");
        if (err)
                *err = (ReleaseError){};
        return 0;
}

/* Copies s into the fixed field dst (size bytes, zero-padded); -EINVAL when it does not fit. */
static int field_set(char *dst, size_t size, const char *s) {
        size_t n = s ? strlen(s) : 0;

        if (n >= size)
                return -EINVAL;
        memset(dst, 0, size);
        if (n > 0)
                memcpy(dst, s, n);
        return 0;
}

int verifier_verify_release(const MarketplaceEntry *m, const ReleaseFds *sealed,
                            const int index_fds[2], const uint8_t manifest_sha256[32],
                            const uint8_t binary_sha256[32], VerifiedRelease *ret,
                            ReleaseError *err) {
        _cleanup_free_ VerifierReply *reply = NULL;
        _cleanup_free_ char *san = NULL, *ref = NULL;
        uint8_t index_sha256[32];
        VerifierRequest req;
        int fds[_VERIFIER_FD_MAX];
        int r;

        if (!m || !sealed || !manifest_sha256 || !binary_sha256 || !ret || m->trusted_root_fd < 0 ||
            (index_fds && (index_fds[0] < 0 || index_fds[1] < 0))) {
                release_error_set(err, RELEASE_E_IO, "invalid arguments");
                return -EINVAL;
        }
        request_init(&req, VERIFIER_KIND_RELEASE);
        if (field_set(req.name, sizeof(req.name), m->marketplace.name) < 0 ||
            field_set(req.issuer, sizeof(req.issuer), m->marketplace.issuer) < 0 ||
            field_set(req.identity, sizeof(req.identity), m->marketplace.identity_pattern) < 0) {
                release_error_set(err, RELEASE_E_IO, "marketplace fields over their caps");
                return -EINVAL;
        }
        if (index_fds) {
                req.flags |= VERIFIER_FLAG_INDEX;
                r = sha256_fd(index_fds[0], index_sha256);
                if (r < 0)
                        return helper_failed(err, "digest of the index: %s", strerror(-r));
        }

        reply = calloc(1, sizeof(*reply));
        if (!reply)
                return -ENOMEM;
        for (int i = 0; i < _VERIFIER_FD_MAX; i++)
                fds[i] = -1;
        fds[VERIFIER_FD_ROOT] = m->trusted_root_fd;
        fds[VERIFIER_FD_MANIFEST] = sealed->manifest;
        fds[VERIFIER_FD_BINARY] = sealed->binary;
        fds[VERIFIER_FD_MANIFEST_BUNDLE] = sealed->manifest_bundle;
        fds[VERIFIER_FD_BINARY_BUNDLE] = sealed->binary_bundle;
        if (index_fds) {
                fds[VERIFIER_FD_INDEX] = index_fds[0];
                fds[VERIFIER_FD_INDEX_BUNDLE] = index_fds[1];
        }
        r = helper_run(&req, fds, reply, err);
        if (r < 0)
                return r;
        r = reply_check(reply, VERIFIER_KIND_RELEASE, err);
        if (r < 0)
                return r;

        /*
         * A success is believed only for the bytes lockd holds: the helper must have verified
         * exactly these memfds under exactly this root, and the signer it reports must be one the
         * marketplace's pattern admits (identity_match(), lockd's own definition).
         */
        if (memcmp(reply->root_sha256, m->trusted_root_digest, 32) != 0 ||
            memcmp(reply->manifest_sha256, manifest_sha256, 32) != 0 ||
            memcmp(reply->binary_sha256, binary_sha256, 32) != 0 ||
            (index_fds && memcmp(reply->index_sha256, index_sha256, 32) != 0))
                return helper_failed(err, "it verified other bytes than lockd holds");
        if (!reply->san[0] || !reply->source_ref[0] ||
            !identity_match(m->marketplace.identity_pattern, reply->san))
                return helper_failed(err, "it reported a signer the marketplace does not admit");
        san = strdup(reply->san);
        ref = strdup(reply->source_ref);
        if (!san || !ref) {
                release_error_set(err, RELEASE_E_NOMEM, "out of memory");
                return -ENOMEM;
        }
        ret->san = TAKE_PTR(san);
        ret->source_ref = TAKE_PTR(ref);
        if (err)
                *err = (ReleaseError){};
        return 0;
}

int verifier_verify_index(const MarketplaceEntry *m, const int index_fds[2], VerifiedIndex *ret,
                          ReleaseError *err) {
        _cleanup_free_ VerifierReply *reply = NULL;
        uint8_t index_sha256[32];
        VerifierRequest req;
        int fds[_VERIFIER_FD_MAX];
        int r;

        if (!m || !index_fds || index_fds[0] < 0 || index_fds[1] < 0 || !ret ||
            m->trusted_root_fd < 0) {
                release_error_set(err, RELEASE_E_IO, "invalid arguments");
                return -EINVAL;
        }
        request_init(&req, VERIFIER_KIND_INDEX);
        req.flags |= VERIFIER_FLAG_INDEX;
        if (field_set(req.name, sizeof(req.name), m->marketplace.name) < 0 ||
            field_set(req.issuer, sizeof(req.issuer), m->marketplace.issuer) < 0 ||
            field_set(req.identity, sizeof(req.identity), m->marketplace.identity_pattern) < 0) {
                release_error_set(err, RELEASE_E_IO, "marketplace fields over their caps");
                return -EINVAL;
        }
        r = sha256_fd(index_fds[0], index_sha256);
        if (r < 0)
                return helper_failed(err, "digest of the index: %s", strerror(-r));

        reply = calloc(1, sizeof(*reply));
        if (!reply)
                return -ENOMEM;
        for (int i = 0; i < _VERIFIER_FD_MAX; i++)
                fds[i] = -1;
        fds[VERIFIER_FD_ROOT] = m->trusted_root_fd;
        fds[VERIFIER_FD_INDEX] = index_fds[0];
        fds[VERIFIER_FD_INDEX_BUNDLE] = index_fds[1];
        r = helper_run(&req, fds, reply, err);
        if (r < 0)
                return r;
        r = reply_check(reply, VERIFIER_KIND_INDEX, err);
        if (r < 0)
                return r;
        /* Believed only for the bytes lockd holds, under the root lockd holds, and with values
         * the parser could have accepted. */
        if (memcmp(reply->root_sha256, m->trusted_root_digest, 32) != 0 ||
            memcmp(reply->index_sha256, index_sha256, 32) != 0)
                return helper_failed(err, "it verified other bytes than lockd holds");
        if (reply->index_version < 1 || reply->index_version > INDEX_VERSION_MAX ||
            reply->index_expires < 0)
                return helper_failed(err, "malformed answer (index version or expiry)");
        memcpy(ret->sha256, index_sha256, 32);
        ret->version = reply->index_version;
        ret->expires = reply->index_expires;
        if (err)
                *err = (ReleaseError){};
        return 0;
}

int verifier_probe(char *message, size_t size, ReleaseError *err) {
        _cleanup_free_ VerifierReply *reply = NULL;
        VerifierRequest req;
        int fds[_VERIFIER_FD_MAX];
        int r;

        if (!message || size == 0)
                return -EINVAL;
        reply = calloc(1, sizeof(*reply));
        if (!reply)
                return -ENOMEM;
        request_init(&req, VERIFIER_KIND_PROBE);
        for (int i = 0; i < _VERIFIER_FD_MAX; i++)
                fds[i] = -1;
        r = helper_run(&req, fds, reply, err);
        if (r < 0)
                return r;
        r = reply_check(reply, VERIFIER_KIND_PROBE, err);
        if (r < 0)
                return r;
        snprintf(message, size, "%s", reply->message);
        return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The helper's side. Everything below runs in lockd-verify, never in lockd. */

static void reply_set(VerifierReply *reply, ReleaseErrorCode code, int error, const char *msg) {
        reply->code = code;
        reply->error = code == RELEASE_OK ? 0 : (error < 0 ? error : -EINVAL);
        memset(reply->message, 0, sizeof(reply->message));
        /* Printable ASCII only, as lockd requires: anything else becomes '?'. */
        for (size_t i = 0; msg && msg[i] && i + 1 < sizeof(reply->message); i++)
                reply->message[i] = msg[i] >= 0x20 && msg[i] <= 0x7e ? msg[i] : '?';
}

/* Where dropping privileges failed, for the reply. */
static int fail_stage(const char **stage, const char *what) {
        int r = negative_errno();

        *stage = what;
        return r;
}

/* Drops to nobody with no capability in any set; then no_new_privs, non-dumpable, dies with its
 * parent, tight rlimits, and no fd but the fixed ones. */
static int helper_drop_privileges(const char **stage) {
        struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct data[2] = {};
        uid_t ru, eu, su;
        gid_t rg, eg, sg;

        if (geteuid() == 0 || getuid() == 0) {
                /* The bounding set first, while CAP_SETPCAP is still held. */
                for (int c = 0; c <= 63; c++)
                        if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
                                return fail_stage(stage, "bounding set");
                if (setgroups(0, NULL) < 0)
                        return fail_stage(stage, "setgroups");
                if (setresgid(VERIFIER_GID, VERIFIER_GID, VERIFIER_GID) < 0)
                        return fail_stage(stage, "setresgid");
                if (setresuid(VERIFIER_UID, VERIFIER_UID, VERIFIER_UID) < 0)
                        return fail_stage(stage, "setresuid");
        }
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return fail_stage(stage, "ambient capabilities");
        if (syscall(SYS_capset, &hdr, data) < 0)
                return fail_stage(stage, "capset");
        if (syscall(SYS_capget, &hdr, data) < 0)
                return fail_stage(stage, "capget");
        for (int i = 0; i < 2; i++)
                if (data[i].effective || data[i].permitted || data[i].inheritable) {
                        errno = EPERM;
                        return fail_stage(stage, "capabilities left");
                }
        if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0)
                return fail_stage(stage, "credentials");
        if (ru == 0 || eu == 0 || su == 0 || rg == 0 || eg == 0 || sg == 0) {
                errno = EPERM;
                return fail_stage(stage, "still root");
        }

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return fail_stage(stage, "no_new_privs");
        /* Other processes of nobody must not ptrace it or read its memory. */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return fail_stage(stage, "dumpable");
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
                return fail_stage(stage, "pdeathsig");

        static const struct {
                int resource;
                rlim_t value;
        } limits[] = {
                {RLIMIT_CPU, VERIFIER_CPU_S},
                {RLIMIT_FSIZE, 0},
                {RLIMIT_NOFILE, VERIFIER_NOFILE},
                {RLIMIT_NPROC, 0},
                {RLIMIT_CORE, 0},
                {RLIMIT_MEMLOCK, 0},
                {RLIMIT_MSGQUEUE, 0},
#ifndef __SANITIZE_ADDRESS__
                /* AddressSanitizer reserves terabytes of shadow address space. */
                {RLIMIT_AS, VERIFIER_AS_BYTES},
#endif
        };
        for (size_t i = 0; i < ELEMENTSOF(limits); i++) {
                struct rlimit rl = {limits[i].value, limits[i].value};

                if (setrlimit(limits[i].resource, &rl) < 0)
                        return fail_stage(stage, "rlimit");
        }
        if (syscall(__NR_close_range, _VERIFIER_FD_MAX, ~0U, 0) < 0)
                return fail_stage(stage, "close_range");
        return 0;
}

/* The seccomp allow-list of the helper once it verifies: reading its fds, memory, time, exit.
 * Everything else fails with EPERM; a foreign ABI is killed. */
#define BPF_NR           BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define BPF_ARG_LO(i)    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]))
#define BPF_ARG_HI(i)    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]) + 4)
#define BPF_ALLOW        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define BPF_DENY         BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))
#define BPF_KILL         BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)
#define SC_JEQ(k, t, f)  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define BPF_ALLOW_NR(nr) SC_JEQ((nr), 0, 1), BPF_ALLOW

static int helper_seccomp(void) {
        struct sock_filter f[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                SC_JEQ(AUDIT_ARCH_X86_64, 1, 0),
                BPF_KILL,
                BPF_NR,
                BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1), /* x32 */
                BPF_KILL,
                BPF_ALLOW_NR(__NR_read),
                BPF_ALLOW_NR(__NR_pread64),
                BPF_ALLOW_NR(__NR_write),
                BPF_ALLOW_NR(__NR_close),
                BPF_ALLOW_NR(__NR_fstat),
                BPF_ALLOW_NR(__NR_newfstatat),
                BPF_ALLOW_NR(__NR_lseek),
                BPF_ALLOW_NR(__NR_fcntl),
                BPF_ALLOW_NR(__NR_munmap),
                BPF_ALLOW_NR(__NR_mremap),
                BPF_ALLOW_NR(__NR_madvise),
                BPF_ALLOW_NR(__NR_brk),
                BPF_ALLOW_NR(__NR_futex),
                BPF_ALLOW_NR(__NR_getrandom),
                BPF_ALLOW_NR(__NR_clock_gettime),
                BPF_ALLOW_NR(__NR_gettimeofday),
                BPF_ALLOW_NR(__NR_time),
                BPF_ALLOW_NR(__NR_getpid),
                BPF_ALLOW_NR(__NR_gettid),
                BPF_ALLOW_NR(__NR_getuid),
                BPF_ALLOW_NR(__NR_geteuid),
                BPF_ALLOW_NR(__NR_getgid),
                BPF_ALLOW_NR(__NR_getegid),
                BPF_ALLOW_NR(__NR_getresuid),
                BPF_ALLOW_NR(__NR_getresgid),
                BPF_ALLOW_NR(__NR_getgroups),
                BPF_ALLOW_NR(__NR_capget),
                BPF_ALLOW_NR(__NR_rt_sigreturn),
                BPF_ALLOW_NR(__NR_rt_sigprocmask),
                BPF_ALLOW_NR(__NR_exit),
                BPF_ALLOW_NR(__NR_exit_group),
                /* mmap and mprotect, never to make memory executable. */
                SC_JEQ(__NR_mmap, 0, 4),
                BPF_ARG_LO(2),
                BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 1),
                BPF_DENY,
                BPF_ALLOW,
                SC_JEQ(__NR_mprotect, 0, 4),
                BPF_ARG_LO(2),
                BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 1),
                BPF_DENY,
                BPF_ALLOW,
                /* prlimit64 on itself only (glibc's getrlimit()). */
                SC_JEQ(__NR_prlimit64, 0, 6),
                BPF_ARG_LO(0),
                SC_JEQ(0, 0, 3),
                BPF_ARG_HI(0),
                SC_JEQ(0, 0, 1),
                BPF_ALLOW,
                BPF_DENY,
                /* prctl only to read its own state (the probe). */
                SC_JEQ(__NR_prctl, 0, 10),
                BPF_ARG_LO(0),
                SC_JEQ(PR_CAPBSET_READ, 0, 1),
                BPF_ALLOW,
                SC_JEQ(PR_GET_NO_NEW_PRIVS, 0, 1),
                BPF_ALLOW,
                SC_JEQ(PR_GET_SECCOMP, 0, 1),
                BPF_ALLOW,
                SC_JEQ(PR_GET_DUMPABLE, 0, 1),
                BPF_ALLOW,
                BPF_DENY,
                BPF_DENY,
        };
        struct sock_fprog prog = {.len = (unsigned short)ELEMENTSOF(f), .filter = f};

        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
                return negative_errno();
        return 0;
}

/* Reads the request at fd 3: exactly one VerifierRequest, strings terminated. */
static int read_request(VerifierRequest *req) {
        struct stat st;

        if (fstat(VERIFIER_FD_REQUEST, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode) || st.st_size != (off_t)sizeof(*req))
                return -EBADMSG;
        if (pread(VERIFIER_FD_REQUEST, req, sizeof(*req), 0) != (ssize_t)sizeof(*req))
                return -EBADMSG;
        if (req->magic != VERIFIER_MAGIC || req->version != VERIFIER_VERSION || req->kind == 0 ||
            req->kind >= _VERIFIER_KIND_MAX || (req->flags & ~VERIFIER_FLAG_INDEX) != 0 ||
            !memchr(req->name, 0, sizeof(req->name)) ||
            !memchr(req->issuer, 0, sizeof(req->issuer)) ||
            !memchr(req->identity, 0, sizeof(req->identity)))
                return -EBADMSG;
        return 0;
}

/* Reads and parses the trusted root at fd 4, with its digest. */
static int load_root(SigstoreTrustRoot **ret, uint8_t ret_sha256[32], VerifierReply *reply) {
        _cleanup_free_ char *json = NULL;
        size_t len;
        int r;

        r = release_read_fd(VERIFIER_FD_ROOT, MARKETPLACE_ROOT_MAX, &json, &len);
        if (r < 0) {
                reply_set(reply, r == -ENOMEM ? RELEASE_E_NOMEM : RELEASE_E_BUNDLE, r,
                          r == -EFBIG ? "the trusted root is over 1 MiB"
                                      : "the trusted root is not a readable regular file");
                return r;
        }
        sha256(json, len, ret_sha256);
        r = sigstore_trust_root_load(json, len, ret);
        if (r < 0) {
                reply_set(reply, r == -ENOMEM ? RELEASE_E_NOMEM : RELEASE_E_BUNDLE, r,
                          "the trusted root does not parse as a Sigstore trusted root");
                return r;
        }
        return 0;
}

/* The index at fds 9 and 10 verified under m and listing rel with its digests, as lockd did in
 * process before; its digest for the reply. */
static int check_index(const Marketplace *m, const Release *rel, uint8_t ret_sha256[32],
                       ReleaseError *err) {
        _cleanup_(index_freep) MarketplaceIndex *idx = NULL;
        _cleanup_free_ char *json = NULL, *bundle = NULL;
        size_t len, bundle_len;
        int r;

        r = release_read_fd(VERIFIER_FD_INDEX, INDEX_BYTES_MAX, &json, &len);
        if (r < 0) {
                release_error_set(err, r == -ENOMEM ? RELEASE_E_NOMEM : RELEASE_E_INDEX, "%s: %s",
                                  INDEX_FILE,
                                  r == -EFBIG ? "too large" : "not a readable regular file");
                return r;
        }
        r = release_read_fd(VERIFIER_FD_INDEX_BUNDLE, RELEASE_BUNDLE_MAX, &bundle, &bundle_len);
        if (r < 0) {
                release_error_set(err, r == -ENOMEM ? RELEASE_E_NOMEM : RELEASE_E_INDEX, "%s: %s",
                                  INDEX_BUNDLE_FILE,
                                  r == -EFBIG ? "too large" : "not a readable regular file");
                return r;
        }
        sha256(json, len, ret_sha256);
        r = index_verify(m, json, len, bundle, bundle_len, &idx, err);
        if (r < 0)
                return r;
        return index_check_release(idx, rel, err);
}

/* The index at fds 9 and 10 verified alone under the request's marketplace: its digest, version
 * and expiry for the reply. */
static void handle_index(const VerifierRequest *req, VerifierReply *reply) {
        _cleanup_(index_freep) MarketplaceIndex *idx = NULL;
        _cleanup_free_ char *json = NULL, *bundle = NULL;
        Marketplace m = {
                .name = (char *)req->name,
                .issuer = (char *)req->issuer,
                .identity_pattern = (char *)req->identity,
        };
        ReleaseError err = {};
        size_t len, bundle_len;
        int r;

        r = load_root(&m.root, reply->root_sha256, reply);
        if (r < 0)
                return;
        r = release_read_fd(VERIFIER_FD_INDEX, INDEX_BYTES_MAX, &json, &len);
        if (r < 0)
                release_error_set(&err,
                                  r == -ENOMEM  ? RELEASE_E_NOMEM
                                  : r == -EFBIG ? RELEASE_E_TOO_LARGE
                                                : RELEASE_E_INDEX,
                                  "%s: %s", INDEX_FILE,
                                  r == -EFBIG ? "over 1 MiB" : "not a readable regular file");
        if (r >= 0) {
                r = release_read_fd(VERIFIER_FD_INDEX_BUNDLE, RELEASE_BUNDLE_MAX, &bundle,
                                    &bundle_len);
                if (r < 0)
                        release_error_set(&err, r == -ENOMEM ? RELEASE_E_NOMEM : RELEASE_E_INDEX,
                                          "%s: %s", INDEX_BUNDLE_FILE,
                                          r == -EFBIG ? "over 1 MiB"
                                                      : "not a readable regular file");
        }
        if (r >= 0) {
                sha256(json, len, reply->index_sha256);
                r = index_verify(&m, json, len, bundle, bundle_len, &idx, &err);
        }
        sigstore_trust_root_free(m.root);
        if (r < 0) {
                reply_set(reply, err.code == RELEASE_OK ? RELEASE_E_INDEX : err.code, r,
                          err.message);
                return;
        }
        reply->index_version = idx->version;
        reply->index_expires = idx->expires;
        reply_set(reply, RELEASE_OK, 0, "");
}

static void handle_release(const VerifierRequest *req, VerifierReply *reply) {
        _cleanup_(release_freep) Release *rel = NULL;
        Marketplace m = {
                .name = (char *)req->name,
                .issuer = (char *)req->issuer,
                .identity_pattern = (char *)req->identity,
        };
        ReleaseError err = {};
        int r;

        r = load_root(&m.root, reply->root_sha256, reply);
        if (r < 0)
                return;
        r = release_verify_fds(&m,
                               &(const ReleaseFds){.manifest = VERIFIER_FD_MANIFEST,
                                                   .binary = VERIFIER_FD_BINARY,
                                                   .manifest_bundle = VERIFIER_FD_MANIFEST_BUNDLE,
                                                   .binary_bundle = VERIFIER_FD_BINARY_BUNDLE},
                               &rel, &err);
        if (r >= 0 && (req->flags & VERIFIER_FLAG_INDEX))
                r = check_index(&m, rel, reply->index_sha256, &err);
        if (r >= 0 && (!rel->san || strlen(rel->san) > VERIFIER_SAN_MAX)) {
                release_error_set(&err, RELEASE_E_IDENTITY,
                                  "the certificate's SAN is over %d bytes", VERIFIER_SAN_MAX);
                r = -EKEYREJECTED;
        }
        if (r >= 0 && (!rel->source_ref || strlen(rel->source_ref) > VERIFIER_REF_MAX)) {
                release_error_set(&err, RELEASE_E_TAG, "the certificate's ref is over %d bytes",
                                  VERIFIER_REF_MAX);
                r = -EKEYREJECTED;
        }
        sigstore_trust_root_free(m.root);
        if (r < 0) {
                reply_set(reply, err.code == RELEASE_OK ? RELEASE_E_BUNDLE : err.code, r,
                          err.message);
                return;
        }
        memcpy(reply->manifest_sha256, rel->manifest_sha256, 32);
        memcpy(reply->binary_sha256, rel->binary_sha256, 32);
        /* SAN and ref as lockd requires them: printable, no space; otherwise a refusal. */
        if (field_set(reply->san, sizeof(reply->san), rel->san) < 0 ||
            field_set(reply->source_ref, sizeof(reply->source_ref), rel->source_ref) < 0 ||
            !field_valid(reply->san, sizeof(reply->san), 0x21) ||
            !field_valid(reply->source_ref, sizeof(reply->source_ref), 0x21)) {
                memset(reply->san, 0, sizeof(reply->san));
                memset(reply->source_ref, 0, sizeof(reply->source_ref));
                reply_set(reply, RELEASE_E_IDENTITY, -EKEYREJECTED,
                          "the certificate's SAN or ref is not printable ASCII");
                return;
        }
        reply_set(reply, RELEASE_OK, 0, "");
}

static const char *errno_name(int e) {
        const char *n = e > 0 ? strerrorname_np(e) : NULL;

        return n ? n : e == 0 ? "0" : "?";
}

/* What the probe reports: the credentials, capabilities, flags and limits the helper verifies
 * under, and what a few calls it must not make return. */
static void handle_probe(VerifierReply *reply) {
        struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct data[2] = {};
        struct rlimit cpu = {}, fsize = {}, nofile = {}, nproc = {};
        uid_t ru = 0, eu = 0, su = 0;
        gid_t rg = 0, eg = 0, sg = 0;
        int bset = 0, e_open, e_socket, e_mmap, e_kill, fd;
        char msg[256];
        void *p;

        (void)getresuid(&ru, &eu, &su);
        (void)getresgid(&rg, &eg, &sg);
        (void)syscall(SYS_capget, &hdr, data);
        for (int c = 0; c <= 63; c++)
                if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1)
                        bset++;
        (void)getrlimit(RLIMIT_CPU, &cpu);
        (void)getrlimit(RLIMIT_FSIZE, &fsize);
        (void)getrlimit(RLIMIT_NOFILE, &nofile);
        (void)getrlimit(RLIMIT_NPROC, &nproc);
        fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
        e_open = fd < 0 ? errno : 0;
        safe_close(fd);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        e_socket = fd < 0 ? errno : 0;
        safe_close(fd);
        p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        e_mmap = p == MAP_FAILED ? errno : 0;
        if (p != MAP_FAILED)
                munmap(p, 4096);
        e_kill = kill(1, 0) < 0 ? errno : 0;

        snprintf(msg, sizeof(msg),
                 "uid=%u,%u,%u gid=%u,%u,%u groups=%d cap=%x,%x,%x bset=%d nnp=%d seccomp=%d "
                 "dumpable=%d cpu=%llu fsize=%llu nofile=%llu nproc=%llu open=%s socket=%s "
                 "mmap_exec=%s kill=%s",
                 ru, eu, su, rg, eg, sg, getgroups(0, NULL), data[0].effective | data[1].effective,
                 data[0].permitted | data[1].permitted, data[0].inheritable | data[1].inheritable,
                 bset, prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), prctl(PR_GET_SECCOMP, 0, 0, 0, 0),
                 prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), (unsigned long long)cpu.rlim_max,
                 (unsigned long long)fsize.rlim_max, (unsigned long long)nofile.rlim_max,
                 (unsigned long long)nproc.rlim_max, errno_name(e_open), errno_name(e_socket),
                 errno_name(e_mmap), errno_name(e_kill));
        reply_set(reply, RELEASE_OK, 0, msg);
}

int verifier_helper_main(void) {
        VerifierRequest req = {};
        VerifierReply reply = {.magic = VERIFIER_MAGIC, .version = VERIFIER_VERSION};
        const char *stage = "";
        char msg[200];
        int r;

        /* Nothing is read before every privilege is gone. */
        r = helper_drop_privileges(&stage);
        if (r >= 0) {
                /*
                 * What would open files later is done now, while files can still be opened: the
                 * hash seed of jansson (from /dev/urandom), the time zone (certificate times are
                 * printed through localtime() on some paths), and OpenSSL's initialisation, without
                 * its configuration file (nothing of it applies to verification).
                 */
                (void)json_object_seed(0);
                tzset();
                if (OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL) != 1) {
                        stage = "openssl";
                        r = -EIO;
                }
        }
        if (r >= 0) {
                r = helper_seccomp();
                if (r < 0)
                        stage = "seccomp";
        }
        if (r < 0) {
                snprintf(msg, sizeof(msg), "sandbox: %s: %s", stage, strerror(-r));
                reply_set(&reply, RELEASE_E_VERIFIER, r, msg);
        } else {
                r = read_request(&req);
                reply.kind = req.kind;
                if (r < 0)
                        reply_set(&reply, RELEASE_E_VERIFIER, r, "malformed request");
                else if (req.kind == VERIFIER_KIND_ROOT) {
                        SigstoreTrustRoot *root = NULL;

                        if (load_root(&root, reply.root_sha256, &reply) >= 0)
                                reply_set(&reply, RELEASE_OK, 0, "");
                        sigstore_trust_root_free(root);
                } else if (req.kind == VERIFIER_KIND_RELEASE)
                        handle_release(&req, &reply);
                else if (req.kind == VERIFIER_KIND_INDEX)
                        handle_index(&req, &reply);
                else
                        handle_probe(&reply);
        }
        return loop_write(VERIFIER_FD_REPLY, &reply, sizeof(reply)) < 0 ? 1 : 0;
}
