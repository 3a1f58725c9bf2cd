/* The capabilities the spawner keeps (caps-kept.c says why each), and their names. */
#pragma once

#include <stddef.h>
#include <sys/capability.h>

/* The capabilities lockd keeps, each for a reason written where the list is defined. */
extern const cap_value_t caps_kept[];
extern const size_t caps_n_kept;

/* The names of keep[] ("cap_setuid", ...) as a new NULL-terminated array, for Status and logs. */
char **caps_names(const cap_value_t *keep, size_t n);
void strv_free(char **v);
