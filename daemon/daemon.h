/* lockd's command line: run the daemon, or check a policy file and print the effective policy. */
#pragma once

/* What main() calls: parses argv, runs, returns the exit status. */
int lockd_main(int argc, char **argv);
