/* The compiled-in lockd.yaml: every key a policy file omits takes its value from here. */
#include "config.h"
#include "policy.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x)  STRINGIFY_(x)

/*
 * Parsed by policy_parse() itself before every file, so the default can never disagree with the
 * parser. Nobody is an agent until the administrator names one: an empty agents list fails
 * closed. root is the only console, matching the console socket's mode 0600 owned by root; a
 * human who approves as another user is added to consoles together with the socket's group.
 */
const char policy_default_yaml[] =
        "security_level: 2\n"
        "release_quantum: 250ms\n"
        "agents:\n"
        "  users: []\n"
        "  groups: []\n"
        "  require_confinement: true\n"
        "consoles:\n"
        "  users: [root]\n"
        "  groups: []\n"
        "sockets:\n"
        "  agent:\n"
        "    path: /run/lockd.sock\n"
        "    mode: \"0666\"\n"
        "    group: null\n"
        "  console:\n"
        "    path: /run/lockd/console.sock\n"
        "    mode: \"0600\"\n"
        "    group: null\n"
        "state_directory: /var/lib/lockd\n"
        "runtime_directory: /run/lockd\n"
        "ephemeral_uids:\n"
        "  first: " STRINGIFY(
                LOCKD_UID_MIN_DEFAULT) "\n"
                                       "  last: " STRINGIFY(
                                               LOCKD_UID_MAX_DEFAULT) "\n"
                                                                      "limits:\n"
                                                                      "  max_plugins_per_handle: "
                                                                      "8\n"
                                                                      "  concurrent_runs: 4\n"
                                                                      "  "
                                                                      "pending_tickets_per_agent: "
                                                                      "16\n"
                                                                      "  connections_per_uid: 16\n"
                                                                      "  connections_total: 256\n"
                                                                      "  console_connections: 16\n"
                                                                      "  agent_idle_timeout: 5min\n"
                                                                      "  message_bytes: 1MiB\n"
                                                                      "  session_idle_timeout: "
                                                                      "15min\n"
                                                                      "  session_absolute_timeout: "
                                                                      "8h\n"
                                                                      "  max_handle_bytes: 64MiB\n"
                                                                      "  handle_store_bytes: 1GiB\n"
                                                                      "  ticket_timeout: 1h\n"
                                                                      "  file_read_timeout: 30s\n"
                                                                      "scope:\n"
                                                                      "  backend: systemd\n"
                                                                      "  bus: system\n"
                                                                      "  slice: "
                                                                      "lockd-plugins.slice\n"
                                                                      "  cpu_quota: null\n"
                                                                      "  ahead: 4\n"
                                                                      "audit:\n"
                                                                      "  segment_bytes: 64MiB\n"
                                                                      "  retain_segments: 16\n"
                                                                      "marketplaces: []\n"
                                                                      "allow_unsigned: false\n";
