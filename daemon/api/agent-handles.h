/* The Varlink method of an agent's handles: io.lockd.Agent's ListHandles (the Manager as
 * userdata). */
#pragma once

#include "varlink.h"

/* Terminated by an entry with name NULL. */
extern const VarlinkMethod agent_handle_methods[];
