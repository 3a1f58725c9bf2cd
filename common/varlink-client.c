/* Blocking Varlink client: one call at a time over a Unix stream socket, fds as SCM_RIGHTS with
 * the first byte of a call, poll() with an optional timeout. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "macro.h"
#include "varlink.h"

#define READ_CHUNK ((size_t)64 * 1024)

struct VarlinkClient {
        int fd;
        uint64_t timeout_usec;
        /* Bytes [start, len) are received and not yet returned. */
        char *buf;
        size_t len, cap, start;
        bool broken; /* a call was abandoned midway: its answers may still come */
};

static uint64_t client_deadline(const VarlinkClient *c) {
        return c->timeout_usec > 0 ? clock_monotonic_usec() + c->timeout_usec : 0;
}

/* Waits for events on the socket until deadline (0: forever); 0, -ETIMEDOUT or -errno. */
static int client_wait(VarlinkClient *c, short events, uint64_t deadline) {
        struct pollfd p = {.fd = c->fd, .events = events};

        for (;;) {
                int timeout = -1, r;

                if (deadline > 0) {
                        uint64_t now = clock_monotonic_usec();

                        if (now >= deadline)
                                return -ETIMEDOUT;
                        timeout = (int)((deadline - now + 999) / 1000);
                }
                r = poll(&p, 1, timeout);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (r > 0)
                        return 0;
        }
}

int varlink_client_new_fd(int fd, VarlinkClient **ret) {
        _cleanup_close_ int owned = fd;
        VarlinkClient *c;
        int flags;

        if (fd < 0 || !ret)
                return -EINVAL;
        /* Non-blocking, so that the timeout holds for writes too. */
        flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
                return negative_errno();
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->fd = TAKE_FD(owned);
        *ret = c;
        return 0;
}

int varlink_client_connect(const char *path, VarlinkClient **ret) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        _cleanup_close_ int fd = -1;
        size_t len;

        if (!path || !ret)
                return -EINVAL;
        len = strlen(path);
        if (len == 0 || len >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, len);

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return negative_errno();
        if (connect(fd, (struct sockaddr *)&sa, offsetof(struct sockaddr_un, sun_path) + len + 1) <
            0)
                return negative_errno();
        return varlink_client_new_fd(TAKE_FD(fd), ret);
}

VarlinkClient *varlink_client_free(VarlinkClient *c) {
        if (!c)
                return NULL;
        safe_close(c->fd);
        free(c->buf);
        free(c);
        return NULL;
}

void varlink_client_set_timeout(VarlinkClient *c, uint64_t usec) {
        c->timeout_usec = usec;
}

int varlink_client_fd(const VarlinkClient *c) {
        return c->fd;
}

/* Writes all of buf; the fds ride with the first byte. */
static int client_write(VarlinkClient *c, const void *buf, size_t len, const int *fds, size_t n_fds,
                        uint64_t deadline) {
        union {
                struct cmsghdr header;
                char buf[CMSG_SPACE(sizeof(int) * VARLINK_FDS_PER_MESSAGE)];
        } control = {};
        size_t done = 0;

        if (n_fds > VARLINK_FDS_PER_MESSAGE || (n_fds > 0 && (!fds || len == 0)))
                return -EINVAL;
        while (done < len) {
                struct iovec iov = {(char *)buf + done, len - done};
                struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
                ssize_t k;
                int r;

                if (done == 0 && n_fds > 0) {
                        struct cmsghdr *cm;

                        mh.msg_control = &control;
                        mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                        cm = CMSG_FIRSTHDR(&mh);
                        cm->cmsg_level = SOL_SOCKET;
                        cm->cmsg_type = SCM_RIGHTS;
                        cm->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                        memcpy(CMSG_DATA(cm), fds, sizeof(int) * n_fds);
                }
                k = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                return errno == EPIPE ? -ECONNRESET : negative_errno();
                        r = client_wait(c, POLLOUT, deadline);
                        if (r < 0)
                                return r;
                        continue;
                }
                done += (size_t)k;
        }
        return 0;
}

/*
 * Returns the next NUL-terminated message (a new string, its NUL excluded from *ret_len). Any fd
 * that arrives is closed: answers never carry any. -ECONNRESET at the end of the stream,
 * -EBADMSG for a message longer than VARLINK_MESSAGE_BYTES_MAX.
 */
static int client_read_message(VarlinkClient *c, uint64_t deadline, char **ret, size_t *ret_len) {
        for (;;) {
                union {
                        struct cmsghdr header;
                        char buf[CMSG_SPACE(sizeof(int) * VARLINK_FDS_PER_MESSAGE)];
                } control;
                struct iovec iov;
                struct msghdr mh = {
                        .msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = &control,
                        .msg_controllen = sizeof(control),
                };
                char *nul = c->buf ? memchr(c->buf + c->start, 0, c->len - c->start) : NULL;
                ssize_t k;

                if (nul) {
                        size_t n = (size_t)(nul - (c->buf + c->start));
                        char *m = malloc(n + 1);

                        if (!m)
                                return -ENOMEM;
                        memcpy(m, c->buf + c->start, n + 1);
                        c->start += n + 1;
                        if (c->start == c->len)
                                c->start = c->len = 0;
                        *ret = m;
                        *ret_len = n;
                        return 0;
                }
                if (c->len - c->start >= VARLINK_MESSAGE_BYTES_MAX)
                        return -EBADMSG;
                if (c->start > 0) {
                        memmove(c->buf, c->buf + c->start, c->len - c->start);
                        c->len -= c->start;
                        c->start = 0;
                }
                if (c->cap - c->len < READ_CHUNK) {
                        size_t cap =
                                c->cap * 2 > c->len + READ_CHUNK ? c->cap * 2 : c->len + READ_CHUNK;
                        char *p = realloc(c->buf, cap);

                        if (!p)
                                return -ENOMEM;
                        c->buf = p;
                        c->cap = cap;
                }
                iov = (struct iovec){c->buf + c->len, READ_CHUNK};
                k = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
                if (k < 0) {
                        int r;

                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                return negative_errno();
                        r = client_wait(c, POLLIN, deadline);
                        if (r < 0)
                                return r;
                        continue;
                }
                for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
                        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
                                for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                                     i++) {
                                        int fd;

                                        memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                                        safe_close(fd);
                                }
                if (k == 0)
                        return -ECONNRESET;
                c->len += (size_t)k;
        }
}

