/* lockd's root process, the spawner, from its command line to its exit status. */
#pragma once

/* `lockd [--config FILE] [--engine PATH]`, `lockd --check-config [FILE]`: 0, 1 or 2 (usage). */
int spawner_run(int argc, char **argv);
