/* Varlink (https://varlink.org) over Unix stream sockets on jansson and sd-event: NUL-terminated
 * JSON messages, more/continues, oneway, errors with parameters, org.varlink.service, file
 * descriptors as SCM_RIGHTS where a listener allows them, and caps on everything a peer sends. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <systemd/sd-event.h>

typedef struct VarlinkServer VarlinkServer;
typedef struct VarlinkConn VarlinkConn;
typedef struct VarlinkCall VarlinkCall;
typedef struct VarlinkClient VarlinkClient;

/* The hard ceilings, whatever a policy says. */
#define VARLINK_MESSAGE_BYTES_MAX ((size_t)16 * 1024 * 1024)
#define VARLINK_FDS_PER_MESSAGE   8
#define VARLINK_JSON_DEPTH_MAX    32

/* What a VarlinkLimits field of 0 stands for. */
#define VARLINK_DEFAULT_MESSAGE_BYTES      ((size_t)1024 * 1024)
#define VARLINK_DEFAULT_PENDING_PER_CONN   16
#define VARLINK_DEFAULT_CONNS_PER_UID      32
#define VARLINK_DEFAULT_CONNS_TOTAL        256
#define VARLINK_DEFAULT_OUT_BYTES_PER_CONN ((size_t)16 * 1024 * 1024)
/* Answers parked behind an older call or not yet written, per connection, at which reading
 * pauses (backpressure): the most a peer that pipelines without reading makes lockd hold. */
#define VARLINK_READ_PAUSE_BYTES           ((size_t)64 * 1024)
#define VARLINK_DEFAULT_STALL_USEC         ((uint64_t)10 * 1000 * 1000)

/* org.varlink.service errors. */
#define VARLINK_ERROR_INTERFACE_NOT_FOUND "org.varlink.service.InterfaceNotFound"
#define VARLINK_ERROR_METHOD_NOT_FOUND    "org.varlink.service.MethodNotFound"
#define VARLINK_ERROR_INVALID_PARAMETER   "org.varlink.service.InvalidParameter"
#define VARLINK_ERROR_EXPECTED_MORE       "org.varlink.service.ExpectedMore"

typedef enum VarlinkParamType {
        VARLINK_STRING,     /* UTF-8 text without NUL; min/max bound its length in bytes */
        VARLINK_INT,        /* a JSON integer; min/max bound its value */
        VARLINK_BOOL,       /* true or false */
        VARLINK_STRING_MAP, /* an object whose values are strings; min/max bound the key count */
        VARLINK_ARRAY,      /* an array; min/max bound the item count (items unchecked) */
        VARLINK_OBJECT,     /* any object (checked by the method itself) */
} VarlinkParamType;

/* One parameter of a method. With min == max == 0 only the global caps bound it. A parameter
 * given as JSON null counts as absent. */
typedef struct VarlinkParam {
        const char *name;
        VarlinkParamType type;
        bool required;
        int64_t min, max;
} VarlinkParam;

#define VARLINK_METHOD_ACCEPTS_FDS (1u << 0) /* fds may ride along (on a listener that allows them) */
#define VARLINK_METHOD_MORE        (1u << 1) /* the method may answer with continues */

/*
 * A method handler. params is the checked "parameters" object (never NULL: {} when absent),
 * borrowed for the call. The handler answers with varlink_call_reply()/varlink_call_error() now
 * or later (keeping a reference with varlink_call_ref()). Returning a negative errno without
 * having answered closes the connection.
 */
typedef int (*VarlinkMethodFn)(VarlinkCall *call, json_t *params, void *userdata);

typedef struct VarlinkMethod {
        const char *name; /* short name: "Status" */
        VarlinkMethodFn fn;
        const VarlinkParam *params; /* terminated by an entry with name NULL */
        unsigned flags;
} VarlinkMethod;

typedef struct VarlinkInterface {
        const char *name;             /* "io.lockd.Console" */
        const char *description;      /* the interface text GetInterfaceDescription serves */
        const VarlinkMethod *methods; /* terminated by an entry with name NULL */
        unsigned role_mask; /* connections with an intersecting role may call its methods; others
                               get InterfaceNotFound, as for one that does not exist */
} VarlinkInterface;

