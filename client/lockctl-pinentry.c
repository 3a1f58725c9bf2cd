/* A pinentry program (GnuPG's family: pinentry-gnome3, -gtk2, -qt, -curses, -tty) driven over
 * pipes with the Assuan protocol, for the human's yes and typed values (ARCHITECTURE.md, the
 * human's side). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "lockctl-pinentry.h"
#include "macro.h"

/* The buffer of lines read: two lines' worth. */
#define PINENTRY_BUF_SIZE (2 * PINENTRY_LINE_MAX)
/* Lines one command may be answered with (status lines, comments, data) before its OK or ERR. */
#define PINENTRY_LINES_MAX 256
/* How long pinentry may take to end after BYE before it is killed. */
#define PINENTRY_END_MS 2000

/* libgpg-error's codes (the low 16 bits of an ERR line's number) that mean the human said no. */
#define GPG_ERR_CANCELED       99
#define GPG_ERR_NOT_CONFIRMED  114
#define GPG_ERR_FULLY_CANCELED 198

static struct sigaction saved_sigpipe;
static bool sigpipe_ignored;

static bool is_hex(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int hex_value(char c) {
        return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

int pinentry_escape(const char *s, size_t len, bool accel, char *out, size_t size) {
        size_t o = 0;

        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];
                size_t need = c == '%' || c < 0x20 || c == 0x7f ? 3 : accel && c == '_' ? 2 : 1;

                if (o + need >= size)
                        return -ENOBUFS;
                if (need == 3)
                        o += (size_t)snprintf(out + o, size - o, "%%%02X", c);
                else {
                        out[o++] = (char)c;
                        if (need == 2)
                                out[o++] = '_';
                }
        }
        if (o >= size)
                return -ENOBUFS;
        out[o] = 0;
        return 0;
}

int pinentry_unescape(const char *s, size_t len, uint8_t *out, size_t size, size_t *n) {
        for (size_t i = 0; i < len; i++) {
                uint8_t c = (uint8_t)s[i];

                if (c == '%') {
                        if (i + 2 >= len || !is_hex(s[i + 1]) || !is_hex(s[i + 2]))
                                return -EBADMSG;
                        c = (uint8_t)(hex_value(s[i + 1]) << 4 | hex_value(s[i + 2]));
                        i += 2;
                }
                if (*n >= size)
                        return -EOVERFLOW;
                out[(*n)++] = c;
        }
        return 0;
}

/* Writes the whole line cmd + LF. */
static int send_line(Pinentry *p, const char *cmd) {
        size_t n = strlen(cmd);

        if (n + 1 > PINENTRY_LINE_MAX)
                return -E2BIG;
        if (loop_write(p->to, cmd, n) < 0 || loop_write(p->to, "\n", 1) < 0)
                return -EPIPE;
        return 0;
}

/*
 * Reads the next line (its LF dropped, NUL-terminated in place) from pinentry into the locked
 * buffer. *ret points into the buffer until take_line() drops it. A line longer than the
 * protocol's limit or holding a NUL is -EPROTO; the end of its output -EPIPE.
 */
