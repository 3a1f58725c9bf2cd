/* The Varlink interfaces lockd serves: io.lockd.Console and io.lockd.Agent. */
#pragma once

#include "manager.h"

/* Assembles both interfaces' method tables and adds them to m->varlink. 0 or a negative errno. */
int console_register(Manager *m);
