/* The agent's frequent answers (Submit's and Wait's) as fixed-format JSON text. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "plan.h"
#include "restart.h"
#include "tickets.h"
#include "varlink.h"

/* Room for the longest text with its NUL: {"state":"cancelled","outcomes":[...]} with
 * PLAN_STEPS_MAX outcomes of {"step":15,"result":null,"error":"<a word of 48 bytes>"}. */
#define AGENT_REPLY_TEXT_MAX (64 + PLAN_STEPS_MAX * 96)

/*
 * The texts of the answers' parameters, pure: the bytes json_dumps(JSON_COMPACT) makes of the same
 * objects, keys in the same order, written into buf with a NUL. The length without it, or -EINVAL
 * for a word that would need an escape (a bug elsewhere: nothing is written to the wire then),
 * -E2BIG past the room (never, by AGENT_REPLY_TEXT_MAX).
 */
/* Submit's: {"ticket":ID,"state":STATE}. */
ssize_t agent_reply_submit_text(const Ticket *t, char buf[static AGENT_REPLY_TEXT_MAX]);
/* Wait's: {"state":STATE,"outcomes":[{"step":N,"result":R,"error":E},...]}, each step's outcome
 * set so far, its result in clear (the agent asked the question). */
ssize_t agent_reply_wait_text(const Ticket *t, char buf[static AGENT_REPLY_TEXT_MAX]);
/* Wait's for a ticket open when the last lockd stopped: expired, every step too. */
ssize_t agent_reply_wait_restart_text(const RestartTicket *rt,
                                      char buf[static AGENT_REPLY_TEXT_MAX]);

/* Those texts as the answer of call (varlink_call_reply_text()); continues as for
 * varlink_call_reply(). 0 or a negative errno. */
int agent_reply_submit(VarlinkCall *call, const Ticket *t);
int agent_reply_wait(VarlinkCall *call, const Ticket *t, bool continues);
int agent_reply_wait_restart(VarlinkCall *call, const RestartTicket *rt);
