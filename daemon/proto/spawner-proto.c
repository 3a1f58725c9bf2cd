/* The spawner's request table: decoding and checking the fixed-size messages of the engine and the
 * spawner. Pure: bytes and a count of fds in, a checked message or a named refusal out. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "spawner-proto.h"

static const char *const error_names[_SPAWNER_E_MAX] = {
        [SPAWNER_OK] = "ok",
        [SPAWNER_E_SIZE] = "a message of the wrong size",
        [SPAWNER_E_MAGIC] = "a message without the magic",
        [SPAWNER_E_VERSION] = "a message of another version",
        [SPAWNER_E_TYPE] = "a message of a type this side does not take",
        [SPAWNER_E_FIELD] = "a field out of range",
        [SPAWNER_E_FDS] = "the wrong number of file descriptors",
        [SPAWNER_E_TRUNCATED] = "a truncated message or control data",
};

const char *spawner_error_name(SpawnerError e) {
        return e >= 0 && e < _SPAWNER_E_MAX ? error_names[e] : "an unknown refusal";
}

/* The exact size of each type; 0 for a type that does not exist. */
static size_t type_size(uint16_t t) {
        switch (t) {
        case SPAWNER_HELLO:
                return sizeof(SpawnerHello);
        case SPAWNER_RUN:
                return sizeof(SpawnerRun);
        case SPAWNER_KILL:
                return sizeof(SpawnerKill);
        case SPAWNER_STOP:
                return sizeof(SpawnerStop);
        case SPAWNER_CONFINE:
                return sizeof(SpawnerConfine);
        case SPAWNER_NOTIFY:
                return sizeof(SpawnerNotify);
        case SPAWNER_WARM:
                return sizeof(SpawnerWarm);
        case SPAWNER_REPLY_HELLO:
                return sizeof(SpawnerReplyHello);
        case SPAWNER_REPLY_EXITED:
                return sizeof(SpawnerReplyExited);
        case SPAWNER_REPLY_CONFINED:
                return sizeof(SpawnerReplyConfined);
        case SPAWNER_REPLY_STARTED:
                return sizeof(SpawnerReplyStarted);
        default:
                return 0;
        }
}

bool spawner_unit_name_valid(const char *unit) {
        static const char prefix[] = "lockd-run-", suffix[] = ".scope";
        size_t n = strnlen(unit, SPAWNER_UNIT_MAX), digits;

        if (n >= SPAWNER_UNIT_MAX || n <= strlen(prefix) + strlen(suffix) ||
            strncmp(unit, prefix, strlen(prefix)) != 0 ||
            strcmp(unit + n - strlen(suffix), suffix) != 0)
                return false;
        digits = n - strlen(prefix) - strlen(suffix);
        if (digits > 20)
                return false;
        for (size_t i = strlen(prefix); i < n - strlen(suffix); i++)
                if (unit[i] < '0' || unit[i] > '9')
                        return false;
        return true;
}

void spawner_header_init(SpawnerHeader *h, SpawnerType t) {
        *h = (SpawnerHeader){
                .magic = SPAWNER_MAGIC,
                .version = SPAWNER_VERSION,
                .type = (uint16_t)t,
                .size = (uint32_t)type_size((uint16_t)t),
        };
}

size_t spawner_request_fds(const SpawnerMessage *m) {
        switch (m->h.type) {
        case SPAWNER_RUN:
                return 4 + !!(m->run.flags & SPAWNER_RUN_INPUTS) +
                       !!(m->run.flags & SPAWNER_RUN_DETAIL);
        case SPAWNER_CONFINE:
                return 1;
        default:
                return 0;
        }
}

/* The header of buf: its size must be exactly its type's, and the type one this side takes. */
static SpawnerError header_check(const void *buf, size_t n, bool request, SpawnerMessage *m) {
        SpawnerHeader h;
        size_t want;

        if (!buf || n < sizeof(SpawnerHeader) || n > sizeof(SpawnerMessage))
                return SPAWNER_E_SIZE;
        memcpy(&h, buf, sizeof(h));
        if (h.magic != SPAWNER_MAGIC)
                return SPAWNER_E_MAGIC;
        if (h.version != SPAWNER_VERSION)
                return SPAWNER_E_VERSION;
        want = type_size(h.type);
        if (want == 0 || (request != (h.type < 0x80)))
                return SPAWNER_E_TYPE;
        if (n != want || h.size != want)
                return SPAWNER_E_SIZE;
        if (h.zero != 0)
                return SPAWNER_E_FIELD;
        memset(m, 0, sizeof(*m));
        memcpy(m, buf, n);
        return SPAWNER_OK;
}

