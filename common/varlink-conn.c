/* Varlink connections on sd-event: reading and framing with the caps, fds, dispatch of calls in
 * a fixed order of checks, answers with backpressure, and calls with their lifetimes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "varlink-internal.h"

/*
 * What a peer gets, in the order the checks run (the first failure answers):
 *
 *  - at accept: over conns_total or conns_per_uid, closed at once; on_accept may refuse.
 *  - framing: a message past message_bytes (NUL included), a read with MSG_CTRUNC, more than
 *    VARLINK_FDS_PER_MESSAGE fds for one message, a partial message at the end of the stream or
 *    idle for stall_usec, an answer queue past out_bytes_per_conn: dropped without an answer.
 *  - backpressure: a call counts until its last answer is written. Reading pauses while
 *    pending_per_conn calls have no final answer, while that many calls (refusals included)
 *    wait in the answer queue behind an older one still answering (a Wait with "more"), or
 *    while VARLINK_READ_PAUSE_BYTES of answers are parked or unsent; it resumes as they leave.
 *    A peer that pipelines without reading holds at most that much of lockd's memory.
 *  - shape (varlink_message_parse_call()): org.varlink.service.InvalidParameter {"parameter":
 *    "json" | "method" | "parameters" | "more" | "oneway" | "upgrade" | "message" (an unknown
 *    key)}, then the connection is closed once the answer is out. "parameters": null and
 *    "upgrade": false are the same as absent.
 *  - interface unknown, or one this connection's roles may not use: InterfaceNotFound
 *    {"interface"}, the same answer for both, before the method name or any parameter is looked
 *    at (a peer learns nothing of interfaces it may not call, and needs no error declared in
 *    them); method unknown, whatever its spelling: MethodNotFound {"method"}. With fds on the
 *    message, both "unknown" cases answer InvalidParameter {"parameter": "method"} instead.
 *  - fds on a listener without accept_fds (closed the moment they arrived) or to a method
 *    without VARLINK_METHOD_ACCEPTS_FDS: <interface>.InvalidRequest {"reason"}.
 *  - "upgrade": true: InvalidParameter {"parameter": "upgrade"} (no method here upgrades).
 *  - "more" to a method without VARLINK_METHOD_MORE is a plain call: one answer, without
 *    continues (the specification lets a method answer a "more" call once).
 *  - varlink_params_check(): InvalidParameter {"parameter": name}.
 *
 * All of these but the shape errors keep the connection. A message with "oneway": true gets no
 * answer, errors included, whatever else it carries ("more" too: it runs as a oneway call). A
 * handler that returns a negative errno without answering, or returns without answering and without
 * keeping a reference, gets its connection closed: the peer would otherwise wait forever.
 */

/* One read takes at most this much; a message may span many reads. */
#define READ_CHUNK ((size_t)64 * 1024)

static void conn_kill(VarlinkConn *c);
static void conn_fail(VarlinkConn *c, const char *cause);
static void conn_update(VarlinkConn *c, bool data_arrived);
static int conn_on_io(sd_event_source *source, int fd, uint32_t revents, void *userdata);
static int conn_on_stall(sd_event_source *source, uint64_t usec, void *userdata);
static int conn_on_resume(sd_event_source *source, void *userdata);
static int conn_on_teardown(sd_event_source *source, void *userdata);

static void close_fds(int *fds, size_t *n) {
        for (size_t i = 0; i < *n; i++)
                fds[i] = safe_close(fds[i]);
        *n = 0;
}

/* ---- Calls ---- */

VarlinkCall *varlink_call_ref(VarlinkCall *call) {
        if (call)
                call->n_ref++;
        return call;
}

static void call_detach(VarlinkCall *call) {
        VarlinkConn *c = call->conn;

        if (!c)
                return;
        if (call->prev)
                call->prev->next = call->next;
        else
                c->calls = call->next;
        if (call->next)
                call->next->prev = call->prev;
        call->prev = call->next = NULL;
        call->conn = NULL;
}

VarlinkCall *varlink_call_unref(VarlinkCall *call) {
        if (!call || --call->n_ref > 0)
                return NULL;
        call_detach(call);
        close_fds(call->fds, &call->n_fds);
        json_decref(call->held);
        json_decref(call->message);
        free(call->method);
        free(call);
        return NULL;
}

VarlinkConn *varlink_call_conn(const VarlinkCall *call) {
        return call->conn && !call->conn->dead ? call->conn : NULL;
}

const char *varlink_call_method(const VarlinkCall *call) {
        return call->method;
}

bool varlink_call_wants_more(const VarlinkCall *call) {
        return call->more;
}

bool varlink_call_is_oneway(const VarlinkCall *call) {
        return call->oneway;
}

size_t varlink_call_n_fds(const VarlinkCall *call) {
        return call->n_fds;
}

int varlink_call_take_fd(VarlinkCall *call, int64_t index) {
        if (index < 0 || (uint64_t)index >= call->n_fds || call->fds[index] < 0)
                return -EBADF;
        return TAKE_FD(call->fds[index]);
}

int varlink_call_put_fd(VarlinkCall *call, int64_t index, int fd) {
        if (index < 0 || (uint64_t)index >= call->n_fds || call->fds[index] >= 0 || fd < 0)
                return -EINVAL;
        call->fds[index] = fd;
        return 0;
}

void varlink_call_set_cancel(VarlinkCall *call, void (*fn)(VarlinkCall *call, void *userdata),
                             void *userdata) {
        call->cancel = fn;
        call->cancel_userdata = userdata;
}

