/* Console methods that read files a console passed: the files are copied off the event loop
 * first (file-copy.h), and the method runs on the copies. */
#pragma once

#include <stdint.h>

#include "engine.h"
#include "varlink.h"

/*
 * Takes every fd of call, copies each regular readable file among them off the loop (at most
 * max_bytes each, within limits.file_read_timeout), gives the copies back to the call in their
 * places, and then runs then(call, params, m) as if the peer had sent the copies. The loop
 * serves everyone meanwhile; a peer that hangs up cancels the copy. Refusals: a deadline passed
 * (Unavailable, naming the timeout and the likely cause), a file over max_bytes (InvalidRequest
 * with too_big), a read error (InvalidRequest). A call without fds runs then() at once. Returns
 * what a method returns.
 */
int console_read_files_then(VarlinkCall *call, json_t *params, Manager *m, uint64_t max_bytes,
                            const char *too_big, VarlinkMethodFn then);
