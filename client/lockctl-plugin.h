/* lockctl plugin: the verbs on a plugin's source directory (lint, test, new) and what they share.
 */
#pragma once

#include <stdio.h>

#include "manifest.h"

/*
 * Reads and validates DIR/plugin.toml (dirfd is DIR, dir its name for messages). A manifest error
 * goes to diag_out as "error: CODE: message (line:col)" and returns err_exit; an unreadable file
 * goes to stderr and returns LOCKCTL_EXIT_USAGE. 0 with the manifest in *ret.
 */
int plugin_load_manifest(int dirfd, const char *dir, Manifest **ret, FILE *diag_out, int err_exit);

int verb_plugin_lint(int argc, char **argv);
int verb_plugin_test(int argc, char **argv);
int verb_plugin_new(int argc, char **argv);
