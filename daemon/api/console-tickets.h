/* The Varlink methods for tickets: io.lockd.Agent's Submit, Wait and Cancel, io.lockd.Console's
 * ListTickets, GetTicket, WatchTickets and Deny. Every handler takes the Manager as userdata. */
#pragma once

#include "sessions.h"
#include "tickets.h"
#include "varlink.h"

typedef struct Manager Manager;

/* The console's ticket methods, terminated by an entry with name NULL. */
extern const VarlinkMethod console_ticket_methods[];
/* The agent's ticket methods, terminated likewise. */
extern const VarlinkMethod agent_ticket_methods[];

/* The TicketChangedFn lockd gives tickets_new() (userdata: the Manager): answers the Wait and
 * WatchTickets calls that follow the ticket, and writes the audit record of an expiry. */
void console_ticket_changed(const Ticket *t, void *userdata);
/* The TicketPlanReleaseFn lockd gives tickets_new(): drops the plugins a plan holds. */
void console_ticket_release_plan(Plan *plan, void *userdata);
/* The SessionEndedFn lockd gives sessions_new(): the audit record of a session's end. */
void console_session_ended(const SessionId *id, SessionEnd why, size_t n_values, void *userdata);
/* Drops every Wait and WatchTickets call still followed (at lockd's exit, after the server). */
void console_tickets_done(Manager *m);
