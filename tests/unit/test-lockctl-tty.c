/* Tests for client/lockctl-tty: secret lines from pipes, echo off and raw mode on a pseudo
 * terminal, and the terminal's mode back after a signal. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "check-run.h"
#include "fd-util.h"
#include "lockctl-tty.h"
#include "macro.h"
#include "secmem.h"

/* A pipe holding text, its write end closed: the reader sees text, then the end of input. */
static int pipe_with(const char *text) {
        int p[2];

        ck_assert_int_eq(pipe(p), 0);
        ck_assert_int_eq(loop_write(p[1], text, strlen(text)), 0);
        close(p[1]);
        return p[0];
}

START_TEST(test_line_and_rest) {
        _cleanup_close_ int fd = pipe_with("hello world\nnext\n");
        _cleanup_secbuf_ SecBuf *a = NULL, *b = NULL;

        ck_assert_int_eq(tty_read_secret_line(fd, 64, &a), 0);
        ck_assert_uint_eq(a->len, 11);
        ck_assert_mem_eq(a->data, "hello world", 11);
        ck_assert_int_eq(a->data[a->len], 0);
        /* Nothing after the newline was consumed. */
        ck_assert_int_eq(tty_read_secret_line(fd, 64, &b), 0);
        ck_assert_str_eq((char *)b->data, "next");
}
END_TEST

START_TEST(test_nothing_trimmed_but_newline) {
        _cleanup_close_ int fd = pipe_with(" a\tb \r\n");
        _cleanup_secbuf_ SecBuf *a = NULL;

        ck_assert_int_eq(tty_read_secret_line(fd, 64, &a), 0);
        ck_assert_uint_eq(a->len, 6);
        ck_assert_mem_eq(a->data, " a\tb \r", 6);
}
END_TEST

START_TEST(test_exact_max) {
        char line[1026];
        _cleanup_close_ int fd = -1;
        _cleanup_secbuf_ SecBuf *a = NULL;

        memset(line, 'x', 1024);
        line[1024] = '\n';
        line[1025] = 0;
        fd = pipe_with(line);
        ck_assert_int_eq(tty_read_secret_line(fd, 1024, &a), 0);
        ck_assert_uint_eq(a->len, 1024);
        ck_assert_int_eq(a->data[1024], 0);
}
END_TEST

START_TEST(test_too_long_drained) {
        char line[3000];
        _cleanup_close_ int fd = -1;
        _cleanup_secbuf_ SecBuf *a = NULL, *b = NULL;

        memset(line, 'y', 2000);
        strcpy(line + 2000, "\nafter\n");
        fd = pipe_with(line);
        ck_assert_int_eq(tty_read_secret_line(fd, 1024, &a), -EOVERFLOW);
        ck_assert_ptr_null(a);
        /* The rest of the long line is gone: the next reader starts at the next line. */
        ck_assert_int_eq(tty_read_secret_line(fd, 1024, &b), 0);
        ck_assert_str_eq((char *)b->data, "after");
}
END_TEST

START_TEST(test_one_over_max) {
        _cleanup_close_ int fd = pipe_with("abcde\nz\n");
        _cleanup_secbuf_ SecBuf *a = NULL, *b = NULL;

        ck_assert_int_eq(tty_read_secret_line(fd, 4, &a), -EOVERFLOW);
        ck_assert_int_eq(tty_read_secret_line(fd, 4, &b), 0);
        ck_assert_str_eq((char *)b->data, "z");
}
END_TEST

START_TEST(test_empty_and_end) {
        _cleanup_close_ int fd = pipe_with("\nlast");
        _cleanup_secbuf_ SecBuf *a = NULL, *b = NULL;

        ck_assert_int_eq(tty_read_secret_line(fd, 64, &a), -ENOMSG);
        ck_assert_ptr_null(a);
        /* A last line without a newline counts; then the end of input. */
        ck_assert_int_eq(tty_read_secret_line(fd, 64, &a), 0);
        ck_assert_str_eq((char *)a->data, "last");
        ck_assert_int_eq(tty_read_secret_line(fd, 64, &b), -ENODATA);
        ck_assert_int_eq(tty_read_secret_line(fd, 0, &b), -EINVAL);
}
END_TEST

/* A pseudo terminal: *master and the slave's fd (returned). */
static int open_pty(int *master) {
        int m, s;

        m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        ck_assert_int_ge(m, 0);
        ck_assert_int_eq(grantpt(m), 0);
        ck_assert_int_eq(unlockpt(m), 0);
        s = open(ptsname(m), O_RDWR | O_NOCTTY | O_CLOEXEC);
        ck_assert_int_ge(s, 0);
        *master = m;
        return s;
}

/* Everything the pty shows within a short while (the terminal's output). */
static size_t drain(int master, char *buf, size_t size) {
        size_t n = 0;

        for (;;) {
                struct pollfd p = {.fd = master, .events = POLLIN};
                ssize_t k;

                if (poll(&p, 1, 200) <= 0 || n + 1 >= size)
                        break;
                k = read(master, buf + n, size - 1 - n);
                if (k <= 0)
                        break;
                n += (size_t)k;
        }
        buf[n] = 0;
        return n;
}