typedef struct VarlinkLimits {
        size_t message_bytes;       /* one incoming message, NUL included */
        unsigned pending_per_conn;  /* calls without a final reply before reading pauses */
        unsigned conns_per_uid;     /* open connections of one peer uid, all listeners */
        unsigned conns_total;       /* open connections, all listeners */
        size_t out_bytes_per_conn;  /* unsent reply bytes before the peer is dropped as too slow */
        uint64_t stall_usec;        /* a peer that stops mid-message this long is dropped */
} VarlinkLimits;

/*
 * Called for every accepted connection after its credentials were read (varlink_conn_peer()).
 * Return 0 to keep it (normally after varlink_conn_set_roles()), or a negative errno to drop it.
 */
typedef int (*VarlinkAcceptFn)(VarlinkConn *c, void *userdata);
/* Called once when a connection goes away, before its calls' cancel callbacks. */
typedef void (*VarlinkDisconnectFn)(VarlinkConn *c, void *userdata);

/* Server. vendor, product, version and url are what GetInfo reports. */
int varlink_server_new(sd_event *e, const VarlinkLimits *limits, const char *vendor,
                       const char *product, const char *version, const char *url,
                       VarlinkServer **ret);
VarlinkServer *varlink_server_free(VarlinkServer *s); /* closes every connection */
static inline void varlink_server_freep(VarlinkServer **s) {
        if (*s)
                varlink_server_free(*s);
}
/* The interface (not copied: it must outlive the server). -EEXIST for a second one by name. */
int varlink_server_add_interface(VarlinkServer *s, const VarlinkInterface *iface);
/* New limits for connections from now on (a policy reload); open connections keep theirs. */
void varlink_server_set_limits(VarlinkServer *s, const VarlinkLimits *limits);
/*
 * Serves a listening socket (takes ownership of fd). With accept_fds false, any fd a peer sends
 * is closed at once and the message carrying it is refused with <interface>.InvalidRequest.
 * on_accept and on_disconnect (either may be NULL) get userdata; method handlers get userdata too.
 */
/*
 * Limits of the listener on fd (one of varlink_server_listen_fd()'s): at most conns_max open
 * connections accepted there (0: only the server's caps), so that a reserve for one socket's
 * peers is never taken by another's; connections with no call open (none pending, no Wait with
 * "more") and nothing half-read for idle_usec are closed (0: never); and limit_error (a
 * qualified error name, copied; NULL: none) is what a peer over any connection cap is told, with
 * {"limit": "socket" | "uid" | "total"}, before its connection is closed. 0, -ENOENT (no such
 * listener), -EINVAL, -ENOMEM.
 */
int varlink_server_set_listener_limits(VarlinkServer *s, int fd, unsigned conns_max,
                                       uint64_t idle_usec, const char *limit_error);

int varlink_server_listen_fd(VarlinkServer *s, int fd, bool accept_fds, VarlinkAcceptFn on_accept,
                             VarlinkDisconnectFn on_disconnect, void *userdata);
unsigned varlink_server_n_connections(const VarlinkServer *s);

/* Connections. */
const struct ucred *varlink_conn_peer(const VarlinkConn *c); /* read once at accept */
int varlink_conn_peer_pidfd(const VarlinkConn *c);           /* -1 where SO_PEERPIDFD is absent */
/* The listening socket the connection came through (the fd given to varlink_server_listen_fd()),
 * so a server can tell its sockets apart at accept; -1 once that listener is gone. */
int varlink_conn_listener_fd(const VarlinkConn *c);
void varlink_conn_set_roles(VarlinkConn *c, unsigned role_mask);
unsigned varlink_conn_roles(const VarlinkConn *c);
/*
 * Stops reading c until varlink_conn_release(): not one byte of the peer is parsed while lockd
 * decides whether to keep it (the agent confinement check runs after accept). A held peer that
 * hangs up is closed as usual (its on_disconnect runs).
 */