/* Every field of a request in range: a value the engine should never send is never believed. */
static bool request_fields_valid(const SpawnerMessage *m) {
        switch (m->h.type) {
        case SPAWNER_HELLO:
                return m->hello.pid > 0 && m->hello.zero == 0;
        case SPAWNER_RUN: {
                const SpawnerRun *r = &m->run;

                if (r->run_id == 0 || (r->flags & ~SPAWNER_RUN_FLAGS) != 0)
                        return false;
                if (r->protocol != 1 && r->protocol != 2)
                        return false;
                if (r->protocol == 1 && r->flags != 0)
                        return false;
                return r->cpu_s >= 1 && r->cpu_s <= SPAWNER_CPU_S_MAX && r->timeout_s >= 1 &&
                       r->timeout_s <= SPAWNER_TIMEOUT_S_MAX &&
                       r->memory_bytes >= SPAWNER_MEMORY_MIN &&
                       r->memory_bytes <= SPAWNER_MEMORY_MAX;
        }
        case SPAWNER_KILL:
                return m->kill.run_id > 0;
        case SPAWNER_STOP:
                return true;
        case SPAWNER_CONFINE:
                return m->confine.check_id > 0 && m->confine.pid > 0 && m->confine.zero == 0;
        case SPAWNER_WARM:
                return m->warm.timeout_s >= 1 && m->warm.timeout_s <= SPAWNER_TIMEOUT_S_MAX &&
                       m->warm.memory_bytes >= SPAWNER_MEMORY_MIN &&
                       m->warm.memory_bytes <= SPAWNER_MEMORY_MAX;
        case SPAWNER_NOTIFY:
                return m->notify.state >= SPAWNER_NOTIFY_READY &&
                       m->notify.state <= SPAWNER_NOTIFY_STOPPING && m->notify.zero == 0;
        default:
                return false;
        }
}

SpawnerError spawner_request_decode(const void *buf, size_t n, size_t n_fds, SpawnerMessage *ret) {
        SpawnerMessage m;
        SpawnerError e;

        e = header_check(buf, n, true, &m);
        if (e != SPAWNER_OK)
                return e;
        if (!request_fields_valid(&m))
                return SPAWNER_E_FIELD;
        if (n_fds != spawner_request_fds(&m))
                return SPAWNER_E_FDS;
        *ret = m;
        return SPAWNER_OK;
}

SpawnerError spawner_reply_decode(const void *buf, size_t n, size_t n_fds, SpawnerMessage *ret) {
        SpawnerMessage m;
        SpawnerError e;

        e = header_check(buf, n, false, &m);
        if (e != SPAWNER_OK)
                return e;
        if (n_fds != 0)
                return SPAWNER_E_FDS;
        switch (m.h.type) {
        case SPAWNER_REPLY_HELLO:
                if (m.reply_hello.scopes > 1 || m.reply_hello.runs_max == 0 ||
                    m.reply_hello.zero != 0)
                        return SPAWNER_E_FIELD;
                break;
        case SPAWNER_REPLY_STARTED:
                if (m.started.run_id == 0 || m.started.scoped > 1 ||
                    memchr(m.started.unit, 0, sizeof(m.started.unit)) == NULL)
                        return SPAWNER_E_FIELD;
                break;
        case SPAWNER_REPLY_EXITED:
                if (m.exited.run_id == 0 || (m.exited.flags & ~SPAWNER_EXITED_FLAGS) != 0 ||
                    m.exited.error > 0 || m.exited.error < -4095)
                        return SPAWNER_E_FIELD;
                break;
        case SPAWNER_REPLY_CONFINED:
                if (m.confined.check_id == 0 || m.confined.ok > 1 || m.confined.zero != 0 ||
                    m.confined.error > 0 || m.confined.error < -4095 ||
                    memchr(m.confined.unit, 0, sizeof(m.confined.unit)) == NULL)
                        return SPAWNER_E_FIELD;
                break;
        default:
                break;
        }
        *ret = m;
        return SPAWNER_OK;
}
