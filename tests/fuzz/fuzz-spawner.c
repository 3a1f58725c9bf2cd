/* libFuzzer target: the spawner's request decoder (and the engine's reply decoder) on arbitrary
 * datagrams never crash, and what they accept is exactly a message of its type's size, in range. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spawner-proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The first byte is the number of fds the datagram came with; the rest is the datagram. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        SpawnerMessage m, before;
        size_t n_fds;

        if (size < 1)
                return 0;
        n_fds = data[0] % (SPAWNER_FDS_MAX + 2);
        data++;
        size--;

        memset(&m, 0xa5, sizeof(m));
        before = m;
        if (spawner_request_decode(data, size, n_fds, &m) == SPAWNER_OK) {
                /* Accepted: a request type, its exact size, the fd count its flags say. */
                if (m.h.type >= 0x80 || m.h.size != size || spawner_request_fds(&m) != n_fds)
                        abort();
                if (m.h.type == SPAWNER_RUN && (m.run.run_id == 0 || m.run.timeout_s == 0 ||
                                                m.run.memory_bytes < SPAWNER_MEMORY_MIN ||
                                                (m.run.protocol != 1 && m.run.protocol != 2)))
                        abort();
                if (m.h.type == SPAWNER_WARM &&
                    (m.warm.timeout_s == 0 || m.warm.timeout_s > SPAWNER_TIMEOUT_S_MAX ||
                     m.warm.memory_bytes < SPAWNER_MEMORY_MIN ||
                     m.warm.memory_bytes > SPAWNER_MEMORY_MAX))
                        abort();
        } else if (memcmp(&m, &before, sizeof(m)) != 0)
                abort(); /* a refusal leaves the output untouched */

        memset(&m, 0xa5, sizeof(m));
        if (spawner_reply_decode(data, size, n_fds, &m) == SPAWNER_OK) {
                if (m.h.type < 0x80 || m.h.size != size || n_fds != 0)
                        abort();
                if (m.h.type == SPAWNER_REPLY_CONFINED &&
                    !memchr(m.confined.unit, 0, sizeof(m.confined.unit)))
                        abort();
        } else if (memcmp(&m, &before, sizeof(m)) != 0)
                abort();
        return 0;
}
