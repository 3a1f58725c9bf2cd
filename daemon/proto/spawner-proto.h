/* The spawner's request table: the fixed-size messages the engine and the spawner exchange over
 * their SOCK_SEQPACKET pair, and the checks every one of them passes before it is believed
 * (ARCHITECTURE.md, Processes and privileges). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SPAWNER_MAGIC   UINT32_C(0x4c4b5350) /* "LKSP" */
#define SPAWNER_VERSION 1

/* The contract's Limits row, as the wire carries it; the manifest parser enforces the same. */
#define SPAWNER_CPU_S_MAX     3600
#define SPAWNER_TIMEOUT_S_MAX 3600
#define SPAWNER_MEMORY_MIN    ((uint64_t)16 * 1024 * 1024)
#define SPAWNER_MEMORY_MAX    ((uint64_t)16 * 1024 * 1024 * 1024)
#define SPAWNER_UNIT_MAX      128
#define SPAWNER_FDS_MAX       6   /* a run's: binary, input, inputs, stdout, stderr, detail */
#define SPAWNER_MESSAGE_MAX   512 /* larger than any message: a longer datagram is refused */
#define SPAWNER_CHECKS_MAX    256 /* confinement checks in flight; one more ends the spawner */
/* The runs the engine may have in flight (running, queued, or ended and not yet told) for
 * limits.concurrent_runs workers, and so the runs the spawner's queue must hold: a burst of RUNs
 * arrives before any worker took one, and must not meet EAGAIN. */
#define SPAWNER_RUNS_MAX(workers) ((workers) * (1 + 64))

typedef enum SpawnerType {
        /* engine → spawner */
        SPAWNER_HELLO = 1, /* first and once: the engine's version; the spawner answers HELLO */
        SPAWNER_RUN = 2,   /* one plugin run, its fds attached */
        SPAWNER_KILL = 3,  /* end one run now */
        SPAWNER_STOP = 4,  /* end every run; no RUN may follow */
        SPAWNER_CONFINE =
                5, /* which unit an agent runs in, and is it confined; its pidfd attached */
        SPAWNER_NOTIFY = 6, /* what the spawner tells systemd: ready, reloading, stopping, counts */
        SPAWNER_WARM = 7,   /* an installed plugin's limits: keep a scope ready for its class */
        /* spawner → engine */
        SPAWNER_REPLY_HELLO = 0x81,
        SPAWNER_REPLY_EXITED = 0x82,   /* a run ended (or never started) */
        SPAWNER_REPLY_CONFINED = 0x83, /* a CONFINE's answer */
        /* 0x84 was STARTED (a run's unit, sent at its start): EXITED names the unit now, and the
         * engine's wakeup for it is gone. The number stays unused. */
} SpawnerType;

typedef struct SpawnerHeader {
        uint32_t magic;
        uint16_t version;
        uint16_t type;
        uint32_t size; /* the whole message, header included: exactly its type's size */
        uint32_t zero; /* must be 0 */
} SpawnerHeader;

typedef struct SpawnerHello {
        SpawnerHeader h;
        uint32_t pid; /* the sender's pid, checked against the peer's SO_PEERCRED */
        uint32_t zero;
} SpawnerHello;

#define SPAWNER_RUN_INPUTS (UINT32_C(1) << 0) /* fd 6: the inputs memfd is attached */
#define SPAWNER_RUN_DETAIL (UINT32_C(1) << 1) /* fd 7: the detail pipe's write end is attached */
#define SPAWNER_RUN_FLAGS  (SPAWNER_RUN_INPUTS | SPAWNER_RUN_DETAIL)

/*
 * Attached, in this order: the plugin's sealed binary memfd, the input (a sealed memfd), the
 * inputs (a sealed memfd, with SPAWNER_RUN_INPUTS), the write ends of the stdout and stderr
 * pipes, the detail pipe's (with SPAWNER_RUN_DETAIL). Nothing else.
 */
