/* The Varlink handler for the plugins as an agent may know them (io.lockd.Agent.ListPlugins):
 * name, version, protocol, question, one, zero, accepts and inputs; never a digest or a limit. */
#include "agent-plugins.h"
#include "console-plugins.h"

static int method_agent_list_plugins(VarlinkCall *call, json_t *params, void *userdata) {
        return console_plugins_list(call, userdata, false);
}

static const VarlinkParam params_none[] = {{NULL}};

const VarlinkMethod agent_plugin_methods[] = {
        {"ListPlugins", method_agent_list_plugins, params_none, 0},
        {NULL},
};
