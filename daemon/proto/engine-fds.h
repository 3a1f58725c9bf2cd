/* The fds and environment the engine finds at its exec: the contract between engine_launch() in
 * the spawner and the engine's main (ARCHITECTURE.md, two processes). */
#pragma once

/* The fds the engine finds: the sockets as systemd would pass them, then the channel. */
#define ENGINE_LISTEN_FDS_START 3
#define ENGINE_LISTEN_FDS       2 /* agent, console */
#define ENGINE_CHANNEL_FD       (ENGINE_LISTEN_FDS_START + ENGINE_LISTEN_FDS)
#define ENGINE_CHANNEL_ENV      "LOCKD_SPAWNER_FD"
/* The log's fd, when the spawner gives one (its own stderr, never a terminal). */
#define ENGINE_LOG_FD  (ENGINE_CHANNEL_FD + 1)
#define ENGINE_LOG_ENV "LOCKD_LOG_FD"
