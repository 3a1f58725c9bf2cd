/* lockctl plugin: the verbs' dispatch, and the manifest's load that lint and test share. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fd-util.h"
#include "lockctl-console.h"
#include "lockctl-plugin.h"
#include "lockctl-sync.h"
#include "lockctl.h"
#include "macro.h"
#include "manifest.h"

int plugin_load_manifest(int dirfd, const char *dir, Manifest **ret, FILE *diag_out, int err_exit) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        ManifestDiag diag = {};
        size_t len;
        int r;

        fd = openat(dirfd, "plugin.toml", O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        if (fd < 0) {
                fprintf(stderr, "lockctl: %s/plugin.toml: %s\n", dir, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        r = read_full_fd(fd, MANIFEST_BYTES_MAX, &buf, &len);
        if (r == -EFBIG) {
                fprintf(diag_out, "error: %s: plugin.toml is larger than %d bytes (1:1)\n",
                        manifest_error_name(E_MANIFEST_TOO_LARGE), MANIFEST_BYTES_MAX);
                return err_exit;
        }
        if (r < 0) {
                fprintf(stderr, "lockctl: %s/plugin.toml: %s\n", dir, strerror(-r));
                return LOCKCTL_EXIT_USAGE;
        }
        r = manifest_parse(buf, len, ret, &diag);
        if (r == -EINVAL) {
                fprintf(diag_out, "error: %s: %s (%u:%u)\n", manifest_error_name(diag.code),
                        diag.message, diag.line, diag.column);
                return err_exit;
        }
        if (r < 0) {
                fprintf(stderr, "lockctl: %s/plugin.toml: %s\n", dir, strerror(-r));
                return LOCKCTL_EXIT_USAGE;
        }
        return 0;
}

int verb_plugin(int argc, char **argv) {
        if (argc >= 1 && strcmp(argv[0], "test") == 0)
                return verb_plugin_test(argc - 1, argv + 1);
        if (argc >= 1 && strcmp(argv[0], "new") == 0)
                return verb_plugin_new(argc - 1, argv + 1);
        if (argc >= 1 && strcmp(argv[0], "lint") == 0)
                return verb_plugin_lint(argc - 1, argv + 1);
        if (argc >= 1 && strcmp(argv[0], "install") == 0)
                return verb_plugin_install(argc - 1, argv + 1);
        if (argc >= 1 && strcmp(argv[0], "search") == 0)
                return verb_plugin_search(argc - 1, argv + 1);
        if (argc >= 1 && strcmp(argv[0], "update") == 0)
                return verb_plugin_update(argc - 1, argv + 1);
        if (argc >= 1 && strcmp(argv[0], "list") == 0)
                return verb_plugin_list(argc - 1, argv + 1);
        if (argc >= 1 && strcmp(argv[0], "remove") == 0)
                return verb_plugin_remove(argc - 1, argv + 1);
        if (argc >= 1 && strcmp(argv[0], "run") == 0)
                return verb_plugin_run(argc - 1, argv + 1);
        if (argc >= 1 && strcmp(argv[0], "sync") == 0)
                return verb_plugin_sync(argc - 1, argv + 1);
        fprintf(stderr, "usage: lockctl plugin "
                        "new|test|lint|install|search|update|list|remove|run|sync ...\n");
        return LOCKCTL_EXIT_USAGE;
}
