/* The import check of the contract's Publishing section: which packages a Go plugin may import
 * and which C library functions a C plugin's binary may reference (no I/O). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The SDK's package, importable by every plugin (its sdktest package by tests only). */
#define GO_SDK_PACKAGE "lockd/sdk"

/*
 * Whether a module path may be a plugin's own: one whose first element names a standard library
 * directory (net, os, ...) is refused, since the go command resolves such an import to the
 * standard library before the module (module "net" would pass import "net" off as its own). 0 or
 * -EINVAL.
 */
int go_module_path_check(const char *module);

/*
 * Whether a file of module (checked by go_module_path_check()) that is built into the plugin may
 * import path: the standard library packages of the allow-list (import-check.c says why each
 * is there and why the others are not), the module's own packages, and the SDK's package. Test
 * files are not built into the plugin and are not checked.
 */
bool go_import_allowed(const char *module, const char *path);

/* The deny-list's functions, in the order findings are reported; n in *ret_n. */
const char *const *c_symbols_denied(size_t *ret_n);

/*
 * The index of name in c_symbols_denied(), or -1. no_relocations: the name comes from the symbol
 * table of a binary without relocations, where the static C library's own objects cannot be
 * told from the plugin's: the names every static glibc binary defines are not refused then.
 */
int c_symbol_denied(const char *name, bool no_relocations);
