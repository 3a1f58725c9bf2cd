/* A verification helper that misbehaves in the way argv[1] names, for test-verifier: lockd must
 * fail closed on each (the real helper is lockd-verify). */
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "fd-util.h"
#include "verifier.h"

int main(int argc, char **argv) {
        const char *mode = argc > 1 ? argv[1] : "";
        VerifierRequest req = {};
        VerifierReply reply = {.magic = VERIFIER_MAGIC, .version = VERIFIER_VERSION};
        uint8_t junk[sizeof(reply) + 64];

        (void)setrlimit(RLIMIT_CORE, &(struct rlimit){0, 0});
        /* A short or failed read leaves the request zero: a reply of kind 0, still bad. */
        if (pread(VERIFIER_FD_REQUEST, &req, sizeof(req), 0) != (ssize_t)sizeof(req))
                req = (VerifierRequest){};
        /* A well-formed success for the request's kind, over bytes nobody sent (zero digests). */
        reply.kind = req.kind;
        strcpy(reply.san, "https://github.com/acme/lockfile-plugins/.github/workflows/"
                          "release.yml@refs/tags/x/v1.0.0");
        strcpy(reply.source_ref, "refs/tags/x/v1.0.0");

        if (strcmp(mode, "exit1") == 0)
                return 1;
        if (strcmp(mode, "crash") == 0) {
                raise(SIGSEGV);
                return 0;
        }
        if (strcmp(mode, "hang") == 0) {
                for (;;)
                        pause();
        }
        if (strcmp(mode, "garbage") == 0) {
                for (size_t i = 0; i < sizeof(reply); i++)
                        junk[i] = (uint8_t)(i * 131 + 7);
                return loop_write(VERIFIER_FD_REPLY, junk, sizeof(reply)) < 0;
        }
        if (strcmp(mode, "short") == 0)
                return loop_write(VERIFIER_FD_REPLY, &reply, sizeof(reply) / 2) < 0;
        if (strcmp(mode, "too-much") == 0) {
                memset(junk, 0, sizeof(junk));
                memcpy(junk, &reply, sizeof(reply));
                return loop_write(VERIFIER_FD_REPLY, junk, sizeof(junk)) < 0;
        }
        if (strcmp(mode, "lie") == 0)
                return loop_write(VERIFIER_FD_REPLY, &reply, sizeof(reply)) < 0;
        if (strcmp(mode, "lie-then-exit1") == 0) {
                (void)loop_write(VERIFIER_FD_REPLY, &reply, sizeof(reply));
                return 1;
        }
        if (strcmp(mode, "unterminated") == 0) {
                memset(reply.message, 'A', sizeof(reply.message));
                return loop_write(VERIFIER_FD_REPLY, &reply, sizeof(reply)) < 0;
        }
        return 2;
}
