/* lockctl's verbs, each a function taking the arguments after its name. */
#pragma once

/* Exit codes every verb shares. */
#define LOCKCTL_EXIT_OK    0
#define LOCKCTL_EXIT_FAIL  1 /* plugin_error, lint error, verification refused */
#define LOCKCTL_EXIT_USAGE 2 /* bad arguments, unreadable or invalid manifest */

int verb_plugin(int argc, char **argv);
int verb_agent(int argc, char **argv);
int verb_release(int argc, char **argv);
int verb_marketplace(int argc, char **argv);
int verb_audit(int argc, char **argv);
int verb_grant(int argc, char **argv);
int verb_revoke(int argc, char **argv);
int verb_handles(int argc, char **argv);
int verb_tickets(int argc, char **argv);
int verb_deny(int argc, char **argv);
int verb_budget(int argc, char **argv);
