/* lockctl plugin sync FILE: makes the installed plugins exactly a pinned list, for configuration
 * management (ARCHITECTURE.md, fleets). Installs by name through plugin install's own path. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec.h"
#include "fd-util.h"
#include "lockctl-console.h"
#include "lockctl-index.h"
#include "lockctl-pages.h"
#include "lockctl-sync.h"
#include "lockctl.h"
#include "macro.h"
#include "manifest.h"
#include "marketplace.h"

#define SYNC_FILE_MAX    (1024 * 1024) /* the pinned list's bytes */
#define SYNC_PLUGINS_MAX 1024          /* its entries */

typedef struct Pin {
        const char *name, *version, *marketplace, *manifest_sha256, *binary_sha256;
} Pin;

static int usage_sync(void) {
        fprintf(stderr, "usage: lockctl plugin sync FILE [--cacert FILE]\n");
        return LOCKCTL_EXIT_USAGE;
}

static bool digest_valid(const char *s) {
        return s && strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

/*
 * The text form of the list as JSON: one pin a line, "NAME VERSION MARKETPLACE MANIFEST_SHA256
 * BINARY_SHA256" separated by blanks; empty lines and lines starting with '#' skipped. NULL after
 * saying why (a line without exactly five words, or too many lines).
 */
static json_t *text_pins(const char *path, char *buf) {
        _cleanup_(json_decrefp) json_t *list = json_array();
        static const char *const keys[] = {"name", "version", "marketplace", "manifest_sha256",
                                           "binary_sha256"};
        char *save = NULL, *line;
        unsigned n = 0;

        if (!list)
                return NULL;
        for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                json_t *o;
                char *w[6], *ws = NULL;
                size_t k = 0;

                n++;
                line += strspn(line, " \t\r");
                if (line[0] == 0 || line[0] == '#')
                        continue;
                for (char *t = strtok_r(line, " \t\r", &ws); t && k < 6;
                     t = strtok_r(NULL, " \t\r", &ws))
                        w[k++] = t;
                if (k != 5 || json_array_size(list) >= SYNC_PLUGINS_MAX) {
                        fprintf(stderr,
                                "lockctl: %s:%u: expected NAME VERSION MARKETPLACE "
                                "MANIFEST_SHA256 BINARY_SHA256\n",
                                path, n);
                        return NULL;
                }
                o = json_object();
                for (size_t i = 0; o && i < 5; i++)
                        if (json_object_set_new(o, keys[i], json_string(w[i])) < 0) {
                                json_decref(o);
                                o = NULL;
                        }
                if (!o || json_array_append_new(list, o) < 0) {
                        fprintf(stderr, "lockctl: %s:%u: not UTF-8\n", path, n);
                        return NULL;
                }
        }
        return json_pack("{s:O}", "plugins", list);
}

/*
 * Reads the pinned list: {"plugins": [{"name", "version", "marketplace", "manifest_sha256",
 * "binary_sha256"}, ...]} (or the array alone, or text_pins()' lines), exactly those keys, every
 * value checked (a plugin name and a SemVer as a manifest has them, a marketplace name, 64
 * lowercase hex digits), each name once. 0 with *ret_root (which owns the strings) and the pins,
 * or LOCKCTL_EXIT_USAGE after saying why.
 */
