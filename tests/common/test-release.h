/* Signed plugin releases for the tests: a manifest and a binary signed by tests/tools/lockd-sign.
 */
#pragma once

#include <check.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* The identity lockd-sign's test CA certifies, and the marketplace pattern that admits it. */
#define ISSUER   "https://token.actions.githubusercontent.com"
#define WORKFLOW "https://github.com/acme/lockfile-plugins/.github/workflows/release.yml@"
#define PATTERN                                                                                    \
        "^https://github\\.com/acme/lockfile-plugins/\\.github/workflows/release\\.yml@refs/tags/" \
        ".*"

/* Runs the shell command fmt makes; fails the test unless it exits 0. */
__attribute__((format(printf, 1, 2))) static inline void sh(const char *fmt, ...) {
        char cmd[4096];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
}

/* Opens top/<tag>/<file> read-only; returns the fd or -1 (errno set). */
static inline int release_open(const char *top, const char *tag, const char *file) {
        char path[512];

        snprintf(path, sizeof(path), "%s/%s/%s", top, tag, file);
        return open(path, O_RDONLY | O_CLOEXEC);
}

/*
 * Makes top/<tag>/: a manifest for name, version and question and the test plugin binary
 * ($LOCKD_PLUGIN_BIN), signed ($LOCKD_SIGN, with the root made by "lockd-sign init top/root") from
 * the tag ref (ref NULL: the release's own tag, refs/tags/<name>/v<version>), or left unsigned.
 */
static inline void release_make(const char *top, const char *tag, const char *name,
                                const char *version, const char *question, const char *ref,
                                bool sign) {
        char own_ref[128];

        snprintf(own_ref, sizeof(own_ref), "refs/tags/%s/v%s", name, version);
        if (!ref)
                ref = own_ref;
        sh("mkdir -p %s/%s && cp %s %s/%s/plugin", top, tag, getenv("LOCKD_PLUGIN_BIN"), top, tag);
        sh("printf '%%s\\n' 'name = \"%s\"' 'version = \"%s\"' 'protocol = 1' "
           "'question = \"%s\"' 'one = \"it is\"' 'zero = \"it is not\"' "
           "'accepts = [\"text/plain\"]' 'limits = { cpu_s = 5, memory = \"128MiB\", timeout_s = "
           "10 }' > %s/%s/plugin.toml",
           name, version, question, top, tag);
        if (sign)
                sh("%s sign %s/root --identity '" WORKFLOW "%s' --issuer " ISSUER
                   " --ref '%s' %s/%s/plugin.toml %s/%s/plugin >/dev/null",
                   getenv("LOCKD_SIGN"), top, ref, ref, top, tag, top, tag);
}
