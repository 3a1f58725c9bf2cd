/* The Varlink methods for handles of io.lockd.Console: Grant, Revoke and ListHandles (the agent's
 * ListHandles is in agent-handles.h). Every handler takes the Manager as userdata. */
#pragma once

#include "handles.h"
#include "varlink.h"

/* The console's handle methods, terminated by an entry with name NULL. */
extern const VarlinkMethod console_handle_methods[];

/* Appends o, a handle's entry of a ListHandles answer (NULL: out of memory), to list, with the
 * handle's expiry when it has one: the console's and the agent's lists alike. 0 or -ENOMEM. */
int console_handle_list_append(json_t *list, json_t *o, const Handle *h);

/* The HandleExpiredFn lockd gives handles_new() (userdata: the Manager): writes the audit record
 * of a handle that expired. */
void console_handle_expired(const Handle *h, void *userdata);
