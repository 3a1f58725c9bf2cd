/* An agent in C on liblockd-agent (pkg-config lockd-agent): asks one plugin's question about one
 * granted file and prints 1, 0 or the outcome's error code, like `lockask ask HANDLE PLUGIN`.
 * Build it outside this tree with: cc ask-one.c $(pkg-config --cflags --libs lockd-agent) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lockd-agent.h>

int main(int argc, char **argv) {
        LockdAgentError err = {.step = -1};
        LockdTicket t = {0};
        LockdAgent *a = NULL;
        char *ticket = NULL;
        int r;

        if (argc != 4) {
                fprintf(stderr, "usage: %s SOCKET HANDLE PLUGIN\n", argv[0]);
                return 2;
        }
        LockdStep step = {.plugin = argv[3], .handle = argv[2]};

        r = lockd_agent_connect(argv[1], &a);
        if (r >= 0)
                r = lockd_agent_submit(a, &step, 1, &ticket, NULL, &err);
        if (r >= 0)
                r = lockd_agent_wait(a, ticket, 0, 0, NULL, NULL, &t, &err);
        lockd_agent_free(a);
        free(ticket);
        if (r < 0) {
                int refused = err.name != NULL;

                if (refused)
                        fprintf(stderr, "refused: %s: %s\n", err.code,
                                lockd_agent_explain(err.code));
                else
                        fprintf(stderr, "lockd: %s\n", strerror(-r));
                lockd_agent_error_clear(&err);
                return refused ? 2 : 3;
        }
        if (t.outcomes[0].result >= 0)
                printf("%d\n", t.outcomes[0].result);
        else
                printf("%s\n", t.outcomes[0].error);
        r = t.outcomes[0].result >= 0 ? 0 : 1;
        lockd_ticket_clear(&t);
        return r;
}
