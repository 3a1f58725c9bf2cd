/* lockctl's terminal: echo off for a typed secret, raw mode for the console view, and the
 * guarantee that the terminal comes back as it was on every exit, a signal's included. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "fd-util.h"
#include "lockctl-tty.h"
#include "macro.h"

static const int tty_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP};

/*
 * What the signal handler needs, set before the handlers are installed and cleared after they
 * are removed. Only one terminal is entered at a time, so a single slot suffices.
 */
static volatile sig_atomic_t tty_signal_fd = -1;
static struct termios tty_signal_saved, tty_signal_mode;
static const char *tty_signal_enter, *tty_signal_leave;
static struct sigaction tty_old_actions[ELEMENTSOF(tty_signals)];

int tty_open(void) {
        int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);

        return fd >= 0 ? fd : -ENXIO;
}

/* write() of a NUL-terminated string, async-signal-safe; errors are ignored (nothing to do). */
static void write_str(int fd, const char *s) {
        size_t n = s ? strlen(s) : 0;

        while (n > 0) {
                ssize_t k = write(fd, s, n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return;
                s += k;
                n -= (size_t)k;
        }
}

/*
 * Puts the terminal back before the signal takes effect, then lets it: the default action with
 * the signal unblocked. Only a stop returns from raise(); once continued, the mode the human left
 * comes back before anything more is read. Only async-signal-safe calls.
 */
static void tty_restore_and_reraise(int sig) {
        struct sigaction dfl = {.sa_handler = SIG_DFL}, mine;
        int saved_errno = errno, fd = tty_signal_fd;
        sigset_t set;

        if (fd >= 0) {
                write_str(fd, tty_signal_leave);
                (void)tcsetattr(fd, TCSAFLUSH, &tty_signal_saved);
        }
        sigemptyset(&dfl.sa_mask);
        (void)sigaction(sig, &dfl, &mine);
        sigemptyset(&set);
        sigaddset(&set, sig);
        (void)sigprocmask(SIG_UNBLOCK, &set, NULL);
        (void)raise(sig);
        (void)sigaction(sig, &mine, NULL);
        fd = tty_signal_fd;
        if (fd >= 0) {
                (void)tcsetattr(fd, TCSAFLUSH, &tty_signal_mode);
                write_str(fd, tty_signal_enter);
        }
        errno = saved_errno;
}

int tty_enter(Tty *t, int fd, TtyMode mode, const char *enter, const char *leave) {
        struct sigaction sa = {.sa_handler = tty_restore_and_reraise};
        struct termios saved, m;
        sigset_t block, old;

        if (tty_signal_fd >= 0)
                return -EBUSY;
        if (tcgetattr(fd, &saved) < 0)
                return negative_errno();
        m = saved;
        if (mode == TTY_NOECHO)
                m.c_lflag &= ~(tcflag_t)(ECHO | ECHOE | ECHOK | ECHONL);
        else {
                /* ISIG stays: ^C and ^\ keep working, through the handler that restores. */
                m.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ECHOE | ECHOK | ECHONL | IEXTEN);
                m.c_iflag &= ~(tcflag_t)(IXON | ICRNL | INLCR | IGNCR | ISTRIP);
                m.c_cc[VMIN] = 1;
                m.c_cc[VTIME] = 0;
        }

        /* The handlers see a complete slot: fill it with the signals blocked. */
        sigemptyset(&block);
        for (size_t i = 0; i < ELEMENTSOF(tty_signals); i++)
                sigaddset(&block, tty_signals[i]);
        sigprocmask(SIG_BLOCK, &block, &old);
        tty_signal_saved = saved;
        tty_signal_mode = m;
        tty_signal_enter = enter;
        tty_signal_leave = leave;
        tty_signal_fd = fd;
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < ELEMENTSOF(tty_signals); i++)
                sigaction(tty_signals[i], &sa, &tty_old_actions[i]);
        /* TCSAFLUSH: what was typed before the mode changed is dropped, never taken as input. */
        if (tcsetattr(fd, TCSAFLUSH, &m) < 0) {
                int r = negative_errno();

                for (size_t i = 0; i < ELEMENTSOF(tty_signals); i++)
                        sigaction(tty_signals[i], &tty_old_actions[i], NULL);
                tty_signal_fd = -1;
                sigprocmask(SIG_SETMASK, &old, NULL);
                return r;
        }
        write_str(fd, enter);
        sigprocmask(SIG_SETMASK, &old, NULL);
        *t = (Tty){.fd = fd, .active = true, .saved = saved};
        return 0;
}

void tty_leave(Tty *t) {
        sigset_t block, old;

        if (!t || !t->active)
                return;
        sigemptyset(&block);
        for (size_t i = 0; i < ELEMENTSOF(tty_signals); i++)
                sigaddset(&block, tty_signals[i]);
        sigprocmask(SIG_BLOCK, &block, &old);
        write_str(t->fd, tty_signal_leave);
        (void)tcsetattr(t->fd, TCSAFLUSH, &t->saved);
        for (size_t i = 0; i < ELEMENTSOF(tty_signals); i++)
                sigaction(tty_signals[i], &tty_old_actions[i], NULL);
        tty_signal_fd = -1;
        tty_signal_enter = tty_signal_leave = NULL;
        sigprocmask(SIG_SETMASK, &old, NULL);
        t->active = false;
}

int tty_read_secret_line(int fd, size_t max, SecBuf **ret) {
        _cleanup_secbuf_ SecBuf *b = NULL;
        size_t len = 0;
        bool overflow = false;
        int r;

        if (max == 0)
                return -EINVAL;
        /* One byte more than max: where the newline of a line of max bytes lands. */
        r = secbuf_new(max + 1, &b);
        if (r < 0)
                return r;
        for (;;) {
                /* Past max, every further byte of the line lands on the last one and is lost. */
                uint8_t *at = b->data + (overflow ? max : len);
                ssize_t n = read(fd, at, 1);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                if (n == 0) {
                        if (len == 0 && !overflow)
                                return -ENODATA;
                        break;
                }
                if (*at == '\n')
                        break;
                if (overflow)
                        continue;
                if (++len > max)
                        overflow = true;
        }
        /* The newline, or the one byte past max, is wiped; the rest of a long line never lived. */
        b->data[overflow ? max : len] = 0;
        if (overflow)
                return -EOVERFLOW;
        if (len == 0)
                return -ENOMSG;
        b->len = len;
        *ret = TAKE_PTR(b);
        return 0;
}

int tty_prompt_secret(int fd, const char *prompt, size_t max, SecBuf **ret) {
        Tty t = {.fd = -1};
        int r;

        /* The human's Enter was not echoed: leaving ends the prompt's line for them, also when a
         * signal interrupts the prompt. */
        r = tty_enter(&t, fd, TTY_NOECHO, NULL, "\n");
        if (r < 0)
                return r;
        if (loop_write(fd, prompt, strlen(prompt)) < 0)
                r = -EIO;
        else
                r = tty_read_secret_line(fd, max, ret);
        tty_leave(&t);
        return r;
}
