/* The Varlink method of the plugins an agent may ask: io.lockd.Agent's ListPlugins (the Manager
 * as userdata). */
#pragma once

#include "varlink.h"

/* Terminated by an entry with name NULL. */
extern const VarlinkMethod agent_plugin_methods[];