void varlink_conn_hold(VarlinkConn *c);
void varlink_conn_release(VarlinkConn *c);
void varlink_conn_set_userdata(VarlinkConn *c, void *userdata);
void *varlink_conn_get_userdata(const VarlinkConn *c);
/* Drops the connection (from a handler too: it is freed once the handler returned). */
void varlink_conn_close(VarlinkConn *c);
/* Why lockd closed the connection (a static sentence: a message past its cap, a peer that does
 * not read, a stall...), or NULL when it ended the ordinary way (the peer hung up, idle, lockd's
 * own close). For the disconnect callback. */
const char *varlink_conn_close_cause(const VarlinkConn *c);

/* Calls. */
VarlinkCall *varlink_call_ref(VarlinkCall *call);
VarlinkCall *varlink_call_unref(VarlinkCall *call);
static inline void varlink_call_unrefp(VarlinkCall **c) {
        if (*c)
                varlink_call_unref(*c);
}
VarlinkConn *varlink_call_conn(const VarlinkCall *call); /* NULL once the peer is gone */
const char *varlink_call_method(const VarlinkCall *call); /* fully qualified */
bool varlink_call_wants_more(const VarlinkCall *call);
bool varlink_call_is_oneway(const VarlinkCall *call);
size_t varlink_call_n_fds(const VarlinkCall *call);
/* Takes fd number index of the call (the caller owns it then): -EBADF for an index out of range
 * or taken already. Untaken fds are closed with the call. */
int varlink_call_take_fd(VarlinkCall *call, int64_t index);
/* Gives fd back to the call at index (a slot taken before): the method that reads the fds later
 * finds it there. 0, or -EINVAL (out of range, the slot not empty, fd < 0). */
int varlink_call_put_fd(VarlinkCall *call, int64_t index, int fd);
/*
 * Answers. params (may be NULL for {}) is not stolen. continues is allowed only when the peer
 * asked for more; the last answer has continues false. After the final answer, or when the peer
 * is gone, further answers return -ENOTCONN; a oneway call's answers are dropped (0).
 */
int varlink_call_reply(VarlinkCall *call, json_t *params, bool continues);
/* The same with params given as len bytes of a compact JSON object's text, written by the
 * caller's fixed-format writer (no object built for a frequent answer). -EINVAL for text that
 * does not start with '{', end with '}', or holds a NUL. */
int varlink_call_reply_text(VarlinkCall *call, const char *params, size_t len, bool continues);
int varlink_call_error(VarlinkCall *call, const char *error, json_t *params);
/* org.varlink.service.InvalidParameter {"parameter": name}. */
int varlink_call_error_invalid_parameter(VarlinkCall *call, const char *name);
/* Runs fn(call, userdata) once if the connection goes away before the final answer. */
void varlink_call_set_cancel(VarlinkCall *call, void (*fn)(VarlinkCall *call, void *userdata),
                             void *userdata);

/*
 * Checks params against table: every key known, each of its type and within its bounds, each
 * required one present. 0, or -EINVAL with *ret_bad set to the offending parameter's name (a key
 * of params or of table). Pure; used by the server before any handler runs.
 */
int varlink_params_check(const json_t *params, const VarlinkParam *table, const char **ret_bad);

/*
 * Parses one message (len bytes, the NUL excluded) as a call: an object with "method" (a string
 * "iface.Member", at most VARLINK_NAME_MAX bytes; whether it names anything is the dispatcher's
 * business), optional "parameters" (object; null is removed, the same as absent), "more",
 * "oneway" and "upgrade" (bools) and nothing else; at most VARLINK_JSON_DEPTH_MAX deep; duplicate
 * keys refused. 0 with *ret (a new reference) or -EBADMSG with *ret_bad naming what was wrong
 * ("json", "method", "parameters", ...). Pure.
 */
int varlink_message_parse_call(const char *buf, size_t len, json_t **ret, const char **ret_bad);
/* Whether len bytes are a JSON object with "oneway": true, whatever else is wrong with them: such
 * a message is never answered, not even with an error. Pure. */
