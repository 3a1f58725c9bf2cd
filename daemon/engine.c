/* The engine's state (engine.h): what its parts ask of it beyond its fields. */
#include "engine.h"
#include "policy.h"

bool manager_allow_unsigned(const Manager *m) {
        return m->policy->allow_unsigned;
}
