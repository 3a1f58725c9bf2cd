/* lockd-verify: the short-lived helper the engine spawns to verify Sigstore bundles, trusted roots
 * and marketplace indexes on sealed memfds (verifier-proto.h). It drops to nobody without
 * capabilities, under rlimits and a seccomp allow-list, before it reads a byte; then it reads the
 * one request on fd 3, verifies, and writes one VerifierReply on fd 1. The engine's side is
 * verifier.c. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <openssl/crypto.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "fd-util.h"
#include "index.h"
#include "macro.h"
#include "release.h"
#include "sigstore-util.h"
#include "verifier-proto.h"

#ifndef __NR_close_range
#define __NR_close_range 436
#endif

#ifdef __SANITIZE_ADDRESS__
/* LeakSanitizer's exit-time scan needs ptrace and threads, which the helper's filter denies. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
        return "detect_leaks=0";
}
#endif

static void reply_set(VerifierReply *reply, ReleaseErrorCode code, int error, const char *msg) {
        reply->code = code;
        reply->error = code == RELEASE_OK ? 0 : (error < 0 ? error : -EINVAL);
        memset(reply->message, 0, sizeof(reply->message));
        /* Printable ASCII only, as the engine requires: anything else becomes '?'. */
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

/* The index at fds 9 and 10 verified under m (index_verify()) and listing rel with its digests
 * (index_check_release()); its digest for the reply. */
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
        /* SAN and ref as the engine requires them: printable, no space; otherwise a refusal. */
        if (verifier_field_set(reply->san, sizeof(reply->san), rel->san) < 0 ||
            verifier_field_set(reply->source_ref, sizeof(reply->source_ref), rel->source_ref) < 0 ||
            !verifier_field_valid(reply->san, sizeof(reply->san), 0x21) ||
            !verifier_field_valid(reply->source_ref, sizeof(reply->source_ref), 0x21)) {
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

/* The helper's whole life: drops to nobody with no capability, no_new_privs, non-dumpable, tight
 * rlimits and a seccomp allow-list, then reads the request on fd 3, verifies and writes one
 * VerifierReply on fd 1. The exit status is 0 when a reply was written. */
int main(void) {
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
