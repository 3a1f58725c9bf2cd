/* The Varlink handler for an agent's handles (io.lockd.Agent.ListHandles). */
#include <errno.h>
#include <sys/socket.h>

#include "agent-handles.h"
#include "budget.h"
#include "console-handles.h"
#include "console-reply.h"
#include "handles.h"
#include "macro.h"
#include "engine.h"

/*
 * The agent sees its own handles only, and of each only what it needs to ask about it: the id,
 * the label the human chose, the budget left and the expiry. Never the size or the digest (bits
 * of the content lockd exists to keep back), nor anything of another agent's handles.
 */
static int method_agent_list_handles(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        _cleanup_(json_decrefp) json_t *list = json_array();
        VarlinkConn *c = varlink_call_conn(call);
        const struct ucred *cred = c ? varlink_conn_peer(c) : NULL;
        long uid = cred ? (long)cred->uid : -1;
        size_t n = handles_n(m->handles);

        if (!list)
                return -ENOMEM;
        for (size_t i = 0; i < n && uid >= 0; i++) {
                const Handle *h = handles_at(m->handles, i);
                json_t *o;

                if ((long)h->agent != uid)
                        continue;
                /* What is left of the content's budget: a re-grant of the same bytes does not
                 * reset it (budgets are per SHA-256, persisted). */
                int left =
                        m->budget ? budget_left(m->budget, h->digest, h->budget) : (int)h->budget;
                if (left < 0)
                        return left;
                o = json_pack("{s:s, s:s?, s:i}", "handle", h->id, "label", h->label, "budget_left",
                              left);
                if (console_handle_list_append(list, o, h) < 0)
                        return -ENOMEM;
        }
        return reply_ok(call, json_pack("{s:O}", "handles", list));
}

static const VarlinkParam params_none[] = {{NULL}};

const VarlinkMethod agent_handle_methods[] = {
        {"ListHandles", method_agent_list_handles, params_none, 0},
        {NULL},
};