/* The final answer went out (or cannot): the call no longer counts against the pending cap. */
static void call_finish(VarlinkCall *call) {
        VarlinkConn *c = call->conn;

        if (!call->pending)
                return;
        call->pending = false;
        if (c) {
                c->n_pending--;
                /* Reading may resume; the backlog is dispatched from the loop, never from
                 * inside whoever answered. */
                if (!c->dead)
                        sd_event_source_set_enabled(c->resume, SD_EVENT_ONESHOT);
        }
        varlink_call_unref(call);
}

/* ---- Output ---- */

/* Writes what the socket takes now, never blocking; drops the peer on a write error. */
static void conn_flush(VarlinkConn *c) {
        size_t before = c->out_start;

        while (!c->dead && c->out_start < c->out_len) {
                ssize_t k = send(c->fd, c->out + c->out_start, c->out_len - c->out_start,
                                 MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                conn_fail(c, "writing to the peer failed");
                        break;
                }
                c->out_start += (size_t)k;
        }
        /* Answers left: calls waiting in the buffer may be dispatched again (from the loop). */
        if (!c->dead && c->in_backlog && (c->out_start != before || c->out_start == c->out_len))
                sd_event_source_set_enabled(c->resume, SD_EVENT_ONESHOT);
        if (c->out_start == c->out_len) {
                c->out_start = c->out_len = 0;
                if (c->out_cap > READ_CHUNK) {
                        free(c->out);
                        c->out = NULL;
                        c->out_cap = 0;
                }
                if (c->closing)
                        conn_kill(c);
        }
}

/* Room for n more bytes at the end of the output buffer (what was written already moved out of
 * the way first). 0, or -ENOMEM. */
static int out_reserve(VarlinkConn *c, size_t n) {
        if (c->out_start > 0) {
                memmove(c->out, c->out + c->out_start, c->out_len - c->out_start);
                c->out_len -= c->out_start;
                c->out_start = 0;
        }
        if (c->out_len + n > c->out_cap) {
                size_t cap = c->out_len + n;
                char *p;

                if (cap < c->out_cap * 2)
                        cap = c->out_cap * 2;
                p = realloc(c->out, cap);
                if (!p)
                        return -ENOMEM;
                c->out = p;
                c->out_cap = cap;
        }
        return 0;
}

/* Appends head_n bytes of head, then v compact (len bytes: json_dumpb()'s count for it) or, with
 * v NULL, len bytes of text, then tail_n bytes of tail, at the end of the output buffer. v is
 * dumped in place: no copy of its text is made on the way. 0, -ENOMEM, or -EIO (v dumped to
 * another length); nothing is appended on failure. */
static int out_append_json(VarlinkConn *c, const char *head, size_t head_n, const json_t *v,
                           const char *text, size_t len, const char *tail, size_t tail_n) {
        int r = out_reserve(c, head_n + len + tail_n);

        if (r < 0)
                return r;
        memcpy(c->out + c->out_len, head, head_n);
        /* The same value dumps to the same length: anything else is a bug, never a short
         * message on the wire. */
        if (!v)
                memcpy(c->out + c->out_len + head_n, text, len);
        else if (json_dumpb(v, c->out + c->out_len + head_n, len, JSON_COMPACT) != len)
                return -EIO;
        memcpy(c->out + c->out_len + head_n + len, tail, tail_n);
        c->out_len += head_n + len + tail_n;
        return 0;
}

/* Writes what can be written of what was queued, and holds the peer to the output cap.
 * -ENOTCONN when the connection is gone or was dropped for it. */
static int conn_flush_capped(VarlinkConn *c) {
        conn_flush(c);
        if (c->dead)
                return -ENOTCONN;
        /* A peer that does not read cannot make lockd hold its answers without bound. */
        if (c->out_len - c->out_start > c->limits.out_bytes_per_conn) {
                conn_fail(c, "the peer does not read its answers: past the output cap");
                return -ENOTCONN;
        }
        conn_update(c, false);
        return 0;
}

/* Queues one message and writes what can be written. -ENOTCONN when the connection is gone or
 * was dropped because its peer does not read fast enough. Compact, and jansson escapes any NUL
 * inside a string, so the message's only NUL is its end (varlink_message_format()). */
static int conn_send(VarlinkConn *c, const json_t *m) {
        size_t len;
        int r;

        if (c->dead)
                return -ENOTCONN;
        len = json_dumpb(m, NULL, 0, JSON_COMPACT);
        if (len == 0)
                return -ENOMEM; /* what json_dumps() said of a value it could not write */
        r = out_append_json(c, "", 0, m, NULL, len, "", 1);
        if (r < 0)
                return r;
        return conn_flush_capped(c);
}

/* ---- Answer order ----
 *
 * Varlink answers carry no call id: a peer that pipelines calls pairs answers with calls by
 * their order. A handler may answer later than a newer call's handler does (a Submit waits for
 * its audit record's commit), so answers queue behind the oldest call still answering. */

/* What a parked answer costs until it is sent: its bytes as they will be written, plus a
 * little for the JSON object that holds it. */
static size_t parked_size(const json_t *m) {
        return json_dumpb(m, NULL, 0, JSON_COMPACT) + 1 + 128;
}

static void order_append(VarlinkConn *c, VarlinkCall *call) {
        c->n_queued++;
        call->n_ref++;
        call->order_next = NULL;
        if (c->order_tail)
                c->order_tail->order_next = call;
        else
                c->order_head = call;
        c->order_tail = call;
}

