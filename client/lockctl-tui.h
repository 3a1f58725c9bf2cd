/* lockctl console: the interactive full-screen view of the agents' tickets. */
#pragma once

/* console: lists the tickets live; keys approve, deny and show results. Returns an exit code. */
int verb_console(int argc, char **argv);
