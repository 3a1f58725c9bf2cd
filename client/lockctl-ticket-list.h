/* lockctl console's model: the tickets it shows, in submit order, one selected, and how one
 * ticket reads as a line of the screen. */
#pragma once

#include <jansson.h>
#include <stddef.h>

/* lockd keeps at most 4096 tickets; the view keeps as many and forgets the oldest beyond. */
#define TICKET_LIST_MAX 4096
/* The short form of a ticket id on the screen: "t-" and ten hex digits. */
#define TICKET_SHORT_ID 12

typedef struct TicketList {
        json_t **items; /* each a ticket object with a string "ticket", one reference each */
        size_t n, selected;
} TicketList;

/*
 * Adds ticket t (a new reference is taken) or replaces the one with its id. A replacement never
 * moves a ticket back from a later state to an earlier one (pending → running → the final
 * states): an answer that overtook a newer one is ignored. Past TICKET_LIST_MAX the oldest is
 * dropped. 0, -EINVAL for a ticket without a string id, -ENOMEM.
 */
int ticket_list_upsert(TicketList *l, json_t *t);

/* Moves the selection by delta, within the list. */
void ticket_list_move(TicketList *l, long delta);

/* The selected ticket's full id, or NULL for an empty list. Borrowed. */
const char *ticket_list_selected_id(const TicketList *l);

/* Drops every ticket. */
void ticket_list_clear(TicketList *l);

/*
 * Formats t as one screen line of at most width columns into buf (size bytes): the short id, the
 * agent's uid, the state, the number of steps, the first step's plugin (escaped: only printable
 * ASCII reaches the screen). Returns the line's length.
 */
size_t ticket_line_format(const json_t *t, size_t width, char *buf, size_t size);
