/* The Varlink interfaces lockd serves: io.lockd.Console and io.lockd.Agent. */
#pragma once

#include "engine.h"

/*
 * Makes the objects the console follows, each with the console's observer: the handles (an
 * expiry's audit record, console-handles.c), the tickets (Wait and WatchTickets answered, an
 * expiry's record, a plan's plugins let go: console-tickets.c) and the input sessions (the record
 * of a session's end). After the audit log, before the handle store is read. 0 or a negative
 * errno, logged.
 */
int console_attach(Manager *m);

/* Assembles both interfaces' method tables and adds them to m->varlink. 0 or a negative errno. */
int console_register(Manager *m);
