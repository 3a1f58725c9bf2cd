/*
 * lockask mcp: a Model Context Protocol server on stdio. JSON-RPC 2.0, one message per line;
 * the lifecycle (initialize, notifications/initialized, ping), tools/list and tools/call, each
 * call on a thread of its own so that pings, other calls and notifications/cancelled are served
 * while a ticket waits for the human. The tools themselves are in lockask-tools.c.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "lockask-mcp.h"
#include "lockask.h"
#include "macro.h"

/* JSON-RPC 2.0's error codes. */
#define RPC_PARSE_ERROR      (-32700)
#define RPC_INVALID_REQUEST  (-32600)
#define RPC_METHOD_NOT_FOUND (-32601)
#define RPC_INVALID_PARAMS   (-32602)
#define RPC_INTERNAL_ERROR   (-32603)
/* Implementation-defined server errors. */
#define RPC_NOT_INITIALIZED (-32002)
#define RPC_BUSY            (-32000)

#define LINE_MAX_BYTES ((size_t)4 * 1024 * 1024) /* one message; a longer line is refused */
#define CALLS_MAX      16                        /* tool calls in progress at once */

/* The protocol versions this server speaks, newest first. */
static const char *const protocol_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                "2024-11-05"};

struct McpCall {
        json_t *id;             /* the request's id (owned) */
        json_t *progress_token; /* _meta.progressToken, or NULL (owned) */
        char *tool;
        json_t *args; /* owned; never shared with another thread */
        long long progress;
        bool cancelled;
        bool in_use;
};

static struct {
        pthread_mutex_t lock; /* guards everything below and every write to stdout */
        pthread_cond_t idle;  /* signalled when a call ends */
        McpCall calls[CALLS_MAX];
        unsigned n_calls;
        bool closing;
        const char *socket;
        FILE *out; /* where messages go: stdout, or a fuzzer's sink */
} mcp = {
        .lock = PTHREAD_MUTEX_INITIALIZER,
        .idle = PTHREAD_COND_INITIALIZER,
};

/* Writes one message as a line. Called with mcp.lock held. */
static void send_locked(json_t *msg) {
        _cleanup_free_ char *s = json_dumps(msg, JSON_COMPACT);

        if (!s)
                return;
        /* A client that stopped reading is gone: nothing else is worth doing. */
        if (fputs(s, mcp.out) < 0 || fputc('\n', mcp.out) < 0 || fflush(mcp.out) != 0)
                _exit(LOCKASK_EXIT_UNREACHABLE);
}

static void send_msg(json_t *msg) {
        pthread_mutex_lock(&mcp.lock);
        send_locked(msg);
        pthread_mutex_unlock(&mcp.lock);
}

static void send_result(json_t *id, json_t *result) {
        _cleanup_(json_decrefp) json_t *m =
                json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id", id, "result", result);

        if (m)
                send_msg(m);
}

static void send_error(json_t *id, int code, const char *message) {
        _cleanup_(json_decrefp) json_t *m =
                json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
                          "error", "code", code, "message", message);

        if (m)
                send_msg(m);
}

bool mcp_call_cancelled(McpCall *c) {
        bool r;

        pthread_mutex_lock(&mcp.lock);
        r = c->cancelled;
        pthread_mutex_unlock(&mcp.lock);
        return r;
}

bool mcp_closing(void) {
        bool r;

        pthread_mutex_lock(&mcp.lock);
        r = mcp.closing;
        pthread_mutex_unlock(&mcp.lock);
        return r;
}

void mcp_call_progress(McpCall *c, const char *message) {
        pthread_mutex_lock(&mcp.lock);
        if (c->progress_token && !c->cancelled) {
                _cleanup_(json_decrefp) json_t *m = json_pack(
                        "{s:s, s:s, s:{s:O, s:I, s:s}}", "jsonrpc", "2.0", "method",
                        "notifications/progress", "params", "progressToken", c->progress_token,
                        "progress", (json_int_t)++c->progress, "message", message);
                if (m)
                        send_locked(m);
        }
        pthread_mutex_unlock(&mcp.lock);
}

/* Frees a finished call's slot. Called with mcp.lock held. */
static void call_release_locked(McpCall *c) {
        json_decref(c->id);
        json_decref(c->progress_token);
        json_decref(c->args);
        free(c->tool);
        *c = (McpCall){};
        mcp.n_calls--;
        pthread_cond_broadcast(&mcp.idle);
}

static void *call_thread(void *userdata) {
        McpCall *c = userdata;
        _cleanup_(json_decrefp) json_t *result = NULL;
        const char *message = "internal error";
        int code = RPC_INTERNAL_ERROR;

        result = mcp_tools_call(c, mcp.socket, c->tool, c->args, &code, &message);
        pthread_mutex_lock(&mcp.lock);
        /* A cancelled request is not answered (the protocol's cancellation rule). */
        if (!c->cancelled) {
                _cleanup_(json_decrefp) json_t *m =
                        result ? json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id", c->id,
                                           "result", result)
                               : json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
                                           c->id, "error", "code", code, "message", message);
                if (m)
                        send_locked(m);
        }
        call_release_locked(c);
        pthread_mutex_unlock(&mcp.lock);
        return NULL;
}

