/* The Varlink methods for tickets of io.lockd.Console (ListTickets, GetTicket, WatchTickets,
 * Deny, Approve, Results, EndSession), and what an agent's ticket methods share with them. Every
 * handler takes the Manager as userdata. */
#pragma once

#include <sys/socket.h>

#include "audit.h"
#include "restart.h"
#include "sessions.h"
#include "tickets.h"
#include "varlink.h"

typedef struct Manager Manager;

/* The console's ticket methods, terminated by an entry with name NULL. */
extern const VarlinkMethod console_ticket_methods[];

/* The TicketChangedFn lockd gives tickets_new() (userdata: the Manager): answers the Wait and
 * WatchTickets calls that follow the ticket, and writes the audit record of an expiry. */
void console_ticket_changed(const Ticket *t, void *userdata);
/* The TicketPlanReleaseFn lockd gives tickets_new(): drops the plugins a plan holds. */
void console_ticket_release_plan(Plan *plan, void *userdata);
/* The SessionEndedFn lockd gives sessions_new(): the audit record of a session's end. */
void console_session_ended(const SessionId *id, SessionEnd why, size_t n_values, void *userdata);
/* Drops every Wait and WatchTickets call still followed (at lockd's exit, after the server). */
void console_tickets_done(Manager *m);

/* The fields of every ticket record (ticket, agent uid, steps) into out, room for
 * CONSOLE_TICKET_FIELDS (and the caller's own after them): never a binding or a value. How many. */
#define CONSOLE_TICKET_FIELDS 3
size_t console_ticket_audit_fields(const Ticket *t, AuditField *out);
/* Records a deny, cancel or expiry (by: the peer, or NULL); a failure is logged. 0 or -errno. */
int console_ticket_audit_end(Manager *m, AuditEvent ev, const char *message_id, const Ticket *t,
                             const struct ucred *by);
/* Follows ticket for call (a Wait with more): it is answered on each change until final. */
int console_ticket_watch_add(Manager *m, VarlinkCall *call, const char *ticket);
/* UnknownTicket of the interface iface_error, naming id. */
int console_ticket_reply_unknown(VarlinkCall *call, const char *iface_error, const char *id);
