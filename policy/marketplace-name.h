/* The marketplace name rule, one for lockd.yaml, the engine's marketplaces, lockctl and lockd-sign:
 * [a-z0-9][a-z0-9-]{0,63}. */
#pragma once

#include <stdbool.h>

#define MARKETPLACE_NAME_MAX 64

/* Whether name is a marketplace name: 1 to MARKETPLACE_NAME_MAX bytes of [a-z0-9-], not starting
 * with '-'. False for NULL. Pure. */
bool marketplace_name_valid(const char *name);
