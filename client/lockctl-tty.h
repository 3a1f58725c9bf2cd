/* lockctl's terminal: echo off for a typed secret, raw mode for the console view, and the
 * guarantee that the terminal comes back as it was on every exit, a signal's included. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <termios.h>

#include "secmem.h"

typedef enum TtyMode {
        TTY_NOECHO, /* lines as usual (ICANON), nothing echoed: a secret is typed */
        TTY_RAW,    /* every key at once, nothing echoed, no flow control: the console view */
} TtyMode;

/* A terminal whose mode lockctl changed: the mode it had before, to put back. */
typedef struct Tty {
        int fd;
        bool active;
        struct termios saved;
} Tty;

/*
 * Opens the controlling terminal (/dev/tty, O_RDWR | O_NOCTTY | O_CLOEXEC): never stdin or
 * stdout, which may be a pipe or a file another program reads. Returns the fd, or -ENXIO when
 * the process has no terminal.
 */
int tty_open(void);

/*
 * Switches the terminal fd to mode, after writing enter (may be NULL: escape sequences such as
 * the alternate screen). Until tty_leave(), SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGTSTP put the
 * saved mode back and write leave (may be NULL) first, then take their usual effect; a stopped
 * lockctl that is continued gets enter and mode back. One terminal at a time: -EBUSY while
 * another is entered. 0 with *t filled, or a negative errno (-ENOTTY when fd is no terminal)
 * with the terminal and the signal dispositions unchanged.
 */
int tty_enter(Tty *t, int fd, TtyMode mode, const char *enter, const char *leave);

/* Writes the leave sequence, puts the saved mode back and the signal dispositions; a no-op for a
 * terminal not entered. Typed-ahead input is discarded (TCSAFLUSH): none of it goes to the shell.
 */
void tty_leave(Tty *t);

/*
 * Reads one line from fd into secure memory, byte by byte so nothing after the newline is
 * consumed: at most max bytes before the newline, which is dropped (nothing else is trimmed).
 * No copy of the line exists outside *ret. Returns 0 with *ret (1..max bytes); -ENOMSG for an
 * empty line; -EOVERFLOW for a longer line, whose rest is read up to its newline and dropped, so
 * none of it is left for whoever reads fd next (a shell); -ENODATA at the end of input before
 * any byte; another negative errno when reading or allocating failed. *ret untouched on failure,
 * every byte read wiped.
 */
int tty_read_secret_line(int fd, size_t max, SecBuf **ret);

/*
 * Writes prompt to the terminal fd, turns echo off (discarding what was typed ahead) and reads a
 * line with tty_read_secret_line(), then puts the terminal back and ends the line the human did
 * not see echoed. The same returns as tty_read_secret_line(), or -EBUSY / -ENOTTY / -EIO from the
 * terminal.
 */
int tty_prompt_secret(int fd, const char *prompt, size_t max, SecBuf **ret);