static int read_line(Pinentry *p, char **ret, size_t *ret_len) {
        for (;;) {
                char *nl = memchr(p->buf, '\n', p->len);
                ssize_t k;

                if (nl) {
                        /* The protocol's limit holds for the line with its LF, however many
                         * lines one read brought. */
                        if ((size_t)(nl - p->buf) + 1 > PINENTRY_LINE_MAX)
                                return -EPROTO;
                        *nl = 0;
                        if (strlen(p->buf) != (size_t)(nl - p->buf))
                                return -EPROTO;
                        *ret = p->buf;
                        *ret_len = (size_t)(nl - p->buf);
                        return 0;
                }
                if (p->len >= PINENTRY_LINE_MAX)
                        return -EPROTO;
                k = read(p->from, p->buf + p->len, PINENTRY_BUF_SIZE - p->len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return negative_errno();
                if (k == 0)
                        return -EPIPE;
                p->len += (size_t)k;
        }
}

/* Drops the line read_line() returned (len bytes and its LF) and wipes its bytes. */
static void take_line(Pinentry *p, size_t len) {
        size_t used = len + 1;

        memmove(p->buf, p->buf + used, p->len - used);
        explicit_bzero(p->buf + p->len - used, used);
        p->len -= used;
}

/*
 * Sends cmd and reads its answer up to OK (0) or ERR (-EREMOTEIO with *ret_code, its number).
 * D lines are decoded into data (size bytes, *n counts; a NULL data refuses them: -EPROTO); past
 * size the rest is drained and -EOVERFLOW returned once the answer ends. Status lines and
 * comments are skipped; an INQUIRE (pinentry never needs one from lockctl) is answered CAN.
 */
static int transact(Pinentry *p, const char *cmd, uint8_t *data, size_t size, size_t *n,
                    unsigned *ret_code) {
        bool overflow = false;
        int r;

        r = send_line(p, cmd);
        if (r < 0)
                return r;
        for (unsigned lines = 0; lines < PINENTRY_LINES_MAX; lines++) {
                char *l;
                size_t len;

                r = read_line(p, &l, &len);
                if (r < 0)
                        return r;
                if (strcmp(l, "OK") == 0 || strncmp(l, "OK ", 3) == 0) {
                        take_line(p, len);
                        return overflow ? -EOVERFLOW : 0;
                }
                if (strncmp(l, "ERR ", 4) == 0) {
                        char *end;
                        unsigned long code;

                        errno = 0;
                        code = strtoul(l + 4, &end, 10);
                        take_line(p, len);
                        if (errno != 0 || end == l + 4)
                                return -EPROTO;
                        *ret_code = (unsigned)(code & 0xffff);
                        return -EREMOTEIO;
                }
                if (strncmp(l, "D ", 2) == 0) {
                        if (!data) {
                                take_line(p, len);
                                return -EPROTO;
                        }
                        r = overflow ? 0 : pinentry_unescape(l + 2, len - 2, data, size, n);
                        take_line(p, len);
                        if (r == -EOVERFLOW)
                                overflow = true;
                        else if (r < 0)
                                return r;
                        continue;
                }
                if (strncmp(l, "INQUIRE ", 8) == 0) {
                        take_line(p, len);
                        r = send_line(p, "CAN");
                        if (r < 0)
                                return r;
                        continue;
                }
                if (strcmp(l, "S") == 0 || strncmp(l, "S ", 2) == 0 || l[0] == '#') {
                        take_line(p, len);
                        continue;
                }
                take_line(p, len);
                return -EPROTO;
        }
        return -EPROTO;
}

/* A command whose answer must be OK. */
static int command(Pinentry *p, const char *cmd) {
        unsigned code = 0;

        return transact(p, cmd, NULL, 0, NULL, &code);
}

/*
 * Sends "VERB text", text percent-escaped and cut (ending in "...") to fit one line. A NULL
 * text sends nothing.
 */
static int command_text(Pinentry *p, const char *verb, const char *text, bool accel) {
        char line[PINENTRY_LINE_MAX];
        size_t vl = strlen(verb), len;

        if (!text)
                return 0;
        len = strlen(text);
        memcpy(line, verb, vl);
        line[vl] = ' ';
        for (;;) {
                size_t room = sizeof(line) - vl - 1 - 4;

                if (pinentry_escape(text, len, accel, line + vl + 1, room) == 0) {
                        if (len < strlen(text))
                                strcat(line, "...");
                        return command(p, line);
                }
                len = len > 32 ? len - 32 : 0;
        }
}

int pinentry_start(Pinentry *p, const char *program, int tty) {
        int to[2] = {-1, -1}, from[2] = {-1, -1};
        struct sigaction ign = {.sa_handler = SIG_IGN};
        char name[256], line[PINENTRY_LINE_MAX];
        const char *term = getenv("TERM");
        void *buf = NULL;
        char *l;
        size_t len;
        pid_t pid;
        int r;

        *p = (Pinentry){.pid = -1, .to = -1, .from = -1};
        if (!program || !*program)
                program = PINENTRY_DEFAULT;
        /* The buffer holds a typed value's D line: locked memory, wiped on free. */
        r = secmem_alloc(PINENTRY_BUF_SIZE + 1, &buf);
        if (r < 0)
                return r;
        p->buf = buf;
        if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0) {
                r = negative_errno();
                safe_close(to[0]);
                safe_close(to[1]);
                pinentry_done(p);
                return r;
        }
        pid = fork();
        if (pid < 0) {
                r = negative_errno();
                safe_close(to[0]);
                safe_close(to[1]);
                safe_close(from[0]);
                safe_close(from[1]);
                pinentry_done(p);
                return r;
        }
        if (pid == 0) {
                /* The child: the pipes as stdin and stdout, stderr as lockctl's, nothing else.
                 * Locked memory is zero here (MADV_WIPEONFORK). */
                if (dup2(to[0], STDIN_FILENO) < 0 || dup2(from[1], STDOUT_FILENO) < 0)
                        _exit(127);
                (void)close_range(3, ~0U, 0);
                execlp(program, program, (char *)NULL);
                _exit(127);
        }
        safe_close(to[0]);
        safe_close(from[1]);
        p->pid = pid;
        p->to = to[1];
        p->from = from[0];
        /* A pinentry that ended makes a write fail with EPIPE, not end lockctl. */
        if (!sigpipe_ignored && sigaction(SIGPIPE, &ign, &saved_sigpipe) == 0)
                sigpipe_ignored = true;

        r = read_line(p, &l, &len);
        if (r < 0)
                goto fail;
        if (strcmp(l, "OK") != 0 && strncmp(l, "OK ", 3) != 0) {
                take_line(p, len);
                r = -EPROTO;
                goto fail;
        }
        take_line(p, len);
        /* A curses pinentry draws on lockctl's terminal: its name and type. Only these options;
         * never one that lets pinentry keep a value (allow-external-password-cache) and never
         * SETKEYINFO, which names a cache entry. */
        if (tty >= 0 && ttyname_r(tty, name, sizeof(name)) == 0) {
                snprintf(line, sizeof(line), "OPTION ttyname=");
                r = pinentry_escape(name, strlen(name), false, line + strlen(line),
                                    sizeof(line) - strlen(line));
                if (r == 0) {
                        unsigned code;

                        r = transact(p, line, NULL, 0, NULL, &code);
                        if (r < 0 && r != -EREMOTEIO)
                                goto fail;
                }
                if (term && *term) {
                        snprintf(line, sizeof(line), "OPTION ttytype=");
                        r = pinentry_escape(term, strlen(term), false, line + strlen(line),
                                            sizeof(line) - strlen(line));
                        if (r == 0) {
                                unsigned code;

                                r = transact(p, line, NULL, 0, NULL, &code);
                                if (r < 0 && r != -EREMOTEIO)
                                        goto fail;
                        }
                }
        }
        return 0;
fail:
        pinentry_done(p);
        return r == -EPIPE ? -ENOENT : r;
}

