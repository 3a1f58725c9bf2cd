/* lockask: the agent's command line for lockd (lockask(1)). Each verb is a function taking the
 * arguments after its name; they share the options and the exit codes below. */
#pragma once

#include <stdbool.h>

#include "lockd-agent.h"

/* Exit codes, as lockask(1) documents them. */
#define LOCKASK_EXIT_ANSWER      0 /* every step answered 1 or 0; or a command that did its work */
#define LOCKASK_EXIT_NO_ANSWER   1 /* an outcome without an answer (plugin_error, denied, ...) */
#define LOCKASK_EXIT_REFUSED     2 /* lockd refused the request, or a usage error */
#define LOCKASK_EXIT_UNREACHABLE 3 /* lockd could not be reached */

typedef struct LockaskOptions {
        const char *socket; /* the agent socket */
        bool json;          /* machine-readable output */
} LockaskOptions;

int lockask_files(const LockaskOptions *o, int argc, char **argv);
int lockask_questions(const LockaskOptions *o, int argc, char **argv);
int lockask_ask(const LockaskOptions *o, int argc, char **argv);
int lockask_wait(const LockaskOptions *o, int argc, char **argv);
int lockask_cancel(const LockaskOptions *o, int argc, char **argv);
int lockask_mcp(const LockaskOptions *o, int argc, char **argv);

/* The exit code and the message on stderr for r, a failed lockd_agent_*() call. */
int lockask_fail(const LockaskOptions *o, const char *what, int r, const LockdAgentError *e);
/* Parses a duration: digits with an optional unit ms, s, m or h (seconds without one), up to a
 * day. 0 with *ret in microseconds, or -EINVAL. */
int lockask_parse_duration(const char *s, unsigned long long *ret);
