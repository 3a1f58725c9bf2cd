/* Test tool: seals one value (read from stdin) to a ticket's public key, as lockctl approve does,
 * so tests can drive io.lockd.Console.Approve without a terminal. Prints the sealed text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec.h"
#include "seal.h"

int main(int argc, char **argv) {
        unsigned char pub[64];
        char value[SEAL_VALUE_MAX + 2], *text = NULL;
        size_t len = 0;
        ssize_t n;
        size_t l;
        int r;

        if (argc != 4) {
                fprintf(stderr, "usage: lockd-seal TICKET PLACEHOLDER SEAL_KEY_BASE64 <value\n");
                return 2;
        }
        if (base64_decode(argv[3], strlen(argv[3]), true, pub, sizeof(pub), &l) < 0 ||
            l != SEAL_KEY_SIZE) {
                fprintf(stderr, "lockd-seal: the key is not base64 of 32 bytes\n");
                return 2;
        }
        while (len < sizeof(value) &&
               (n = read(STDIN_FILENO, value + len, sizeof(value) - len)) > 0)
                len += (size_t)n;
        r = seal_value(pub, argv[1], argv[2], value, len, &text);
        if (r < 0) {
                fprintf(stderr, "lockd-seal: %s\n", strerror(-r));
                return 1;
        }
        printf("%s\n", text);
        free(text);
        return 0;
}
