/* libFuzzer target: the spawner's request decoder (and the engine's reply decoder) on arbitrary
 * datagrams never crash, and what they accept is exactly a message of its type's row in the
 * request table: its size, in range, with the fds its flags say, each of a kind the row names. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spawner-proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An accepted message against its row: the row's size, its fields valid, the fd count between
 * the row's least and most and each fd of a kind the row has a slot for. */
static void check_row(const SpawnerMessage *m, size_t size, size_t n_fds) {
        const SpawnerMessageRow *row = spawner_message_row(m->h.type);
        SpawnerFdKind kinds[SPAWNER_FDS_MAX];
        size_t n;

        if (!row || row->size != size || m->h.size != size || !row->valid(m))
                abort();
        n = spawner_message_fds(m, kinds);
        if (n != n_fds || n < row->fds_min || n > row->fds_max)
                abort();
        for (size_t i = 0, k = 0; i < n; i++, k++) {
                /* Slots are taken in order, the optional ones skipped when not attached. */
                while (k < row->fds_max && row->fds[k].kind != kinds[i])
                        k++;
                if (k == row->fds_max)
                        abort();
        }
}

/* The first byte is the number of fds the datagram came with; the rest is the datagram. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        SpawnerMessage m, before;
        uint16_t bad = 0;
        size_t n_fds;

        /* One row per type, each consistent: what the decoders below read. */
        if (!spawner_table_valid(&bad))
                abort();
        if (size < 1)
                return 0;
        n_fds = data[0] % (SPAWNER_FDS_MAX + 2);
        data++;
        size--;

        memset(&m, 0xa5, sizeof(m));
        before = m;
        if (spawner_request_decode(data, size, n_fds, &m) == SPAWNER_OK) {
                /* Accepted: a request type, its exact size, the fd count its flags say. */
                if (m.h.type >= 0x80 || spawner_request_fds(&m) != n_fds)
                        abort();
                check_row(&m, size, n_fds);
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
                if (m.h.type < 0x80 || n_fds != 0)
                        abort();
                check_row(&m, size, n_fds);
                if (m.h.type == SPAWNER_REPLY_CONFINED &&
                    !memchr(m.confined.unit, 0, sizeof(m.confined.unit)))
                        abort();
                if (m.h.type == SPAWNER_REPLY_EXITED &&
                    ((m.exited.flags & SPAWNER_EXITED_SCOPED)
                             ? !spawner_unit_name_valid(m.exited.unit)
                             : m.exited.unit[0] != 0))
                        abort();
        } else if (memcmp(&m, &before, sizeof(m)) != 0)
                abort();
        return 0;
}
