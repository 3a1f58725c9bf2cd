/* lockask's JSON forms of what lockd told it (lockask-json.c): the one serialization `lockask
 * --json` and the MCP tools both print. */
#pragma once

#include <jansson.h>

#include "lockd-agent.h"

/* {"files": [{"handle", "label", "budget_left", "expires_usec"}]}; NULL when out of memory. */
json_t *lockask_files_json(const LockdFile *f, size_t n);
/* A plugin's "accepts" (strings) and "inputs" ([{"name", "kind", "max_bytes"}]); NULL when out of
 * memory. */
json_t *lockask_accepts_json(const LockdQuestion *q);
json_t *lockask_inputs_json(const LockdQuestion *q);
/* A ticket's outcomes: [{"step", "result" (1, 0 or null), "error" (or null)}]; NULL when out of
 * memory. */
json_t *lockask_outcomes_json(const LockdTicket *t);
