/*
 * The daemon's listening sockets: socket_bind_listen() at a path (mode, group, stale and live
 * leftovers, the parent directory), and sockets_from_systemd() with LISTEN_FDS set up in a forked
 * child whose fds 3 and 4 are what systemd would pass.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check-run.h"
#include "macro.h"
#include "sockets.h"

#define TEST_GID ((gid_t)4242)

/* Short: socket paths must fit sun_path. */
static char tmpdir[64];

static void setup(void) {
        const char *base = getenv("TMPDIR");

        ck_assert_int_lt(
                snprintf(tmpdir, sizeof(tmpdir), "%s/test-sockets-XXXXXX", base ? base : "/tmp"),
                (int)sizeof(tmpdir));
        ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void) {
        char cmd[PATH_MAX + 16];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        ck_assert_int_eq(system(cmd), 0);
}

static char *tmp_path(const char *name) {
        char *p;

        ck_assert_int_ge(asprintf(&p, "%s/%s", tmpdir, name), 0);
        return p;
}

static socklen_t sockaddr_at(struct sockaddr_un *sa, const char *path) {
        *sa = (struct sockaddr_un){.sun_family = AF_UNIX};
        ck_assert_uint_lt(strlen(path), sizeof(sa->sun_path));
        strcpy(sa->sun_path, path);
        return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1);
}

/* A unix socket of type bound at path (NULL: unbound), listening if listening. */
static int unix_socket(int type, const char *path, bool listening) {
        int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa;

        ck_assert_int_ge(fd, 0);
        if (path)
                ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sockaddr_at(&sa, path)), 0);
        if (listening)
                ck_assert_int_eq(listen(fd, 4), 0);
        return fd;
}

/* Whether a client can connect to path now. */
static bool can_connect(const char *path) {
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa;
        socklen_t len = sockaddr_at(&sa, path);

        ck_assert_int_ge(fd, 0);
        return connect(fd, (struct sockaddr *)&sa, len) == 0;
}

static void assert_listening(int fd) {
        int v = 0;
        socklen_t len = sizeof(v);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len), 0);
        ck_assert_int_eq(v, 1);
        ck_assert_int_eq(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
}

/* A client connecting to path is accepted on fd: fd is what listens there. */
static void assert_accepts(int fd, const char *path) {
        _cleanup_close_ int client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), conn = -1;
        struct sockaddr_un sa;
        socklen_t len = sockaddr_at(&sa, path);

        ck_assert_int_ge(client, 0);
        ck_assert_int_eq(accept4(fd, NULL, NULL, SOCK_CLOEXEC), -1);
        ck_assert_int_eq(errno, EAGAIN);
        ck_assert_int_eq(connect(client, (struct sockaddr *)&sa, len), 0);
        conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        ck_assert_int_ge(conn, 0);
}

START_TEST(test_bind_mode_group) {
        _cleanup_free_ char *dir = tmp_path("run"), *path = tmp_path("run/console.sock");
        ListenSpec spec = {.name = "console", .path = path, .mode = 0660, .gid = TEST_GID};
        _cleanup_close_ int fd = -1;
        struct stat st;

        ck_assert_msg(geteuid() == 0, "needs root: the socket is chowned to a group");
        /* A strict umask of the caller changes neither the directory's mode nor the socket's. */
        umask(0077);
        fd = socket_bind_listen(&spec, 16);
        assert_listening(fd);
        /* The missing parent directory was created, 0755. */
        ck_assert_int_eq(stat(dir, &st), 0);
        ck_assert(S_ISDIR(st.st_mode));
        ck_assert_uint_eq(st.st_mode & 07777, 0755);

        ck_assert_int_eq(lstat(path, &st), 0);
        ck_assert(S_ISSOCK(st.st_mode));
        ck_assert_uint_eq(st.st_mode & 07777, 0660);
        ck_assert_uint_eq(st.st_uid, 0);
        ck_assert_uint_eq(st.st_gid, TEST_GID);
        assert_accepts(fd, path);
}
END_TEST

