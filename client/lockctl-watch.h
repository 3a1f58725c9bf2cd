/* lockctl console's live feed: a WatchTickets call whose answers are read without blocking, so
 * its socket can be polled together with the terminal. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "varlink.h"

/* The longest answer buffered: a ticket is a few KiB, lockd's own default message cap is this. */
#define WATCH_MESSAGE_MAX VARLINK_DEFAULT_MESSAGE_BYTES

typedef struct Watch {
        VarlinkClient *client; /* owned; only its fd is used once the call is sent */
        char *buf;
        size_t len;
        bool ended; /* an answer without continues, or an error, arrived */
} Watch;

/*
 * Sends io.lockd.Console.WatchTickets with "more" on client (taken over: freed with the watch,
 * also on failure). From now on the client's own read functions must not be used. 0 or a
 * negative errno from the transport.
 */
int watch_start(Watch *w, VarlinkClient *client);

/* The socket to poll for POLLIN. */
int watch_fd(const Watch *w);

/*
 * Reads what the socket holds without blocking. 0 (also when nothing was there), -ECONNRESET when
 * lockd closed the connection, -EBADMSG when an answer grew past WATCH_MESSAGE_MAX, another
 * negative errno from recv().
 */
int watch_read(Watch *w);

/*
 * Takes the next complete answer from what watch_read() buffered. 1 with *ret_ticket (a new
 * reference; NULL for the first answer, which only says the watch is live); 0 when no complete
 * answer is buffered; -EREMOTEIO when lockd answered with an error (*ret_error its name, a new
 * string) or ended the stream (*ret_error NULL); -EBADMSG for a malformed answer or a ticket that
 * is no object with a string "ticket". After a negative return the watch is over.
 */
int watch_next(Watch *w, json_t **ret_ticket, char **ret_error);

/* Frees the buffer and the client; the Watch may be started again. */
void watch_done(Watch *w);
