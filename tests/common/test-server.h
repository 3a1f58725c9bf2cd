/* A Manager's Varlink server on a thread of its own, for the tests of methods over a real socket.
 */
#pragma once

#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "macro.h"
#include "manager.h"
#include "roles.h"
#include "varlink.h"

typedef struct TestServer {
        Manager manager;
        /* Served by manager.varlink, so they live as long as it does. */
        VarlinkInterface console_iface;
        VarlinkInterface agent_iface;
        int stop_fd; /* an eventfd: a write ends the server thread's event loop */
        sd_event_source *stop_source;
        pthread_t thread;
} TestServer;

/* Every connection may call both interfaces: the methods check the caller themselves. */
static inline int test_server_on_accept(VarlinkConn *c, void *userdata) {
        varlink_conn_set_roles(c, ROLE_MASK_CONSOLE | ROLE_MASK_AGENT);
        return 0;
}

static inline int test_server_on_stop(sd_event_source *s, int fd, uint32_t revents,
                                      void *userdata) {
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

/* The server thread: everything of the Manager is touched here only, until it is joined. */
static inline void *test_server_serve(void *arg) {
        TestServer *s = arg;

        sd_event_loop(s->manager.event);
        return NULL;
}

/*
 * Serves io.lockd.Console with console_methods and io.lockd.Agent with agent_methods as
 * s->manager.varlink (a new server on s->manager.event, which must exist) on a new socket at
 * sock_path, chmod()ed to sock_mode unless that is 0, and runs the event loop on a new thread.
 * Fails the test on any error.
 */
static inline void test_server_start(TestServer *s, const VarlinkMethod *console_methods,
                                     const VarlinkMethod *agent_methods, const char *sock_path,
                                     mode_t sock_mode) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        VarlinkServer *vs;
        int fd;

        s->console_iface = (VarlinkInterface){
                .name = "io.lockd.Console",
                .description = "interface io.lockd.Console\n",
                .methods = console_methods,
                .role_mask = ROLE_MASK_CONSOLE,
        };
        s->agent_iface = (VarlinkInterface){
                .name = "io.lockd.Agent",
                .description = "interface io.lockd.Agent\n",
                .methods = agent_methods,
                .role_mask = ROLE_MASK_AGENT,
        };
        ck_assert_int_eq(varlink_server_new(s->manager.event, &(VarlinkLimits){}, "lockd", "lockd",
                                            "test", "https://example.invalid", &vs),
                         0);
        s->manager.varlink = vs;
        ck_assert_int_eq(varlink_server_add_interface(vs, &s->console_iface), 0);
        ck_assert_int_eq(varlink_server_add_interface(vs, &s->agent_iface), 0);

        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        if (sock_mode != 0)
                ck_assert_int_eq(chmod(sock_path, sock_mode), 0);
        ck_assert_int_eq(listen(fd, 8), 0);
        ck_assert_int_eq(
                varlink_server_listen_fd(vs, fd, true, test_server_on_accept, NULL, &s->manager),
                0);

        s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        ck_assert_int_ge(s->stop_fd, 0);
        ck_assert_int_ge(sd_event_add_io(s->manager.event, &s->stop_source, s->stop_fd, EPOLLIN,
                                         test_server_on_stop, NULL),
                         0);
        ck_assert_int_eq(pthread_create(&s->thread, NULL, test_server_serve, s), 0);
}

/*
 * Ends the server thread and frees what test_server_start() made (the Varlink server, its
 * connections and the stop eventfd); the rest of s->manager, its event loop included, is the
 * caller's to free.
 */
static inline void test_server_stop(TestServer *s) {
        uint64_t one = 1;

        ck_assert_int_eq(write(s->stop_fd, &one, sizeof(one)), (ssize_t)sizeof(one));
        ck_assert_int_eq(pthread_join(s->thread, NULL), 0);
        s->stop_source = sd_event_source_disable_unref(s->stop_source);
        s->manager.varlink = varlink_server_free(s->manager.varlink);
        s->stop_fd = safe_close(s->stop_fd);
}
