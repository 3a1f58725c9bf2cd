/* The io.lockd.Console and io.lockd.Agent interfaces as lockd serves them: the method tables, and
 * the console's own Status and TestPlugin. The plugin and marketplace methods live in
 * console-plugins.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "console-files.h"
#include "console-reply.h"
#include "catalog.h"
#include "clock.h"
#include "config.h"
#include "console-budget.h"
#include "agent-handles.h"
#include "agent-plugins.h"
#include "agent-tickets.h"
#include "console-handles.h"
#include "console-plugins.h"
#include "console-tickets.h"
#include "console.h"
#include "escape.h"
#include "fd-util.h"
#include "handles.h"
#include "inputs.h"
#include "interface-agent.h"
#include "interface-console.h"
#include "log-ids.h"
#include "log.h"
#include "macro.h"
#include "engine.h"
#include "marketplaces.h"
#include "policy.h"
#include "roles.h"
#include "sessions.h"
#include "run-request.h"
#include "spawner-link.h"
#include "tickets.h"

/* The policy's scope.bus as the spawner takes it: "system", "user" or the address. */
static const char *scope_bus_spec(const Policy *p) {
        return p->scope.bus == POLICY_BUS_SYSTEM ? "system"
               : p->scope.bus == POLICY_BUS_USER ? "user"
                                                 : p->scope.bus_address;
}

static int method_status(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        _cleanup_(json_decrefp) json_t *caps = json_array(), *reply = NULL;

        if (!caps)
                return -ENOMEM;
        for (size_t i = 0; m->capabilities_kept && m->capabilities_kept[i]; i++)
                if (json_array_append_new(caps, json_string(m->capabilities_kept[i])) < 0)
                        return -ENOMEM;
        reply = json_pack("{s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:i, s:O, s:b, s:s?}",
                          "version", LOCKD_VERSION, "security_level",
                          (int)m->policy->security_level, "uptime_usec",
                          (json_int_t)(clock_monotonic_usec() - m->start_usec), "plugins",
                          (json_int_t)catalog_n(m->catalog), "marketplaces",
                          (json_int_t)marketplaces_n(m->marketplaces), "runs_active",
                          (json_int_t)spawner_link_n_active(m->spawner), "runs_total",
                          (json_int_t)m->runs.total, "connections",
                          (json_int_t)(m->varlink ? varlink_server_n_connections(m->varlink) : 0),
                          "scope_backend", spawner_link_scopes(m->spawner) ? "systemd" : "none",
                          "landlock_abi", m->landlock_abi, "capabilities", caps,
                          "agent_confinement", m->policy->agents.require_confinement, "scope_bus",
                          spawner_link_scopes(m->spawner) ? scope_bus_spec(m->policy) : NULL);
        if (!reply)
                return -ENOMEM;
        return varlink_call_reply(call, reply, false);
}

/* One console test run: the call to answer and the plugin kept alive while it runs. */
typedef struct TestRun {
        Manager *manager;
        VarlinkCall *call;
        CatalogPlugin *plugin;
} TestRun;