START_TEST(test_modes_and_restore) {
        _cleanup_close_ int master = -1, slave = -1, p = -1;
        struct termios before, t;
        Tty a = {}, b = {};

        slave = open_pty(&master);
        ck_assert_int_eq(tcgetattr(slave, &before), 0);
        ck_assert(before.c_lflag & ECHO);

        ck_assert_int_eq(tty_enter(&a, slave, TTY_NOECHO, NULL, NULL), 0);
        ck_assert_int_eq(tcgetattr(slave, &t), 0);
        ck_assert(!(t.c_lflag & ECHO));
        ck_assert(t.c_lflag & ICANON);
        /* One terminal at a time. */
        ck_assert_int_eq(tty_enter(&b, slave, TTY_RAW, NULL, NULL), -EBUSY);
        tty_leave(&a);
        ck_assert_int_eq(tcgetattr(slave, &t), 0);
        ck_assert_int_eq(t.c_lflag, before.c_lflag);

        ck_assert_int_eq(tty_enter(&b, slave, TTY_RAW, "<enter>", "<leave>"), 0);
        ck_assert_int_eq(tcgetattr(slave, &t), 0);
        ck_assert(!(t.c_lflag & (ECHO | ICANON)));
        ck_assert(t.c_lflag & ISIG);
        tty_leave(&b);
        tty_leave(&b); /* a second leave is a no-op */
        ck_assert_int_eq(tcgetattr(slave, &t), 0);
        ck_assert_int_eq(t.c_lflag, before.c_lflag);
        ck_assert_int_eq(t.c_iflag, before.c_iflag);

        p = pipe_with("");
        ck_assert_int_eq(tty_enter(&a, p, TTY_NOECHO, NULL, NULL), -ENOTTY);
        /* A refused enter left nothing behind. */
        ck_assert_int_eq(tty_enter(&a, slave, TTY_NOECHO, NULL, NULL), 0);
        tty_leave(&a);
}
END_TEST

START_TEST(test_prompt_not_echoed) {
        _cleanup_close_ int master = -1, slave = -1;
        _cleanup_secbuf_ SecBuf *v = NULL;
        char out[4096];
        pid_t pid;
        int status;

        slave = open_pty(&master);
        /* The child prompts on the slave; the parent types as a human would, once echo is off. */
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                int r = tty_prompt_secret(slave, "value for ${email}: ", 64, &v);

                _exit(r == 0 && strcmp((char *)v->data, "hunter2@example.org") == 0 ? 0 : 3);
        }
        drain(master, out, sizeof(out));
        ck_assert_ptr_nonnull(strstr(out, "value for ${email}: "));
        ck_assert_int_eq(loop_write(master, "hunter2@example.org\n", 20), 0);
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 0);
        drain(master, out, sizeof(out));
        ck_assert_ptr_null(strstr(out, "hunter2"));
}
END_TEST

START_TEST(test_signal_restores) {
        _cleanup_close_ int master = -1, slave = -1;
        struct termios before, t;
        char out[4096];
        pid_t pid;
        int status;

        slave = open_pty(&master);
        ck_assert_int_eq(tcgetattr(slave, &before), 0);
        for (int i = 0; i < 2; i++) {
                int sig = i == 0 ? SIGTERM : SIGINT;

                pid = fork();
                ck_assert_int_ge(pid, 0);
                if (pid == 0) {
                        Tty x;

                        if (tty_enter(&x, slave, i == 0 ? TTY_RAW : TTY_NOECHO, "<enter>",
                                      "<leave>") < 0)
                                _exit(3);
                        raise(sig);
                        _exit(4); /* not reached: the signal's default action ends us */
                }
                ck_assert_int_eq(waitpid(pid, &status, 0), pid);
                ck_assert(WIFSIGNALED(status));
                ck_assert_int_eq(WTERMSIG(status), sig);
                ck_assert_int_eq(tcgetattr(slave, &t), 0);
                ck_assert_int_eq(t.c_lflag, before.c_lflag);
                ck_assert_int_eq(t.c_iflag, before.c_iflag);
                drain(master, out, sizeof(out));
                ck_assert_ptr_nonnull(strstr(out, "<enter>"));
                ck_assert_ptr_nonnull(strstr(out, "<leave>"));
        }
}
END_TEST

static Suite *tty_suite(void) {
        Suite *s = suite_create("lockctl-tty");
        const CaseOptions lines_case = {.tags = "lines"};

        suite_add_case(s, &lines_case, test_line_and_rest);
        suite_add_case(s, &lines_case, test_nothing_trimmed_but_newline);
        suite_add_case(s, &lines_case, test_exact_max);
        suite_add_case(s, &lines_case, test_too_long_drained);
        suite_add_case(s, &lines_case, test_one_over_max);
        suite_add_case(s, &lines_case, test_empty_and_end);
        const CaseOptions terminal_case = {.tags = "terminal"};

        suite_add_case(s, &terminal_case, test_modes_and_restore);
        suite_add_case(s, &terminal_case, test_prompt_not_echoed);
        suite_add_case(s, &terminal_case, test_signal_restores);
        return s;
}

int main(void) {
        return check_run(tty_suite());
}
