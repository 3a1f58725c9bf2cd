/* lockctl approve, results and session end: the human's yes with typed values, the runs as the
 * human sees them, and the end of the human's input session. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

/* How an approval asks the human. */
typedef struct ApproveOptions {
        bool yes;             /* no confirmation asked: --yes */
        const char *pinentry; /* the pinentry program to ask with, NULL for the terminal */
} ApproveOptions;

/*
 * Approves ticket id as `lockctl approve` does: shows every step, asks for confirmation unless
 * o->yes, asks for each placeholder the input session does not hold (each labelled by the
 * plugin's input and question, the agent's name for it only quoted), seals each value to the
 * ticket's key and calls Approve. It asks on the terminal (echo off for values), or with
 * o->pinentry: CONFIRM for the yes (its Cancel denies the ticket) and GETPIN per value (its
 * Cancel leaves the ticket pending). Prints the resulting state, or one line saying why not, and
 * copies the state into ret_state (may be NULL). Returns an exit code.
 */
int approve_ticket(const char *id, const ApproveOptions *o, char *ret_state, size_t state_size);

/*
 * Prints the message for an error of a ticket method (UnknownTicket, TicketNotPending,
 * MissingValue, ValueNotSealed, ResultsRefused), or console_print_error()'s for the others. Every
 * string from lockd is escaped. Returns the exit code.
 */
int approve_print_error(const char *what, const char *error, json_t *params);

int verb_approve(int argc, char **argv);
int verb_results(int argc, char **argv);
int verb_session(int argc, char **argv);