/*
 * Sets the window's texts: title, description, prompt (may be NULL), buttons. The description
 * and the prompt carry the question and the value's name: a pinentry that refuses them is not
 * asked anything. The title and the buttons' words are cosmetic: an error there is passed over.
 */
static int set_texts(Pinentry *p, const char *title, const char *desc, const char *prompt,
                     const char *ok, const char *cancel) {
        int r;

        r = command_text(p, "SETTITLE", title, false);
        if (r < 0 && r != -EREMOTEIO)
                return r;
        r = command_text(p, "SETDESC", desc, false);
        if (r >= 0)
                r = command_text(p, "SETPROMPT", prompt, true);
        if (r < 0)
                return r;
        r = command_text(p, "SETOK", ok, true);
        if (r >= 0 || r == -EREMOTEIO)
                r = command_text(p, "SETCANCEL", cancel, true);
        return r == -EREMOTEIO ? 0 : r;
}

/* The human said no: Cancel, the window closed, CONFIRM's "not confirmed". Any other error (a
 * timeout, no display) is no answer at all. */
static bool canceled(unsigned code) {
        return code == GPG_ERR_CANCELED || code == GPG_ERR_NOT_CONFIRMED ||
               code == GPG_ERR_FULLY_CANCELED;
}

int pinentry_confirm(Pinentry *p, const char *title, const char *desc, const char *ok,
                     const char *cancel, PinentryAnswer *ret) {
        unsigned code = 0;
        int r;

        r = set_texts(p, title, desc, NULL, ok, cancel);
        if (r < 0)
                return r;
        r = transact(p, "CONFIRM", NULL, 0, NULL, &code);
        if (r == -EREMOTEIO && canceled(code)) {
                *ret = PINENTRY_CANCELED;
                return 0;
        }
        if (r < 0)
                return r;
        *ret = PINENTRY_OK;
        return 0;
}

int pinentry_getpin(Pinentry *p, const char *title, const char *desc, const char *prompt,
                    size_t max, PinentryAnswer *ret, SecBuf **ret_value) {
        _cleanup_(secmem_freep) void *data = NULL;
        unsigned code = 0;
        size_t n = 0;
        int r;

        r = set_texts(p, title, desc, prompt, "OK", "Cancel");
        if (r < 0)
                return r;
        r = secmem_alloc(max, &data);
        if (r < 0)
                return r;
        r = transact(p, "GETPIN", data, max, &n, &code);
        if (r == -EREMOTEIO && canceled(code)) {
                *ret = PINENTRY_CANCELED;
                return 0;
        }
        if (r < 0)
                return r;
        if (n == 0)
                return -ENOMSG;
        r = secbuf_new_copy(data, n, ret_value);
        if (r < 0)
                return r;
        *ret = PINENTRY_OK;
        return 0;
}

void pinentry_done(Pinentry *p) {
        if (p->to >= 0)
                (void)send_line(p, "BYE");
        p->to = safe_close(p->to);
        p->from = safe_close(p->from);
        if (p->pid > 0) {
                for (int i = 0; i < PINENTRY_END_MS / 10; i++) {
                        pid_t w = waitpid(p->pid, NULL, WNOHANG);

                        if (w != 0)
                                break;
                        (void)nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
                        if (i + 1 == PINENTRY_END_MS / 10) {
                                (void)kill(p->pid, SIGKILL);
                                (void)waitpid(p->pid, NULL, 0);
                        }
                }
                p->pid = -1;
        }
        if (p->buf)
                p->buf = secmem_free(p->buf);
        p->len = 0;
        if (sigpipe_ignored) {
                (void)sigaction(SIGPIPE, &saved_sigpipe, NULL);
                sigpipe_ignored = false;
        }
}
