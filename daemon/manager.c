/* The engine's life (manager.h): the policy, the state directory and what lives in it, the
 * catalog, the link to the spawner and the sockets brought up in order; the event loop with its
 * signals (SIGHUP reloads, SIGTERM stops with nothing left behind); the teardown. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "budget.h"
#include "clock.h"
#include "caps-kept.h"
#include "config.h"
#include "catalog.h"
#include "answers.h"
#include "ask.h"
#include "confinement-reason.h"
#include "fd-util.h"
#include "handle-store.h"
#include "console-tickets.h"
#include "console.h"
#include "handles.h"
#include "identity.h"
#include "log-ids.h"
#include "log.h"
#include "macro.h"
#include "commit.h"
#include "manager.h"
#include "peer.h"
#include "policy-file.h"
#include "marketplaces.h"
#include "policy.h"
#include "roles.h"
#include "run-request.h"
#include "spawner-link.h"
#include "listen-fds.h"
#include "sessions.h"
#include "tickets.h"

#define SCOPE_WAIT_USEC      (10ULL * 1000000)
#define STOP_GRACE_USEC      (15ULL * 1000000)
#define VARLINK_OUT_BYTES    ((size_t)4 * 1024 * 1024)
#define VARLINK_STALL_USEC   (30ULL * 1000000)
#define VARLINK_PENDING        16
#define NOFILE_WANTED          ((rlim_t)8192)
#define STATUS_INTERVAL_USEC   (200ULL * 1000)
#define TRIM_DELAY_USEC        (1000ULL * 1000)

static void manager_trim_soon(Manager *m);

int manager_load_policy(const char *path, Policy **ret, char *why, size_t why_len) {
        return policy_file_load(path, ret, why, why_len);
}

static void varlink_limits_from_policy(const Policy *p, VarlinkLimits *l) {
        *l = (VarlinkLimits){
                .message_bytes = (size_t)p->limits.message_bytes,
                .pending_per_conn = VARLINK_PENDING,
                .conns_per_uid = p->limits.connections_per_uid,
                .conns_total = p->limits.connections_total + p->limits.console_connections,
                .out_bytes_per_conn = VARLINK_OUT_BYTES,
                .stall_usec = VARLINK_STALL_USEC,
        };
}

/* Opens (creating it 0700 if needed) a directory lockd owns; refuses one others could write. */
static int open_private_dir(const char *path, mode_t mode) {
        _cleanup_close_ int fd = -1;
        struct stat st;

        if (mkdir(path, mode) < 0 && errno != EEXIST)
                return negative_errno();
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        /* Plugins, marketplaces and (later) budgets live here: nobody else may write it. */
        if (st.st_uid != geteuid() || (st.st_mode & 0022))
                return -EPERM;
        return TAKE_FD(fd);
}

/* The peer's state goes with its connection (peer.c). A connection lockd closed for a cause is
 * said once, limited per uid: the peer itself is told nothing more on a dead socket. */
static void on_disconnect(VarlinkConn *c, void *userdata) {
        Manager *m = userdata;
        const char *cause = varlink_conn_close_cause(c);
        const struct ucred *uc = varlink_conn_peer(c);
        const char *sock = varlink_conn_listener_fd(c) == m->listen_fds[1] ? "console" : "agent";
        unsigned suppressed = 0;

        peer_check_forget(c);
        /* What the connection's answers held goes back after a burst of them. */
        manager_trim_soon(m);
        if (!cause || !ratelimit_pass(&m->drops, uc->uid, clock_monotonic_usec(), &suppressed))
                return;
        log_struct(LOG_NOTICE, LOCKD_MESSAGE_PEER_DROPPED,
                   LOG_FIELDS(LOG_FIELD_U64("PEER_UID", uc->uid),
                              LOG_FIELD_U64("PEER_PID", uc->pid), LOG_FIELD("SOCKET", sock),
                              LOG_FIELD("CAUSE", cause), LOG_FIELD_U64("SUPPRESSED", suppressed)),
                   "closed the connection of uid %u on the %s socket: %s%s", (unsigned)uc->uid,
                   sock, cause, suppressed > 0 ? " (earlier lines of this uid suppressed)" : "");
}

