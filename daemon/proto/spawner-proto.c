/* The spawner's request table: one row per message type of the engine and the spawner, and the
 * decoder that checks a datagram against it. Pure: bytes and a count of fds in, a checked message
 * or a named refusal out (spawner-receive.c reads them off the channel). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
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

static bool hello_valid(const SpawnerMessage *m) {
        return m->hello.pid > 0 && m->hello.zero == 0;
}

static bool run_valid(const SpawnerMessage *m) {
        const SpawnerRun *r = &m->run;

        if (r->run_id == 0 || (r->flags & ~SPAWNER_RUN_FLAGS) != 0)
                return false;
        if (r->protocol != 1 && r->protocol != 2)
                return false;
        if (r->protocol == 1 && r->flags != 0)
                return false;
        return r->cpu_s >= 1 && r->cpu_s <= SPAWNER_CPU_S_MAX && r->timeout_s >= 1 &&
               r->timeout_s <= SPAWNER_TIMEOUT_S_MAX && r->memory_bytes >= SPAWNER_MEMORY_MIN &&
               r->memory_bytes <= SPAWNER_MEMORY_MAX;
}

static uint32_t run_fd_flags(const SpawnerMessage *m) {
        return m->run.flags;
}

static bool kill_valid(const SpawnerMessage *m) {
        return m->kill.run_id > 0;
}

static bool stop_valid(const SpawnerMessage *m) {
        return true;
}

static bool confine_valid(const SpawnerMessage *m) {
        return m->confine.check_id > 0 && m->confine.pid > 0 && m->confine.zero == 0;
}

static bool notify_valid(const SpawnerMessage *m) {
        return m->notify.state >= SPAWNER_NOTIFY_READY &&
               m->notify.state <= SPAWNER_NOTIFY_STOPPING && m->notify.zero == 0;
}

static bool warm_valid(const SpawnerMessage *m) {
        return m->warm.timeout_s >= 1 && m->warm.timeout_s <= SPAWNER_TIMEOUT_S_MAX &&
               m->warm.memory_bytes >= SPAWNER_MEMORY_MIN &&
               m->warm.memory_bytes <= SPAWNER_MEMORY_MAX;
}

static bool errno_valid(int32_t error) {
        return error <= 0 && error >= -4095;
}

static bool reply_hello_valid(const SpawnerMessage *m) {
        return m->reply_hello.scopes <= 1 && m->reply_hello.runs_max != 0 &&
               m->reply_hello.zero == 0;
}

/* A scoped end names its unit in the form the spawner makes (the engine reports it and the
 * console shows it); any other has none. */
static bool exited_valid(const SpawnerMessage *m) {
        const SpawnerReplyExited *x = &m->exited;

        if (x->run_id == 0 || (x->flags & ~SPAWNER_EXITED_FLAGS) != 0 || !errno_valid(x->error) ||
            !memchr(x->unit, 0, sizeof(x->unit)))
                return false;
        return x->flags & SPAWNER_EXITED_SCOPED ? spawner_unit_name_valid(x->unit)
                                                : x->unit[0] == 0;
}

static bool confined_valid(const SpawnerMessage *m) {
        return m->confined.check_id != 0 && m->confined.ok <= 1 && m->confined.zero == 0 &&
               errno_valid(m->confined.error) &&
               memchr(m->confined.unit, 0, sizeof(m->confined.unit)) != NULL;
}

#define MEMFD          SPAWNER_FD_SEALED_MEMFD
#define PIPE_W         SPAWNER_FD_PIPE_WRITE
#define ROW(t, s, ...) .type = SPAWNER_##t, .name = #t, .size = sizeof(s), __VA_ARGS__

/* The contract, one row per message type. A RUN's fds: the binary, the input, the inputs (with
 * SPAWNER_RUN_INPUTS), stdout, stderr, the detail pipe (with SPAWNER_RUN_DETAIL). */
const SpawnerMessageRow spawner_messages[] = {
        {ROW(HELLO, SpawnerHello, .valid = hello_valid)},
        {ROW(RUN, SpawnerRun, .fds_min = 4, .fds_max = 6,
             .fds = {{MEMFD},
                     {MEMFD},
                     {MEMFD, SPAWNER_RUN_INPUTS},
                     {PIPE_W},
                     {PIPE_W},
                     {PIPE_W, SPAWNER_RUN_DETAIL}},
             .fd_flags = run_fd_flags, .valid = run_valid)},
        {ROW(KILL, SpawnerKill, .valid = kill_valid)},
        {ROW(STOP, SpawnerStop, .valid = stop_valid)},
        {ROW(CONFINE, SpawnerConfine, .fds_min = 1, .fds_max = 1, .fds = {{SPAWNER_FD_PIDFD}},
             .valid = confine_valid)},
        {ROW(NOTIFY, SpawnerNotify, .valid = notify_valid)},
        {ROW(WARM, SpawnerWarm, .valid = warm_valid)},
        {ROW(REPLY_HELLO, SpawnerReplyHello, .valid = reply_hello_valid)},
        {ROW(REPLY_EXITED, SpawnerReplyExited, .valid = exited_valid)},
        {ROW(REPLY_CONFINED, SpawnerReplyConfined, .valid = confined_valid)},
};
const size_t spawner_n_messages = ELEMENTSOF(spawner_messages);

