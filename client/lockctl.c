/* lockctl: the human's command-line tool for lockd. main() only dispatches to the verbs. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "lockctl-approve.h"
#include "lockctl-console.h"
#include "lockctl-notify.h"
#include "lockctl-tui.h"
#include "lockctl-verify.h"
#include "lockctl.h"
#include "macro.h"

static const char usage_text[] =
        "usage: lockctl [--socket PATH] [--json] COMMAND ...\n"
        "\n"
        "  plugin new NAME --lang c|go [--protocol 1|2] [--dir DIR] [--sdk DIR]\n"
        "                      write a plugin that builds, lints and passes its fixtures\n"
        "                      into DIR (default NAME); --sdk: the Go SDK to use\n"
        "  plugin test DIR FIXTURE [--input NAME=VALUE]... [--inputs FILE] [--expect 1|0]\n"
        "                [--plugin FILE] [--scope] [--stderr]\n"
        "                      run the plugin in DIR on FIXTURE under lockd's sandbox\n"
        "  plugin test DIR --fixtures [--plugin FILE] [--scope] [--stderr]\n"
        "                      run DIR/fixtures/one (each must answer 1) and fixtures/zero;\n"
        "                      --stderr shows the plugin's stderr (lockd discards it)\n"
        "  plugin lint DIR     check DIR/plugin.toml against the contract, and DIR/plugin's\n"
        "                      writable segments against its memory\n"
        "  plugin lint --source SRC_DIR [RELEASE_DIR]\n"
        "                      the import check: Go imports outside the allow-list, or C\n"
        "                      functions of the deny-list in the binary\n"
        "  plugin install DIR [--marketplace NAME [--index DIR]] [--accept-name NAME]\n"
        "                      install a plugin release into the running lockd\n"
        "  plugin install NAME[@VERSION] [--marketplace NAME] [--cacert FILE]\n"
        "                      install by name from a marketplace's URL\n"
        "  plugin search [WORD] [--marketplace NAME] [--cacert FILE]\n"
        "                      what the marketplaces with a URL offer\n"
        "  plugin update [NAME...] [--cacert FILE] [--accept-name NAME]\n"
        "                      install the newer releases of installed plugins\n"
        "  plugin sync FILE [--cacert FILE]\n"
        "                      make the installed plugins exactly FILE's pinned list\n"
        "  plugin list         the plugins installed in lockd\n"
        "  plugin remove NAME [--version VERSION]\n"
        "  plugin run NAME FILE [--input NAME[=VALUE]]...\n"
        "                      run an installed plugin on FILE in lockd\n"
        "  marketplace lint --identity PATTERN\n"
        "                      warn about an identity pattern that matches too much\n"
        "  marketplace add NAME [--url URL] --issuer URL --identity PATTERN --trusted-root FILE\n"
        "                [--force]\n"
        "                      add a marketplace to lockd\n"
        "  marketplace list    lockd's marketplaces\n"
        "  marketplace remove NAME\n"
        "  grant FILE --agent USER [--label LABEL] [--budget N] [--ttl DURATION]\n"
        "                [--auto]\n"
        "                      grant a snapshot of FILE to an agent; prints the handle\n"
        "  revoke HANDLE       take a granted handle away\n"
        "  handles             the handles granted, with their agent, budget and expiry\n"
        "  budget show [HANDLE|SHA256]\n"
        "                      the answers kept per file content, and its handles\n"
        "  budget reset HANDLE|SHA256 [--yes]\n"
        "                      drop a content's answers, so agents may ask anew\n"
        "  tickets             the agents' tickets: each step's plugin, question and handle\n"
        "  deny TICKET         deny a pending ticket\n"
        "  approve TICKET [--yes] [--pinentry[=PROGRAM]]\n"
        "                      show a pending ticket, ask for its values on the terminal\n"
        "                      (not echoed) or in pinentry, and approve it\n"
        "  results TICKET      a ticket's outcomes, causes and detail (security level 3)\n"
        "  session end         wipe the values this input session holds\n"
        "  console [--pinentry[=PROGRAM]]\n"
        "                      an interactive view of the tickets as they come\n"
        "  notify [--pinentry[=PROGRAM] | --terminal COMMAND]\n"
        "                      a desktop notification per ticket waiting for approval\n"
        "                      (the user service lockctl-notify.service runs it)\n"
        "  status              the running lockd at a glance\n"
        "  agent run --user USER [--property NAME=VALUE]... [--] COMMAND [ARG]...\n"
        "                      start an agent confined so that it cannot watch plugin runs\n"
        "                      (the way lockd accepts agents); exits with its status\n"
        "  audit verify [--state-dir DIR | FILE]\n"
        "                      check the hash chain of lockd's audit log\n"
        "  audit verify --journal PATH... [--state-dir DIR] [--match FIELD=VALUE]\n"
        "                      check every host's chain in a collector's journal files\n"
        "  release verify DIR --trusted-root FILE --issuer URL --identity PATTERN\n"
        "                [--index DIR]\n"
        "                      verify a signed release directory as install would\n"
        "  verify-bundle --bundle FILE (--certificate-identity ID\n"
        "                --certificate-oidc-issuer URL | --key PEM) [--trusted-root FILE]\n"
        "                FILE_OR_DIGEST\n"
        "                      verify a Sigstore bundle offline (sigstore-conformance CLI)\n"
        "  --version           print the version\n"
        "\n"
        "Commands that talk to lockd use --socket PATH, else $LOCKD_CONSOLE_SOCKET, else\n"
        "/run/lockd/console.sock. Every command that prints or changes something takes\n"
        "--json, before or after its name; every command takes -h/--help.\n";

static void usage(FILE *f) {
        fputs(usage_text, f);
}

/*
 * Prints the usage of the command named by words (the verb, and its subcommand when words[1] is
 * one): the lines of usage_text that start with them, with their continuation lines. Returns
 * whether any matched.
 */