static int on_accept(VarlinkConn *c, void *userdata) {
        Manager *m = userdata;
        const struct ucred *uc = varlink_conn_peer(c);
        unsigned role, socket_role;

        if (m->stopping)
                return -ESHUTDOWN;
        /*
         * A peer's role is what the policy says of its uid and groups, and only on the socket of
         * that role: a console reaching the agent socket (0666) must not get the console interface
         * past the console socket's own file permissions, nor an agent the reverse.
         */
        socket_role = varlink_conn_listener_fd(c) == m->listen_fds[1] ? ROLE_MASK_CONSOLE
                                                                      : ROLE_MASK_AGENT;
        role = roles_classify(m->roles, uc->uid, uc->gid) & socket_role;
        if (role == 0) {
                unsigned suppressed = 0;

                /* Logged (a burst per uid and minute, then counted), dropped, told nothing. */
                if (!ratelimit_pass(&m->refusals, uc->uid, clock_monotonic_usec(), &suppressed))
                        return -EPERM;
                log_struct(
                        LOG_NOTICE, LOCKD_MESSAGE_PEER_REFUSED,
                        LOG_FIELDS(LOG_FIELD_U64("PEER_UID", uc->uid),
                                   LOG_FIELD_U64("PEER_GID", uc->gid),
                                   LOG_FIELD_U64("PEER_PID", uc->pid),
                                   LOG_FIELD("SOCKET", socket_role == ROLE_MASK_CONSOLE ? "console"
                                                                                        : "agent"),
                                   LOG_FIELD_U64("SUPPRESSED", suppressed)),
                        "refused a peer with no role on the %s socket: uid %u gid %u pid %d%s",
                        socket_role == ROLE_MASK_CONSOLE ? "console" : "agent", (unsigned)uc->uid,
                        (unsigned)uc->gid, (int)uc->pid,
                        suppressed > 0 ? " (earlier refusals of this uid suppressed)" : "");
                return -EPERM;
        }
        varlink_conn_set_roles(c, role);
        /* ARCHITECTURE.md, what an agent can learn: one that could watch runs is not served;
         * and a console's login session keys its input session. */
        {
                int r = peer_check_start(m, c, role);

                if (r < 0) {
                        log_struct_errno(LOG_WARNING, r, LOCKD_MESSAGE_AGENT_UNCONFINED,
                                         LOG_FIELDS(LOG_FIELD_U64("PEER_UID", uc->uid),
                                                    LOG_FIELD_U64("PEER_PID", uc->pid)),
                                         "refused agent uid %u pid %d: the manager cannot be "
                                         "asked whether it is confined: %m",
                                         (unsigned)uc->uid, (int)uc->pid);
                        return r;
                }
        }
        return 0;
}

/*
 * Each socket's own limits: agents get connections_total and are closed when idle; the console
 * socket has console_connections that agents can never take (ARCHITECTURE.md, processes), so
 * the human always gets in. A peer over a cap is told which.
 */
static int apply_listener_limits(Manager *m) {
        const PolicyLimits *l = &m->policy->limits;
        int r;

        r = varlink_server_set_listener_limits(m->varlink, m->listen_fds[0], l->connections_total,
                                               l->agent_idle_timeout_sec * 1000000ULL,
                                               "io.lockd.Agent.TooManyConnections");
        if (r < 0)
                return r;
        return varlink_server_set_listener_limits(m->varlink, m->listen_fds[1],
                                                  l->console_connections, 0,
                                                  "io.lockd.Console.TooManyConnections");
}

/*
 * Tickets live in memory: those a stopped lockd left pending or running (submitted in the audit
 * log, never ended there) end now as expired, each with its record, and their agents' Wait says
 * so (console-tickets.c). Nothing here refuses the start: a log that cannot be read is told.
 */
