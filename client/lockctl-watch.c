/* lockctl console's live feed: a WatchTickets call whose answers are read without blocking, so
 * its socket can be polled together with the terminal. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "lockctl-watch.h"
#include "macro.h"

#define WATCH_READ_CHUNK ((size_t)64 * 1024)

int watch_start(Watch *w, VarlinkClient *client) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = client;
        _cleanup_(json_decrefp) json_t *m = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        m = json_pack("{s:s, s:{}, s:b}", "method", "io.lockd.Console.WatchTickets", "parameters",
                      "more", true);
        if (!m)
                return -ENOMEM;
        r = varlink_message_format(m, &buf, &len);
        if (r < 0)
                return r;
        r = varlink_client_send_raw(c, buf, len, NULL, 0);
        if (r < 0)
                return r;
        *w = (Watch){.client = TAKE_PTR(c)};
        return 0;
}

int watch_fd(const Watch *w) {
        return w->client ? varlink_client_fd(w->client) : -1;
}

int watch_read(Watch *w) {
        for (;;) {
                ssize_t k;

                if (w->len >= WATCH_MESSAGE_MAX && !memchr(w->buf, 0, w->len))
                        return -EBADMSG;
                if (!w->buf) {
                        /* One allocation for the longest answer and a chunk past it. */
                        w->buf = malloc(WATCH_MESSAGE_MAX + WATCH_READ_CHUNK);
                        if (!w->buf)
                                return -ENOMEM;
                }
                if (w->len >= WATCH_MESSAGE_MAX)
                        return 0; /* complete answers wait to be taken first */
                k = recv(varlink_client_fd(w->client), w->buf + w->len, WATCH_READ_CHUNK,
                         MSG_DONTWAIT);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return errno == EAGAIN ? 0 : negative_errno();
                if (k == 0)
                        return -ECONNRESET;
                w->len += (size_t)k;
        }
}

int watch_next(Watch *w, json_t **ret_ticket, char **ret_error) {
        _cleanup_(json_decrefp) json_t *params = NULL;
        _cleanup_free_ char *error = NULL;
        char *nul = w->buf ? memchr(w->buf, 0, w->len) : NULL;
        bool continues = false;
        json_t *t;
        size_t n;
        int r;

        if (w->ended)
                return -EREMOTEIO;
        if (!nul)
                return 0;
        n = (size_t)(nul - w->buf);
        r = varlink_message_parse_reply(w->buf, n, &params, &error, &continues);
        memmove(w->buf, nul + 1, w->len - n - 1);
        w->len -= n + 1;
        if (r < 0) {
                w->ended = true;
                return -EBADMSG;
        }
        if (error || !continues) {
                w->ended = true;
                *ret_error = TAKE_PTR(error);
                return -EREMOTEIO;
        }
        t = json_object_get(params, "ticket");
        if (t && (!json_is_object(t) || !json_is_string(json_object_get(t, "ticket")))) {
                w->ended = true;
                return -EBADMSG;
        }
        *ret_ticket = t ? json_incref(t) : NULL;
        return 1;
}

void watch_done(Watch *w) {
        w->client = varlink_client_free(w->client);
        w->buf = mfree(w->buf);
        w->len = 0;
        w->ended = false;
}
