/* The Varlink methods of an agent's tickets: io.lockd.Agent's Submit, Wait and Cancel. Every
 * handler takes the Manager as userdata. */
#pragma once

#include "varlink.h"

/* The agent's ticket methods, terminated by an entry with name NULL. */
extern const VarlinkMethod agent_ticket_methods[];