static void end_restart_tickets(Manager *m, const char *buf, size_t len) {
        int r;

        r = restart_tickets_scan(buf, len, &m->restart_tickets);
        if (r < 0) {
                log_error_errno(r, NULL, "cannot tell which tickets were open before the restart: %m");
                return;
        }
        for (size_t i = 0; i < m->restart_tickets.n; i++) {
                const RestartTicket *t = &m->restart_tickets.v[i];
                _cleanup_(json_decrefp) json_t *f =
                        json_pack("{s:s, s:I, s:I, s:s}", "ticket", t->id, "agent_uid",
                                  (json_int_t)t->agent, "steps", (json_int_t)t->steps, "reason",
                                  "restart");

                r = f ? audit_append_nosync(m->audit, AUDIT_EXPIRE, f) : -ENOMEM;
                if (r < 0)
                        break;
        }
        if (r >= 0)
                r = audit_sync(m->audit);
        if (r < 0)
                log_error_errno(r, NULL, "tickets ended by the restart: the record failed: %m");
        else if (m->restart_tickets.n > 0)
                log_struct(LOG_NOTICE, NULL, NULL,
                           "%zu ticket(s) open when lockd stopped ended as expired",
                           m->restart_tickets.n);
}

static int setup_sockets(Manager *m) {
        ListenSpec specs[2] = {{.name = "agent"}, {.name = "console"}};
        int fds[2] = {-1, -1};
        int r;

        /* The spawner binds them (or has them from systemd) and hands both over, named. */
        r = sockets_from_systemd(specs, 2, fds);
        if (r < 0 || fds[0] < 0 || fds[1] < 0) {
                safe_close(fds[0]);
                safe_close(fds[1]);
                return log_error_errno(r < 0 ? r : -EBADF, NULL,
                                       "the agent and console sockets were not passed: "
                                       "lockd-engine is started by lockd only");
        }
        m->listen_fds[0] = fds[0];
        m->listen_fds[1] = fds[1];
        /* Only the console socket carries fds (files, releases, trusted roots). */
        r = varlink_server_listen_fd(m->varlink, fds[0], false, on_accept, on_disconnect, m);
        if (r < 0) {
                safe_close(fds[1]);
                return log_error_errno(r, NULL, "agent socket: %s", strerror(-r));
        }
        r = varlink_server_listen_fd(m->varlink, fds[1], true, on_accept, on_disconnect, m);
        if (r < 0)
                return log_error_errno(r, NULL, "console socket: %s", strerror(-r));
        r = apply_listener_limits(m);
        if (r < 0)
                return log_error_errno(r, NULL, "socket limits: %s", strerror(-r));
        return 0;
}

/* Tells the manager how lockd is doing; with ready, in the same message as READY=1. */
static void notify_status_full(Manager *m, bool ready) {
        if (m->stopping)
                return;
        spawner_link_notify(m->spawner, ready ? SPAWNER_NOTIFY_READY : SPAWNER_NOTIFY_STATUS,
                            (unsigned)catalog_n(m->catalog));
}

/*
 * STATUS= after a run: at most every STATUS_INTERVAL_USEC while runs keep coming, and always
 * when the last one in flight ended, so an idle lockd's status is exact. Each is a message to the
 * spawner and a datagram to the manager: per run, both processes and systemd would wake for it.
 */
static void notify_status(Manager *m) {
        uint64_t now = clock_monotonic_usec();

        if (spawner_link_n_active(m->spawner) > 0 && now - m->status_usec < STATUS_INTERVAL_USEC)
                return;
        m->status_usec = now;
        notify_status_full(m, false);
}

static void maybe_finish_stop(Manager *m) {
        if (m->stopping && spawner_link_n_active(m->spawner) == 0 && ask_backlog(m) == 0)
                sd_event_exit(m->event, 0);
}

/* RunsEndedFn: a run's result was consumed. */
static void on_run_ended(void *userdata) {
        Manager *m = userdata;

        notify_status(m);
        maybe_finish_stop(m);
}

static int on_stop_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        log_struct(LOG_WARNING, LOCKD_MESSAGE_STOPPING, NULL,
                   "runs did not end within the grace period; leaving anyway");
        sd_event_exit(m->event, 0);
        return 0;
}