/* Drops the head; then sends what the next calls hold, as far as calls whose answers are all
 * out reach. */
static void order_advance(VarlinkConn *c) {
        VarlinkCall *h = c->order_head;

        if (!h)
                return;
        c->order_head = h->order_next;
        if (!c->order_head)
                c->order_tail = NULL;
        c->n_queued--;
        varlink_call_unref(h);
        while ((h = c->order_head)) {
                size_t i;
                json_t *m;
                bool final = h->held_final;

                c->parked_bytes -= h->held_bytes;
                h->held_bytes = 0;
                json_array_foreach(h->held, i, m) {
                        if (conn_send(c, m) < 0)
                                break;
                }
                json_decref(h->held);
                h->held = NULL;
                if (!final)
                        return;
                c->order_head = h->order_next;
                if (!c->order_head)
                        c->order_tail = NULL;
                c->n_queued--;
                varlink_call_unref(h);
        }
}

/* Drops every queued answer (the connection is gone). */
static void order_clear(VarlinkConn *c) {
        while (c->order_head) {
                VarlinkCall *h = c->order_head;

                c->order_head = h->order_next;
                c->parked_bytes -= h->held_bytes;
                h->held_bytes = 0;
                varlink_call_unref(h);
        }
        c->order_tail = NULL;
        c->n_queued = 0;
}

/*
 * Sends m as an answer of call (NULL: a refusal of a message that never became a call), now when
 * it is the oldest call still answering (or nothing is pending), else when its turn comes. final:
 * the call's last answer. varlink_call_reply() writes the oldest call's answers itself, by the
 * same rule, without making m.
 */
static int conn_emit(VarlinkConn *c, VarlinkCall *call, json_t *m, bool final) {
        int r;

        if (!call) {
                if (!c->order_head)
                        return conn_send(c, m);
                /* A refusal behind pending answers takes its place in line as an answered
                 * call of its own. */
                call = calloc(1, sizeof(*call));
                if (!call)
                        return -ENOMEM;
                call->n_ref = 1;
                call->held = json_array();
                if (!call->held || json_array_append(call->held, m) < 0) {
                        json_decref(call->held);
                        free(call);
                        return -ENOMEM;
                }
                call->held_bytes = parked_size(m);
                c->parked_bytes += call->held_bytes;
                call->held_final = true;
                order_append(c, call);
                varlink_call_unref(call); /* the queue's reference remains */
                return 0;
        }
        if (c->order_head == call) {
                r = conn_send(c, m);
                if (final)
                        order_advance(c);
                return r;
        }
        if (!call->held && !(call->held = json_array()))
                return -ENOMEM;
        if (json_array_append(call->held, m) < 0)
                return -ENOMEM;
        {
                size_t n = parked_size(m);

                call->held_bytes += n;
                c->parked_bytes += n;
        }
        if (final)
                call->held_final = true;
        conn_update(c, false); /* reading may have to pause for it */
        return 0;
}

static int conn_send_error(VarlinkConn *c, const char *error, json_t *params) {
        _cleanup_(json_decrefp) json_t *m = NULL;

        m = json_pack("{s:s, s:o}", "error", error, "parameters",
                      params ? json_incref(params) : json_object());
        if (!m)
                return -ENOMEM;
        return conn_emit(c, NULL, m, true);
}

static int conn_send_error_string(VarlinkConn *c, const char *error, const char *key,
                                  const char *value) {
        _cleanup_(json_decrefp) json_t *p = json_pack("{s:s}", key, value);

        if (!p)
                return -ENOMEM;
        return conn_send_error(c, error, p);
}

/* Ends call with <its interface>.ReplyTooLarge {"bytes", "limit"} instead of an answer of len
 * bytes past limit. */
static int call_reply_too_large(VarlinkCall *call, size_t len, size_t limit) {
        _cleanup_free_ char *error = NULL;
        _cleanup_(json_decrefp) json_t *p = NULL;
        const char *dot = call->method ? strrchr(call->method, '.') : NULL;

        if (!dot ||
            asprintf(&error, "%.*s.ReplyTooLarge", (int)(dot - call->method), call->method) < 0)
                return -ENOMEM;
        p = json_pack("{s:I, s:I}", "bytes", (json_int_t)len, "limit", (json_int_t)limit);
        if (!p)
                return -ENOMEM;
        return varlink_call_error(call, error, p);
}

/*
 * The answer of call with params, given either as an object or, with params NULL, as text (len
 * bytes of a compact JSON object's text, varlink_call_reply_text()).
 */