typedef struct SpawnerRun {
        SpawnerHeader h;
        uint64_t run_id; /* > 0, unique among runs in flight; the scope's name is the spawner's */
        uint64_t fairness_key; /* runs are taken round-robin across keys (an agent's uid) */
        uint32_t protocol;     /* 1 or 2 */
        uint32_t flags;        /* SPAWNER_RUN_*; both only with protocol 2 */
        uint64_t cpu_s;
        uint64_t memory_bytes;
        uint64_t timeout_s;
} SpawnerRun;

typedef struct SpawnerKill {
        SpawnerHeader h;
        uint64_t run_id;
} SpawnerKill;

typedef struct SpawnerStop {
        SpawnerHeader h;
} SpawnerStop;

typedef struct SpawnerConfine {
        SpawnerHeader h;
        uint64_t check_id; /* > 0, unique among checks in flight */
        uint32_t pid;      /* the agent's pid; its pidfd attached pins it */
        uint32_t zero;
} SpawnerConfine;

/* A limit class to keep a child ready for (ARCHITECTURE.md, scopes made ahead): the limits of an
 * installed plugin, in the ranges a RUN's must be in. No answer. */
typedef struct SpawnerWarm {
        SpawnerHeader h;
        uint64_t memory_bytes;
        uint64_t timeout_s;
} SpawnerWarm;

typedef enum SpawnerNotifyState {
        SPAWNER_NOTIFY_READY = 1,     /* READY=1 and STATUS=: the engine serves */
        SPAWNER_NOTIFY_STATUS = 2,    /* STATUS= with the counts */
        SPAWNER_NOTIFY_RELOADING = 3, /* RELOADING=1: a SIGHUP's reload began */
        SPAWNER_NOTIFY_STOPPING = 4,  /* STOPPING=1 */
} SpawnerNotifyState;

/* Numbers only: the spawner writes the text, so the engine never speaks to systemd itself. */
typedef struct SpawnerNotify {
        SpawnerHeader h;
        uint32_t state; /* SpawnerNotifyState */
        uint32_t plugins;
        uint32_t runs;
        uint32_t zero;
} SpawnerNotify;

typedef struct SpawnerReplyHello {
        SpawnerHeader h;
        uint32_t landlock_abi;
        uint32_t scopes;   /* 1: runs get transient scopes; 0: scope.backend none */
        uint32_t runs_max; /* runs the engine may have in flight; one more ends the spawner */
        uint32_t zero;
} SpawnerReplyHello;

#define SPAWNER_EXITED_SCOPED    (UINT32_C(1) << 0) /* it ran inside its scope */
#define SPAWNER_EXITED_EXITED    (UINT32_C(1) << 1) /* exit_status valid */
#define SPAWNER_EXITED_TIMED_OUT (UINT32_C(1) << 2)
#define SPAWNER_EXITED_OOM       (UINT32_C(1) << 3)
#define SPAWNER_EXITED_SPAWN     (UINT32_C(1) << 4) /* never reached the plugin: spawn_* valid */
#define SPAWNER_EXITED_FLAGS     UINT32_C(0x1f)

typedef struct SpawnerReplyExited {
        SpawnerHeader h;
        uint64_t run_id;
        int32_t error; /* 0, or a negative errno: no plugin ran (-ECANCELED: stopping) */
        uint32_t flags;
        int32_t exit_status;
        int32_t signal;
        uint32_t spawn_stage;
        int32_t spawn_errno;
        uint64_t wall_usec;
        uint64_t cpu_usec;
        uint64_t peak_rss_bytes; /* 0: unknown */
        uint32_t uid;
        int32_t landlock_abi;
        uint64_t setup_usec;      /* from the run's start to the plugin's execve */
        uint64_t scope_wait_usec; /* the part of it spent waiting for a scope (0: made ahead) */
        /* With SPAWNER_EXITED_SCOPED its scope, lockd-run-<n>.scope; all zero without. */
        char unit[SPAWNER_UNIT_MAX];
} SpawnerReplyExited;