static int read_pins(const char *path, json_t **ret_root, Pin **ret, size_t *ret_n) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        _cleanup_free_ char *buf = NULL;
        _cleanup_free_ Pin *pins = NULL;
        json_error_t jerr;
        json_t *list, *e;
        size_t len = 0, i;
        int r;

        r = read_full_file(path, SYNC_FILE_MAX, &buf, &len);
        if (r < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", path,
                        r == -EFBIG ? "larger than 1 MiB" : strerror(-r));
                return LOCKCTL_EXIT_USAGE;
        }
        {
                const char *first = buf + strspn(buf, " \t\r\n");

                if (*first != '{' && *first != '[') {
                        if (memchr(buf, 0, len))
                                return LOCKCTL_EXIT_USAGE;
                        root = text_pins(path, buf);
                        if (!root)
                                return LOCKCTL_EXIT_USAGE;
                } else {
                        root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
                        if (!root) {
                                fprintf(stderr, "lockctl: %s:%d:%d: %s\n", path, jerr.line,
                                        jerr.column, jerr.text);
                                return LOCKCTL_EXIT_USAGE;
                        }
                        if (json_is_array(root)) {
                                json_t *o = json_pack("{s:o}", "plugins", root);

                                root = NULL;
                                if (!o)
                                        return LOCKCTL_EXIT_FAIL;
                                root = o;
                        }
                }
        }
        list = json_object_get(root, "plugins");
        if (!json_is_object(root) || json_object_size(root) != 1 || !json_is_array(list) ||
            json_array_size(list) > SYNC_PLUGINS_MAX) {
                fprintf(stderr,
                        "lockctl: %s: expected {\"plugins\": [...]} with at most %d "
                        "entries\n",
                        path, SYNC_PLUGINS_MAX);
                return LOCKCTL_EXIT_USAGE;
        }
        pins = calloc(json_array_size(list) + 1, sizeof(*pins));
        if (!pins)
                return LOCKCTL_EXIT_FAIL;
        json_array_foreach(list, i, e) {
                Pin *p = &pins[i];

                p->name = console_json_string(e, "name");
                p->version = console_json_string(e, "version");
                p->marketplace = console_json_string(e, "marketplace");
                p->manifest_sha256 = console_json_string(e, "manifest_sha256");
                p->binary_sha256 = console_json_string(e, "binary_sha256");
                if (!json_is_object(e) || json_object_size(e) != 5 || !p->name ||
                    !manifest_name_valid(p->name) || !p->version ||
                    !manifest_version_valid(p->version) || !p->marketplace ||
                    !marketplace_name_valid(p->marketplace) || !digest_valid(p->manifest_sha256) ||
                    !digest_valid(p->binary_sha256)) {
                        fprintf(stderr,
                                "lockctl: %s: plugins[%zu]: expected exactly name, version, "
                                "marketplace, manifest_sha256 and binary_sha256 (valid names, a "
                                "MAJOR.MINOR.PATCH version, 64 lowercase hex digits each)\n",
                                path, i);
                        return LOCKCTL_EXIT_USAGE;
                }
                for (size_t k = 0; k < i; k++)
                        if (strcmp(pins[k].name, p->name) == 0) {
                                fprintf(stderr, "lockctl: %s: plugins[%zu]: %s is pinned twice\n",
                                        path, i, p->name);
                                return LOCKCTL_EXIT_USAGE;
                        }
        }
        *ret_n = json_array_size(list);
        *ret = TAKE_PTR(pins);
        *ret_root = TAKE_PTR(root);
        return 0;
}

/* Whether the installed entry p is the pinned release exactly. */
static bool is_pinned(const json_t *p, const Pin *pin) {
        const char *v = console_json_string(p, "version"),
                   *m = console_json_string(p, "marketplace");
        const char *ms = console_json_string(p, "manifest_sha256");
        const char *bs = console_json_string(p, "binary_sha256");

        return v && m && ms && bs && strcmp(v, pin->version) == 0 &&
               strcmp(m, pin->marketplace) == 0 && strcmp(ms, pin->manifest_sha256) == 0 &&
               strcmp(bs, pin->binary_sha256) == 0 && json_is_true(json_object_get(p, "signed"));
}

/*
 * Whether the marketplace's index (downloaded and admitted by lockd: signature, rollback,
 * freeze) offers the pinned release with the pinned digests. The pin is checked before
 * anything is downloaded or installed: a publisher who re-signed other bytes under the same
 * version changes nothing here. 0, or an exit code after saying why.
 */