START_TEST(test_bind_no_group) {
        _cleanup_free_ char *path = tmp_path("agent.sock");
        ListenSpec spec = {.name = "agent", .path = path, .mode = 0666, .gid = (gid_t)-1};
        _cleanup_close_ int fd = -1;
        struct stat st;

        fd = socket_bind_listen(&spec, 16);
        assert_listening(fd);
        ck_assert_int_eq(lstat(path, &st), 0);
        ck_assert(S_ISSOCK(st.st_mode));
        ck_assert_uint_eq(st.st_mode & 07777, 0666);
        /* (gid_t)-1 leaves the group the socket was born with: ours. */
        ck_assert_uint_eq(st.st_uid, geteuid());
        ck_assert_uint_eq(st.st_gid, getegid());
}
END_TEST

/* A socket file left by a dead lockd (nobody listens on it) is replaced. */
START_TEST(test_bind_stale) {
        _cleanup_free_ char *path = tmp_path("stale.sock");
        ListenSpec spec = {.name = "agent", .path = path, .mode = 0600, .gid = (gid_t)-1};
        _cleanup_close_ int fd = -1;
        struct stat before, after;

        safe_close(unix_socket(SOCK_STREAM, path, true));
        ck_assert_int_eq(lstat(path, &before), 0);
        ck_assert(S_ISSOCK(before.st_mode));
        ck_assert(!can_connect(path));

        fd = socket_bind_listen(&spec, 16);
        assert_listening(fd);
        ck_assert_int_eq(lstat(path, &after), 0);
        ck_assert(S_ISSOCK(after.st_mode));
        /* The listener at the path now is the one returned. */
        assert_accepts(fd, path);
}
END_TEST

/* Another process's live socket is never taken over. */
START_TEST(test_bind_live) {
        _cleanup_free_ char *path = tmp_path("live.sock");
        ListenSpec spec = {.name = "agent", .path = path, .mode = 0600, .gid = (gid_t)-1};
        _cleanup_close_ int live = unix_socket(SOCK_STREAM, path, true);
        struct stat before, after;

        ck_assert_int_eq(lstat(path, &before), 0);
        ck_assert_int_eq(socket_bind_listen(&spec, 16), -EEXIST);
        ck_assert_int_eq(lstat(path, &after), 0);
        ck_assert_uint_eq(after.st_ino, before.st_ino);
        ck_assert(can_connect(path));
}
END_TEST

/* Anything but a socket at the path stays: a regular file, a directory, a symlink to a socket. */
START_TEST(test_bind_not_socket) {
        _cleanup_free_ char *file = tmp_path("file"), *dir = tmp_path("dir"),
                            *stale = tmp_path("stale.sock"), *link = tmp_path("link.sock");
        ListenSpec spec = {.name = "agent", .mode = 0600, .gid = (gid_t)-1};
        _cleanup_close_ int fd = -1;
        char buf[8];
        struct stat st;

        fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, "keep", 4), 4);
        fd = safe_close(fd);
        spec.path = file;
        ck_assert_int_eq(socket_bind_listen(&spec, 16), -EEXIST);
        fd = open(file, O_RDONLY | O_CLOEXEC);
        ck_assert_int_eq(read(fd, buf, sizeof(buf)), 4);
        ck_assert_int_eq(memcmp(buf, "keep", 4), 0);

        ck_assert_int_eq(mkdir(dir, 0700), 0);
        spec.path = dir;
        ck_assert_int_eq(socket_bind_listen(&spec, 16), -EEXIST);
        ck_assert_int_eq(lstat(dir, &st), 0);
        ck_assert(S_ISDIR(st.st_mode));

        /* Even when it points at a stale socket that would itself be replaced. */
        safe_close(unix_socket(SOCK_STREAM, stale, true));
        ck_assert_int_eq(symlink(stale, link), 0);
        spec.path = link;
        ck_assert_int_eq(socket_bind_listen(&spec, 16), -EEXIST);
        ck_assert_int_eq(lstat(link, &st), 0);
        ck_assert(S_ISLNK(st.st_mode));
        ck_assert_int_eq(lstat(stale, &st), 0);
        ck_assert(S_ISSOCK(st.st_mode));
}
END_TEST

