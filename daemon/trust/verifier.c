/* The engine's client of lockd-verify: spawns the helper on sealed memfds, reopened read-only,
 * collects its one fixed-size reply before a deadline, and believes a success only for the bytes
 * the engine holds (verifier.h). The helper's own side is lockd-verify.c. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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
         * The build tree's lockd-engine runs the build tree's helper, so the tests exercise the
         * helper they built; any other binary (the installed lockd-engine) runs the installed one.
         * /proc/self/exe is the kernel's word on which binary this is: no peer and no environment
         * variable decides which program the engine hands the releases to.
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
 * a session of its own, default signal dispositions and an empty mask. posix_spawn(): the engine
 * has worker threads, so no fork that goes on in C; glibc's CLONE_VM|CLONE_VFORK child also costs
 * nothing per MiB of the engine.
 * The helper drops its privileges itself, first thing, before it reads a byte (lockd-verify.c).
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
         * Nobody else reaps the engine's children (every child is waited for by its pidfd, never
         * with P_ALL or SIGCHLD ignored), so the pid still names our child here.
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
        uint64_t deadline = clock_monotonic_usec() + timeout_usec;
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
                uint64_t now = clock_monotonic_usec();

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
        if (r->code == RELEASE_E_VERIFIER &&
            verifier_field_valid(r->message, sizeof(r->message), 0x20))
                return helper_failed(err, "%.160s", r->message);
        if (r->kind != kind)
                return helper_failed(err, "malformed answer (kind)");
        if (r->code >= _RELEASE_E_MAX || (r->code == RELEASE_OK) != (r->error == 0) ||
            r->error > 0 || r->error < -4095)
                return helper_failed(err, "malformed answer (code %u, errno %d)", r->code,
                                     r->error);
        if (!verifier_field_valid(r->message, sizeof(r->message), 0x20) ||
            !verifier_field_valid(r->san, sizeof(r->san), 0x21) ||
            !verifier_field_valid(r->source_ref, sizeof(r->source_ref), 0x21))
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
 * read-only, so the helper can neither write them nor move the engine's offsets. */
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

/* A request of kind under the marketplace m: its name, issuer and identity pattern copied into
 * the request's fields. 0, or -EINVAL with err filled when one is over its cap. */
static int request_init_marketplace(VerifierRequest *req, VerifierKind kind, const Marketplace *m,
                                    ReleaseError *err) {
        request_init(req, kind);
        if (verifier_field_set(req->name, sizeof(req->name), m->name) < 0 ||
            verifier_field_set(req->issuer, sizeof(req->issuer), m->issuer) < 0 ||
            verifier_field_set(req->identity, sizeof(req->identity), m->identity_pattern) < 0) {
                release_error_set(err, RELEASE_E_IO, "marketplace fields over their caps");
                return -EINVAL;
        }
        return 0;
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

int verifier_verify_release(const Marketplace *m, int root_fd, const uint8_t root_sha256[32],
                            const ReleaseFds *sealed, const int index_fds[2],
                            const uint8_t manifest_sha256[32], const uint8_t binary_sha256[32],
                            VerifiedRelease *ret, ReleaseError *err) {
        _cleanup_free_ VerifierReply *reply = NULL;
        _cleanup_free_ char *san = NULL, *ref = NULL;
        uint8_t index_sha256[32];
        VerifierRequest req;
        int fds[_VERIFIER_FD_MAX];
        int r;

        if (!m || root_fd < 0 || !root_sha256 || !sealed || !manifest_sha256 || !binary_sha256 ||
            !ret || (index_fds && (index_fds[0] < 0 || index_fds[1] < 0))) {
                release_error_set(err, RELEASE_E_IO, "invalid arguments");
                return -EINVAL;
        }
        r = request_init_marketplace(&req, VERIFIER_KIND_RELEASE, m, err);
        if (r < 0)
                return r;
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
        fds[VERIFIER_FD_ROOT] = root_fd;
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
         * A success is believed only for the bytes the engine holds: the helper must have
         * verified exactly these memfds under exactly this root, and the signer it reports must be
         * one the marketplace's pattern admits (identity_match(), the policy's own definition).
         */
        if (memcmp(reply->root_sha256, root_sha256, 32) != 0 ||
            memcmp(reply->manifest_sha256, manifest_sha256, 32) != 0 ||
            memcmp(reply->binary_sha256, binary_sha256, 32) != 0 ||
            (index_fds && memcmp(reply->index_sha256, index_sha256, 32) != 0))
                return helper_failed(err, "it verified other bytes than lockd holds");
        if (!reply->san[0] || !reply->source_ref[0] ||
            !identity_match(m->identity_pattern, reply->san))
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

int verifier_verify_index(const Marketplace *m, int root_fd, const uint8_t root_sha256[32],
                          const int index_fds[2], VerifiedIndex *ret, ReleaseError *err) {
        _cleanup_free_ VerifierReply *reply = NULL;
        uint8_t index_sha256[32];
        VerifierRequest req;
        int fds[_VERIFIER_FD_MAX];
        int r;

        if (!m || root_fd < 0 || !root_sha256 || !index_fds || index_fds[0] < 0 ||
            index_fds[1] < 0 || !ret) {
                release_error_set(err, RELEASE_E_IO, "invalid arguments");
                return -EINVAL;
        }
        r = request_init_marketplace(&req, VERIFIER_KIND_INDEX, m, err);
        if (r < 0)
                return r;
        req.flags |= VERIFIER_FLAG_INDEX;
        r = sha256_fd(index_fds[0], index_sha256);
        if (r < 0)
                return helper_failed(err, "digest of the index: %s", strerror(-r));

        reply = calloc(1, sizeof(*reply));
        if (!reply)
                return -ENOMEM;
        for (int i = 0; i < _VERIFIER_FD_MAX; i++)
                fds[i] = -1;
        fds[VERIFIER_FD_ROOT] = root_fd;
        fds[VERIFIER_FD_INDEX] = index_fds[0];
        fds[VERIFIER_FD_INDEX_BUNDLE] = index_fds[1];
        r = helper_run(&req, fds, reply, err);
        if (r < 0)
                return r;
        r = reply_check(reply, VERIFIER_KIND_INDEX, err);
        if (r < 0)
                return r;
        /* Believed only for the bytes the engine holds, under the root it holds, and with values
         * the parser could have accepted. */
        if (memcmp(reply->root_sha256, root_sha256, 32) != 0 ||
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