static int call_reply(VarlinkCall *call, json_t *params, const char *text, size_t len,
                      bool continues) {
        _cleanup_(json_decrefp) json_t *m = NULL, *empty = NULL, *parsed = NULL;
        VarlinkConn *c = call->conn;
        int r;

        if (call->oneway)
                return 0;
        if (!c || c->dead || !call->pending)
                return -ENOTCONN;
        if (continues && !call->more)
                return -EINVAL;
        if (params && !json_is_object(params))
                return -EINVAL;

        /*
         * The answer is {"parameters":P} or {"parameters":P,"continues":true}, compact, and its
         * NUL: the same bytes json_dumps() makes of that object. Written around P's own dump (or
         * its text), with no object for the envelope and no copy of the text, when the answer
         * may go out now (the usual case: the oldest call still answering); an answer that must
         * wait its turn is kept as an object.
         */
        static const char head[] = "{\"parameters\":", tail_more[] = ",\"continues\":true}";
        const char *tail = continues ? tail_more : "}"; /* with the message's NUL */
        size_t tail_n = continues ? sizeof(tail_more) : sizeof("}"), p_len = len, total;

        if (!params && !text && !(params = empty = json_object()))
                return -ENOMEM;
        if (params) {
                p_len = json_dumpb(params, NULL, 0, JSON_COMPACT);
                if (p_len == 0)
                        return -ENOMEM;
        }
        total = strlen(head) + p_len + tail_n;
        /* An answer the output cap could never hold is not sent and then the peer dropped for it
         * (it would learn nothing of why): the call ends with <interface>.ReplyTooLarge, which
         * every interface served here declares. The methods page what can grow, so this is a
         * last wall. */
        if (total > c->limits.out_bytes_per_conn)
                return call_reply_too_large(call, total, c->limits.out_bytes_per_conn);
        if (c->order_head != call) {
                /* Rare (a pipelining peer's later call answered first): the text becomes the
                 * object it spells (its first byte is '{': an object or nothing), parked like
                 * any other. */
                if (!params &&
                    !(params = parsed = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL)))
                        return -EINVAL;
                m = json_pack("{s:O}", "parameters", params);
                if (!m || (continues && json_object_set_new(m, "continues", json_true()) < 0))
                        return -ENOMEM;
        }
        call->answered = true;
        if (m)
                r = conn_emit(c, call, m, !continues);
        else {
                r = out_append_json(c, head, strlen(head), params, text, p_len, tail, tail_n);
                if (r >= 0)
                        r = conn_flush_capped(c);
                if (!continues)
                        order_advance(c);
        }
        if (!continues)
                call_finish(call);
        return r;
}

int varlink_call_reply(VarlinkCall *call, json_t *params, bool continues) {
        return call_reply(call, params, NULL, 0, continues);
}

int varlink_call_reply_text(VarlinkCall *call, const char *params, size_t len, bool continues) {
        /* The caller's writer makes it; a slip there must not put a broken message on the
         * wire: the shape checked here is what the peer's parser finds first, and a NUL would
         * end the message early. */
        if (!params || len < 2 || params[0] != '{' || params[len - 1] != '}' ||
            memchr(params, 0, len))
                return -EINVAL;
        return call_reply(call, NULL, params, len, continues);
}

int varlink_call_error(VarlinkCall *call, const char *error, json_t *params) {
        VarlinkConn *c = call->conn;

        if (!varlink_qualified_name_valid(error) || (params && !json_is_object(params)))
                return -EINVAL;
        if (call->oneway)
                return 0;
        if (!c || c->dead || !call->pending)
                return -ENOTCONN;
        call->answered = true;
        {
                _cleanup_(json_decrefp) json_t *m =
                        json_pack("{s:s, s:o}", "error", error, "parameters",
                                  params ? json_incref(params) : json_object());
                int r = m ? conn_emit(c, call, m, true) : -ENOMEM;

                call_finish(call);
                return r;
        }
}

int varlink_call_error_invalid_parameter(VarlinkCall *call, const char *name) {
        _cleanup_(json_decrefp) json_t *p = json_pack("{s:s}", "parameter", name);

        if (!p)
                return -ENOMEM;
        return varlink_call_error(call, VARLINK_ERROR_INVALID_PARAMETER, p);
}

/* ---- Connections ---- */

const struct ucred *varlink_conn_peer(const VarlinkConn *c) {
        return &c->ucred;
}

int varlink_conn_peer_pidfd(const VarlinkConn *c) {
        return c->pidfd;
}

int varlink_conn_listener_fd(const VarlinkConn *c) {
        return c->listener ? c->listener->fd : -1;
}

void varlink_conn_set_roles(VarlinkConn *c, unsigned role_mask) {
        c->roles = role_mask;
}

unsigned varlink_conn_roles(const VarlinkConn *c) {
        return c->roles;
}

void varlink_conn_hold(VarlinkConn *c) {
        c->held = true;
        conn_update(c, false);
}

void varlink_conn_release(VarlinkConn *c) {
        if (!c->held)
                return;
        c->held = false;
        conn_update(c, false);
}

void varlink_conn_set_userdata(VarlinkConn *c, void *userdata) {
        c->userdata = userdata;
}

void *varlink_conn_get_userdata(const VarlinkConn *c) {
        return c->userdata;
}

/* Whether the peer may have one more call dispatched: see backpressure at the top. */
static bool conn_may_take_call(const VarlinkConn *c) {
        return c->n_pending < c->limits.pending_per_conn &&
               c->n_queued < c->limits.pending_per_conn &&
               (c->out_len - c->out_start) + c->parked_bytes < VARLINK_READ_PAUSE_BYTES;
}

static bool conn_wants_read(const VarlinkConn *c) {
        return !c->dead && !c->closing && !c->read_eof && !c->in_backlog && !c->held &&
               conn_may_take_call(c);
}

/*
 * Sets the events to wait for: EPOLLIN while reading, EPOLLOUT only while output waits. The
 * stall timer runs while a partial message sits in the buffer and reading is on; new data
 * restarts it.
 */
