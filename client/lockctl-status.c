/* lockctl status: the running lockd at a glance (io.lockd.Console.Status). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lockctl-console.h"
#include "lockctl.h"
#include "macro.h"

/* Prints usec as "1d 2h 3m 4s" (down to the second). */
static void print_uptime(long long usec) {
        long long s = usec / 1000000;

        if (usec < 0) {
                fputs("?", stdout);
                return;
        }
        if (s >= 86400)
                printf("%lldd ", s / 86400);
        if (s >= 3600)
                printf("%lldh ", s / 3600 % 24);
        if (s >= 60)
                printf("%lldm ", s / 60 % 60);
        printf("%llds", s % 60);
}

/* One "label: N" line for the integer key (or "?" when lockd left it out). */
static void print_int(const json_t *reply, const char *label, const char *key) {
        json_t *v = json_object_get(reply, key);

        if (json_is_integer(v))
                printf("%s: %" JSON_INTEGER_FORMAT "\n", label, json_integer_value(v));
        else
                printf("%s: ?\n", label);
}

/*
 * status [--json]: prints Status's reply, one "label: value" per line, every string from lockd
 * escaped; or, with --json, the reply's parameters as they are.
 */
int verb_status(int argc, char **argv) {
        _cleanup_(json_decrefp) json_t *reply = NULL;
        json_t *caps;
        bool json = false;
        int r;

        r = console_parse_json_only(argc, argv, "usage: lockctl [--socket PATH] status [--json]",
                                    &json);
        if (r != LOCKCTL_EXIT_OK)
                return r;

        r = console_call_once("status", "Status", NULL, NULL, 0, &reply);
        if (r != 0)
                return r;
        if (json)
                return console_print_json(reply);

        fputs("version: ", stdout);
        console_fputs_escaped(console_json_string(reply, "version"), stdout);
        putchar('\n');
        print_int(reply, "security level", "security_level");
        fputs("uptime: ", stdout);
        print_uptime(console_json_integer(reply, "uptime_usec", -1));
        putchar('\n');
        print_int(reply, "plugins", "plugins");
        print_int(reply, "marketplaces", "marketplaces");
        print_int(reply, "runs active", "runs_active");
        print_int(reply, "runs total", "runs_total");
        print_int(reply, "connections", "connections");
        fputs("scope backend: ", stdout);
        console_fputs_escaped(console_json_string(reply, "scope_backend"), stdout);
        putchar('\n');
        print_int(reply, "landlock abi", "landlock_abi");
        fputs("agent confinement: ", stdout);
        fputs(json_is_false(json_object_get(reply, "agent_confinement"))
                      ? "off (agents.require_confinement: false: agents can watch plugin runs)\n"
                      : "required\n",
              stdout);
        fputs("capabilities:", stdout);
        caps = json_object_get(reply, "capabilities");
        if (json_is_array(caps) && json_array_size(caps) > 0) {
                size_t i;
                json_t *cap;

                json_array_foreach(caps, i, cap) {
                        putchar(' ');
                        console_fputs_escaped(json_string_value(cap), stdout);
                }
        } else
                fputs(" (none)", stdout);
        putchar('\n');
        return fflush(stdout) == 0 ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
}
