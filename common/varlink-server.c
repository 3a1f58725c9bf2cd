/* Varlink server on sd-event: listeners, accepting connections within the caps, the registered
 * interfaces, and the built-in org.varlink.service interface. Connections and calls are in
 * varlink-conn.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "varlink-internal.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

/* How long a listener rests after accept() ran out of file descriptors. */
#define ACCEPT_RETRY_USEC ((uint64_t)100 * 1000)

#define SERVICE_INTERFACE "org.varlink.service"

static const char service_description[] =
        "# The Varlink Service Interface is provided by every varlink service. It\n"
        "# describes the service and the interfaces it implements.\n"
        "interface org.varlink.service\n"
        "\n"
        "# Get a list of all the interfaces a service provides and information\n"
        "# about the implementation.\n"
        "method GetInfo() -> (\n"
        "  vendor: string,\n"
        "  product: string,\n"
        "  version: string,\n"
        "  url: string,\n"
        "  interfaces: []string\n"
        ")\n"
        "\n"
        "# Get the description of an interface that is implemented by this service.\n"
        "method GetInterfaceDescription(interface: string) -> (description: string)\n"
        "\n"
        "# The requested interface was not found.\n"
        "error InterfaceNotFound (interface: string)\n"
        "\n"
        "# The requested method was not found\n"
        "error MethodNotFound (method: string)\n"
        "\n"
        "# The interface defines the requested method, but the service does not\n"
        "# implement it.\n"
        "error MethodNotImplemented (method: string)\n"
        "\n"
        "# One of the passed parameters is invalid.\n"
        "error InvalidParameter (parameter: string)\n"
        "\n"
        "# Client is denied access\n"
        "error PermissionDenied ()\n"
        "\n"
        "# Method is expected to be called with 'more' set to true, but wasn't\n"
        "error ExpectedMore ()\n";

static int service_get_info(VarlinkCall *call, json_t *params, void *userdata);
static int service_get_interface_description(VarlinkCall *call, json_t *params, void *userdata);

static const VarlinkParam service_description_params[] = {
        {"interface", VARLINK_STRING, true, 1, VARLINK_NAME_MAX},
        {},
};

static const VarlinkMethod service_methods[] = {
        {"GetInfo", service_get_info, NULL, 0},
        {"GetInterfaceDescription", service_get_interface_description, service_description_params,
         0},
        {},
};

/* Callable by every connection whatever its roles (role_mask is not consulted for it). */
const VarlinkInterface varlink_service_interface = {
        .name = SERVICE_INTERFACE,
        .description = service_description,
        .methods = service_methods,
        .role_mask = 0,
};

/* Zero fields take their defaults; nothing passes the hard ceilings. */
static void limits_sanitize(VarlinkLimits *l) {
        if (l->message_bytes == 0)
                l->message_bytes = VARLINK_DEFAULT_MESSAGE_BYTES;
        if (l->message_bytes > VARLINK_MESSAGE_BYTES_MAX)
                l->message_bytes = VARLINK_MESSAGE_BYTES_MAX;
        if (l->pending_per_conn == 0)
                l->pending_per_conn = VARLINK_DEFAULT_PENDING_PER_CONN;
        if (l->conns_per_uid == 0)
                l->conns_per_uid = VARLINK_DEFAULT_CONNS_PER_UID;
        if (l->conns_total == 0)
                l->conns_total = VARLINK_DEFAULT_CONNS_TOTAL;
        if (l->out_bytes_per_conn == 0)
                l->out_bytes_per_conn = VARLINK_DEFAULT_OUT_BYTES_PER_CONN;
        if (l->stall_usec == 0)
                l->stall_usec = VARLINK_DEFAULT_STALL_USEC;
}

/* ---- Interfaces ---- */

const VarlinkInterface *varlink_server_find_interface(VarlinkServer *s, const char *name,
                                                      size_t len) {
        if (strlen(SERVICE_INTERFACE) == len && memcmp(name, SERVICE_INTERFACE, len) == 0)
                return &varlink_service_interface;
        for (size_t i = 0; i < s->n_interfaces; i++)
                if (strlen(s->interfaces[i]->name) == len &&
                    memcmp(s->interfaces[i]->name, name, len) == 0)
                        return s->interfaces[i];
        return NULL;
}

/* ---- Listeners ---- */

static unsigned server_conns_of_uid(const VarlinkServer *s, uid_t uid) {
        unsigned n = 0;

        for (const VarlinkConn *c = s->conns; c; c = c->next)
                if (!c->dead && c->ucred.uid == uid)
                        n++;
        return n;
}