void manager_stop(Manager *m) {
        if (m->stopping)
                return;
        m->stopping = true;
        spawner_link_notify(m->spawner, SPAWNER_NOTIFY_STOPPING, (unsigned)catalog_n(m->catalog));
        log_struct(LOG_INFO, LOCKD_MESSAGE_STOPPING, NULL, "stopping: %u run(s) in flight",
                   spawner_link_n_active(m->spawner));
        /* No new connection, no new call: the peers are told by their sockets closing. */
        m->varlink = varlink_server_free(m->varlink);
        /* Submits waiting for their records' commit are answered by the commit (the server is gone,
         * so nobody hears it, but their auto tickets' steps reach the backlog), then steps not yet
         * running end (their slots go back), so none starts now. */
        commit_sync(m->commit);
        ask_flush(m);
        spawner_link_kill_all(m->spawner);
        /* The typed values go with the stop, not with the process's end. */
        m->sessions = sessions_free(m->sessions);
        (void)sd_event_add_time_relative(m->event, NULL, CLOCK_MONOTONIC, STOP_GRACE_USEC, 0,
                                         on_stop_timeout, m);
        maybe_finish_stop(m);
}

static int on_sigterm(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        manager_stop(userdata);
        return 0;
}

/* The settings that only a restart changes; a reload that touches them says so. */
static void warn_restart_needed(const Policy *old, const Policy *new) {
        const char *what = NULL;

        if (strcmp(old->agent_socket.path, new->agent_socket.path) != 0 ||
            strcmp(old->console_socket.path, new->console_socket.path) != 0 ||
            old->agent_socket.mode != new->agent_socket.mode ||
            old->console_socket.mode != new->console_socket.mode)
                what = "sockets";
        else if (strcmp(old->state_directory, new->state_directory) != 0 ||
                 strcmp(old->runtime_directory, new->runtime_directory) != 0)
                what = "directories";
        else if (old->ephemeral_uid_first != new->ephemeral_uid_first ||
                 old->ephemeral_uid_last != new->ephemeral_uid_last)
                what = "ephemeral_uids";
        else if (old->scope.backend != new->scope.backend || old->scope.bus != new->scope.bus ||
                 strcmp(old->scope.slice, new->scope.slice) != 0 ||
                 old->scope.cpu_quota_percent != new->scope.cpu_quota_percent ||
                 old->scope.ahead != new->scope.ahead)
                what = "scope";
        else if (old->limits.concurrent_runs != new->limits.concurrent_runs)
                what = "limits.concurrent_runs";
        else if (old->n_marketplaces != new->n_marketplaces)
                what = "marketplaces";
        if (what)
                log_struct(LOG_WARNING, LOCKD_MESSAGE_RELOADED, NULL,
                           "reload: %s changed; that takes effect at the next start", what);
}

/* Says at every start and reload which marketplaces of the policy were accepted with force: true
 * despite their identity's lint warnings. */
static void log_forced(const PolicyMarketplace *mp, const IdentityWarning *w, void *userdata) {
        log_struct(LOG_WARNING, NULL, LOG_FIELDS(LOG_FIELD("MARKETPLACE", mp->name)),
                   "marketplace %s accepted with force: true despite %s: %s", mp->name,
                   identity_warning_name(w->code), w->message);
}

static void log_forced_marketplaces(const Policy *p) {
        policy_forced_warnings(p, log_forced, NULL);
}

int manager_reload(Manager *m) {
        _cleanup_(policy_freep) Policy *p = NULL;
        _cleanup_(roles_freep) Roles *roles = NULL;
        char why[512] = "";
        VarlinkLimits lim;
        int r;

        spawner_link_notify(m->spawner, SPAWNER_NOTIFY_RELOADING, (unsigned)catalog_n(m->catalog));
        r = manager_load_policy(m->policy_path, &p, why, sizeof(why));
        if (r >= 0)
                r = roles_resolve(p, &roles, why, sizeof(why));
        if (r < 0) {
                /* A bad new policy never replaces a good one. */
                log_struct(LOG_ERR, LOCKD_MESSAGE_RELOAD_FAILED, NULL,
                           "reload refused, keeping the policy in force: %s", why);
                notify_status_full(m, true);
                return r;
        }
        warn_restart_needed(m->policy, p);
        log_forced_marketplaces(p);
        varlink_limits_from_policy(p, &lim);
        if (m->varlink)
                varlink_server_set_limits(m->varlink, &lim);
        policy_free(m->policy);
        m->policy = TAKE_PTR(p);
        if (m->varlink)
                (void)apply_listener_limits(m);
        audit_set_segments(m->audit, m->policy->audit.segment_bytes,
                           m->policy->audit.retain_segments);
        roles_free(m->roles);
        m->roles = TAKE_PTR(roles);
        if (m->sessions)
                sessions_set_timeouts(m->sessions,
                                      m->policy->limits.session_idle_timeout_sec * 1000000ULL,
                                      m->policy->limits.session_absolute_timeout_sec * 1000000ULL);
        log_struct(LOG_INFO, LOCKD_MESSAGE_RELOADED, NULL, "policy reloaded from %s",
                   m->policy_path ? m->policy_path : "the compiled-in default");
        notify_status_full(m, true);
        return 0;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        (void)manager_reload(userdata);
        return 0;
}

