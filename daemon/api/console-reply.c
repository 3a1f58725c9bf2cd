/* Answers of the Varlink handlers of lockd. */
#include <errno.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

#include "console-reply.h"
#include "macro.h"

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

int list_page_init(ListPage *p, json_t *params) {
        json_t *limit = json_object_get(params, "limit");

        *p = (ListPage){
                .items = json_array(),
                .limit = json_is_integer(limit) ? (size_t)json_integer_value(limit)
                                                : LIST_PAGE_DEFAULT,
                .after = json_string_value(json_object_get(params, "cursor")),
        };
        return p->items ? 0 : -ENOMEM;
}

void list_page_done(ListPage *p) {
        json_decref(p->items);
        p->items = NULL;
        p->last = mfree(p->last);
}

bool list_page_wants(const ListPage *p, const char *key) {
        return !p->more && (!p->after || strcmp(key, p->after) > 0);
}

int list_page_add(ListPage *p, json_t *item, const char *key) {
        size_t len;
        char *k;

        if (!item)
                return -ENOMEM;
        len = json_dumpb(item, NULL, 0, JSON_COMPACT);
        if (json_array_size(p->items) >= p->limit ||
            (json_array_size(p->items) > 0 && p->bytes + len > LIST_PAGE_BYTES)) {
                json_decref(item);
                p->more = true;
                return 0;
        }
        k = strdup(key);
        if (!k || json_array_append_new(p->items, item) < 0) {
                free(k);
                return -ENOMEM;
        }
        p->bytes += len;
        free(p->last);
        p->last = k;
        return 1;
}

json_t *list_page_reply(ListPage *p, const char *name) {
        return json_pack("{s:O, s:s?}", name, p->items, "next", p->more ? p->last : NULL);
}