int varlink_server_set_listener_limits(VarlinkServer *s, int fd, unsigned conns_max,
                                       uint64_t idle_usec, const char *limit_error) {
        char *e = NULL;

        if (!s || (limit_error && !varlink_qualified_name_valid(limit_error)))
                return -EINVAL;
        for (VarlinkListener *l = s->listeners; l; l = l->next) {
                if (l->fd != fd)
                        continue;
                if (limit_error && !(e = strdup(limit_error)))
                        return -ENOMEM;
                free(l->limit_error);
                l->limit_error = e;
                l->conns_max = conns_max;
                l->idle_usec = idle_usec;
                return 0;
        }
        return -ENOENT;
}

/*
 * Tells a peer refused for a cap which one, when the listener says how, then closes. One
 * non-blocking write of a small message to a new socket: it fits, or the peer learns nothing but
 * the close. The peer reads it as the answer to its first call.
 */
static void refuse_over_limit(VarlinkListener *l, int cfd, const char *which) {
        char buf[256];
        int n;

        if (l->limit_error) {
                n = snprintf(buf, sizeof(buf),
                             "{\"error\":\"%s\",\"parameters\":{\"limit\":\"%s\"}}", l->limit_error,
                             which);
                if (n > 0 && (size_t)n < sizeof(buf))
                        (void)send(cfd, buf, (size_t)n + 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        safe_close(cfd);
}

/* Takes cfd: refuses it by closing at once, or makes it a connection and asks on_accept. */
static void listener_accept(VarlinkListener *l, int cfd) {
        VarlinkServer *s = l->server;
        struct ucred ucred;
        socklen_t len = sizeof(ucred);
        VarlinkConn *c;
        int pidfd = -1, r;

        if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &ucred, &len) < 0 || len != sizeof(ucred)) {
                safe_close(cfd);
                return;
        }
        /* The caps hold before any callback or allocation on the peer's behalf; a listener's own
         * cap keeps its reserve from the other sockets' peers. */
        if (l->conns_max > 0 && l->n_conns >= l->conns_max) {
                refuse_over_limit(l, cfd, "socket");
                return;
        }
        if (s->n_conns >= s->limits.conns_total) {
                refuse_over_limit(l, cfd, "total");
                return;
        }
        if (server_conns_of_uid(s, ucred.uid) >= s->limits.conns_per_uid) {
                refuse_over_limit(l, cfd, "uid");
                return;
        }
        len = sizeof(pidfd);
        if (getsockopt(cfd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0 || len != sizeof(pidfd))
                pidfd = -1;

        if (varlink_conn_new(l, cfd, &ucred, pidfd, &c) < 0)
                return;
        r = l->on_accept ? l->on_accept(c, l->userdata) : 0;
        if (r < 0) {
                varlink_conn_close(c);
                return;
        }
        c->accepted = true;
}

static int listener_on_retry(sd_event_source *source, uint64_t usec, void *userdata) {
        VarlinkListener *l = userdata;

        (void)sd_event_source_set_enabled(l->io, SD_EVENT_ON);
        return 0;
}

static int listener_on_io(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        VarlinkListener *l = userdata;
        int cfd;

        cfd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
                /* Out of fds or memory: the pending connection stays queued, and the listener
                 * would fire again at once. Rest instead of spinning. */
                if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                        (void)sd_event_source_set_enabled(l->io, SD_EVENT_OFF);
                        (void)sd_event_source_set_time_relative(l->retry, ACCEPT_RETRY_USEC);
                        (void)sd_event_source_set_enabled(l->retry, SD_EVENT_ONESHOT);
                }
                return 0;
        }
        listener_accept(l, cfd);
        return 0;
}

static void listener_free(VarlinkListener *l) {
        free(l->limit_error);
        sd_event_source_disable_unref(l->io);
        sd_event_source_disable_unref(l->retry);
        safe_close(l->fd);
        free(l);
}

int varlink_server_listen_fd(VarlinkServer *s, int fd, bool accept_fds, VarlinkAcceptFn on_accept,
                             VarlinkDisconnectFn on_disconnect, void *userdata) {
        _cleanup_close_ int owned = fd;
        VarlinkListener *l;
        int flags;

        if (fd < 0)
                return -EBADF;
        /* A spurious wakeup (another process accepted first) must not block the loop. */
        flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
                return negative_errno();

        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->server = s;
        l->fd = TAKE_FD(owned);
        l->accept_fds = accept_fds;
        l->on_accept = on_accept;
        l->on_disconnect = on_disconnect;
        l->userdata = userdata;
        if (sd_event_add_io(s->event, &l->io, l->fd, EPOLLIN, listener_on_io, l) < 0 ||
            sd_event_add_time_relative(s->event, &l->retry, CLOCK_MONOTONIC, ACCEPT_RETRY_USEC,
                                       TIMER_ACCURACY_USEC, listener_on_retry, l) < 0 ||
            sd_event_source_set_enabled(l->retry, SD_EVENT_OFF) < 0) {
                listener_free(l);
                return -ENOMEM;
        }
        l->next = s->listeners;
        s->listeners = l;
        return 0;
}

