/* The Varlink methods for plugins and marketplaces of io.lockd.Console: ListPlugins,
 * InstallPlugin, RemovePlugin, AddMarketplace, ListMarketplaces, RemoveMarketplace (the agent's
 * ListPlugins is in agent-plugins.h). Every handler takes the Manager as userdata. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "catalog.h"
#include "engine.h"
#include "varlink.h"

/* The console's plugin and marketplace methods, terminated by an entry with name NULL, with
 * their parameter tables and flags (fds where a method takes them). */
extern const VarlinkMethod console_plugin_methods[];

/* Answers call with the installed plugins as the console (console true) or an agent sees them. */
int console_plugins_list(VarlinkCall *call, const Manager *m, bool console);

/* A plugin as io.lockd.Console's Plugin type (console true) or io.lockd.Agent's (false): a new
 * object, or NULL on ENOMEM. */
json_t *plugin_to_json(const CatalogPlugin *p, bool console);