static void conn_update(VarlinkConn *c, bool data_arrived) {
        bool reading, partial;
        uint32_t events = 0;
        int enabled = SD_EVENT_OFF;

        if (c->dead)
                return;
        /* A peer that only shut down its writing side still gets its answers; then it goes. */
        if (c->read_eof && c->n_pending == 0 && c->out_start == c->out_len && !c->in_backlog) {
                conn_kill(c);
                return;
        }
        reading = conn_wants_read(c);
        if (reading)
                events |= EPOLLIN;
        if (c->out_start < c->out_len)
                events |= EPOLLOUT;
        (void)sd_event_source_set_io_events(c->io, events);

        partial = c->in_len > c->in_start;
        /* The idle timer runs only while nothing is open: no pending call (a Wait with "more"
         * counts), nothing half-read, no answer waiting to be written. */
        if (c->idle) {
                bool idle = c->n_pending == 0 && c->n_queued == 0 && !partial &&
                            c->out_start == c->out_len;
                int on = SD_EVENT_OFF;

                (void)sd_event_source_get_enabled(c->idle, &on);
                if (!idle)
                        (void)sd_event_source_set_enabled(c->idle, SD_EVENT_OFF);
                else if (on == SD_EVENT_OFF) {
                        (void)sd_event_source_set_time_relative(c->idle, c->listener->idle_usec);
                        (void)sd_event_source_set_enabled(c->idle, SD_EVENT_ONESHOT);
                }
        }
        if (!reading || !partial) {
                (void)sd_event_source_set_enabled(c->stall, SD_EVENT_OFF);
                return;
        }
        (void)sd_event_source_get_enabled(c->stall, &enabled);
        if (data_arrived || enabled == SD_EVENT_OFF) {
                (void)sd_event_source_set_time_relative(c->stall, c->limits.stall_usec);
                (void)sd_event_source_set_enabled(c->stall, SD_EVENT_ONESHOT);
        }
}

/*
 * Closes the connection now: no more reading or writing, it stops counting against the caps.
 * The callbacks run and the memory goes in the teardown, from the event loop, so that this is
 * safe from inside a handler, an answer or a callback.
 */
static void conn_kill(VarlinkConn *c) {
        if (c->dead)
                return;
        c->dead = true;
        c->server->n_conns--;
        if (c->listener)
                c->listener->n_conns--;
        c->idle = sd_event_source_disable_unref(c->idle);
        c->io = sd_event_source_disable_unref(c->io);
        (void)sd_event_source_set_enabled(c->stall, SD_EVENT_OFF);
        (void)sd_event_source_set_enabled(c->resume, SD_EVENT_OFF);
        c->fd = safe_close(c->fd);
        close_fds(c->fds_cur.fds, &c->fds_cur.n);
        close_fds(c->fds_next.fds, &c->fds_next.n);
        (void)sd_event_source_set_enabled(c->teardown, SD_EVENT_ONESHOT);
}

/* Closes the connection for cause (a static sentence), which the disconnect callback can read
 * (varlink_conn_close_cause()); the first cause stands. */
static void conn_fail(VarlinkConn *c, const char *cause) {
        if (!c->dead && !c->close_cause)
                c->close_cause = cause;
        conn_kill(c);
}

const char *varlink_conn_close_cause(const VarlinkConn *c) {
        return c->close_cause;
}

void varlink_conn_close(VarlinkConn *c) {
        if (c)
                conn_kill(c);
}

/* Runs the disconnect callback, then every unfinished call's cancel callback, then frees. */
void varlink_conn_teardown(VarlinkConn *c) {
        VarlinkServer *s = c->server;

        conn_kill(c);
        if (c->torn_down)
                return;
        c->torn_down = true;

        if (c->accepted && c->listener->on_disconnect)
                c->listener->on_disconnect(c, c->listener->userdata);

        order_clear(c);
        /* One call at a time from the head: a cancel callback may free other calls. */
        while (c->calls) {
                VarlinkCall *call = c->calls;

                call_detach(call);
                if (call->pending) {
                        call->pending = false;
                        c->n_pending--;
                        if (call->cancel)
                                call->cancel(call, call->cancel_userdata);
                        varlink_call_unref(call);
                }
        }

        if (c->prev)
                c->prev->next = c->next;
        else
                s->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        sd_event_source_disable_unref(c->stall);
        sd_event_source_disable_unref(c->resume);
        sd_event_source_disable_unref(c->teardown);
        safe_close(c->pidfd);
        free(c->in);
        free(c->out);
        free(c);
}

static int conn_on_teardown(sd_event_source *source, void *userdata) {
        varlink_conn_teardown(userdata);
        return 0;
}

/* No call open and nothing half-read for the listener's idle time: the slot goes back. */
static int conn_on_idle(sd_event_source *source, uint64_t usec, void *userdata) {
        conn_kill(userdata);
        return 0;
}

static int conn_on_stall(sd_event_source *source, uint64_t usec, void *userdata) {
        /* Part of a message and then nothing: a slowloris holding a slot. */
        conn_fail(userdata, "the peer stalled in the middle of a message");
        return 0;
}

/* ---- Dispatch ---- */

bool varlink_conn_may_use(const VarlinkConn *c, const VarlinkInterface *iface) {
        return iface == &varlink_service_interface || (iface->role_mask & c->roles) != 0;
}

static const VarlinkMethod *interface_find_method(const VarlinkInterface *iface, const char *name) {
        for (const VarlinkMethod *m = iface->methods; m && m->name; m++)
                if (strcmp(m->name, name) == 0)
                        return m;
        return NULL;
}

/* An error for a call that never reached a handler; a oneway call gets none. */
static void conn_refuse(VarlinkConn *c, bool oneway, const char *error, const char *key,
                        const char *value) {
        int r;

        if (oneway)
                return;
        if (key)
                r = conn_send_error_string(c, error, key, value);
        else
                r = conn_send_error(c, error, NULL);
        if (r < 0)
                conn_kill(c);
}