/* ---- Server ---- */

int varlink_server_new(sd_event *e, const VarlinkLimits *limits, const char *vendor,
                       const char *product, const char *version, const char *url,
                       VarlinkServer **ret) {
        VarlinkServer *s;

        if (!e || !limits || !vendor || !product || !version || !url || !ret)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->event = sd_event_ref(e);
        s->limits = *limits;
        limits_sanitize(&s->limits);
        s->vendor = strdup(vendor);
        s->product = strdup(product);
        s->version = strdup(version);
        s->url = strdup(url);
        if (!s->vendor || !s->product || !s->version || !s->url) {
                varlink_server_free(s);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

VarlinkServer *varlink_server_free(VarlinkServer *s) {
        if (!s)
                return NULL;
        /* Synchronously: the loop may never run again. Before the listeners, whose
         * on_disconnect runs here. */
        while (s->conns)
                varlink_conn_teardown(s->conns);
        while (s->listeners) {
                VarlinkListener *l = s->listeners;

                s->listeners = l->next;
                listener_free(l);
        }
        free(s->interfaces);
        free(s->vendor);
        free(s->product);
        free(s->version);
        free(s->url);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}

int varlink_server_add_interface(VarlinkServer *s, const VarlinkInterface *iface) {
        const VarlinkInterface **p;

        if (!iface || !iface->name ||
            !varlink_interface_name_valid(iface->name, strlen(iface->name)))
                return -EINVAL;
        if (varlink_server_find_interface(s, iface->name, strlen(iface->name)))
                return -EEXIST;
        p = realloc(s->interfaces, sizeof(*p) * (s->n_interfaces + 1));
        if (!p)
                return -ENOMEM;
        s->interfaces = p;
        s->interfaces[s->n_interfaces++] = iface;
        return 0;
}

void varlink_server_set_limits(VarlinkServer *s, const VarlinkLimits *limits) {
        s->limits = *limits;
        limits_sanitize(&s->limits);
}

unsigned varlink_server_n_connections(const VarlinkServer *s) {
        return s->n_conns;
}

/* ---- org.varlink.service ---- */

static int service_get_info(VarlinkCall *call, json_t *params, void *userdata) {
        VarlinkServer *s = userdata;
        VarlinkConn *c = varlink_call_conn(call);
        _cleanup_(json_decrefp) json_t *reply = NULL, *ifaces = NULL;

        if (!c)
                return -ENOTCONN;
        ifaces = json_array();
        if (!ifaces || json_array_append_new(ifaces, json_string(SERVICE_INTERFACE)) < 0)
                return -ENOMEM;
        /* Only what this peer may call: the others' interfaces are not its business. */
        for (size_t i = 0; i < s->n_interfaces; i++)
                if (varlink_conn_may_use(c, s->interfaces[i]) &&
                    json_array_append_new(ifaces, json_string(s->interfaces[i]->name)) < 0)
                        return -ENOMEM;
        reply = json_pack("{s:s, s:s, s:s, s:s, s:O}", "vendor", s->vendor, "product", s->product,
                          "version", s->version, "url", s->url, "interfaces", ifaces);
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply, false);
}

static int service_get_interface_description(VarlinkCall *call, json_t *params, void *userdata) {
        VarlinkServer *s = userdata;
        VarlinkConn *c = varlink_call_conn(call);
        const char *name = json_string_value(json_object_get(params, "interface"));
        const VarlinkInterface *iface;
        _cleanup_(json_decrefp) json_t *reply = NULL;

        if (!c)
                return -ENOTCONN;
        iface = varlink_server_find_interface(s, name, strlen(name));
        /* An interface this peer may not call does not exist for it. */
        if (!iface || !varlink_conn_may_use(c, iface) || !iface->description) {
                _cleanup_(json_decrefp) json_t *p = json_pack("{s:s}", "interface", name);

                if (!p)
                        return -ENOMEM;
                return varlink_call_error(call, VARLINK_ERROR_INTERFACE_NOT_FOUND, p);
        }
        reply = json_pack("{s:s}", "description", iface->description);
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply, false);
}
