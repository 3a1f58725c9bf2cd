/* A pinentry program (GnuPG's family: pinentry-gnome3, -gtk2, -qt, -curses, -tty) driven over
 * pipes with the Assuan protocol, for the human's yes and typed values (ARCHITECTURE.md, the
 * human's side). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "secmem.h"

/* The program run when --pinentry names none: gpg-agent's default pinentry-program. */
#define PINENTRY_DEFAULT "pinentry"
/* One Assuan line, its LF included (the protocol's limit). */
#define PINENTRY_LINE_MAX 1000

typedef struct Pinentry {
        pid_t pid;
        int to;   /* its stdin */
        int from; /* its stdout */
        /* What was read and not yet taken, in locked memory: a D line holds a typed value. */
        char *buf;
        size_t len;
} Pinentry;

/* What the human answered. */
typedef enum PinentryAnswer {
        PINENTRY_OK,       /* confirmed, or a value typed */
        PINENTRY_CANCELED, /* Cancel (or the dialog closed); for CONFIRM also its "not confirmed" */
} PinentryAnswer;

/*
 * Starts program (PATH is searched; NULL: PINENTRY_DEFAULT) with pipes as its stdin and stdout,
 * reads its greeting and, when lockctl has a terminal (tty >= 0), tells it the terminal's name
 * and type for a curses pinentry. Never sends SETKEYINFO nor any option that lets pinentry keep
 * or cache a value. 0 with *p filled, or a negative errno (-ENOENT the program cannot run,
 * -EPROTO it does not speak Assuan).
 */
int pinentry_start(Pinentry *p, const char *program, int tty);

/*
 * Asks yes or no: SETTITLE title, SETDESC desc, SETOK ok, SETCANCEL cancel, CONFIRM. Strings are
 * percent-escaped (and the buttons' underscores doubled). 0 with *ret, or a negative errno: the
 * program failed, answered something else than the protocol allows, or gave an error other than
 * a cancel (such as its timeout, which never counts as an answer).
 */
int pinentry_confirm(Pinentry *p, const char *title, const char *desc, const char *ok,
                     const char *cancel, PinentryAnswer *ret);

/*
 * Asks for a value: SETTITLE, SETDESC desc, SETPROMPT prompt, SETOK, SETCANCEL, GETPIN. The
 * answer's D lines are decoded straight into locked memory. 0 with *ret and, for PINENTRY_OK,
 * *ret_value (1..max bytes); -ENOMSG for an empty value, -EOVERFLOW for a longer one (wiped),
 * another negative errno as pinentry_confirm().
 */
int pinentry_getpin(Pinentry *p, const char *title, const char *desc, const char *prompt,
                    size_t max, PinentryAnswer *ret, SecBuf **ret_value);

/* Says BYE, closes the pipes and waits for the program (killing it if it does not end); wipes
 * the buffer. A no-op for a Pinentry never started. */
void pinentry_done(Pinentry *p);

/*
 * Percent-escapes len bytes of s for an Assuan command's argument into out (size bytes): '%',
 * CR, LF and every byte below 0x20 or 0x7f become %XX; with accel, '_' becomes "__" (pinentry
 * reads one underscore as a keyboard accelerator). -ENOBUFS when out is too small.
 */
int pinentry_escape(const char *s, size_t len, bool accel, char *out, size_t size);

/*
 * Decodes the percent-escapes of an Assuan D line's data (len bytes at s) into out (at most
 * size bytes), adding to *n. -EBADMSG for a '%' not followed by two hex digits, -EOVERFLOW when
 * out is full.
 */
int pinentry_unescape(const char *s, size_t len, uint8_t *out, size_t size, size_t *n);
