/* Input sessions: the values a human typed for placeholders, per console login session, held in
 * locked, non-dumpable memory with idle and absolute timeouts, replayed on later tickets. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "secmem.h"

#define SESSIONS_MAX       64 /* console sessions holding values at once; the idlest goes */
#define SESSION_VALUES_MAX 64 /* placeholders one session holds; the oldest goes */
#define SESSION_NAME_MAX   32 /* a placeholder name: [a-z0-9_]{1,32} */
#define SESSION_KEY_MAX    64

/*
 * Whose values these are: the console's uid and its login session. The session is logind's
 * ("logind:c2") when the peer belongs to one, else the kernel's audit session ("audit:7"), else
 * none ("uid"): then every console process of that uid shares one session. The uid is part of
 * the key either way, so one human never sees another's values.
 */
typedef struct SessionId {
        uid_t uid;
        char name[SESSION_KEY_MAX];
} SessionId;

typedef struct Sessions Sessions;

/* Why a session ended, for its audit record. */
typedef enum SessionEnd {
        SESSION_END_REQUESTED, /* EndSession */
        SESSION_END_IDLE,
        SESSION_END_ABSOLUTE,
        SESSION_END_LOGOUT,  /* the logind session is gone */
        SESSION_END_EVICTED, /* room was needed for another session */
        SESSION_END_STOP,    /* lockd stops */
        _SESSION_END_MAX,
} SessionEnd;

/* Called on the loop after a session was wiped (its values are gone already). */
typedef void (*SessionEndedFn)(const SessionId *id, SessionEnd why, size_t n_values,
                               void *userdata);

/* "requested", "idle", "absolute", "logout", "evicted", "stop"; NULL out of range. */
const char *session_end_name(SessionEnd e);

/*
 * The session of a console peer (pid and uid from SO_PEERCRED at accept). Never fails: a peer
 * whose logind and audit sessions cannot be read gets the uid's session.
 */
void session_id_of_peer(pid_t pid, uid_t uid, SessionId *ret);

/*
 * A new, empty store. Values expire idle_usec after the session's last use and absolute_usec after
 * its first value (both > 0). With e, a CLOCK_BOOTTIME timer wipes expired sessions on time and a
 * logind monitor (where logind runs) wipes a session whose logind session ended; without e only
 * sessions_expire() does. 0, -EINVAL, -ENOMEM.
 */
int sessions_new(sd_event *e, uint64_t idle_usec, uint64_t absolute_usec, SessionEndedFn on_ended,
                 void *userdata, Sessions **ret);
/* Wipes every value (announcing SESSION_END_STOP for each session) and frees. NULL-safe. */
Sessions *sessions_free(Sessions *ss);
static inline void sessions_freep(Sessions **ss) {
        if (*ss)
                sessions_free(*ss);
}

/* New timeouts for later checks (a policy reload); expired sessions are wiped at once. */
void sessions_set_timeouts(Sessions *ss, uint64_t idle_usec, uint64_t absolute_usec);

/*
 * The value id's session holds for name, or NULL. A hit counts as use (the idle timeout starts
 * again) only when touch is set: GetTicket only looks, Approve uses.
 */
const SecBuf *sessions_get(Sessions *ss, const SessionId *id, const char *name, bool touch);

/*
 * Stores value (taken, also on failure) as name's in id's session, replacing an older one. 1 when
 * this started the session, 0 when it existed, -EINVAL (bad name), -ENOMEM.
 */
int sessions_put(Sessions *ss, const SessionId *id, const char *name, SecBuf *value);

/* Wipes id's session; the number of values it held (0 without a session). */
size_t sessions_end(Sessions *ss, const SessionId *id, SessionEnd why);

/* Wipes the sessions past a timeout at now_usec (CLOCK_BOOTTIME); their number. */
size_t sessions_expire(Sessions *ss, uint64_t now_usec);

/* Sessions held now. */
size_t sessions_n(const Sessions *ss);

/* CLOCK_BOOTTIME in microseconds: the clock the timeouts run on (a suspend counts). */
uint64_t sessions_now_usec(void);