START_TEST(test_bind_invalid) {
        char longpath[sizeof(((struct sockaddr_un *)NULL)->sun_path) + 1];
        _cleanup_free_ char *deep = tmp_path("a/b/c.sock");
        ListenSpec spec = {.name = "agent", .mode = 0600, .gid = (gid_t)-1};

        ck_assert_int_eq(socket_bind_listen(NULL, 16), -EINVAL);
        ck_assert_int_eq(socket_bind_listen(&spec, 16), -EINVAL);
        spec.path = "relative.sock";
        ck_assert_int_eq(socket_bind_listen(&spec, 16), -EINVAL);
        memset(longpath, 'x', sizeof(longpath) - 1);
        longpath[0] = '/';
        longpath[sizeof(longpath) - 1] = 0;
        spec.path = longpath;
        ck_assert_int_eq(socket_bind_listen(&spec, 16), -EINVAL);
        /* Exactly one missing level is created, not a whole tree. */
        spec.path = deep;
        ck_assert_int_eq(socket_bind_listen(&spec, 16), -ENOENT);
}
END_TEST

/* What the forked child puts at fds 3 and 4. */
typedef enum FdKind {
        FD_NONE,
        FD_LISTENING, /* a listening AF_UNIX stream socket */
        FD_BOUND,     /* bound, not listening */
        FD_DGRAM,     /* a datagram socket */
        FD_PIPE,      /* not a socket at all */
} FdKind;

typedef struct ActivationCase {
        const char *name;
        FdKind fds[2];      /* at 3 and 4 */
        const char *names;  /* LISTEN_FDNAMES; NULL: unset */
        bool other_pid;     /* LISTEN_PID names another process */
        int ret;            /* what sockets_from_systemd() returns */
        int agent, console; /* the fds it maps them to, or -1 */
} ActivationCase;

static const ActivationCase activation_cases[] = {
        {"both", {FD_LISTENING, FD_LISTENING}, "agent:console", false, 2, 3, 4},
        {"swapped", {FD_LISTENING, FD_LISTENING}, "console:agent", false, 2, 4, 3},
        {"console-only", {FD_LISTENING, FD_NONE}, "console", false, 1, -1, 3},
        {"unknown-name", {FD_LISTENING, FD_LISTENING}, "agent:bogus", false, -EBADMSG, -1, -1},
        {"unknown-first", {FD_LISTENING, FD_LISTENING}, "bogus:console", false, -EBADMSG, -1, -1},
        {"no-names", {FD_LISTENING, FD_LISTENING}, NULL, false, -EBADMSG, -1, -1},
        {"duplicate", {FD_LISTENING, FD_LISTENING}, "agent:agent", false, -EBADMSG, -1, -1},
        {"not-listening", {FD_LISTENING, FD_BOUND}, "agent:console", false, -EBADMSG, -1, -1},
        {"datagram", {FD_DGRAM, FD_LISTENING}, "agent:console", false, -EBADMSG, -1, -1},
        {"pipe", {FD_LISTENING, FD_PIPE}, "agent:console", false, -EBADMSG, -1, -1},
        {"other-pid", {FD_LISTENING, FD_LISTENING}, "agent:console", true, 0, -1, -1},
};

/* Makes the fd of kind k at exactly target. Child only: returns false on any failure. */
static bool place_fd(FdKind k, int target, const char *path) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd = -1, p[2];

        switch (k) {
        case FD_NONE:
                return true;
        case FD_PIPE:
                if (pipe(p) < 0)
                        return false;
                fd = p[0];
                break;
        case FD_DGRAM:
                fd = socket(AF_UNIX, SOCK_DGRAM, 0);
                break;
        case FD_LISTENING:
        case FD_BOUND:
                fd = socket(AF_UNIX, SOCK_STREAM, 0);
                if (fd < 0 || strlen(path) >= sizeof(sa.sun_path))
                        return false;
                strcpy(sa.sun_path, path);
                if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                        return false;
                if (k == FD_LISTENING && listen(fd, 4) < 0)
                        return false;
                break;
        }
        if (fd < 0)
                return false;
        /* Out of the way first, so the dup2() below never closes another case fd. */
        fd = fcntl(fd, F_DUPFD, 100 + target);
        return fd >= 0 && dup2(fd, target) == target && close(fd) == 0;
}