static void test_run_done(RunRequest *req, void *userdata) {
        TestRun *t = userdata;
        Manager *m = t->manager;
        const RunResult *res = &req->result;
        _cleanup_(json_decrefp) json_t *reply = NULL;
        char cause[64] = "";

        if (req->error < 0) {
                _cleanup_(json_decrefp) json_t *p =
                        json_pack("{s:s}", "reason",
                                  req->error == -ECANCELED || req->error == -ECONNABORTED
                                          ? "lockd is stopping"
                                          : "the run could not be attempted");
                (void)varlink_call_error(t->call, CONSOLE_ERROR("Unavailable"), p);
                goto finish;
        }

        run_cause_format(res, cause, sizeof(cause));
        reply = json_pack("{s:s?, s:I, s:I, s:I, s:I, s:I}", "cause",
                          res->outcome == RUN_PLUGIN_ERROR ? cause : "answer", "wall_usec",
                          (json_int_t)res->wall_usec, "setup_usec", (json_int_t)res->setup_usec,
                          "scope_wait_usec", (json_int_t)res->scope_wait_usec, "cpu_usec",
                          (json_int_t)res->cpu_usec, "stderr_bytes", (json_int_t)res->stderr_bytes);
        if (!reply)
                goto finish;
        /* Absent when unknown (runner.h): never a figure that is not the plugin's. */
        if (res->peak_rss_bytes > 0)
                json_object_set_new(reply, "peak_memory_bytes",
                                    json_integer((json_int_t)res->peak_rss_bytes));
        if (res->outcome == RUN_PLUGIN_ERROR)
                json_object_set_new(reply, "error", json_string("plugin_error"));
        else
                json_object_set_new(reply, "result", json_integer(res->outcome == RUN_ONE));
        if (req->scoped)
                json_object_set_new(reply, "unit", json_string(req->unit));
        /* The detail is for the human, and only where the policy shows clear results. */
        if (m->policy->security_level >= 3 && res->detail_len > 0) {
                _cleanup_free_ char *esc = escape_bytes(res->detail, res->detail_len);
                if (esc)
                        json_object_set_new(reply, "detail", json_string(esc));
        }
        (void)varlink_call_reply(t->call, reply, false);

        {
                const Manifest *mf = t->plugin->release->manifest;
                log_struct(LOG_INFO, LOCKD_MESSAGE_RUN_FINISHED,
                           LOG_FIELDS(LOG_FIELD("PLUGIN", mf->name),
                                      LOG_FIELD("PLUGIN_VERSION", mf->version),
                                      LOG_FIELD("UNIT", req->scoped ? req->unit : NULL),
                                      LOG_FIELD("OUTCOME", run_outcome_name(res->outcome)),
                                      LOG_FIELD("CAUSE",
                                                res->outcome == RUN_PLUGIN_ERROR ? cause : NULL),
                                      LOG_FIELD_U64("CPU_USEC", res->cpu_usec),
                                      res->peak_rss_bytes > 0
                                              ? LOG_FIELD_U64("PEAK_MEMORY", res->peak_rss_bytes)
                                              : LOG_FIELD("PEAK_MEMORY", NULL),
                                      LOG_FIELD_U64("STDERR_BYTES", res->stderr_bytes)),
                           "console test run of %s %s in %s: %s%s%s", mf->name, mf->version,
                           req->scoped ? req->unit : "no scope", run_outcome_name(res->outcome),
                           res->outcome == RUN_PLUGIN_ERROR ? " " : "",
                           res->outcome == RUN_PLUGIN_ERROR ? cause : "");
        }
finish:
        varlink_call_unref(t->call);
        catalog_plugin_unref(t->plugin);
        free(t);
        run_request_free(req);
        runs_ended(&m->runs);
}

/*
 * Builds the canonical JSON of fd 6 from the human's values (a string map, already checked by the
 * Varlink layer): nothing undeclared, then inputs_canonical_json(). 0, or -ENOENT / -EINVAL with
 * *ret_bad naming the input (never the value).
 */
static int build_inputs(const Manifest *mf, json_t *given, char **ret, size_t *ret_len,
                        const char **ret_bad) {
        const char *values[MANIFEST_INPUTS_MAX] = {};
        const char *key;
        size_t bad = 0;
        json_t *v;
        int r;

        json_object_foreach(given, key, v) {
                const ManifestInput *in = manifest_find_input(mf, key);

                if (!in) {
                        *ret_bad = key;
                        return -ENOENT;
                }
                values[in - mf->inputs] = json_string_value(v);
        }
        r = inputs_canonical_json(mf, values, ret, &bad);
        if (r == -ENOENT || r == -EINVAL)
                *ret_bad = mf->inputs[bad].name;
        if (r < 0)
                return r;
        *ret_len = strlen(*ret);
        return 0;
}

