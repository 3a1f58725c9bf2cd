/* What the engine learns of a connection's peer at accept: an agent's confinement and a console's
 * login session, from the manager, through the spawner's CONFINE. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "confinement-reason.h"
#include "fd-util.h"
#include "log-ids.h"
#include "log.h"
#include "peer.h"
#include "ratelimit.h"
#include "roles.h"
#include "spawner-link.h"

/* How long a console is held for the manager's answer about its unit. */
#define CONSOLE_CHECK_WAIT_USEC (500 * 1000ULL)

/* A connection's peer: held while the manager is asked, then (a console) its session. */
typedef struct Peer {
        Manager *manager;
        VarlinkConn *conn;
        SpawnerCheck *check;    /* in flight, or NULL */
        sd_event_source *timer; /* a console's patience with the manager */
        int pidfd; /* ours when the kernel gave none with the connection (no SO_PEERPIDFD) */
        bool console;
        char session[SESSION_KEY_MAX]; /* "logind:<id>", or "" when the manager named none */
} Peer;

static Peer *peer_free(Peer *p) {
        if (!p)
                return NULL;
        spawner_check_free(p->check);
        sd_event_source_disable_unref(p->timer);
        safe_close(p->pidfd);
        free(p);
        return NULL;
}

/*
 * The login session of a unit the manager named, as logind names its scopes:
 * "session-<id>.scope" with an id of letters and digits. false for any other unit.
 */
static bool session_of_unit(const char *unit, char *buf, size_t size) {
        static const char prefix[] = "session-", suffix[] = ".scope";
        size_t n = strlen(unit), p = strlen(prefix), s = strlen(suffix);

        if (n <= p + s || n - p - s > 32 || strncmp(unit, prefix, p) != 0 ||
            strcmp(unit + n - s, suffix) != 0)
                return false;
        for (size_t i = p; i < n - s; i++)
                if (!((unit[i] >= 'a' && unit[i] <= 'z') || (unit[i] >= 'A' && unit[i] <= 'Z') ||
                      (unit[i] >= '0' && unit[i] <= '9')))
                        return false;
        snprintf(buf, size, "logind:%.*s", (int)(n - p - s), unit + p);
        return true;
}

static void agent_checked(Peer *a, bool ok, const char *unit, ConfinementReason why) {
        const char *missing = confinement_reason_sentence(why);
        Manager *m = a->manager;
        VarlinkConn *c = a->conn;
        const struct ucred *uc = varlink_conn_peer(c);
        unsigned suppressed = 0;

        varlink_conn_set_userdata(c, NULL);
        if (ok) {
                peer_free(a);
                varlink_conn_release(c);
                return;
        }
        /* A refusal per uid and minute is told in full, the rest counted: a peer must not be
         * able to fill the journal by connecting in a loop. */
        if (ratelimit_pass(&m->refusals, uc->uid, clock_monotonic_usec(), &suppressed))
                log_struct(LOG_WARNING, LOCKD_MESSAGE_AGENT_UNCONFINED,
                           LOG_FIELDS(LOG_FIELD_U64("PEER_UID", uc->uid),
                                      LOG_FIELD_U64("PEER_PID", uc->pid),
                                      LOG_FIELD("UNIT", unit[0] ? unit : "-"),
                                      LOG_FIELD("MISSING", missing),
                                      LOG_FIELD_U64("SUPPRESSED", suppressed)),
                           "refused agent uid %u pid %d from %s: it could watch plugin runs: "
                           "missing %s%s",
                           (unsigned)uc->uid, (int)uc->pid, unit[0] ? unit : "no unit", missing,
                           suppressed > 0 ? " (earlier refusals of this uid suppressed)" : "");
        peer_free(a);
        varlink_conn_close(c);
}

/* A console is served whatever the manager said (or when it says nothing in time): its unit
 * only names its session. */
static void console_release(Peer *p, const char *unit) {
        p->check = spawner_check_free(p->check);
        p->timer = sd_event_source_disable_unref(p->timer);
        p->pidfd = safe_close(p->pidfd);
        if (!unit || !session_of_unit(unit, p->session, sizeof(p->session)))
                p->session[0] = 0;
        varlink_conn_release(p->conn);
}

static void checked(bool ok, const char *unit, ConfinementReason why, void *userdata) {
        Peer *p = userdata;

        if (!p->console)
                return agent_checked(p, ok, unit, why);
        console_release(p, unit);
}

static int on_console_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        console_release(userdata, NULL);
        return 0;
}

int peer_check_start(Manager *m, VarlinkConn *c, unsigned role) {
        const struct ucred *uc = varlink_conn_peer(c);
        bool console = role & ROLE_MASK_CONSOLE;
        Peer *p;
        int pidfd, r;

        if (!console && !m->policy->agents.require_confinement)
                return 0;
        if (!spawner_link_scopes(m->spawner))
                /* No manager to ask: an agent cannot be confirmed; a console falls back. */
                return console ? 0 : -EHOSTUNREACH;
        p = calloc(1, sizeof(*p));
        if (!p)
                return console ? 0 : -ENOMEM;
        *p = (Peer){.manager = m, .conn = c, .pidfd = -1, .console = console};
        pidfd = varlink_conn_peer_pidfd(c);
        if (pidfd < 0) {
                /* Without SO_PEERPIDFD the pid is pinned now, at accept: a peer gone by then
                 * is refused by the check (its pidfd is dead), never confused with another. */
                p->pidfd = (int)syscall(SYS_pidfd_open, uc->pid, 0);
                pidfd = p->pidfd;
        }
        r = spawner_link_confine(m->spawner, uc->pid, pidfd, checked, p, &p->check);
        /* The human never waits long for the manager: past this, the kernel's view keys it. */
        if (r >= 0 && console)
                r = sd_event_add_time_relative(m->event, &p->timer, CLOCK_MONOTONIC,
                                               CONSOLE_CHECK_WAIT_USEC, 0, on_console_timeout, p);
        if (r < 0) {
                peer_free(p);
                return console ? 0 : r;
        }
        varlink_conn_set_userdata(c, p);
        varlink_conn_hold(c);
        return 0;
}

void peer_check_forget(VarlinkConn *c) {
        peer_free(varlink_conn_get_userdata(c));
        varlink_conn_set_userdata(c, NULL);
}

void peer_session(VarlinkCall *call, SessionId *ret) {
        VarlinkConn *c = varlink_call_conn(call);
        const struct ucred *uc = c ? varlink_conn_peer(c) : NULL;
        const Peer *p = c ? varlink_conn_get_userdata(c) : NULL;

        if (!uc) {
                *ret = (SessionId){.uid = (uid_t)-1};
                snprintf(ret->name, sizeof(ret->name), "uid");
                return;
        }
        /*
         * The manager's word first: under the unit's ProtectProc=invisible the engine (user lockd)
         * cannot read another user's /proc/<pid>, so the kernel's view below would find neither
         * logind's session nor the audit session and key every console of a uid alike.
         */
        if (p && p->console && p->session[0]) {
                *ret = (SessionId){.uid = uc->uid};
                memcpy(ret->name, p->session, sizeof(ret->name));
                return;
        }
        session_id_of_peer(uc->pid, uc->uid, ret);
}
