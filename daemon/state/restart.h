/* Tickets a restart ended: those the audit log shows submitted and never ended (pending or
 * running when lockd stopped), ended as expired, so that their agent's Wait says so. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "tickets.h"

typedef struct RestartTicket {
        char id[TICKET_ID_LEN + 1];
        uid_t agent;
        unsigned steps;
} RestartTicket;

typedef struct RestartTickets {
        RestartTicket *v; /* sorted by id */
        size_t n;
} RestartTickets;

/*
 * Reads the audit log's current file (buf, len bytes: the records lockd wrote since its last
 * segment switch, which covers every ticket still open) and fills *ret with the tickets that have
 * a "submit" record and no "deny", "cancel", "expire" or "done" one, sorted by id. Pure. 0 or
 * -ENOMEM; lines that do not parse are passed over (the verifier judges the file, not this).
 */
int restart_tickets_scan(const char *buf, size_t len, RestartTickets *ret);

/* The ended ticket id of agent, or NULL: another agent's ticket is no different from none. */
const RestartTicket *restart_tickets_find(const RestartTickets *rt, const char *id, uid_t agent);

void restart_tickets_done(RestartTickets *rt);