static int check_index(VarlinkClient *c, const Pin *pin, const char *cacert) {
        _cleanup_(json_decrefp) json_t *list = NULL;
        _cleanup_(remote_index_freep) RemoteIndex *ri = NULL;
        const IndexRelease *e;
        char msha[65], bsha[65];
        int r;

        r = remote_marketplaces(c, "plugin sync", pin->marketplace, &list);
        if (r != 0)
                return r;
        r = remote_index_load(c, "plugin sync", pin->marketplace,
                              console_json_string(json_array_get(list, 0), "url"), cacert, &ri);
        if (r != 0)
                return r;
        e = index_find(ri->index, pin->name, pin->version);
        if (!e) {
                fprintf(stderr,
                        "lockctl: plugin sync refused: %s@%s is not offered by "
                        "marketplace %s\n",
                        pin->name, pin->version, pin->marketplace);
                return LOCKCTL_EXIT_FAIL;
        }
        hex_encode(e->manifest_sha256, 32, msha);
        hex_encode(e->binary_sha256, 32, bsha);
        if (strcmp(msha, pin->manifest_sha256) != 0 || strcmp(bsha, pin->binary_sha256) != 0) {
                fprintf(stderr,
                        "lockctl: plugin sync refused: marketplace %s's %s@%s is not the "
                        "pinned release (its %s SHA-256 differs)\n",
                        pin->marketplace, pin->name, pin->version,
                        strcmp(msha, pin->manifest_sha256) != 0 ? "manifest" : "binary");
                return LOCKCTL_EXIT_FAIL;
        }
        return 0;
}

/* Runs verb on argc and argv with its stdout on /dev/null: the verb's exit code, or
 * LOCKCTL_EXIT_FAIL when stdout could not be redirected. */
static int run_silenced(int (*verb)(int argc, char **argv), int argc, char **argv) {
        int saved, null, r;

        fflush(stdout);
        saved = dup(STDOUT_FILENO);
        null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (saved < 0 || null < 0 || dup2(null, STDOUT_FILENO) < 0) {
                safe_close(saved);
                safe_close(null);
                return LOCKCTL_EXIT_FAIL;
        }
        r = verb(argc, argv);
        fflush(stdout);
        (void)dup2(saved, STDOUT_FILENO);
        safe_close(saved);
        safe_close(null);
        return r;
}

/* Runs plugin install NAME@VERSION --marketplace M, its own output silenced (sync says what
 * changed). The pinned list is the administrator's decision, reviewed where configuration
 * management keeps it: an update that changes the question is accepted by name for them
 * (--accept-name), as plugin install asks a human at a terminal to. */
static int install_pin(const Pin *pin, const char *cacert) {
        _cleanup_free_ char *spec = NULL;
        char *argv[8];
        int argc = 0;

        if (asprintf(&spec, "%s@%s", pin->name, pin->version) < 0)
                return LOCKCTL_EXIT_FAIL;
        argv[argc++] = spec;
        argv[argc++] = (char *)"--marketplace";
        argv[argc++] = (char *)pin->marketplace;
        argv[argc++] = (char *)"--accept-name";
        argv[argc++] = (char *)pin->name;
        if (cacert) {
                argv[argc++] = (char *)"--cacert";
                argv[argc++] = (char *)cacert;
        }
        argv[argc] = NULL;
        return run_silenced(verb_plugin_install, argc, argv);
}

/* plugin remove NAME (every version), its own output silenced. */
static int remove_plugin(const char *name) {
        char *argv[] = {(char *)name, NULL};

        return run_silenced(verb_plugin_remove, 1, argv);
}

/*
 * Installs each of the n pins that lockd (plugins, as it was) does not hold as pinned, saying what
 * changed and counting it in *changes: LOCKCTL_EXIT_OK, or LOCKCTL_EXIT_FAIL when one was not
 * installed (the others still are).
 */
static int sync_pins(VarlinkClient *c, json_t *plugins, const Pin *pins, size_t n,
                     const char *cacert, size_t *changes) {
        int r, rc = LOCKCTL_EXIT_OK;

        for (size_t k = 0; k < n; k++) {
                const Pin *pin = &pins[k];
                json_t *cur = console_plugin_find(plugins, pin->name);
                const char *old = cur ? console_json_string(cur, "version") : NULL;

                if (cur && is_pinned(cur, pin))
                        continue;
                r = check_index(c, pin, cacert);
                if (r == 0)
                        r = install_pin(pin, cacert);
                if (r != 0) {
                        fprintf(stderr, "lockctl: plugin sync: %s@%s not installed\n", pin->name,
                                pin->version);
                        rc = LOCKCTL_EXIT_FAIL;
                        continue;
                }
                (*changes)++;
                if (old) {
                        printf("updated ");
                        console_fputs_escaped(pin->name, stdout);
                        printf(" ");
                        console_fputs_escaped(old, stdout);
                        printf(" -> %s (marketplace %s)\n", pin->version, pin->marketplace);
                } else
                        printf("installed %s %s (marketplace %s)\n", pin->name, pin->version,
                               pin->marketplace);
        }
        return rc;
}

