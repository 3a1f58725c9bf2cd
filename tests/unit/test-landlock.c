/*
 * The Landlock ruleset alone, without seccomp, in a forked child: no file can be read or written,
 * TCP bind and connect are refused (ABI >= 4), abstract unix sockets and signals outside the
 * domain are scoped (ABI >= 6). The plugin suite cannot see these: seccomp refuses socket() first.
 */
#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "landlock.h"
#include "macro.h"
#include "sandbox.h"
#include "check-run.h"

/* Runs check() in a child restricted by the ruleset; the child's exit status is check()'s. */
static int in_domain(int (*check)(void *), void *userdata) {
        int abi, fd, status;
        pid_t pid;

        fd = landlock_ruleset_new(&abi);
        ck_assert_int_ge(fd, 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
                    syscall(__NR_landlock_restrict_self, fd, 0) < 0)
                        _exit(100);
                _exit(check(userdata));
        }
        close(fd);
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status));
        return WEXITSTATUS(status);
}

static int check_files(void *userdata) {
        if (open("/etc/passwd", O_RDONLY) >= 0 || errno != EACCES)
                return 1;
        if (open("/tmp/lockd-landlock-test", O_WRONLY | O_CREAT, 0600) >= 0 || errno != EACCES)
                return 2;
        if (open("/proc/self/status", O_RDONLY) >= 0 || errno != EACCES)
                return 3;
        if (execl("/bin/true", "true", NULL) >= 0 || errno != EACCES)
                return 4;
        return 0;
}

START_TEST(test_files) {
        ck_assert_int_eq(in_domain(check_files, NULL), 0);
}
END_TEST

static int check_tcp(void *userdata) {
        const struct sockaddr_in *addr = userdata;
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in any = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

        if (s < 0)
                return 10;
        if (connect(s, (const struct sockaddr *)addr, sizeof(*addr)) == 0 || errno != EACCES)
                return 11;
        close(s);
        s = socket(AF_INET, SOCK_STREAM, 0);
        if (bind(s, (struct sockaddr *)&any, sizeof(any)) == 0 || errno != EACCES)
                return 12;
        return 0;
}

START_TEST(test_tcp) {
        struct sockaddr_in addr = {.sin_family = AF_INET,
                                   .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(addr);
        int l;

        ck_assert_int_ge(landlock_abi_version(), 4);
        /* A real listener: without Landlock the connect would succeed. */
        l = socket(AF_INET, SOCK_STREAM, 0);
        ck_assert_int_ge(l, 0);
        ck_assert_int_eq(bind(l, (struct sockaddr *)&addr, sizeof(addr)), 0);
        ck_assert_int_eq(listen(l, 1), 0);
        ck_assert_int_eq(getsockname(l, (struct sockaddr *)&addr, &len), 0);
        ck_assert_int_eq(in_domain(check_tcp, &addr), 0);
        close(l);
}
END_TEST

static int check_scopes(void *userdata) {
        const struct sockaddr_un *addr = userdata;
        int s = socket(AF_UNIX, SOCK_STREAM, 0);

        if (s < 0)
                return 20;
        if (connect(s, (const struct sockaddr *)addr,
                    offsetof(struct sockaddr_un, sun_path) + 1 + strlen(addr->sun_path + 1)) == 0 ||
            errno != EPERM)
                return 21;
        if (kill(getppid(), 0) == 0 || errno != EPERM)
                return 22;
        if (kill(getpid(), 0) != 0)
                return 23; /* itself stays reachable */
        return 0;
}

START_TEST(test_scopes) {
        struct sockaddr_un addr = {.sun_family = AF_UNIX};
        socklen_t len;
        int l;

        ck_assert_int_ge(landlock_abi_version(), 6);
        snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, "lockd-test-%d", getpid());
        len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(addr.sun_path + 1));
        l = socket(AF_UNIX, SOCK_STREAM, 0);
        ck_assert_int_ge(l, 0);
        ck_assert_int_eq(bind(l, (struct sockaddr *)&addr, len), 0);
        ck_assert_int_eq(listen(l, 1), 0);
        ck_assert_int_eq(in_domain(check_scopes, &addr), 0);
        close(l);
}
END_TEST

/* Refuses landlock_create_ruleset with EPERM, as a container manager's seccomp filter does. */
static int deny_landlock_eperm(void) {
        struct sock_filter f[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_landlock_create_ruleset, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = {.len = ELEMENTSOF(f), .filter = f};

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        return syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0 ? -errno : 0;
}

/* A filter that refuses Landlock is told apart from a kernel without it, with the cure named. */
START_TEST(test_filtered) {
        const char *why;
        int status;
        pid_t pid;

        ck_assert_int_ge(landlock_abi_version(), 1);
        why = landlock_strerror(-EOPNOTSUPP);
        ck_assert(why && strstr(why, "no Landlock"));
        why = landlock_strerror(-EPERM);
        ck_assert(why && strstr(why, "seccomp filter") && strstr(why, "--system-call-filter"));
        ck_assert_str_eq(sandbox_strerror(-EPERM), why);
        ck_assert_ptr_null(landlock_strerror(-ENOMEM));

        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                int abi, fd;

                if (deny_landlock_eperm() < 0)
                        _exit(10);
                fd = landlock_ruleset_new(&abi);
                _exit(landlock_abi_version() == -EPERM && fd == -EPERM ? 0 : 11);
        }
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

int main(void) {
        Suite *s = suite_create("landlock");

        suite_add_case(s, NULL, test_files);
        suite_add_case(s, NULL, test_tcp);
        suite_add_case(s, NULL, test_scopes);
        suite_add_case(s, NULL, test_filtered);
        return check_run(s);
}
