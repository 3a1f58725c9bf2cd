/* lockctl's side of a marketplace's index: downloaded as the human, verified and admitted by
 * lockd, then read from the bytes lockd verified (ARCHITECTURE.md, "The marketplace flow"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec.h"
#include "escape.h"
#include "fd-util.h"
#include "lockctl-console.h"
#include "lockctl-index.h"
#include "lockctl-pages.h"
#include "lockctl.h"
#include "macro.h"
#include "release.h"

RemoteIndex *remote_index_free(RemoteIndex *ri) {
        if (!ri)
                return NULL;
        free(ri->marketplace);
        free(ri->url);
        fetcher_free(ri->fetcher);
        index_free(ri->index);
        safe_close(ri->index_fd);
        safe_close(ri->bundle_fd);
        free(ri);
        return NULL;
}

int remote_print_error(const char *what, const char *error, json_t *params) {
        _cleanup_free_ char *m = NULL, *e = NULL;
        const char *name = error;
        size_t plen = strlen(CONSOLE_INTERFACE ".");

        if (strncmp(error, CONSOLE_INTERFACE ".", plen) == 0)
                name = error + plen;
        if (strcmp(name, "IndexRollback") == 0) {
                const char *mk = console_json_string(params, "marketplace") ?: "?";

                m = escape_bytes(mk, strlen(mk));
                fprintf(stderr,
                        "lockctl: %s refused: the index of marketplace '%s' is version %lld, older "
                        "than version %lld that lockd verified before (a rollback: a mirror or an "
                        "attacker serving an old index); nothing was changed\n",
                        what, m ? m : "?", console_json_integer(params, "version", 0),
                        console_json_integer(params, "newest", 0));
                return LOCKCTL_EXIT_FAIL;
        }
        if (strcmp(name, "IndexExpired") == 0) {
                const char *mk = console_json_string(params, "marketplace") ?: "?";
                const char *ex = console_json_string(params, "expires") ?: "?";

                m = escape_bytes(mk, strlen(mk));
                e = escape_bytes(ex, strlen(ex));
                fprintf(stderr,
                        "lockctl: %s refused: the index of marketplace '%s' (version %lld) expired "
                        "at %s (a freeze: its publisher must sign a new one, or someone serves a "
                        "stale copy); nothing was changed\n",
                        what, m ? m : "?", console_json_integer(params, "version", 0), e ? e : "?");
                return LOCKCTL_EXIT_FAIL;
        }
        return console_print_error(what, error, params);
}

int remote_marketplaces(VarlinkClient *c, const char *what, const char *only, json_t **ret) {
        _cleanup_(json_decrefp) json_t *reply = NULL, *out = json_array();
        _cleanup_free_ char *error = NULL;
        json_t *list, *m;
        size_t i;
        bool found = false;
        int r;

        if (!out) {
                fprintf(stderr, "lockctl: out of memory\n");
                return LOCKCTL_EXIT_FAIL;
        }
        r = console_all_pages_raw(c, "ListMarketplaces", NULL, "marketplaces", &reply, &error);
        if (r < 0) {
                fprintf(stderr, "lockctl: %s failed: lost the connection to lockd\n", what);
                return LOCKCTL_EXIT_FAIL;
        }
        if (error)
                return console_print_error(what, error, reply);
        list = json_object_get(reply, "marketplaces");
        json_array_foreach(list, i, m) {
                const char *name = console_json_string(m, "name");

                if (!name || (only && strcmp(name, only) != 0))
                        continue;
                found = true;
                if (!console_json_string(m, "url")) {
                        if (!only)
                                continue;
                        fprintf(stderr,
                                "lockctl: %s: marketplace '%s' has no URL to download from (add it "
                                "again with --url, or install a release directory)\n",
                                what, name);
                        return LOCKCTL_EXIT_FAIL;
                }
                if (json_array_append(out, m) < 0) {
                        fprintf(stderr, "lockctl: out of memory\n");
                        return LOCKCTL_EXIT_FAIL;
                }
        }
        if (only && !found) {
                _cleanup_free_ char *o = escape_bytes(only, strlen(only));

                fprintf(stderr, "lockctl: %s refused: no marketplace '%s' is configured\n", what,
                        o ? o : "?");
                return LOCKCTL_EXIT_FAIL;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

int remote_index_load(VarlinkClient *c, const char *what, const char *marketplace, const char *url,
                      const char *cacert, RemoteIndex **ret) {
        _cleanup_(remote_index_freep) RemoteIndex *ri = NULL;
        _cleanup_(json_decrefp) json_t *params = NULL, *reply = NULL;
        _cleanup_free_ char *error = NULL, *json = NULL;
        ReleaseError err = {};
        uint8_t digest[32];
        char hex[65];
        int fds[2] = {-1, -1};
        size_t len;
        int r;

        ri = calloc(1, sizeof(*ri));
        if (!ri) {
                fprintf(stderr, "lockctl: out of memory\n");
                return LOCKCTL_EXIT_FAIL;
        }
        ri->index_fd = ri->bundle_fd = -1;
        ri->marketplace = strdup(marketplace);
        ri->url = strdup(url);
        if (!ri->marketplace || !ri->url) {
                fprintf(stderr, "lockctl: out of memory\n");
                return LOCKCTL_EXIT_FAIL;
        }
        r = fetcher_new(url, cacert, &ri->fetcher);
        if (r < 0) {
                fprintf(stderr, "lockctl: %s: marketplace '%s': %s\n", what, marketplace,
                        r == -EINVAL ? "its URL is neither https:// nor file://" : strerror(-r));
                return LOCKCTL_EXIT_FAIL;
        }
        ri->index_fd = fetcher_get(ri->fetcher, INDEX_FILE, INDEX_BYTES_MAX);
        if (ri->index_fd < 0)
                return LOCKCTL_EXIT_FAIL;
        ri->bundle_fd = fetcher_get(ri->fetcher, INDEX_BUNDLE_FILE, RELEASE_BUNDLE_MAX);
        if (ri->bundle_fd < 0)
                return LOCKCTL_EXIT_FAIL;

        /* lockd verifies and admits first: nothing of an index is shown or used before. */
        params = json_pack("{s:s, s:i, s:i}", "marketplace", marketplace, "index_fd", 0,
                           "index_bundle_fd", 1);
        fds[0] = fd_reopen_readonly(ri->index_fd);
        fds[1] = fd_reopen_readonly(ri->bundle_fd);
        if (!params || fds[0] < 0 || fds[1] < 0) {
                safe_close(fds[0]);
                safe_close(fds[1]);
                fprintf(stderr, "lockctl: out of memory\n");
                return LOCKCTL_EXIT_FAIL;
        }
        r = console_call_raw(c, what, "VerifyIndex", params, fds, 2, &reply, &error);
        safe_close(fds[0]);
        safe_close(fds[1]);
        if (r != 0)
                return r;
        if (error)
                return remote_print_error(what, error, reply);

        r = release_read_fd(ri->index_fd, INDEX_BYTES_MAX, &json, &len);
        if (r >= 0) {
                sha256(json, len, digest);
                hex_encode(digest, 32, hex);
        }
        if (r < 0 || !console_json_string(reply, "sha256") ||
            strcmp(hex, console_json_string(reply, "sha256")) != 0) {
                fprintf(stderr, "lockctl: %s: the index lockd verified is not the one read here\n",
                        what);
                return LOCKCTL_EXIT_FAIL;
        }
        r = index_parse(json, len, &ri->index, &err);
        if (r < 0) {
                fprintf(stderr, "lockctl: %s refused: %s: %s\n", what, release_error_name(err.code),
                        err.message);
                return LOCKCTL_EXIT_FAIL;
        }
        *ret = TAKE_PTR(ri);
        return 0;
}
