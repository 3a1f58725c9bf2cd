/* The one receive of the spawner's channel, both processes': a datagram and its fds off the
 * socket, decoded against the request table (spawner-proto.h), its fds closed when refused. */
#include <errno.h>
#include <stdbool.h>

#include "fd-util.h"
#include "macro.h"
#include "spawner-proto.h"

int spawner_receive(int fd, bool requests, SpawnerReceived *ret) {
        union {
                SpawnerMessage m;
                uint8_t bytes[SPAWNER_MESSAGE_MAX];
        } buf;
        bool cut = false;
        ssize_t n;

        ret->n_fds = 0;
        ret->error = SPAWNER_OK;
        /* Every fd received is ours now, whatever happens to the message; more than fds holds are
         * closed at once, and fail the count check below. */
        n = recv_datagram_fds(fd, &buf, sizeof(buf), ret->fds, ELEMENTSOF(ret->fds), &ret->n_fds,
                              &cut);
        if (n < 0)
                return (int)n;
        if (n == 0 && ret->n_fds == 0)
                return 0; /* the peer's end */
        if (cut)
                ret->error = SPAWNER_E_TRUNCATED;
        else
                ret->error = (requests ? spawner_request_decode : spawner_reply_decode)(
                        &buf, (size_t)n, ret->n_fds, &ret->m);
        if (ret->error == SPAWNER_OK)
                return 1;
        spawner_received_close(ret);
        return -EBADMSG;
}

void spawner_received_close(SpawnerReceived *r) {
        for (size_t i = 0; i < r->n_fds && i < ELEMENTSOF(r->fds); i++)
                r->fds[i] = safe_close(r->fds[i]);
}