/* Fds on a listener that takes none, or with a method that takes none: each told as it is. */
static void conn_refuse_fds(VarlinkConn *c, bool oneway, const char *iface, const char *method) {
        _cleanup_free_ char *error = NULL, *reason = NULL;

        if (asprintf(&error, "%s.InvalidRequest", iface) < 0 ||
            (c->listener->accept_fds &&
             asprintf(&reason, "%s takes no file descriptors", method) < 0)) {
                conn_kill(c);
                return;
        }
        conn_refuse(c, oneway, error, "reason",
                    reason ? reason : "file descriptors are not accepted on this socket");
}

/*
 * The method name names, checked in order: interface, role, method, fds. NULL when one failed:
 * the peer was answered and fds closed. An interface this connection may not use answers exactly
 * like one that does not exist: a role error would need a declaration in an interface the peer
 * cannot fetch, and would tell it what else is served here.
 */
static const VarlinkMethod *conn_resolve(VarlinkConn *c, const char *name, bool oneway,
                                         VarlinkInFds *fds, const VarlinkInterface **ret_iface) {
        _cleanup_free_ char *ifname = NULL;
        bool has_fds = fds->n > 0 || fds->refused;
        const char *dot = strrchr(name, '.');
        const VarlinkInterface *iface;
        const VarlinkMethod *method;

        iface = varlink_interface_name_valid(name, (size_t)(dot - name))
                        ? varlink_server_find_interface(c->server, name, (size_t)(dot - name))
                        : NULL;
        if (!iface || !varlink_conn_may_use(c, iface)) {
                close_fds(fds->fds, &fds->n);
                if (has_fds)
                        conn_refuse(c, oneway, VARLINK_ERROR_INVALID_PARAMETER, "parameter",
                                    "method");
                else {
                        ifname = strndup(name, (size_t)(dot - name));
                        if (!ifname) {
                                conn_kill(c);
                                return NULL;
                        }
                        conn_refuse(c, oneway, VARLINK_ERROR_INTERFACE_NOT_FOUND, "interface",
                                    ifname);
                }
                return NULL;
        }
        method = interface_find_method(iface, dot + 1);
        if (!method) {
                close_fds(fds->fds, &fds->n);
                if (has_fds)
                        conn_refuse(c, oneway, VARLINK_ERROR_INVALID_PARAMETER, "parameter",
                                    "method");
                else
                        conn_refuse(c, oneway, VARLINK_ERROR_METHOD_NOT_FOUND, "method", name);
                return NULL;
        }
        if (has_fds && (fds->refused || !c->listener->accept_fds ||
                        !(method->flags & VARLINK_METHOD_ACCEPTS_FDS))) {
                close_fds(fds->fds, &fds->n);
                conn_refuse_fds(c, oneway, iface->name, name);
                return NULL;
        }
        *ret_iface = iface;
        return method;
}

/* The call of message *m (taken) with the fds (taken), open on c and, unless oneway, pending in
 * answer order. NULL: no memory, the connection is killed. */
static VarlinkCall *conn_call_new(VarlinkConn *c, const char *name, json_t **m, bool more,
                                  bool oneway, VarlinkInFds *fds) {
        VarlinkCall *call = calloc(1, sizeof(*call));

        if (call)
                call->method = strdup(name);
        if (!call || !call->method) {
                free(call);
                close_fds(fds->fds, &fds->n);
                conn_kill(c);
                return NULL;
        }
        call->n_ref = 1;
        call->message = TAKE_PTR(*m);
        call->more = more;
        call->oneway = oneway;
        memcpy(call->fds, fds->fds, sizeof(int) * fds->n);
        call->n_fds = fds->n;
        fds->n = 0;
        call->conn = c;
        call->next = c->calls;
        if (c->calls)
                c->calls->prev = call;
        c->calls = call;
        if (!oneway) {
                call->pending = true;
                call->n_ref++;
                c->n_pending++;
                order_append(c, call);
        }
        return call;
}

/* A message that is not a call: answered once (never a oneway message), then the connection hung
 * up, since nothing after it can be trusted to be framed the way the peer meant. */
static void conn_refuse_message(VarlinkConn *c, const char *buf, size_t len, const char *bad,
                                VarlinkInFds *fds) {
        close_fds(fds->fds, &fds->n);
        conn_refuse(c, varlink_message_is_oneway(buf, len), VARLINK_ERROR_INVALID_PARAMETER,
                    "parameter", bad);
        c->closing = true;
        if (!c->close_cause)
                c->close_cause = "a malformed message";
        conn_flush(c);
}

/*
 * Handles one complete message (len bytes, the NUL excluded) with the fds that came with it
 * (taken). The checks run in a fixed order and the first failure answers: message shape (then
 * the connection is closed), interface, role, method, fds, flags, parameters. Nothing of the
 * parameters is looked at before the role was checked.
 */
