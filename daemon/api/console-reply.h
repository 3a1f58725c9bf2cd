/* Answers of the Varlink handlers of lockd: the few shapes every method file uses. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "varlink.h"

#define CONSOLE_ERROR(name) "io.lockd.Console." name
#define AGENT_ERROR(name)   "io.lockd.Agent." name

/* Answers with params (taken; NULL, from a failed json_pack(), is -ENOMEM), continuing or not. */
int reply_more(VarlinkCall *call, json_t *params, bool continues);
static inline int reply_ok(VarlinkCall *call, json_t *params) {
        return reply_more(call, params, false);
}

/* Answers with the error and params (taken; NULL is -ENOMEM). */
int reply_error(VarlinkCall *call, const char *error, json_t *params);

/* io.lockd.Console.InvalidRequest and .Unavailable with their reason (a static sentence). */
int reply_invalid_request(VarlinkCall *call, const char *reason);
int reply_unavailable(VarlinkCall *call, const char *reason);

/*
 * Refuses a change whose audit record could not be written (error r from audit_append()) with
 * iface_error's Unavailable, naming the cause: a full state directory (ENOSPC, EDQUOT) as such,
 * anything else as the errno's text. No change is ever answered without its record.
 */
int reply_audit_unavailable(VarlinkCall *call, const char *iface_error, int r);

/* The caller's credentials as the kernel gave them at accept; NULL once the peer is gone. */
const struct ucred *peer_cred(VarlinkCall *call);