int manager_new(const char *policy_path, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        char why[512] = "";
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->state_fd = m->spawner_fd = -1;
        m->listen_fds[0] = m->listen_fds[1] = -1;
        m->start_usec = clock_monotonic_usec();
        m->refusals = RATELIMIT_INIT(60 * 1000000ULL, 5);
        m->drops = RATELIMIT_INIT(60 * 1000000ULL, 5);
        runs_init(&m->runs, on_run_ended, m);
        if (policy_path) {
                m->policy_path = strdup(policy_path);
                if (!m->policy_path)
                        return -ENOMEM;
        }
        r = manager_load_policy(m->policy_path, &m->policy, why, sizeof(why));
        if (r < 0)
                return log_error_errno(r, NULL, "%s", why[0] ? why : "cannot load the policy");
        log_forced_marketplaces(m->policy);
        *ret = TAKE_PTR(m);
        return 0;
}

static void log_skipped_plugin(const char *name, const char *version, int error,
                               const char *message, void *userdata) {
        log_struct_errno(
                LOG_WARNING, error, LOCKD_MESSAGE_PLUGIN_SKIPPED,
                LOG_FIELDS(LOG_FIELD("PLUGIN", name), LOG_FIELD("PLUGIN_VERSION", version)),
                "installed plugin %s %s not loaded, it will not run: %s", name, version, message);
}

static void log_skipped_marketplace(const char *name, int error, const char *message,
                                    void *userdata) {
        log_struct_errno(LOG_WARNING, error, LOCKD_MESSAGE_PLUGIN_SKIPPED, NULL,
                         "marketplace %s not loaded: %s", name, message);
}

static int setup_marketplaces(Manager *m) {
        const Policy *p = m->policy;
        _cleanup_free_ MarketplaceSpec *specs = NULL;
        int r;

        specs = calloc(p->n_marketplaces + 1, sizeof(*specs));
        if (!specs)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_marketplaces; i++)
                specs[i] = (MarketplaceSpec){
                        .name = p->marketplaces[i].name,
                        .issuer = p->marketplaces[i].issuer,
                        .identity = p->marketplaces[i].identity,
                        .trusted_root_path = p->marketplaces[i].trusted_root,
                };
        r = marketplaces_load(m->state_fd, specs, p->n_marketplaces, log_skipped_marketplace, m,
                              &m->marketplaces);
        if (r < 0)
                return log_error_errno(r, NULL, "marketplaces of the policy cannot be trusted: %m");
        return 0;
}

/* Gives the heap's free memory back to the kernel (every arena: the writer threads have their
 * own). */
static int on_trim(sd_event_source *s, uint64_t usec, void *userdata) {
        (void)malloc_trim(0);
        return 0;
}

static void manager_trim_soon(Manager *m) {
        if (!m->event || m->stopping)
                return;
        /* The first burst makes the timer, armed once; a failure only means no trim. */
        if (!m->trim) {
                (void)sd_event_add_time_relative(m->event, &m->trim, CLOCK_MONOTONIC,
                                                 TRIM_DELAY_USEC, TRIM_DELAY_USEC, on_trim, m);
                return;
        }
        /* Armed already: it fires once for the whole burst. */
        if (sd_event_source_get_enabled(m->trim, NULL) > 0)
                return;
        (void)sd_event_source_set_time_relative(m->trim, TRIM_DELAY_USEC);
        (void)sd_event_source_set_enabled(m->trim, SD_EVENT_ONESHOT);
}