/* tools/call: checks the request, then hands it to a thread of its own. */
static void tools_call(json_t *id, json_t *params) {
        json_t *name = json_object_get(params, "name"),
               *args = json_object_get(params, "arguments");
        json_t *meta = json_object_get(params, "_meta");
        json_t *token = json_object_get(meta, "progressToken");
        McpCall *c = NULL;
        pthread_attr_t attr;
        pthread_t thread;

        if (!json_is_string(name) || (args && !json_is_object(args) && !json_is_null(args)) ||
            (token && !json_is_string(token) && !json_is_integer(token))) {
                send_error(id, RPC_INVALID_PARAMS,
                           "tools/call takes {name: string, arguments: object}");
                return;
        }
        pthread_mutex_lock(&mcp.lock);
        for (size_t i = 0; i < CALLS_MAX; i++) {
                /* The same id twice while the first is in progress is the client's mistake. */
                if (mcp.calls[i].in_use && json_equal(mcp.calls[i].id, id)) {
                        pthread_mutex_unlock(&mcp.lock);
                        send_error(id, RPC_INVALID_REQUEST,
                                   "a request with this id is in progress");
                        return;
                }
                if (!c && !mcp.calls[i].in_use)
                        c = &mcp.calls[i];
        }
        if (!c) {
                pthread_mutex_unlock(&mcp.lock);
                send_error(id, RPC_BUSY, "too many tool calls in progress (at most 16)");
                return;
        }
        *c = (McpCall){
                .id = json_deep_copy(id),
                .progress_token = token ? json_deep_copy(token) : NULL,
                .tool = strdup(json_string_value(name)),
                .args = json_is_object(args) ? json_deep_copy(args) : json_object(),
                .in_use = true,
        };
        mcp.n_calls++;
        if (!c->id || (token && !c->progress_token) || !c->tool || !c->args ||
            pthread_attr_init(&attr) != 0) {
                call_release_locked(c);
                pthread_mutex_unlock(&mcp.lock);
                send_error(id, RPC_INTERNAL_ERROR, "out of memory");
                return;
        }
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&thread, &attr, call_thread, c) != 0) {
                call_release_locked(c);
                pthread_mutex_unlock(&mcp.lock);
                pthread_attr_destroy(&attr);
                send_error(id, RPC_INTERNAL_ERROR, "cannot start a thread");
                return;
        }
        pthread_attr_destroy(&attr);
        pthread_mutex_unlock(&mcp.lock);
}

/* notifications/cancelled: the call stops waiting, cancels its ticket and is not answered. */
static void cancel_call(json_t *params) {
        json_t *id = json_object_get(params, "requestId");

        if (!id)
                return;
        pthread_mutex_lock(&mcp.lock);
        for (size_t i = 0; i < CALLS_MAX; i++)
                if (mcp.calls[i].in_use && json_equal(mcp.calls[i].id, id))
                        mcp.calls[i].cancelled = true;
        pthread_mutex_unlock(&mcp.lock);
}

static void initialize(json_t *id, json_t *params) {
        const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
        const char *version = protocol_versions[0];
        _cleanup_(json_decrefp) json_t *result = NULL;

        if (!asked || !json_is_object(json_object_get(params, "capabilities"))) {
                send_error(id, RPC_INVALID_PARAMS,
                           "initialize takes {protocolVersion: string, capabilities: object, "
                           "clientInfo: object}");
                return;
        }
        /* The client's version when this server speaks it, else the newest it does (the
         * client then decides whether to go on). */
        for (size_t i = 0; i < ELEMENTSOF(protocol_versions); i++)
                if (strcmp(asked, protocol_versions[i]) == 0)
                        version = protocol_versions[i];
        result = json_pack(
                "{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", version,
                "capabilities", "tools", "listChanged", false, "serverInfo", "name", "lockask",
                "title", "lockd: one-bit questions about files you may not read", "version",
                LOCKD_VERSION, "instructions",
                "lockd answers fixed yes/no questions about files a human granted you but you may "
                "not read. list_files shows the files (by handle), list_questions the plugins and "
                "their questions; ask asks one, and returns 1, 0 or an error code. Values of "
                "inputs are typed by the human only: you bind each input to a placeholder "
                "\"${name}\". Most questions wait for the human's approval.");
        if (result)
                send_result(id, result);
}