/* Formats and sends one call. */
static int client_send_call(VarlinkClient *c, const char *method, json_t *params, bool more,
                            bool oneway, const int *fds, size_t n_fds, uint64_t deadline) {
        _cleanup_(json_decrefp) json_t *m = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        if (c->broken)
                return -ENOTCONN;
        if (!varlink_qualified_name_valid(method) || (params && !json_is_object(params)))
                return -EINVAL;
        m = json_pack("{s:s}", "method", method);
        if (!m || (params && json_object_set(m, "parameters", params) < 0) ||
            (more && json_object_set_new(m, "more", json_true()) < 0) ||
            (oneway && json_object_set_new(m, "oneway", json_true()) < 0))
                return -ENOMEM;
        r = varlink_message_format(m, &buf, &len);
        if (r < 0)
                return r;
        r = client_write(c, buf, len, fds, n_fds, deadline);
        if (r < 0)
                c->broken = true;
        return r;
}

/* Reads and parses one answer; a transport failure leaves the client unusable. */
static int client_read_reply(VarlinkClient *c, uint64_t deadline, json_t **ret_params,
                             char **ret_error, bool *ret_continues) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        r = client_read_message(c, deadline, &buf, &len);
        if (r >= 0)
                r = varlink_message_parse_reply(buf, len, ret_params, ret_error, ret_continues);
        if (r < 0)
                c->broken = true;
        return r;
}

int varlink_client_call(VarlinkClient *c, const char *method, json_t *params, const int *fds,
                        size_t n_fds, json_t **ret_params, char **ret_error) {
        _cleanup_(json_decrefp) json_t *p = NULL;
        _cleanup_free_ char *e = NULL;
        uint64_t deadline = client_deadline(c);
        bool continues;
        int r;

        r = client_send_call(c, method, params, false, false, fds, n_fds, deadline);
        if (r == -EPIPE || r == -ECONNRESET) {
                /* The server may have said why before it closed (a connection cap): that answer
                 * is still there to read, and says more than the broken pipe. */
                int q = client_read_reply(c, deadline, &p, &e, &continues);

                if (q < 0 || !e || continues)
                        return r;
        } else if (r < 0)
                return r;
        else {
                r = client_read_reply(c, deadline, &p, &e, &continues);
                if (r < 0)
                        return r;
        }
        if (continues) {
                /* Never asked for: the stream is out of step. */
                c->broken = true;
                return -EBADMSG;
        }
        if (ret_params)
                *ret_params = TAKE_PTR(p);
        if (ret_error)
                *ret_error = TAKE_PTR(e);
        else if (e)
                return -EREMOTEIO;
        return 0;
}

int varlink_client_call_more(VarlinkClient *c, const char *method, json_t *params, const int *fds,
                             size_t n_fds, VarlinkReplyFn cb, void *userdata) {
        int r;

        r = client_send_call(c, method, params, true, false, fds, n_fds, client_deadline(c));
        if (r < 0)
                return r;
        for (;;) {
                _cleanup_(json_decrefp) json_t *p = NULL;
                _cleanup_free_ char *e = NULL;
                bool continues;

                /* The timeout runs per answer: a stream may go on for long. */
                r = client_read_reply(c, client_deadline(c), &p, &e, &continues);
                if (r < 0)
                        return r;
                r = cb(p, e, continues, userdata);
                if (r != 0) {
                        if (continues)
                                c->broken = true;
                        return r;
                }
                if (!continues)
                        return 0;
        }
}

int varlink_client_start_more(VarlinkClient *c, const char *method, json_t *params) {
        return client_send_call(c, method, params, true, false, NULL, 0, client_deadline(c));
}

int varlink_client_next_reply(VarlinkClient *c, uint64_t deadline_usec, json_t **ret_params,
                              char **ret_error, bool *ret_continues) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        if (c->broken)
                return -ENOTCONN;
        r = client_read_message(c, deadline_usec, &buf, &len);
        /* A deadline passing consumed nothing: what arrived so far stays buffered. */
        if (r == -ETIMEDOUT)
                return r;
        if (r >= 0)
                r = varlink_message_parse_reply(buf, len, ret_params, ret_error, ret_continues);
        if (r < 0)
                c->broken = true;
        return r;
}

uint64_t varlink_client_now_usec(void) {
        return clock_monotonic_usec();
}

int varlink_client_call_oneway(VarlinkClient *c, const char *method, json_t *params) {
        return client_send_call(c, method, params, false, true, NULL, 0, client_deadline(c));
}

int varlink_client_send_raw(VarlinkClient *c, const void *buf, size_t len, const int *fds,
                            size_t n_fds) {
        return client_write(c, buf, len, fds, n_fds, client_deadline(c));
}

int varlink_client_read_raw(VarlinkClient *c, char **ret, size_t *ret_len) {
        char *m = NULL;
        size_t len = 0;
        int r;

        r = client_read_message(c, client_deadline(c), &m, &len);
        if (r < 0)
                return r;
        *ret = m;
        if (ret_len)
                *ret_len = len;
        return 0;
}