/*
 * The heap as a daemon that serves bursts needs it. glibc raises its mmap threshold after a large
 * block is freed (up to 32 MiB), after which every large answer comes from the heap and its
 * free pages stay mapped: measured, each full ticket listing left the engine 200 MiB larger for
 * good (ARCHITECTURE.md, Memory). A fixed threshold keeps large blocks in mmap, given back when
 * freed; the arenas are capped at the loop's and the writers'.
 */
static void heap_setup(void) {
        (void)mallopt(M_MMAP_THRESHOLD, 128 * 1024);
        (void)mallopt(M_TRIM_THRESHOLD, 1024 * 1024);
        (void)mallopt(M_ARENA_MAX, 2);
}

/* The process as the engine runs: no root, the spawner's channel, the heap, the roles, the loop
 * and its signals. */
static int setup_process(Manager *m) {
        char why[512] = "";
        sigset_t ss;
        int r;

        /*
         * The engine holds no privilege: started by the spawner as user lockd, with no
         * capability and no_new_privs (ARCHITECTURE.md). It says so rather than serve as root.
         */
        if (geteuid() == 0)
                return log_error_errno(-EPERM, NULL,
                                       "lockd-engine must not run as root: lockd starts it as "
                                       "user lockd");
        r = spawner_link_channel_fd();
        if (r < 0)
                return log_error_errno(r, NULL,
                                       "no channel to the spawner: lockd-engine is "
                                       "started by lockd only");
        m->spawner_fd = r;
        heap_setup();

        r = roles_resolve(m->policy, &m->roles, why, sizeof(why));
        if (r < 0)
                return log_error_errno(r, NULL, "roles: %s", why);
        r = sd_event_new(&m->event);
        if (r < 0)
                return log_error_errno(r, NULL, "event loop: %s", strerror(-r));
        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        if (sd_event_add_signal(m->event, NULL, SIGTERM, on_sigterm, m) < 0 ||
            sd_event_add_signal(m->event, NULL, SIGINT, on_sigterm, m) < 0 ||
            sd_event_add_signal(m->event, NULL, SIGHUP, on_sighup, m) < 0)
                return log_error_errno(-EIO, NULL, "cannot watch signals");
        return 0;
}

/* Grants outlive lockd: read back what was granted before, then store every new one. */
static int setup_handle_store(Manager *m) {
        unsigned dropped = 0;
        int r;

        r = handle_store_open(m->state_fd, m->policy->limits.handle_store_bytes, &m->handle_store);
        if (r < 0)
                return log_error_errno(r, NULL, "handle store: %s", strerror(-r));
        r = handle_store_load(m->handle_store, m->handles, m->policy->limits.max_handle_bytes,
                              &dropped);
        if (r < 0)
                return log_error_errno(r, NULL, "handle store: %s", strerror(-r));
        if (r > 0 || dropped > 0)
                log_struct(dropped > 0 ? LOG_WARNING : LOG_INFO, NULL, NULL,
                           "handles: %d restored from the state directory, %u dropped "
                           "(their snapshot or metadata was damaged)",
                           r, dropped);
        handles_set_store(m->handles, m->handle_store);
        return 0;
}

