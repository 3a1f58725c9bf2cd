/* What the engine learns of a connection's peer at accept (ARCHITECTURE.md, processes): whether
 * an agent runs in a unit that cannot watch runs, and which login session a console is in, both
 * asked of the manager through the spawner, since the engine cannot see other users' processes. */
#pragma once

#include "engine.h"
#include "sessions.h"
#include "varlink.h"

/*
 * Starts what the peer of c needs, by its role: an agent (when the policy requires confinement)
 * is held unread until the manager says it cannot watch runs, else closed; a console is held
 * until the manager named its unit, whose login session then keys its input session. 0, or a
 * negative errno: the agent is refused then; a console never is (peer_session() falls back).
 */
int peer_check_start(Manager *m, VarlinkConn *c, unsigned role);

/* The disconnect of c: what peer_check_start() kept goes. */
void peer_check_forget(VarlinkConn *c);

/*
 * The input session a console's call belongs to: the login session the manager put its peer's
 * unit in ("logind:<id>"), else what the kernel tells of its pid (sessions.h,
 * session_id_of_peer()).
 */
void peer_session(VarlinkCall *call, SessionId *ret);