bool varlink_message_is_oneway(const char *buf, size_t len);

/* Added with the implementation: helpers the server and the client share. */

/* Longest interface or "iface.Member" name accepted. */
#define VARLINK_NAME_MAX 255
/* A reverse-domain interface name of len bytes ("io.lockd.Agent"). */
bool varlink_interface_name_valid(const char *s, size_t len);
/* "iface.Member": a valid interface name, a dot, then [A-Z][A-Za-z0-9]*. */
bool varlink_qualified_name_valid(const char *s);
/*
 * Parses one answer (len bytes, the NUL excluded): an object with optional "parameters" (object),
 * "error" (a qualified name) and "continues" (bool, never true with an error), nothing else.
 * 0 with *ret_params (new reference, {} when absent), *ret_error (new string or NULL) and
 * *ret_continues (each may be NULL to ignore it), or -EBADMSG. Pure.
 */
int varlink_message_parse_reply(const char *buf, size_t len, json_t **ret_params,
                                char **ret_error, bool *ret_continues);
/* Formats m compactly into a new buffer ending in the terminating NUL; *ret_len counts it. */
int varlink_message_format(const json_t *m, char **ret, size_t *ret_len);

/* Client: blocking, for lockctl, the tests and the benchmarks. */
int varlink_client_connect(const char *path, VarlinkClient **ret);
int varlink_client_new_fd(int fd, VarlinkClient **ret); /* takes ownership of fd */
VarlinkClient *varlink_client_free(VarlinkClient *c);
static inline void varlink_client_freep(VarlinkClient **c) {
        if (*c)
                varlink_client_free(*c);
}
/* 0 = no timeout (the default). */
void varlink_client_set_timeout(VarlinkClient *c, uint64_t usec);
/*
 * Sends one call (params borrowed, may be NULL; fds sent with it, not closed) and waits for the
 * answer. Returns 0 when an answer arrived: *ret_error NULL and *ret_params its parameters, or
 * *ret_error the error's name (new string) and *ret_params its parameters. A negative errno when
 * the transport failed (-ECONNRESET the peer closed, -ETIMEDOUT, -EBADMSG a malformed answer).
 */
int varlink_client_call(VarlinkClient *c, const char *method, json_t *params, const int *fds,
                        size_t n_fds, json_t **ret_params, char **ret_error);
/*
 * Like varlink_client_call() with "more": cb runs for every answer (error NULL or its name) until
 * one without continues, or until cb returns non-zero (returned, and the connection is no longer
 * usable for calls).
 */
typedef int (*VarlinkReplyFn)(json_t *params, const char *error, bool continues, void *userdata);
int varlink_client_call_more(VarlinkClient *c, const char *method, json_t *params, const int *fds,
                             size_t n_fds, VarlinkReplyFn cb, void *userdata);
/*
 * The same in two halves, for a caller that does other things between answers: start_more sends
 * the call; next_reply reads one answer until deadline_usec (CLOCK_MONOTONIC, as
 * varlink_client_now_usec() reads it; 0: none). -ETIMEDOUT when none came in time leaves the
 * client usable (the answer may still come); any other failure does not.
 */
int varlink_client_start_more(VarlinkClient *c, const char *method, json_t *params);
int varlink_client_next_reply(VarlinkClient *c, uint64_t deadline_usec, json_t **ret_params,
                              char **ret_error, bool *ret_continues);
uint64_t varlink_client_now_usec(void);
/* Sends a call with "oneway": no answer comes. */
int varlink_client_call_oneway(VarlinkClient *c, const char *method, json_t *params);
/* Sends raw bytes as they are (tests of hostile peers) and reads one raw NUL-terminated answer. */
int varlink_client_send_raw(VarlinkClient *c, const void *buf, size_t len, const int *fds,
                            size_t n_fds);
int varlink_client_read_raw(VarlinkClient *c, char **ret, size_t *ret_len);
int varlink_client_fd(const VarlinkClient *c);
