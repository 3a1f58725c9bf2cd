/* lockctl console's model: the tickets it shows, in submit order, one selected, and how one
 * ticket reads as a line of the screen. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "lockctl-ticket-list.h"
#include "macro.h"

static const char *ticket_id(const json_t *t) {
        return json_string_value(json_object_get(t, "ticket"));
}

/* How far a state is along its way: a ticket never goes back. Unknown states rank as final. */
static int state_rank(const json_t *t) {
        const char *s = json_string_value(json_object_get(t, "state"));

        if (s && strcmp(s, "pending") == 0)
                return 0;
        if (s && strcmp(s, "running") == 0)
                return 1;
        return 2;
}

int ticket_list_upsert(TicketList *l, json_t *t) {
        const char *id = ticket_id(t);

        if (!json_is_object(t) || !id)
                return -EINVAL;
        for (size_t i = 0; i < l->n; i++)
                if (strcmp(ticket_id(l->items[i]), id) == 0) {
                        if (state_rank(t) < state_rank(l->items[i]))
                                return 0;
                        json_decref(l->items[i]);
                        l->items[i] = json_incref(t);
                        return 0;
                }
        if (l->n == TICKET_LIST_MAX) {
                json_decref(l->items[0]);
                memmove(l->items, l->items + 1, (l->n - 1) * sizeof(*l->items));
                l->n--;
                if (l->selected > 0)
                        l->selected--;
        }
        if (!l->items) {
                l->items = calloc(TICKET_LIST_MAX, sizeof(*l->items));
                if (!l->items)
                        return -ENOMEM;
        }
        l->items[l->n++] = json_incref(t);
        return 0;
}

void ticket_list_move(TicketList *l, long delta) {
        if (l->n == 0) {
                l->selected = 0;
                return;
        }
        if (delta < 0 && (size_t)-delta > l->selected)
                l->selected = 0;
        else if (delta > 0 && (size_t)delta >= l->n - l->selected)
                l->selected = l->n - 1;
        else
                l->selected = (size_t)((long)l->selected + delta);
}

const char *ticket_list_selected_id(const TicketList *l) {
        return l->n > 0 && l->selected < l->n ? ticket_id(l->items[l->selected]) : NULL;
}

void ticket_list_clear(TicketList *l) {
        for (size_t i = 0; i < l->n; i++)
                json_decref(l->items[i]);
        l->items = mfree(l->items);
        l->n = l->selected = 0;
}

/* s escaped, or "-" for NULL; a new string or NULL on out of memory. */
static char *escaped_or_dash(const char *s) {
        return s ? escape_bytes(s, strlen(s)) : strdup("-");
}

size_t ticket_line_format(const json_t *t, size_t width, char *buf, size_t size) {
        json_t *steps = json_object_get(t, "steps");
        json_t *uid = json_object_get(t, "agent_uid");
        _cleanup_free_ char *id = NULL, *state = NULL, *plugin = NULL;
        size_t n_steps = json_is_array(steps) ? json_array_size(steps) : 0, len;
        int k;

        if (size == 0)
                return 0;
        id = escaped_or_dash(ticket_id(t));
        state = escaped_or_dash(json_string_value(json_object_get(t, "state")));
        plugin = escaped_or_dash(
                json_string_value(json_object_get(json_array_get(steps, 0), "plugin")));
        if (!id || !state || !plugin) {
                buf[0] = 0;
                return 0;
        }
        if (strlen(id) > TICKET_SHORT_ID)
                id[TICKET_SHORT_ID] = 0;
        k = snprintf(buf, size, "%-*s  uid %-7lld %-9s %2zu step%s  %s%s", TICKET_SHORT_ID, id,
                     json_is_integer(uid) ? (long long)json_integer_value(uid) : -1LL, state,
                     n_steps, n_steps == 1 ? " " : "s", plugin,
                     json_is_true(json_object_get(t, "auto")) ? "  (auto)" : "");
        len = k < 0 ? 0 : (size_t)k >= size ? size - 1 : (size_t)k;
        if (len > width)
                len = width;
        buf[len] = 0;
        return len;
}
