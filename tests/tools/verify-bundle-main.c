/* A stand-alone "verify-bundle" for tests and the sigstore-conformance runner: PROG verify-bundle
 * ARGS. */
#include <stdio.h>
#include <string.h>

#include "lockctl-verify.h"

int main(int argc, char **argv) {
        if (argc < 2 || strcmp(argv[1], "verify-bundle") != 0) {
                fprintf(stderr, "usage: %s verify-bundle ARGS...\n", argv[0]);
                return 1;
        }
        return verb_verify_bundle(argc - 1, argv + 1);
}