/* The state directory and what lives in it, the audit log first, and the group commit over it. */
static int setup_state(Manager *m) {
        const Policy *p = m->policy;
        _cleanup_free_ char *path = NULL, *log_buf = NULL;
        BudgetError berr = {};
        size_t log_len = 0, replayed = 0;
        int r;

        m->state_fd = open_private_dir(p->state_directory, 0700);
        if (m->state_fd < 0)
                return log_error_errno(
                        m->state_fd, NULL, "state directory %s: %s", p->state_directory,
                        m->state_fd == -EPERM ? "not the engine's own or writable by others"
                                              : strerror(-m->state_fd));
        /* Nothing is granted, revoked or run before the log that records it is open. */
        r = audit_open(m->state_fd, &m->audit);
        if (r < 0)
                return log_error_errno(r, NULL, "audit log %s/%s/%s: %s", p->state_directory,
                                       AUDIT_DIR, AUDIT_FILE,
                                       r == -EBUSY ? "held by another process" : strerror(-r));
        audit_set_segments(m->audit, p->audit.segment_bytes, p->audit.retain_segments);
        /* The log's current file: the budget changes after the last checkpoint, and the tickets
         * still open. Every budget change since the checkpoint is in it (a segment switch
         * checkpoints first), so a log that cannot be read is no start. */
        if (asprintf(&path, "%s/%s/%s", p->state_directory, AUDIT_DIR, AUDIT_FILE) < 0)
                return log_error_errno(-ENOMEM, NULL, "audit log: out of memory");
        r = read_full_file(path, 512 * MiB, &log_buf, &log_len);
        if (r < 0)
                return log_error_errno(r, NULL, "audit log %s: cannot be read: %m", path);
        /* A budget that does not load is never reset silently: lockd does not start. The budgets
         * are the checkpoint's files and every change the log holds after it (budget.h). */
        r = budget_open(m->state_fd, &m->budget, &berr);
        if (r >= 0)
                r = budget_replay(m->budget, log_buf, log_len, &replayed, &berr);
        if (r < 0)
                return log_error_errno(r, NULL, "budgets: %s",
                                       berr.message[0] ? berr.message : strerror(-r));
        /* The group commit's writer threads (ARCHITECTURE.md): the loop never waits for the
         * disk on the question path. From here the log is the budgets' write-ahead log. */
        r = commit_new(m->event, m->audit, m->budget, &m->commit);
        if (r < 0)
                return log_error_errno(r, NULL, "the commit's writer threads: %s", strerror(-r));
        /* A checkpoint at the log's position now, before any new record: what was replayed is
         * in the files, and a crash that cut the log's tail leaves no position past its end. */
        r = commit_checkpoint(m->commit);
        if (r < 0)
                return log_error_errno(r, NULL, "budgets: the checkpoint at start failed: %m");
        if (replayed > 0)
                log_struct(LOG_NOTICE, NULL, NULL,
                           "budgets: %zu change(s) replayed from the audit log", replayed);
        end_restart_tickets(m, log_buf, log_len);
        log_buf = mfree(log_buf);
        /* The handles, the tickets and the input sessions, which the console follows. */
        r = console_attach(m);
        if (r >= 0)
                r = setup_handle_store(m);
        if (r < 0)
                return r;
        ask_attach(m);
        r = answers_new(&m->answers);
        if (r < 0)
                return log_error_errno(r, NULL, "answer cache: %s", strerror(-r));
        return 0;
}

/* Each handle holds a memfd: HANDLES_MAX of them beside the connections and the runs need more
 * than the 1024 fds a service gets by default. Children close all but theirs. */
static void raise_nofile(void) {
        struct rlimit nofile;

        if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < NOFILE_WANTED) {
                nofile.rlim_cur = nofile.rlim_max < NOFILE_WANTED ? nofile.rlim_max : NOFILE_WANTED;
                (void)setrlimit(RLIMIT_NOFILE, &nofile);
        }
}

/* The spawner: it says HELLO back, with what the runs get (ARCHITECTURE.md); a scope waits ready
 * for each installed plugin's limits. */
static int setup_spawner(Manager *m) {
        const Policy *p = m->policy;
        int r;

        r = spawner_link_new(m->event, TAKE_FD(m->spawner_fd),
                             SPAWNER_RUNS_MAX(p->limits.concurrent_runs), &m->spawner);
        if (r < 0)
                return log_error_errno(r, NULL, "the spawner did not answer: %s", strerror(-r));
        m->landlock_abi = spawner_link_landlock_abi(m->spawner);
        for (size_t i = 0; i < catalog_n(m->catalog); i++)
                spawner_link_warm(m->spawner, &catalog_get(m->catalog, i)->image.spec.limits);
        if (!spawner_link_scopes(m->spawner))
                log_struct(LOG_WARNING, LOCKD_MESSAGE_SCOPE_BACKEND_NONE, NULL,
                           "scope.backend is none: plugin runs get no transient scope, so no "
                           "cgroup memory or task limit and no OOM detection");
        if (!p->agents.require_confinement)
                log_struct(LOG_WARNING, LOCKD_MESSAGE_CONFINEMENT_OFF, NULL,
                           "agents.require_confinement is false: an agent that can read other "
                           "uids' /proc entries and the runs' cgroup files is served, and can "
                           "learn more than the bit");
        return 0;
}