static void conn_dispatch(VarlinkConn *c, const char *buf, size_t len, VarlinkInFds *fds) {
        _cleanup_(json_decrefp) json_t *m = NULL;
        const VarlinkInterface *iface = NULL;
        const VarlinkMethod *method;
        const char *name, *bad = NULL;
        bool more, oneway, upgrade;
        json_t *params;
        VarlinkCall *call;
        int r;

        if (varlink_message_parse_call(buf, len, &m, &bad) < 0) {
                conn_refuse_message(c, buf, len, bad, fds);
                return;
        }
        name = json_string_value(json_object_get(m, "method"));
        oneway = json_is_true(json_object_get(m, "oneway"));
        more = json_is_true(json_object_get(m, "more")) && !oneway;
        upgrade = json_is_true(json_object_get(m, "upgrade"));
        params = json_object_get(m, "parameters");

        method = conn_resolve(c, name, oneway, fds, &iface);
        if (!method)
                return;
        /* No method here hands its connection over to another protocol. */
        if (upgrade) {
                close_fds(fds->fds, &fds->n);
                conn_refuse(c, oneway, VARLINK_ERROR_INVALID_PARAMETER, "parameter", "upgrade");
                return;
        }
        /* "more" on a method that never continues: answered once, as a plain call. */
        if (!(method->flags & VARLINK_METHOD_MORE))
                more = false;
        if (!params) {
                params = json_object();
                if (!params || json_object_set_new(m, "parameters", params) < 0) {
                        close_fds(fds->fds, &fds->n);
                        conn_kill(c);
                        return;
                }
        }
        if (varlink_params_check(params, method->params, &bad) < 0) {
                close_fds(fds->fds, &fds->n);
                conn_refuse(c, oneway, VARLINK_ERROR_INVALID_PARAMETER, "parameter", bad);
                return;
        }
        call = conn_call_new(c, name, &m, more, oneway, fds);
        if (!call)
                return;

        r = method->fn(call, params,
                       iface == &varlink_service_interface ? c->server : c->listener->userdata);
        if (!c->dead) {
                /* A handler that failed without answering, or that neither answered nor kept
                 * the call, leaves the peer waiting forever: fail closed. */
                if (r < 0 && !call->answered)
                        conn_fail(c, r == -ENOMEM ? "out of memory answering a call"
                                                  : "a call failed without an answer");
                else if (call->pending && call->n_ref <= 3)
                        /* Ours, the pending one and the answer queue's: nobody else has it. */
                        conn_fail(c, "a call was left without an answer");
        }
        varlink_call_unref(call);
}

/* Dispatches complete messages while the pending cap allows, then compacts the buffer. */
static void conn_process(VarlinkConn *c) {
        while (!c->dead && !c->closing) {
                char *start = c->in + c->in_start, *nul;
                size_t len;
                VarlinkInFds fds = {};

                nul = c->in_len > c->in_scan ? memchr(c->in + c->in_scan, 0, c->in_len - c->in_scan)
                                             : NULL;
                if (!nul) {
                        c->in_scan = c->in_len;
                        c->in_backlog = false;
                        /* The cap counts the NUL: this many bytes without one are too many. */
                        if (c->in_len - c->in_start >= c->limits.message_bytes)
                                conn_fail(c, "a message past the size cap");
                        break;
                }
                if (!conn_may_take_call(c)) {
                        c->in_backlog = true;
                        break;
                }
                len = (size_t)(nul - start);
                if (len + 1 > c->limits.message_bytes) {
                        conn_fail(c, "a message past the size cap");
                        break;
                }
                fds = c->fds_cur;
                c->fds_cur.n = 0;
                c->fds_cur.refused = false;
                c->in_start += len + 1;
                c->in_scan = c->in_start;
                c->in_seq++;
                if (c->fds_next_used && c->fds_next.seq == c->in_seq) {
                        c->fds_cur = c->fds_next;
                        c->fds_next.n = 0;
                        c->fds_next.refused = false;
                        c->fds_next_used = false;
                }
                conn_dispatch(c, start, len, &fds);
                close_fds(fds.fds, &fds.n);
        }
        if (c->dead)
                return;
        if (c->in_start > 0) {
                memmove(c->in, c->in + c->in_start, c->in_len - c->in_start);
                c->in_len -= c->in_start;
                c->in_scan -= c->in_start;
                c->in_start = 0;
        }
        /* An idle connection does not keep the buffer of its largest message. */
        if (c->in_len == 0 && c->in_cap > READ_CHUNK) {
                free(c->in);
                c->in = NULL;
                c->in_cap = c->in_scan = 0;
        }
}

/*
 * Assigns the fds of one read to a message. The kernel ends a read right after the data that
 * carried fds, and lockd's client sends a message's fds with its first byte, so they belong to
 * the message that holds the last byte of the read. Reading only happens once every complete
 * message was dispatched, so that is the message in progress (fds_cur) or, when the read
 * completed it and began others, a later one (fds_next). More than VARLINK_FDS_PER_MESSAGE for
 * one message, or fds for a third message, drop the peer. Returns false when it was dropped.
 */
static bool conn_take_fds(VarlinkConn *c, const char *chunk, size_t n, int *fds, size_t n_fds) {
        uint64_t target = c->in_seq;
        VarlinkInFds *set;

        for (const char *p = chunk; (p = memchr(p, 0, (size_t)(chunk + n - 1 - p))); p++)
                target++;
        /* Bytes before this read hold no NUL: every complete message was dispatched. */
        if (target == c->in_seq)
                set = &c->fds_cur;
        else if (!c->fds_next_used || c->fds_next.seq == target) {
                set = &c->fds_next;
                set->seq = target;
                c->fds_next_used = true;
        } else {
                close_fds(fds, &n_fds);
                conn_kill(c);
                return false;
        }
        if (!c->listener->accept_fds) {
                /* Closed at once: lockd never holds a file a peer may not hand it. */
                close_fds(fds, &n_fds);
                set->refused = true;
                return true;
        }
        if (set->n + n_fds > VARLINK_FDS_PER_MESSAGE) {
                close_fds(fds, &n_fds);
                conn_fail(c, "too many file descriptors for one message");
                return false;
        }
        memcpy(set->fds + set->n, fds, sizeof(int) * n_fds);
        set->n += n_fds;
        return true;
}