/* Why an agent is not confined: a closed list, each a sentence confinement.h defines. */
typedef struct SpawnerReplyConfined {
        SpawnerHeader h;
        uint64_t check_id;
        int32_t error;   /* 0, or a negative errno: the manager could not be asked */
        uint32_t ok;     /* 1: confined */
        uint32_t reason; /* when not ok: an index into confinement_reasons */
        uint32_t zero;
        char unit[256]; /* NUL-terminated; "" when the manager named none */
} SpawnerReplyConfined;

/* One received message, its type decided and its size checked. */
typedef union SpawnerMessage {
        SpawnerHeader h;
        SpawnerHello hello;
        SpawnerRun run;
        SpawnerKill kill;
        SpawnerStop stop;
        SpawnerConfine confine;
        SpawnerNotify notify;
        SpawnerWarm warm;
        SpawnerReplyHello reply_hello;
        SpawnerReplyExited exited;
        SpawnerReplyConfined confined;
} SpawnerMessage;

/* Why a message was refused: the spawner logs it and exits; the engine logs it and exits. */
typedef enum SpawnerError {
        SPAWNER_OK = 0,
        SPAWNER_E_SIZE,      /* shorter than a header, or not its type's exact size */
        SPAWNER_E_MAGIC,     /* not the magic */
        SPAWNER_E_VERSION,   /* not this version */
        SPAWNER_E_TYPE,      /* not a type this side takes */
        SPAWNER_E_FIELD,     /* a field out of range, or a reserved one not zero */
        SPAWNER_E_FDS,       /* not the exact number of fds its type and flags say */
        SPAWNER_E_TRUNCATED, /* MSG_TRUNC or MSG_CTRUNC: more than was read */
        _SPAWNER_E_MAX,
} SpawnerError;

const char *spawner_error_name(SpawnerError e);

/* What an attached fd must be; the receiver checks it (spawner.c), the table only says it. */
typedef enum SpawnerFdKind {
        SPAWNER_FD_SEALED_MEMFD = 1, /* a memfd sealed against write, grow and shrink */
        SPAWNER_FD_PIPE_WRITE,       /* a pipe's write end, open for writing only */
        SPAWNER_FD_PIDFD,            /* a pidfd */
} SpawnerFdKind;

/* One fd a message may carry: its kind, and the message flag that attaches it (0: always). */
typedef struct SpawnerFdSlot {
        SpawnerFdKind kind;
        uint32_t flag;
} SpawnerFdSlot;

/*
 * The contract of one message type, a row of spawner_messages[]: its exact size, the fds it
 * carries (fds_min without its optional ones, fds_max with them all; slots in the order they are
 * attached), the flags that attach the optional ones and the check of its fields. What the
 * spawner does with a request is its own table's (spawner.c), what the engine does with a reply
 * spawner-link.c's; each has exactly one row for each of this table's types of its direction.
 */
typedef struct SpawnerMessageRow {
        uint16_t type; /* SpawnerType: < 0x80 a request, >= 0x80 a reply */
        const char *name;
        uint32_t size;
        uint8_t fds_min, fds_max;
        SpawnerFdSlot fds[SPAWNER_FDS_MAX];
        uint32_t (*fd_flags)(const SpawnerMessage *m); /* NULL: no optional fd */
        bool (*valid)(const SpawnerMessage *m);        /* every field in range */
} SpawnerMessageRow;

extern const SpawnerMessageRow spawner_messages[];
extern const size_t spawner_n_messages;

/* The row of type t, or NULL for a type that does not exist. */
const SpawnerMessageRow *spawner_message_row(uint16_t t);

/* The fds a message of this type and these flags carries: how many, and (with kinds non-NULL)
 * what each must be, in the order attached. */
