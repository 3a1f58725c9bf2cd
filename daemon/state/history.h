/* The plugin history: per plugin name, the highest version ever installed and its meaning, kept
 * after a remove so that a reinstall is judged as an update (ARCHITECTURE.md, the install flow). */
#pragma once

#include "manifest.h"

#define HISTORY_DIR "plugin-history"

/*
 * Reads the history of name from statefd/plugin-history/<name>.toml: the manifest of the highest
 * version installed under that name. Returns 1 and a new Manifest in *ret; 0 when the name has no
 * history, *ret untouched; a negative errno when the record cannot be read or does not parse (a
 * damaged record refuses the install rather than forget the rule), *ret untouched.
 */
int history_load(int statefd, const char *name, Manifest **ret);

/*
 * Records the manifest text data (len bytes, the exact plugin.toml of m) as the history of
 * m->name when m's version is higher than the recorded one, or the name has none: written
 * atomically and the directory fsync()ed before this returns 0. A lower or equal version leaves
 * the record as it is (0). A negative errno when it cannot be written.
 */
int history_record(int statefd, const Manifest *m, const char *data, size_t len);
