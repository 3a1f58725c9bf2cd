/* The typed values of a ticket as every approval surface names them: by the plugin's own input
 * and question, the agent's placeholder name only quoted as the agent's wording
 * (ARCHITECTURE.md, the human's side). */
#pragma once

#include <jansson.h>
#include <stdbool.h>

/* What the human is told about one value to type. Every string is escaped printable ASCII. */
typedef struct ValueLabel {
        /* One line, the prompt: the plugin's input, its kind and its max bytes, such as
         * "needle (text, at most 256 bytes)". */
        char *prompt;
        /* Lines ending in '\n': each step that uses the value (its plugin and question, the
         * input), then the agent's placeholder name, quoted and marked as the agent's. */
        char *about;
} ValueLabel;

/*
 * The installed plugins as ListPlugins gives them (a new reference), for value_label_make()'s
 * kinds and sizes; NULL when lockd cannot be asked (the labels then say the kind is unknown).
 * Prints nothing.
 */
json_t *values_plugins(void);

/*
 * Fills *ret for placeholder of ticket t (a GetTicket ticket), from the steps that bind it and
 * plugins (may be NULL). Nothing from lockd is trusted: every string is escaped, and the counts
 * are capped. 0, or -ENOMEM.
 */
int value_label_make(const json_t *t, const json_t *plugins, const char *placeholder,
                     ValueLabel *ret);

/*
 * The ticket t in a few lines for a dialog or a notification: for each step (at most
 * PLAN_STEPS_MAX) the agent's uid, the plugin's question, what 1 and 0 mean when full, and the
 * file's label (else its handle), every string escaped. *ret a new string, or -ENOMEM.
 */
int ticket_summary(const json_t *t, bool full, char **ret);

/* Frees the label's strings. */
void value_label_done(ValueLabel *l);
