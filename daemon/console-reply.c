/* Answers of the Varlink handlers of lockd. */
#include <errno.h>

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

int reply_unavailable(VarlinkCall *call, const char *reason) {
        return reply_error(call, CONSOLE_ERROR("Unavailable"),
                           json_pack("{s:s}", "reason", reason));
}

const struct ucred *peer_cred(VarlinkCall *call) {
        VarlinkConn *c = varlink_call_conn(call);

        return c ? varlink_conn_peer(c) : NULL;
}
