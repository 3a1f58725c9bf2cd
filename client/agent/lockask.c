/* lockask's main(): global options, then the verb (lockask(1)). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "lockask.h"

static const char usage_text[] =
        "usage: lockask [--socket PATH] [--json] COMMAND [ARGS]\n"
        "\n"
        "The agent's command line for lockd: ask a reviewed plugin's fixed yes/no question about\n"
        "a file a human granted you, without reading it. It can never approve anything.\n"
        "\n"
        "commands:\n"
        "  files                     the files granted to you: handle, label, budget, expiry\n"
        "  questions                 the plugins: name, version, question, answers, inputs\n"
        "  ask HANDLE PLUGIN [--input NAME='${placeholder}']... [--no-wait] [--timeout D]\n"
        "  ask --plan FILE [--no-wait] [--timeout D]\n"
        "                            asks; prints 1, 0 or the outcome's error code per step\n"
        "  wait TICKET [--timeout D] waits for a ticket's outcomes\n"
        "  cancel TICKET             takes back a pending ticket\n"
        "  mcp                       a Model Context Protocol server on stdin/stdout\n"
        "\n"
        "options:\n"
        "  --socket PATH  the agent socket (default " LOCKD_AGENT_SOCKET ")\n"
        "  --json         machine-readable output\n"
        "  -h, --help     this text; COMMAND --help for a command's\n"
        "\n"
        "exit status: 0 answered (1 or 0), 1 an outcome without an answer, 2 refused or a usage\n"
        "error, 3 lockd could not be reached. See lockask(1).\n";

int main(int argc, char **argv) {
        static const struct option options[] = {
                {"socket", required_argument, NULL, 's'},
                {"json", no_argument, NULL, 'j'},
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, 'V'},
                {},
        };
        static const struct {
                const char *name;
                int (*fn)(const LockaskOptions *o, int argc, char **argv);
        } verbs[] = {
                {"files", lockask_files}, {"questions", lockask_questions}, {"ask", lockask_ask},
                {"wait", lockask_wait},   {"cancel", lockask_cancel},       {"mcp", lockask_mcp},
        };
        LockaskOptions o = {.socket = LOCKD_AGENT_SOCKET};
        int c;

        /* Options before the verb only ("+"): the verb parses its own, these included. */
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case 's':
                        o.socket = optarg;
                        break;
                case 'j':
                        o.json = true;
                        break;
                case 'h':
                        fputs(usage_text, stdout);
                        return LOCKASK_EXIT_ANSWER;
                case 'V':
                        printf("lockask %s\n", LOCKD_VERSION);
                        return LOCKASK_EXIT_ANSWER;
                default:
                        fputs(usage_text, stderr);
                        return LOCKASK_EXIT_REFUSED;
                }
        if (optind >= argc) {
                fputs(usage_text, stderr);
                return LOCKASK_EXIT_REFUSED;
        }
        if (strcmp(argv[optind], "help") == 0) {
                fputs(usage_text, stdout);
                return LOCKASK_EXIT_ANSWER;
        }
        for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
                if (strcmp(argv[optind], verbs[i].name) == 0) {
                        int n = argc - optind;

                        optind = 0; /* the verb's getopt starts afresh */
                        return verbs[i].fn(&o, n, argv + (argc - n));
                }
        fprintf(stderr, "lockask: unknown command '%s' (lockask --help lists them)\n",
                argv[optind]);
        return LOCKASK_EXIT_REFUSED;
}