static bool fd_open(int fd) {
        return fcntl(fd, F_GETFD) >= 0;
}

/* The child's side: returns the number of the first check that failed, or 0. */
static int activation_child(const ActivationCase *c) {
        static const ListenSpec specs[2] = {{.name = "agent"}, {.name = "console"}};
        char pid[32], n[16];
        int fds[2] = {77, 77}, k = 0, r;

        for (int i = 0; i < 2; i++) {
                char path[sizeof(tmpdir) + 64];

                snprintf(path, sizeof(path), "%s/%s-%d", tmpdir, c->name, i);
                if (!place_fd(c->fds[i], 3 + i, path))
                        return 1;
                if (c->fds[i] != FD_NONE)
                        k++;
        }
        /* Nothing else may sit at 5: the fd after the passed ones must stay closed. */
        (void)close(5);
        snprintf(pid, sizeof(pid), "%d", c->other_pid ? (int)getppid() : (int)getpid());
        snprintf(n, sizeof(n), "%d", k);
        if (setenv("LISTEN_PID", pid, 1) < 0 || setenv("LISTEN_FDS", n, 1) < 0)
                return 2;
        if (c->names && setenv("LISTEN_FDNAMES", c->names, 1) < 0)
                return 2;
        if (!c->names)
                (void)unsetenv("LISTEN_FDNAMES");

        r = sockets_from_systemd(specs, 2, fds);
        if (r != c->ret)
                return 10;
        if (fds[0] != c->agent || fds[1] != c->console)
                return 11;
        if (c->other_pid) {
                /* Not ours: left alone, and so is the environment (it was not for us). */
                if (!fd_open(3) || !fd_open(4))
                        return 12;
                return 0;
        }
        /* The environment is consumed either way: children must not inherit it. */
        if (getenv("LISTEN_PID") || getenv("LISTEN_FDS") || getenv("LISTEN_FDNAMES"))
                return 13;
        if (r < 0) {
                /* Refused: every fd passed is closed, none is handed out. */
                if (fd_open(3) || fd_open(4))
                        return 14;
                return 0;
        }
        for (int i = 0; i < 2; i++)
                if (fds[i] >= 0 && (fcntl(fds[i], F_GETFD) & FD_CLOEXEC) == 0)
                        return 15;
        return 0;
}

START_TEST(test_activation) {
        const ActivationCase *c = &activation_cases[_i];
        int status;
        pid_t pid;

        fflush(NULL);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0)
                _exit(activation_child(c));
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "%s: check %d failed in the child", c->name,
                      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}
END_TEST

/* Without LISTEN_* the daemon binds its own: 0 and every fd -1. */
START_TEST(test_not_activated) {
        static const ListenSpec specs[2] = {{.name = "agent"}, {.name = "console"}};
        int fds[2] = {77, 77};

        (void)unsetenv("LISTEN_PID");
        (void)unsetenv("LISTEN_FDS");
        (void)unsetenv("LISTEN_FDNAMES");
        ck_assert_int_eq(sockets_from_systemd(specs, 2, fds), 0);
        ck_assert_int_eq(fds[0], -1);
        ck_assert_int_eq(fds[1], -1);
}
END_TEST

static Suite *sockets_suite(void) {
        Suite *s = suite_create("sockets");
        const CaseOptions bind_case = {.setup = setup, .teardown = teardown, .tags = "bind"};

        suite_add_case(s, &bind_case, test_bind_mode_group);
        suite_add_case(s, &bind_case, test_bind_no_group);
        suite_add_case(s, &bind_case, test_bind_stale);
        suite_add_case(s, &bind_case, test_bind_live);
        suite_add_case(s, &bind_case, test_bind_not_socket);
        suite_add_case(s, &bind_case, test_bind_invalid);

        const CaseOptions activation_case = {
                .setup = setup, .teardown = teardown, .tags = "activation"};

        suite_add_loop_case(s, &activation_case, test_activation, 0,
                            (int)ELEMENTSOF(activation_cases));
        suite_add_case(s, &activation_case, test_not_activated);
        return s;
}

int main(void) {
        return check_run(sockets_suite());
}
