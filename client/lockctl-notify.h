/* lockctl notify: the human's desktop notifications of tickets that wait for an approval
 * (ARCHITECTURE.md, the human's side). */
#pragma once

/* notify [--pinentry[=PROGRAM] | --terminal COMMAND]: runs until lockd ends the watch. Returns
 * an exit code. */
int verb_notify(int argc, char **argv);