/*
 * Removes each plugin of plugins that none of the n pins names, saying so and counting it in
 * *changes: LOCKCTL_EXIT_OK, or LOCKCTL_EXIT_FAIL when one was not removed (the others still are).
 */
static int sync_unpinned(const json_t *plugins, const Pin *pins, size_t n, size_t *changes) {
        int r, rc = LOCKCTL_EXIT_OK;
        json_t *p;
        size_t i;

        json_array_foreach(plugins, i, p) {
                const char *name = console_json_string(p, "name");
                bool pinned = false;

                for (size_t k = 0; name && k < n && !pinned; k++)
                        pinned = strcmp(pins[k].name, name) == 0;
                if (!name || pinned)
                        continue;
                r = remove_plugin(name);
                if (r != 0) {
                        rc = LOCKCTL_EXIT_FAIL;
                        continue;
                }
                (*changes)++;
                printf("removed ");
                console_fputs_escaped(name, stdout);
                printf(" ");
                console_fputs_escaped(console_json_string(p, "version"), stdout);
                printf("\n");
        }
        return rc;
}

/*
 * plugin sync FILE [--cacert FILE]: installs what the list pins and lockd lacks, updates what lockd
 * holds at another version, digest or marketplace, removes what the list does not name; one line
 * per change ("installed", "updated", "removed"), or "no change". Exit 0 when lockd holds exactly
 * the list (changed or not: the output says), 1 when a step failed (the others are still done and
 * said), 2 for a bad list. After installing, lockd's own digests are checked against the pins.
 */
int verb_plugin_sync(int argc, char **argv) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(json_decrefp) json_t *root = NULL, *plugins = NULL, *after = NULL;
        _cleanup_free_ Pin *pins = NULL;
        const char *file = NULL, *cacert = NULL;
        size_t n = 0, changes = 0;
        int r, rc;

        for (int k = 0; k < argc; k++) {
                if ((r = lockctl_option(argc, argv, &k, "--cacert", &cacert)) != 0) {
                        if (r < 0)
                                return usage_sync();
                } else if (argv[k][0] == '-' || file)
                        return usage_sync();
                else
                        file = argv[k];
        }
        if (!file)
                return usage_sync();
        r = read_pins(file, &root, &pins, &n);
        if (r != 0)
                return r;
        r = console_connect(&c);
        if (r != 0)
                return r;
        plugins = console_installed_plugins(c, "plugin sync");
        if (!plugins)
                return LOCKCTL_EXIT_FAIL;

        rc = sync_pins(c, plugins, pins, n, cacert, &changes);
        if (sync_unpinned(plugins, pins, n, &changes) != LOCKCTL_EXIT_OK)
                rc = LOCKCTL_EXIT_FAIL;

        /* What lockd holds now, against the list: the install's own checks, checked again. */
        after = console_installed_plugins(c, "plugin sync");
        if (!after)
                return LOCKCTL_EXIT_FAIL;
        for (size_t k = 0; k < n && rc == LOCKCTL_EXIT_OK; k++) {
                json_t *cur = console_plugin_find(after, pins[k].name);

                if (!cur || !is_pinned(cur, &pins[k])) {
                        fprintf(stderr,
                                "lockctl: plugin sync: lockd does not hold %s@%s as "
                                "pinned\n",
                                pins[k].name, pins[k].version);
                        rc = LOCKCTL_EXIT_FAIL;
                }
        }
        if (rc == LOCKCTL_EXIT_OK && json_array_size(after) != n) {
                fprintf(stderr, "lockctl: plugin sync: lockd holds %zu plugins, the list %zu\n",
                        json_array_size(after), n);
                rc = LOCKCTL_EXIT_FAIL;
        }
        if (changes == 0 && rc == LOCKCTL_EXIT_OK)
                printf("no change\n");
        return fflush(stdout) == 0 ? rc : LOCKCTL_EXIT_FAIL;
}
