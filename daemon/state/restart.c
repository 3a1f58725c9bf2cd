/* Tickets a restart ended, found in the audit log. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "restart.h"

static int by_id(const void *a, const void *b) {
        return strcmp(((const RestartTicket *)a)->id, ((const RestartTicket *)b)->id);
}

int restart_tickets_scan(const char *buf, size_t len, RestartTickets *ret) {
        RestartTicket *v = NULL;
        size_t n = 0, cap = 0;

        if (!ret || (!buf && len > 0))
                return -EINVAL;
        for (size_t off = 0; off < len;) {
                const char *line = buf + off, *nl = memchr(line, '\n', len - off);
                size_t k = nl ? (size_t)(nl - line) : len - off;
                _cleanup_(json_decrefp) json_t *rec = json_loadb(line, k, 0, NULL);
                const char *event = json_string_value(json_object_get(rec, "event"));
                const char *id = json_string_value(json_object_get(rec, "ticket"));

                off += k + 1;
                if (!event || !id || !ticket_id_valid(id))
                        continue;
                if (strcmp(event, "submit") == 0) {
                        json_int_t agent = json_integer_value(json_object_get(rec, "agent_uid"));
                        json_int_t steps = json_integer_value(json_object_get(rec, "steps"));

                        if (n == cap) {
                                RestartTicket *nv;

                                cap = cap ? cap * 2 : 64;
                                nv = reallocarray(v, cap, sizeof(*v));
                                if (!nv) {
                                        free(v);
                                        return -ENOMEM;
                                }
                                v = nv;
                        }
                        v[n] = (RestartTicket){.agent = (uid_t)agent,
                                               .steps = steps > 0 && steps <= PLAN_STEPS_MAX
                                                                ? (unsigned)steps
                                                                : 1};
                        memcpy(v[n].id, id, sizeof(v[n].id));
                        n++;
                } else if (strcmp(event, "deny") == 0 || strcmp(event, "cancel") == 0 ||
                           strcmp(event, "expire") == 0 || strcmp(event, "done") == 0) {
                        /* Ended: out of the list (from the end, where the newest are). */
                        for (size_t i = n; i > 0; i--)
                                if (strcmp(v[i - 1].id, id) == 0) {
                                        v[i - 1] = v[--n];
                                        break;
                                }
                }
        }
        if (n > 1)
                qsort(v, n, sizeof(*v), by_id);
        *ret = (RestartTickets){.v = v, .n = n};
        return 0;
}

const RestartTicket *restart_tickets_find(const RestartTickets *rt, const char *id, uid_t agent) {
        RestartTicket key = {};
        const RestartTicket *t;

        if (!rt || rt->n == 0 || !id || strlen(id) != TICKET_ID_LEN)
                return NULL;
        memcpy(key.id, id, TICKET_ID_LEN);
        t = bsearch(&key, rt->v, rt->n, sizeof(*rt->v), by_id);
        return t && t->agent == agent ? t : NULL;
}

void restart_tickets_done(RestartTickets *rt) {
        if (!rt)
                return;
        free(rt->v);
        *rt = (RestartTickets){};
}