static int method_test_plugin_files(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        const char *name = json_string_value(json_object_get(params, "name"));
        json_t *inputs = json_object_get(params, "inputs");
        _cleanup_(run_request_freep) RunRequest *req = NULL;
        _cleanup_close_ int fd = -1, snap = -1;
        const CatalogPlugin *plugin;
        const char *bad = NULL;
        TestRun *t;
        struct stat st;
        int r;

        plugin = catalog_find(m->catalog, name);
        if (!plugin) {
                _cleanup_(json_decrefp) json_t *p = json_pack("{s:s}", "name", name);
                return varlink_call_error(call, CONSOLE_ERROR("UnknownPlugin"), p);
        }
        fd = varlink_call_take_fd(call, json_integer_value(json_object_get(params, "file_fd")));
        if (fd < 0)
                return reply_invalid_request(call, "file_fd names no file descriptor of the call");
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return reply_invalid_request(call, "file_fd is not a regular file");
        if ((fcntl(fd, F_GETFL) & O_ACCMODE) == O_WRONLY)
                return reply_invalid_request(call, "file_fd is not open for reading");
        /* The run sees a snapshot, never the human's file: it cannot change under the plugin. */
        if (lseek(fd, 0, SEEK_SET) < 0 && errno != ESPIPE)
                return reply_invalid_request(call, "file_fd cannot be read from its start");
        snap = memfd_snapshot(fd, "lockd-file", m->policy->limits.max_handle_bytes, false);
        if (snap == -EFBIG)
                return reply_invalid_request(call,
                                             "the file is larger than limits.max_handle_bytes");
        if (snap < 0)
                return reply_invalid_request(call, "the file cannot be read");

        req = run_request_new();
        if (!req)
                return -ENOMEM;
        if (plugin->image.spec.inputs) {
                r = build_inputs(plugin->release->manifest, inputs, &req->inputs_json,
                                 &req->inputs_len, &bad);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        _cleanup_(json_decrefp) json_t *p = json_pack("{s:s}", "name", bad);
                        return r == -EINVAL
                                       ? varlink_call_error(call, CONSOLE_ERROR("InputInvalid"), p)
                                       : reply_invalid_request(
                                                 call, "inputs must name each declared input once");
                }
        } else if (inputs && json_object_size(inputs) > 0)
                return reply_invalid_request(call, "the plugin declares no inputs");

        req->input_fd = fd_reopen_readonly(snap);
        if (req->input_fd < 0)
                return req->input_fd;
        req->image = &plugin->image;
        req->fairness_key = varlink_conn_peer(varlink_call_conn(call))->uid;
        runs_name(&m->runs, req);
        req->done = test_run_done;

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        *t = (TestRun){
                .manager = m, .call = varlink_call_ref(call), .plugin = catalog_plugin_ref(plugin)};
        req->userdata = t;
        r = spawner_link_submit(m->spawner, req);
        if (r < 0) {
                varlink_call_unref(t->call);
                catalog_plugin_unref(t->plugin);
                free(t);
                if (r == -EAGAIN)
                        return varlink_call_error(call, CONSOLE_ERROR("TooManyRuns"), NULL);
                if (r == -ESHUTDOWN) {
                        _cleanup_(json_decrefp) json_t *p =
                                json_pack("{s:s}", "reason", "lockd is stopping");
                        return varlink_call_error(call, CONSOLE_ERROR("Unavailable"), p);
                }
                return r;
        }
        TAKE_PTR(req);
        return 0;
}

/* The file is copied off the loop first (console-files.h): a hung file never stops lockd. */
static int method_test_plugin(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;

        return console_read_files_then(call, params, m, m->policy->limits.max_handle_bytes,
                                       "the file is larger than limits.max_handle_bytes",
                                       method_test_plugin_files);
}

