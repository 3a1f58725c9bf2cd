/* libFuzzer target: lockask mcp's line handler (JSON-RPC framing, the lifecycle, tools/list,
 * tools/call and its arguments, cancellations) on arbitrary lines. Tools talk to a socket that
 * does not exist, so every call ends fast as a tool error; after each input the calls are drained.
 * Never a crash, leak, overread or a call left running. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockask-mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static FILE *sink;
        bool initialized = false;
        size_t start = 0;

        if (!sink) {
                sink = fopen("/dev/null", "we");
                if (!sink)
                        abort();
                mcp_server_init("/nonexistent/lockd-fuzz.sock", sink);
        }
        /* One message per line, each an exact-size copy so ASan sees any read past its end. */
        for (size_t i = 0; i <= size; i++) {
                if (i < size && data[i] != '\n')
                        continue;
                if (i > start) {
                        char *line = malloc(i - start);

                        if (!line)
                                abort();
                        memcpy(line, data + start, i - start);
                        mcp_handle_line(line, i - start, &initialized);
                        free(line);
                }
                start = i + 1;
        }
        mcp_drain();
        return 0;
}