/* The Varlink server, its two interfaces and its two sockets. */
static int setup_varlink(Manager *m) {
        VarlinkLimits lim;
        int r;

        varlink_limits_from_policy(m->policy, &lim);
        r = varlink_server_new(m->event, &lim, "lockd", "lockd", LOCKD_VERSION, LOCKD_URL,
                               &m->varlink);
        if (r < 0)
                return log_error_errno(r, NULL, "varlink: %s", strerror(-r));
        r = console_register(m);
        if (r < 0)
                return log_error_errno(r, NULL, "varlink interfaces: %s", strerror(-r));
        return setup_sockets(m);
}

int manager_start(Manager *m) {
        const Policy *p = m->policy;
        int r;

        r = setup_process(m);
        if (r >= 0)
                r = setup_state(m);
        if (r < 0)
                return r;
        raise_nofile();

        r = setup_marketplaces(m);
        if (r < 0)
                return r;
        r = catalog_load(m->state_fd, log_skipped_plugin, m, &m->catalog);
        if (r < 0)
                return log_error_errno(r, NULL, "plugin store: %s", strerror(-r));
        r = setup_spawner(m);
        if (r >= 0)
                r = setup_varlink(m);
        if (r < 0)
                return r;

        /* For Status: what the spawner keeps (caps.c); the engine itself holds nothing. */
        m->capabilities_kept = caps_names(caps_kept, caps_n_kept);
        if (!m->capabilities_kept)
                return -ENOMEM;

        log_struct(LOG_INFO, LOCKD_MESSAGE_STARTED, NULL,
                   "lockd %s started: %zu plugin(s), security level %u, scopes %s", LOCKD_VERSION,
                   catalog_n(m->catalog), p->security_level,
                   spawner_link_scopes(m->spawner) ? "through systemd" : "off");
        notify_status_full(m, true);
        return 0;
}

int manager_loop(Manager *m) {
        return sd_event_loop(m->event);
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        m->stopping = true;
        m->trim = sd_event_source_disable_unref(m->trim);
        m->varlink = varlink_server_free(m->varlink);
        /* Submits still waiting for their records go unanswered, as do the calls following
         * tickets. */
        commit_cancel(m->commit);
        console_tickets_done(m);
        /* The writer threads end first: nothing they write may outlive what it belongs to.
         * What is still unwritten goes by the closes below (audit_close(), budget_close()). */
        commit_sync(m->commit);
        m->commit = commit_free(m->commit);
        /* Runs first (their results go to tickets, budgets and the audit log; they use the
         * scopes and the catalog's sandboxes), then what they used. */
        if (m->tickets)
                ask_flush(m);
        m->ask = ask_queue_free(m->ask);
        m->spawner = spawner_link_free(m->spawner);
        m->sessions = sessions_free(m->sessions);
        /* Tickets hold plugin references: they go before the catalog. */
        m->tickets = tickets_free(m->tickets);
        m->answers = answers_free(m->answers);
        m->catalog = catalog_free(m->catalog);
        m->marketplaces = marketplaces_free(m->marketplaces);
        /* Handles before the log: an expiry in between would have nowhere to be recorded. */
        m->handles = handles_free(m->handles);
        m->handle_store = handle_store_free(m->handle_store);
        restart_tickets_done(&m->restart_tickets);
        /* The budgets last but the log: what is recorded up to here may change them, and their
         * checkpoint covers it. Then no segment switch may want one. */
        audit_set_rotate_hook(m->audit, NULL, NULL);
        /* The log before the checkpoint that names its last record (commit.c, budget_work()). */
        (void)audit_sync(m->audit);
        m->budget = budget_close(m->budget);
        m->audit = audit_close(m->audit);
        roles_free(m->roles);
        policy_free(m->policy);
        free(m->policy_path);
        strv_free(m->capabilities_kept);
        safe_close(m->state_fd);
        safe_close(m->spawner_fd);
        sd_event_unref(m->event);
        free(m);
        return NULL;
}