static const VarlinkParam params_none[] = {{NULL}};
static const VarlinkParam params_test_plugin[] = {
        {"name", VARLINK_STRING, true, 1, 128},
        {"file_fd", VARLINK_INT, true, 0, VARLINK_FDS_PER_MESSAGE - 1},
        {"inputs", VARLINK_STRING_MAP, false, 0, 4},
        {NULL},
};

/* The console's methods: Status and TestPlugin here, the rest from console-plugins.c. */
static VarlinkMethod console_methods[32];
static VarlinkMethod agent_methods[8];

static const VarlinkInterface console_interface = {
        .name = "io.lockd.Console",
        .description = interface_console_text,
        .methods = console_methods,
        .role_mask = ROLE_MASK_CONSOLE,
};
static const VarlinkInterface agent_interface = {
        .name = "io.lockd.Agent",
        .description = interface_agent_text,
        .methods = agent_methods,
        .role_mask = ROLE_MASK_AGENT,
};

/* Appends the NULL-terminated list src to dst (capacity cap, kept NULL-terminated). */
static int methods_append(VarlinkMethod *dst, size_t cap, const VarlinkMethod *src) {
        size_t n = 0;

        while (dst[n].name)
                n++;
        for (; src->name; src++) {
                if (n + 1 >= cap)
                        return -E2BIG;
                dst[n++] = *src;
        }
        dst[n] = (VarlinkMethod){};
        return 0;
}

int console_attach(Manager *m) {
        int r;

        r = handles_new(m->event, console_handle_expired, m, &m->handles);
        if (r < 0)
                return log_error_errno(r, NULL, "handles: %s", strerror(-r));
        r = tickets_new(m->event, TICKETS_MAX, console_ticket_changed, console_ticket_release_plan,
                        m, &m->tickets);
        if (r >= 0)
                r = tickets_set_kept_per_agent(m->tickets, TICKETS_KEPT_PER_AGENT);
        if (r < 0)
                return log_error_errno(r, NULL, "tickets: %s", strerror(-r));
        r = sessions_new(m->event, m->policy->limits.session_idle_timeout_sec * 1000000ULL,
                         m->policy->limits.session_absolute_timeout_sec * 1000000ULL,
                         console_session_ended, m, &m->sessions);
        if (r < 0)
                return log_error_errno(r, NULL, "input sessions: %s", strerror(-r));
        return 0;
}

int console_register(Manager *m) {
        static const VarlinkMethod own[] = {
                {"Status", method_status, params_none, 0},
                {"TestPlugin", method_test_plugin, params_test_plugin, VARLINK_METHOD_ACCEPTS_FDS},
                {NULL},
        };
        int r;

        console_methods[0] = agent_methods[0] = (VarlinkMethod){};
        r = methods_append(console_methods, ELEMENTSOF(console_methods), own);
        if (r >= 0)
                r = methods_append(console_methods, ELEMENTSOF(console_methods),
                                   console_plugin_methods);
        if (r >= 0)
                r = methods_append(agent_methods, ELEMENTSOF(agent_methods), agent_plugin_methods);
        if (r >= 0)
                r = methods_append(console_methods, ELEMENTSOF(console_methods),
                                   console_handle_methods);
        if (r >= 0)
                r = methods_append(agent_methods, ELEMENTSOF(agent_methods), agent_handle_methods);
        if (r >= 0)
                r = methods_append(console_methods, ELEMENTSOF(console_methods),
                                   console_ticket_methods);
        if (r >= 0)
                r = methods_append(agent_methods, ELEMENTSOF(agent_methods), agent_ticket_methods);
        if (r >= 0)
                r = methods_append(console_methods, ELEMENTSOF(console_methods),
                                   console_budget_methods);
        if (r < 0)
                return r;
        r = varlink_server_add_interface(m->varlink, &console_interface);
        if (r >= 0)
                r = varlink_server_add_interface(m->varlink, &agent_interface);
        return r;
}