static bool usage_of(FILE *f, const char *verb, const char *sub) {
        const char *line = usage_text;
        bool in = false, any = false;

        while (*line) {
                const char *nl = strchr(line, '\n');
                size_t len = nl ? (size_t)(nl - line) : strlen(line);

                /* A command's line starts with two spaces and a letter; more spaces continue it. */
                if (len > 2 && line[0] == ' ' && line[1] == ' ' && line[2] != ' ' &&
                    line[2] != '-') {
                        size_t vl = strlen(verb), sl = sub ? strlen(sub) : 0;

                        in = len >= 2 + vl && strncmp(line + 2, verb, vl) == 0 &&
                             (line[2 + vl] == ' ' || 2 + vl == len);
                        if (in && sub)
                                in = len >= 3 + vl + sl && strncmp(line + 3 + vl, sub, sl) == 0 &&
                                     (line[3 + vl + sl] == ' ' || 3 + vl + sl == len);
                } else if (len <= 2 || line[2] != ' ')
                        in = false;
                if (in) {
                        if (!any)
                                fputs("usage: lockctl [--socket PATH] [--json]\n", f);
                        fprintf(f, "%.*s\n", (int)len, line);
                        any = true;
                }
                line += len + (nl ? 1 : 0);
        }
        return any;
}

/* -h or --help among a command's own arguments (before a "--"): its usage, exit 0. */
static bool wants_help(int argc, char **argv) {
        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--") == 0)
                        return false;
                if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
                        return true;
        }
        return false;
}

int main(int argc, char **argv) {
        char *args[256];
        int r = console_parse_global_options(&argc, &argv);

        if (r != 0)
                return r;
        if (argc < 2) {
                usage(stderr);
                return LOCKCTL_EXIT_USAGE;
        }
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
            strcmp(argv[1], "help") == 0) {
                if (argc >= 3 && strcmp(argv[1], "help") == 0 &&
                    usage_of(stdout, argv[2], argc >= 4 ? argv[3] : NULL))
                        return LOCKCTL_EXIT_OK;
                usage(stdout);
                return LOCKCTL_EXIT_OK;
        }
        if (wants_help(argc - 2, argv + 2)) {
                const char *sub = argc >= 3 && argv[2][0] != '-' ? argv[2] : NULL;

                if (usage_of(stdout, argv[1], sub) || usage_of(stdout, argv[1], NULL))
                        return LOCKCTL_EXIT_OK;
                fprintf(stderr, "lockctl: unknown command '%s'\n", argv[1]);
                usage(stderr);
                return LOCKCTL_EXIT_USAGE;
        }
        /* --json before the verb: the verb parses it among its own options. "agent run" passes
         * what follows its "--" to the agent, and prints nothing of its own to make JSON of. */
        if (console_json_global() && strcmp(argv[1], "agent") != 0 &&
            strcmp(argv[1], "console") != 0 && strcmp(argv[1], "notify") != 0) {
                if ((size_t)argc + 2 > ELEMENTSOF(args)) {
                        fprintf(stderr, "lockctl: too many arguments\n");
                        return LOCKCTL_EXIT_USAGE;
                }
                memcpy(args, argv, sizeof(char *) * (size_t)argc);
                args[argc++] = (char *)"--json";
                args[argc] = NULL;
                argv = args;
        }
        if (strcmp(argv[1], "--version") == 0) {
                printf("lockctl %s\n", LOCKD_VERSION);
                return LOCKCTL_EXIT_OK;
        }
        if (strcmp(argv[1], "status") == 0)
                return verb_status(argc - 2, argv + 2);
        if (strcmp(argv[1], "grant") == 0)
                return verb_grant(argc - 2, argv + 2);
        if (strcmp(argv[1], "revoke") == 0)
                return verb_revoke(argc - 2, argv + 2);
        if (strcmp(argv[1], "handles") == 0)
                return verb_handles(argc - 2, argv + 2);
        if (strcmp(argv[1], "budget") == 0)
                return verb_budget(argc - 2, argv + 2);
        if (strcmp(argv[1], "tickets") == 0)
                return verb_tickets(argc - 2, argv + 2);
        if (strcmp(argv[1], "deny") == 0)
                return verb_deny(argc - 2, argv + 2);
        if (strcmp(argv[1], "approve") == 0)
                return verb_approve(argc - 2, argv + 2);
        if (strcmp(argv[1], "results") == 0)
                return verb_results(argc - 2, argv + 2);
        if (strcmp(argv[1], "session") == 0)
                return verb_session(argc - 2, argv + 2);
        if (strcmp(argv[1], "console") == 0)
                return verb_console(argc - 2, argv + 2);
        if (strcmp(argv[1], "notify") == 0)
                return verb_notify(argc - 2, argv + 2);
        if (strcmp(argv[1], "audit") == 0)
                return verb_audit(argc - 2, argv + 2);
        if (strcmp(argv[1], "plugin") == 0)
                return verb_plugin(argc - 2, argv + 2);
        if (strcmp(argv[1], "agent") == 0)
                return verb_agent(argc - 2, argv + 2);
        if (strcmp(argv[1], "marketplace") == 0)
                return verb_marketplace(argc - 2, argv + 2);
        if (strcmp(argv[1], "release") == 0)
                return verb_release(argc - 2, argv + 2);
        if (strcmp(argv[1], "verify-bundle") == 0)
                return verb_verify_bundle(argc - 1, argv + 1);
        fprintf(stderr, "lockctl: unknown command '%s'\n", argv[1]);
        usage(stderr);
        return LOCKCTL_EXIT_USAGE;
}