#undef ROW
#undef PIPE_W
#undef MEMFD

const SpawnerMessageRow *spawner_message_row(uint16_t t) {
        for (size_t i = 0; i < spawner_n_messages; i++)
                if (spawner_messages[i].type == t)
                        return &spawner_messages[i];
        return NULL;
}

bool spawner_table_valid(uint16_t *ret_type) {
        for (size_t i = 0; i < spawner_n_messages; i++) {
                const SpawnerMessageRow *row = &spawner_messages[i];
                size_t always = 0, slots = 0;
                bool ok = row->type != 0 && row->name && row->valid &&
                          row->size >= sizeof(SpawnerHeader) && row->size <= SPAWNER_MESSAGE_MAX &&
                          row->size <= sizeof(SpawnerMessage) && row->fds_max <= SPAWNER_FDS_MAX &&
                          spawner_message_row(row->type) == row;

                for (size_t k = 0; k < SPAWNER_FDS_MAX && row->fds[k].kind != 0; k++) {
                        slots++;
                        always += row->fds[k].flag == 0;
                        /* An optional fd needs the flags that attach it. */
                        ok = ok && (row->fds[k].flag == 0 || row->fd_flags);
                }
                if (!ok || always != row->fds_min || slots != row->fds_max) {
                        if (ret_type)
                                *ret_type = row->type;
                        return false;
                }
        }
        return true;
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
        const SpawnerMessageRow *row = spawner_message_row((uint16_t)t);

        *h = (SpawnerHeader){
                .magic = SPAWNER_MAGIC,
                .version = SPAWNER_VERSION,
                .type = (uint16_t)t,
                .size = row ? row->size : 0,
        };
}

size_t spawner_message_fds(const SpawnerMessage *m, SpawnerFdKind kinds[SPAWNER_FDS_MAX]) {
        const SpawnerMessageRow *row = spawner_message_row(m->h.type);
        uint32_t flags;
        size_t n = 0;

        if (!row)
                return 0;
        flags = row->fd_flags ? row->fd_flags(m) : 0;
        for (size_t k = 0; k < row->fds_max; k++) {
                if (row->fds[k].flag != 0 && !(flags & row->fds[k].flag))
                        continue;
                if (kinds)
                        kinds[n] = row->fds[k].kind;
                n++;
        }
        return n;
}

size_t spawner_request_fds(const SpawnerMessage *m) {
        return m->h.type < 0x80 ? spawner_message_fds(m, NULL) : 0;
}

/* The header of buf: its size must be exactly its type's, and the type one this side takes. */
static SpawnerError header_check(const void *buf, size_t n, bool request, SpawnerMessage *m) {
        const SpawnerMessageRow *row;
        SpawnerHeader h;

        if (!buf || n < sizeof(SpawnerHeader) || n > sizeof(SpawnerMessage))
                return SPAWNER_E_SIZE;
        memcpy(&h, buf, sizeof(h));
        if (h.magic != SPAWNER_MAGIC)
                return SPAWNER_E_MAGIC;
        if (h.version != SPAWNER_VERSION)
                return SPAWNER_E_VERSION;
        row = spawner_message_row(h.type);
        if (!row || (request != (h.type < 0x80)))
                return SPAWNER_E_TYPE;
        if (n != row->size || h.size != row->size)
                return SPAWNER_E_SIZE;
        if (h.zero != 0)
                return SPAWNER_E_FIELD;
        memset(m, 0, sizeof(*m));
        memcpy(m, buf, n);
        return SPAWNER_OK;
}

/* A message of this side's: its header, every field in range (a value the peer should never
 * send is never believed), the exact fd count its type and flags say (a reply's, which carries
 * none, before its fields). */
static SpawnerError decode(const void *buf, size_t n, size_t n_fds, bool request,
                           SpawnerMessage *ret) {
        SpawnerMessage m;
        SpawnerError e;

        e = header_check(buf, n, request, &m);
        if (e != SPAWNER_OK)
                return e;
        if (!request && n_fds != spawner_message_fds(&m, NULL))
                return SPAWNER_E_FDS;
        if (!spawner_message_row(m.h.type)->valid(&m))
                return SPAWNER_E_FIELD;
        if (n_fds != spawner_message_fds(&m, NULL))
                return SPAWNER_E_FDS;
        *ret = m;
        return SPAWNER_OK;
}

SpawnerError spawner_request_decode(const void *buf, size_t n, size_t n_fds, SpawnerMessage *ret) {
        return decode(buf, n, n_fds, true, ret);
}

SpawnerError spawner_reply_decode(const void *buf, size_t n, size_t n_fds, SpawnerMessage *ret) {
        return decode(buf, n, n_fds, false, ret);
}
