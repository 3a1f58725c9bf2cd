/* lockctl approve, results and session end: the human's yes with typed values, the runs as the
 * human sees them, and the end of the human's input session. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

/*
 * Approves ticket id as `lockctl approve` does: shows every step, asks for confirmation on the
 * terminal unless yes, prompts there with echo off for each placeholder the input session does
 * not hold, seals each value to the ticket's key and calls Approve. Prints the resulting state,
 * or one line saying why not, and copies the state into ret_state (may be NULL). Returns an exit
 * code.
 */
int approve_ticket(const char *id, bool yes, char *ret_state, size_t state_size);

/*
 * Prints the message for an error of a ticket method (UnknownTicket, TicketNotPending,
 * MissingValue, ValueNotSealed, ResultsRefused), or console_print_error()'s for the others. Every
 * string from lockd is escaped. Returns the exit code.
 */
int approve_print_error(const char *what, const char *error, json_t *params);

int verb_approve(int argc, char **argv);
int verb_results(int argc, char **argv);
int verb_session(int argc, char **argv);
