/* The engine's life: its state (engine.h) brought up in order, the event loop with its signals,
 * the stop and the teardown. Called by lockd-engine's main (daemon.c) only. */
#pragma once

#include <stddef.h>

#include "engine.h"
#include "roles.h"

/*
 * Reads and parses the policy at path (NULL: the compiled-in default). 0 or a negative errno
 * with a one-line reason ("path:line:col: E_POLICY_...: message") in why.
 */
int manager_load_policy(const char *path, Policy **ret, char *why, size_t why_len);

/* Loads the policy; nothing else yet. Logs why it failed. */
int manager_new(const char *policy_path, Manager **ret);
/* Brings everything up in order and tells systemd READY=1. Logs why it failed. */
int manager_start(Manager *m);
/* Runs the loop until a stop finished. */
int manager_loop(Manager *m);
/* SIGHUP: a new policy replaces the old only when it parses and its roles resolve. */
int manager_reload(Manager *m);
/* SIGTERM: closes the sockets, kills the runs in flight, leaves the loop once they ended. */
void manager_stop(Manager *m);

Manager *manager_free(Manager *m);
static inline void manager_freep(Manager **m) {
        if (*m)
                manager_free(*m);
}