/* One recvmsg(), then whatever it completed is dispatched. */
static void conn_read(VarlinkConn *c) {
        union {
                struct cmsghdr header;
                char buf[CMSG_SPACE(sizeof(int) * VARLINK_FDS_PER_MESSAGE)];
        } control;
        int fds[VARLINK_FDS_PER_MESSAGE];
        size_t n_fds = 0;
        struct iovec iov;
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = &control,
                .msg_controllen = sizeof(control),
        };
        ssize_t n;

        if (c->in_cap - c->in_len < READ_CHUNK) {
                /* Geometric growth: a big message costs a few copies, not one per read. It
                 * stays below message_bytes + READ_CHUNK, since a longer partial message was
                 * dropped already. */
                size_t cap = MAX(c->in_len + READ_CHUNK, c->in_cap * 2);
                char *p;

                cap = MIN(cap, c->limits.message_bytes + READ_CHUNK);
                p = realloc(c->in, cap);
                if (!p) {
                        conn_fail(c, "out of memory reading a message");
                        return;
                }
                c->in = p;
                c->in_cap = cap;
        }
        iov = (struct iovec){c->in + c->in_len, MIN(READ_CHUNK, c->in_cap - c->in_len)};

        n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0) {
                if (errno != EAGAIN && errno != EINTR)
                        conn_fail(c, "reading from the peer failed");
                return;
        }
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
                size_t k;

                if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                        continue;
                k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < k; i++) {
                        int fd;

                        memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                        if (n_fds < ELEMENTSOF(fds))
                                fds[n_fds++] = fd;
                        else
                                safe_close(fd);
                }
        }
        if (mh.msg_flags & MSG_CTRUNC) {
                /* More fds than one message may carry; the kernel closed the rest. */
                close_fds(fds, &n_fds);
                conn_fail(c, "file descriptors truncated by the kernel");
                return;
        }
        if (n == 0) {
                close_fds(fds, &n_fds);
                /* A message cut short by the end of the stream is never dispatched. */
                if (c->in_len > c->in_start) {
                        conn_fail(c, "the peer ended in the middle of a message");
                        return;
                }
                c->read_eof = true;
                conn_update(c, false);
                return;
        }
        if (n_fds > 0 && !conn_take_fds(c, c->in + c->in_len, (size_t)n, fds, n_fds))
                return;
        c->in_len += (size_t)n;
        conn_process(c);
        conn_update(c, true);
}

static int conn_on_io(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        VarlinkConn *c = userdata;

        if (revents & EPOLLOUT)
                conn_flush(c);
        if (!c->dead && conn_wants_read(c) && (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                conn_read(c);
        else if (!c->dead && (revents & (EPOLLHUP | EPOLLERR)))
                /* Gone while we were not reading (or after its end of stream): nothing can
                 * reach it any more. */
                conn_kill(c);
        conn_update(c, false);
        return 0;
}

static int conn_on_resume(sd_event_source *source, void *userdata) {
        VarlinkConn *c = userdata;

        conn_process(c);
        conn_update(c, false);
        return 0;
}

/* ---- Creation ---- */

int varlink_conn_new(VarlinkListener *l, int cfd, const struct ucred *ucred, int pidfd,
                     VarlinkConn **ret) {
        VarlinkServer *s = l->server;
        VarlinkConn *c;

        c = calloc(1, sizeof(*c));
        if (!c) {
                safe_close(pidfd);
                safe_close(cfd);
                return -ENOMEM;
        }
        c->server = s;
        c->listener = l;
        c->fd = cfd;
        c->pidfd = pidfd;
        c->ucred = *ucred;
        c->limits = s->limits;
        if (sd_event_add_io(s->event, &c->io, cfd, EPOLLIN, conn_on_io, c) < 0 ||
            sd_event_add_time_relative(s->event, &c->stall, CLOCK_MONOTONIC, c->limits.stall_usec,
                                       TIMER_ACCURACY_USEC, conn_on_stall, c) < 0 ||
            sd_event_add_defer(s->event, &c->resume, conn_on_resume, c) < 0 ||
            sd_event_add_defer(s->event, &c->teardown, conn_on_teardown, c) < 0 ||
            sd_event_source_set_enabled(c->stall, SD_EVENT_OFF) < 0 ||
            sd_event_source_set_enabled(c->resume, SD_EVENT_OFF) < 0 ||
            sd_event_source_set_enabled(c->teardown, SD_EVENT_OFF) < 0) {
                sd_event_source_disable_unref(c->io);
                sd_event_source_disable_unref(c->stall);
                sd_event_source_disable_unref(c->resume);
                sd_event_source_disable_unref(c->teardown);
                safe_close(pidfd);
                safe_close(cfd);
                free(c);
                return -ENOMEM;
        }
        c->next = s->conns;
        if (s->conns)
                s->conns->prev = c;
        s->conns = c;
        s->n_conns++;
        l->n_conns++;
        /* Idle from the start: a peer that connects and never calls holds nothing for long. */
        if (l->idle_usec > 0 &&
            sd_event_add_time_relative(s->event, &c->idle, CLOCK_MONOTONIC, l->idle_usec,
                                       TIMER_ACCURACY_USEC, conn_on_idle, c) < 0)
                c->idle = NULL; /* no timer: the other caps still hold */

        *ret = c;
        return 0;
}