size_t spawner_message_fds(const SpawnerMessage *m, SpawnerFdKind kinds[SPAWNER_FDS_MAX]);

/* How many fds a request of this type and these flags carries. */
size_t spawner_request_fds(const SpawnerMessage *m);

/* Whether the table is one row per type, each consistent (fds_min and fds_max against its slots,
 * at most SPAWNER_FDS_MAX, a size that fits SPAWNER_MESSAGE_MAX, a check of its fields); the
 * first row that is not, as its type, in *ret_type. */
bool spawner_table_valid(uint16_t *ret_type);

/*
 * Decodes one request the engine sent (buf, n bytes, with n_fds fds attached): checks magic,
 * version, type, the exact size, every field's range and the fd count. Pure: never looks at the
 * fds themselves (spawner.c checks what they are). SPAWNER_OK and *ret filled, or the first
 * failure with *ret untouched.
 */
SpawnerError spawner_request_decode(const void *buf, size_t n, size_t n_fds, SpawnerMessage *ret);

/* The same for a reply the spawner sent, read by the engine; replies carry no fds. */
SpawnerError spawner_reply_decode(const void *buf, size_t n, size_t n_fds, SpawnerMessage *ret);

/* One datagram received and decoded, its fds the receiver's. */
typedef struct SpawnerReceived {
        SpawnerMessage m;
        /* One more than any message carries, so that one fd too many is counted, not cut. */
        int fds[SPAWNER_FDS_MAX + 1];
        size_t n_fds;
        SpawnerError error; /* why it was refused (-EBADMSG) */
} SpawnerReceived;

/*
 * Receives one datagram from fd (non-blocking; SCM_RIGHTS only, close-on-exec) and decodes it:
 * as a request (requests true: the spawner's side) or as a reply (the engine's). Returns 1 with
 * the message and its fds in *ret, the fds the caller's to close (spawner_received_close()); 0 at
 * the peer's end (an empty datagram without fds); -EAGAIN or -EINTR when nothing is there yet;
 * -EBADMSG when the datagram was refused, ret->error saying why (cut short, MSG_TRUNC or
 * MSG_CTRUNC, other control data, or anything the decoder refuses), every fd it carried closed;
 * another negative errno when the channel failed.
 */
int spawner_receive(int fd, bool requests, SpawnerReceived *ret);

/* Closes the fds of a received message the handler did not take (those it set to -1). */
void spawner_received_close(SpawnerReceived *r);

/* Whether unit is a run's scope as the spawner names them, "lockd-run-<digits>.scope": the rule
 * the engine checks a scoped EXITED's unit against (the scope may have been made before the run,
 * ARCHITECTURE.md, scopes made ahead, so its number is the spawner's, not the run id). */
bool spawner_unit_name_valid(const char *unit);

/* Fills a header for a message of type t (its size from the type). */
void spawner_header_init(SpawnerHeader *h, SpawnerType t);

/* The wire has no padding: every struct is exactly the sum of its fields. */
_Static_assert(sizeof(SpawnerHeader) == 16, "header");
_Static_assert(sizeof(SpawnerHello) == 24, "hello");
_Static_assert(sizeof(SpawnerRun) == 64, "run");
_Static_assert(sizeof(SpawnerKill) == 24, "kill");
_Static_assert(sizeof(SpawnerStop) == 16, "stop");
_Static_assert(sizeof(SpawnerConfine) == 32, "confine");
_Static_assert(sizeof(SpawnerNotify) == 32, "notify");
_Static_assert(sizeof(SpawnerWarm) == 32, "warm");
_Static_assert(sizeof(SpawnerReplyHello) == 32, "reply hello");
_Static_assert(sizeof(SpawnerReplyExited) == 96 + SPAWNER_UNIT_MAX, "exited");
_Static_assert(sizeof(SpawnerReplyConfined) == 296, "confined");
_Static_assert(sizeof(SpawnerMessage) <= SPAWNER_MESSAGE_MAX, "message max");
