/* lockctl's side of lockd's paged listings: every page of a console listing fetched and joined. */
#pragma once

#include <jansson.h>

#include "varlink.h"

/* The pages lockctl reads of one listing at most: 4096 of them of up to 256 items each hold
 * more than lockd keeps of anything. */
#define CONSOLE_PAGES_MAX 4096

/*
 * Calls method (a paged io.lockd.Console listing: cursor, limit, next) with params (borrowed,
 * NULL for none) on one connection until the last page, and joins the pages' arrays under key
 * into one answer {key: [...]}: the listing as an unpaged call would have given it. Errors are
 * printed as console_call() prints them. 0 with *ret_params, or an exit code, *ret_params
 * untouched.
 */
int console_call_all_pages(const char *what, const char *method, json_t *params, const char *key,
                           json_t **ret_params);

/*
 * The same on an open connection, printing nothing: 0 with *ret_params (the joined listing) or
 * with *ret_error (an error answer's name; *ret_params its parameters), or a negative errno when
 * the transport failed or an answer was malformed.
 */
int console_all_pages_raw(VarlinkClient *c, const char *method, json_t *params, const char *key,
                          json_t **ret_params, char **ret_error);

/* Tickets lockctl console loads at its start: every pending one (ListTickets lists them first)
 * and the newest others up to this many in all; later ones arrive by WatchTickets. */
#define CONSOLE_TICKETS_LOAD 512

/*
 * The first tickets of ListTickets on c, page after page until max of them (at least every
 * pending one, which come first) or the last page, as one array sorted by submit time, oldest
 * first (the console's order). 0 with *ret_tickets, or with *ret_error and *ret_params as
 * console_all_pages_raw(); a negative errno when the transport failed.
 */
int console_tickets_load(VarlinkClient *c, size_t max, json_t **ret_tickets, char **ret_error,
                         json_t **ret_params);

/* The installed plugins (ListPlugins, every page): a new reference, or NULL after printing why
 * ("lockctl: WHAT failed: ..."). */
json_t *console_installed_plugins(VarlinkClient *c, const char *what);
/* The entry of name in plugins (ListPlugins' array), borrowed, or NULL. */
json_t *console_plugin_find(json_t *plugins, const char *name);
