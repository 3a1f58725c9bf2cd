/* The varlink server's shared state: what varlink-server.c (listeners, interfaces,
 * org.varlink.service) and varlink-conn.c (connections, calls, dispatch) both see. Not for users
 * of varlink.h. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "varlink.h"

/* Timers fire within this of their time (sd-event's default would allow 250 ms). */
#define TIMER_ACCURACY_USEC ((uint64_t)1000)

typedef struct VarlinkListener VarlinkListener;
struct VarlinkListener {
        VarlinkServer *server;
        VarlinkListener *next;
        int fd;
        sd_event_source *io, *retry;
        bool accept_fds;
        VarlinkAcceptFn on_accept;
        VarlinkDisconnectFn on_disconnect;
        void *userdata;
        unsigned conns_max; /* its own cap (0: only the server's); a reserve others cannot take */
        unsigned n_conns;   /* open connections accepted here */
        uint64_t idle_usec; /* a connection with no call open this long is closed (0: never) */
        char *limit_error;  /* the error a peer over a cap is told before the close, or NULL */
};

/* The fds that arrived for one message (refused: some came and were closed); seq numbers the
 * message for fds_next, while fds_cur always belongs to the message at in_start. */
typedef struct VarlinkInFds {
        uint64_t seq;
        size_t n;
        bool refused;
        int fds[VARLINK_FDS_PER_MESSAGE];
} VarlinkInFds;

struct VarlinkServer {
        sd_event *event;
        VarlinkLimits limits;
        char *vendor, *product, *version, *url;
        const VarlinkInterface **interfaces;
        size_t n_interfaces;
        VarlinkListener *listeners;
        VarlinkConn *conns; /* alive and dead ones until their teardown ran */
        unsigned n_conns;   /* alive ones */
};

struct VarlinkConn {
        VarlinkServer *server;
        VarlinkListener *listener;
        VarlinkConn *prev, *next;
        int fd;
        struct ucred ucred;
        int pidfd;
        unsigned roles;
        void *userdata;
        VarlinkLimits limits;
        sd_event_source *io, *stall, *resume, *teardown, *idle;

        /* Input: bytes [in_start, in_len) are undispatched, [in_start, in_scan) hold no NUL.
         * in_seq numbers the message starting at in_start. */
        char *in;
        size_t in_len, in_cap, in_start, in_scan;
        uint64_t in_seq;
        VarlinkInFds fds_cur, fds_next;
        bool fds_next_used;

        /* Output: bytes [out_start, out_len) are unsent. */
        char *out;
        size_t out_len, out_cap, out_start;

        VarlinkCall *calls; /* every call that still points here */
        /* Answers leave in the order the calls came: the calls (and refusals) whose answers
         * are not all out yet, oldest first, each holding a reference. */
        VarlinkCall *order_head, *order_tail;
        unsigned n_pending; /* calls without a final answer */
        unsigned n_queued;  /* calls (and refusals) in the answer queue: not all out yet */
        size_t parked_bytes; /* answers held in the queue behind an older call */

        bool accepted;   /* on_accept kept it: on_disconnect runs at teardown */
        bool dead;       /* closed; teardown scheduled */
        bool torn_down;  /* callbacks ran */
        bool closing;    /* close once the output is flushed (after a protocol error) */
        bool read_eof;   /* the peer shut down its writing side */
        bool in_backlog; /* complete messages wait in the buffer */
        bool held;       /* not read until varlink_conn_release(): its peer is being checked */
        const char *close_cause; /* why lockd closed it (static), NULL for an ordinary end */
};

struct VarlinkCall {
        unsigned n_ref;
        VarlinkConn *conn;
        VarlinkCall *prev, *next;
        json_t *message;
        char *method;
        bool more, oneway;
        bool pending;  /* counted in conn->n_pending, holding a reference */
        bool answered; /* something was sent */
        int fds[VARLINK_FDS_PER_MESSAGE];
        size_t n_fds;
        void (*cancel)(VarlinkCall *call, void *userdata);
        void *cancel_userdata;
        /* Answers made while an older call's are not all out: sent when this call's turn comes
         * (a JSON array of messages; held_final once the last one is among them). */
        json_t *held;
        size_t held_bytes; /* their size as sent, counted in conn->parked_bytes */
        bool held_final;
        VarlinkCall *order_next;
};

/* The built-in interface: callable by every connection whatever its roles. */
extern const VarlinkInterface varlink_service_interface;

/* The interface named by len bytes of name (org.varlink.service included), or NULL. */
const VarlinkInterface *varlink_server_find_interface(VarlinkServer *s, const char *name,
                                                      size_t len);
/* Whether c's roles let it call iface's methods. */
bool varlink_conn_may_use(const VarlinkConn *c, const VarlinkInterface *iface);
/*
 * Makes cfd (accepted, its peer's credentials read) a connection of l, counted and linked into
 * the server, reading. 0 with *ret, or -ENOMEM with cfd and pidfd closed.
 */
int varlink_conn_new(VarlinkListener *l, int cfd, const struct ucred *ucred, int pidfd,
                     VarlinkConn **ret);
/* Closes c if needed, runs its disconnect and cancel callbacks once, unlinks and frees it. */
void varlink_conn_teardown(VarlinkConn *c);
