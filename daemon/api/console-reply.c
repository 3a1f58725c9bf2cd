/* Answers of the Varlink handlers of lockd. */
#include <errno.h>
#include <string.h>
#include <stdio.h>

#include "console-reply.h"

int reply_more(VarlinkCall *call, json_t *params, bool continues) {
        int r = params ? varlink_call_reply(call, params, continues) : -ENOMEM;

        json_decref(params);
        return r;
}

int reply_error(VarlinkCall *call, const char *error, json_t *params) {
        int r = params ? varlink_call_error(call, error, params) : -ENOMEM;

        json_decref(params);
        return r;
}

int reply_invalid_request(VarlinkCall *call, const char *reason) {
        return reply_error(call, CONSOLE_ERROR("InvalidRequest"),
                           json_pack("{s:s}", "reason", reason));
}

int reply_audit_unavailable(VarlinkCall *call, const char *iface_error, int r) {
        char reason[160];

        if (r == -ENOSPC || r == -EDQUOT)
                snprintf(reason, sizeof(reason),
                         "the audit log cannot be written: the state directory is full (%s)",
                         strerror(-r));
        else
                snprintf(reason, sizeof(reason), "the audit log cannot be written (%s)",
                         strerror(-r));
        return reply_error(call, iface_error, json_pack("{s:s}", "reason", reason));
}

int reply_unavailable(VarlinkCall *call, const char *reason) {
        return reply_error(call, CONSOLE_ERROR("Unavailable"),
                           json_pack("{s:s}", "reason", reason));
}

const struct ucred *peer_cred(VarlinkCall *call) {
        VarlinkConn *c = varlink_call_conn(call);

        return c ? varlink_conn_peer(c) : NULL;
}
