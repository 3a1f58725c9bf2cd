/* What lockask's MCP server (lockask-mcp.c: JSON-RPC on stdio, the lifecycle, one thread per
 * tool call) and its tools (lockask-tools.c) share. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* One tools/call in progress, owned by lockask-mcp.c. */
typedef struct McpCall McpCall;

/* Whether the client cancelled this call (notifications/cancelled): the tool stops waiting and
 * cancels its ticket; a cancelled call is never answered. Whether stdin closed: the tool stops
 * waiting and answers with what it knows. */
bool mcp_call_cancelled(McpCall *c);
bool mcp_closing(void);
/* Sends notifications/progress with message when the client asked for progress (a
 * progressToken); each one's progress is one more than the last. */
void mcp_call_progress(McpCall *c, const char *message);

/* The tools' descriptions for tools/list: a new reference. */
json_t *mcp_tools_list(void);
/*
 * Runs tool name with args (an object) against lockd's agent socket at socket: the tools/call
 * result (a new reference: content, structuredContent, isError), or NULL with *ret_code and
 * *ret_message set to the JSON-RPC error (an unknown tool, out of memory). Runs on its own
 * thread; blocking is fine.
 */
json_t *mcp_tools_call(McpCall *c, const char *socket, const char *name, json_t *args,
                       int *ret_code, const char **ret_message);

/* The server: messages go to out; tools talk to lockd at socket (both borrowed for good). */
void mcp_server_init(const char *socket, FILE *out);
/*
 * One line from the client (len bytes, no newline): requests get exactly one answer (tools/call's
 * from its own thread), notifications none, anything malformed the protocol's error. *initialized
 * is the lifecycle's state, false before the first initialize.
 */
void mcp_handle_line(const char *line, size_t len, bool *initialized);
/* Ends the waits of the calls in progress (each answers with what it knows) and returns once
 * none is left; the server can go on afterwards. */
void mcp_drain(void);