void mcp_handle_line(const char *line, size_t len, bool *initialized) {
        _cleanup_(json_decrefp) json_t *m = NULL;
        json_t *id, *method, *params;
        json_error_t jerr;
        const char *name;

        m = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!m) {
                send_error(NULL, RPC_PARSE_ERROR, "parse error: not JSON");
                return;
        }
        if (!json_is_object(m)) {
                /* Batches are gone from the protocol since 2025-06-18. */
                send_error(NULL, RPC_INVALID_REQUEST, "invalid request: not a JSON-RPC object");
                return;
        }
        id = json_object_get(m, "id");
        method = json_object_get(m, "method");
        params = json_object_get(m, "params");
        if (id && !json_is_string(id) && !json_is_integer(id)) {
                send_error(NULL, RPC_INVALID_REQUEST, "invalid request: id is a string or integer");
                return;
        }
        if (!json_is_string(json_object_get(m, "jsonrpc")) ||
            strcmp(json_string_value(json_object_get(m, "jsonrpc")), "2.0") != 0) {
                if (id)
                        send_error(id, RPC_INVALID_REQUEST, "invalid request: jsonrpc is not 2.0");
                return;
        }
        if (!method) {
                /* A response: this server sends no requests, so there is nothing to match. */
                if (!json_object_get(m, "result") && !json_object_get(m, "error") && id)
                        send_error(id, RPC_INVALID_REQUEST, "invalid request: no method");
                return;
        }
        if (!json_is_string(method) || (params && !json_is_object(params))) {
                if (id)
                        send_error(id, RPC_INVALID_REQUEST,
                                   "invalid request: method is a string, params an object");
                return;
        }
        name = json_string_value(method);

        if (!id) {
                /* Notifications: never answered; unknown ones ignored. */
                if (strcmp(name, "notifications/cancelled") == 0)
                        cancel_call(params);
                return;
        }
        if (strcmp(name, "ping") == 0) {
                _cleanup_(json_decrefp) json_t *empty = json_object();

                send_result(id, empty);
                return;
        }
        if (strcmp(name, "initialize") == 0) {
                if (*initialized) {
                        send_error(id, RPC_INVALID_REQUEST, "already initialized");
                        return;
                }
                initialize(id, params);
                *initialized = true;
                return;
        }
        if (!*initialized) {
                send_error(id, RPC_NOT_INITIALIZED,
                           "not initialized: the first request is initialize");
                return;
        }
        if (strcmp(name, "tools/list") == 0) {
                _cleanup_(json_decrefp) json_t *tools = mcp_tools_list();
                _cleanup_(json_decrefp) json_t *result = json_pack("{s:O}", "tools", tools);

                if (result)
                        send_result(id, result);
                else
                        send_error(id, RPC_INTERNAL_ERROR, "out of memory");
                return;
        }
        if (strcmp(name, "tools/call") == 0) {
                tools_call(id, params);
                return;
        }
        send_error(id, RPC_METHOD_NOT_FOUND, "method not found");
}

static const char mcp_usage[] =
        "usage: lockask mcp [--socket PATH]\n"
        "A Model Context Protocol server on stdin and stdout (JSON-RPC 2.0, one message per\n"
        "line) with the tools list_files, list_questions, ask, ticket_status and cancel. An MCP\n"
        "client starts it: {\"command\": \"lockask\", \"args\": [\"mcp\"]}. See lockask(1).\n";

int lockask_mcp(const LockaskOptions *global, int argc, char **argv) {
        static const struct option options[] = {
                {"socket", required_argument, NULL, 's'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_free_ char *line = NULL;
        bool initialized = false;
        size_t cap = 0;
        ssize_t n;
        int c;

        mcp_server_init(global->socket, stdout);
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 's':
                        mcp_server_init(optarg, stdout);
                        break;
                case 'h':
                        fputs(mcp_usage, stdout);
                        return LOCKASK_EXIT_ANSWER;
                default:
                        fputs(mcp_usage, stderr);
                        return LOCKASK_EXIT_REFUSED;
                }
        if (optind != argc) {
                fputs(mcp_usage, stderr);
                return LOCKASK_EXIT_REFUSED;
        }
        /* A write to a client that went away fails with EPIPE instead of killing lockask. */
        signal(SIGPIPE, SIG_IGN);

        while ((n = getline(&line, &cap, stdin)) >= 0) {
                size_t len = (size_t)n;

                if (len > 0 && line[len - 1] == '\n')
                        len--;
                if (len > 0 && line[len - 1] == '\r')
                        len--;
                if (len == 0)
                        continue;
                if (len > LINE_MAX_BYTES) {
                        send_error(NULL, RPC_INVALID_REQUEST, "message too long (at most 4 MiB)");
                        continue;
                }
                mcp_handle_line(line, len, &initialized);
        }
        /* The client closed stdin: calls still waiting return what they know, then we exit. */
        mcp_drain();
        return LOCKASK_EXIT_ANSWER;
}

void mcp_server_init(const char *socket, FILE *out) {
        mcp.socket = socket;
        mcp.out = out;
}

void mcp_drain(void) {
        pthread_mutex_lock(&mcp.lock);
        mcp.closing = true;
        while (mcp.n_calls > 0)
                pthread_cond_wait(&mcp.idle, &mcp.lock);
        mcp.closing = false;
        pthread_mutex_unlock(&mcp.lock);
}
