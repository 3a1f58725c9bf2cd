/* lockctl plugin install|search|update|list|remove|run: the plugins installed in the running
 * lockd, from a release directory or by name from a marketplace's URL. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec.h"
#include "escape.h"
#include "fd-util.h"
#include "index.h"
#include "lockctl-console.h"
#include "lockctl-index.h"
#include "lockctl-pages.h"
#include "lockctl.h"
#include "macro.h"
#include "manifest.h"
#include "release.h"

/* Verification of a 256 MiB binary takes a while; an answer later than this is a hung lockd. */
#define INSTALL_TIMEOUT_USEC (300ULL * 1000 * 1000)
/* The longest name the human may type to accept an update; a plugin name is far shorter. */
#define TYPED_NAME_MAX 256
/* More inputs than any manifest may declare are refused here already. */
#define RUN_INPUTS_MAX 64
/* A value typed at the prompt; manifests cap theirs at 1024 bytes, lockd checks the real cap. */
#define RUN_INPUT_BYTES_MAX 4096

/* The files of a release directory and of an index directory, in the order of their fd indexes. */
enum {
        FILE_MANIFEST,
        FILE_BINARY,
        FILE_MANIFEST_BUNDLE,
        FILE_BINARY_BUNDLE,
        FILE_INDEX,
        FILE_INDEX_BUNDLE,
        _FILE_MAX,
};

static const struct {
        const char *name;
        const char *param;
        uint64_t max;
} release_files[_FILE_MAX] = {
        [FILE_MANIFEST] = {RELEASE_MANIFEST_FILE, "manifest_fd", RELEASE_MANIFEST_MAX},
        [FILE_BINARY] = {RELEASE_BINARY_FILE, "binary_fd", RELEASE_BINARY_MAX},
        [FILE_MANIFEST_BUNDLE] = {RELEASE_MANIFEST_BUNDLE_FILE, "manifest_bundle_fd",
                                  RELEASE_BUNDLE_MAX},
        [FILE_BINARY_BUNDLE] = {RELEASE_BINARY_BUNDLE_FILE, "binary_bundle_fd", RELEASE_BUNDLE_MAX},
        [FILE_INDEX] = {INDEX_FILE, "index_fd", INDEX_BYTES_MAX},
        [FILE_INDEX_BUNDLE] = {INDEX_BUNDLE_FILE, "index_bundle_fd", RELEASE_BUNDLE_MAX},
};

typedef struct InstallFiles {
        int snap[_FILE_MAX]; /* sealed memfd copies; -1 for a file not sent */
} InstallFiles;

static void install_files_done(InstallFiles *f) {
        for (size_t i = 0; i < _FILE_MAX; i++)
                f->snap[i] = safe_close(f->snap[i]);
}

/*
 * Opens release_files[k].name below dirfd with the human's own rights (no symlink, a regular file
 * only) and copies it into a sealed memfd. Copying is the point: lockd reads the very bytes the
 * human meant, and a second call (after the human typed the name for an update) sends the same
 * bytes again, so nothing swapped into DIR meanwhile can ride on that consent. Returns 0,
 * -ENOENT when the file is absent and optional (nothing printed), or an exit code after printing.
 */
static int snapshot_file(int dirfd, const char *dir, size_t k, bool optional, InstallFiles *f) {
        _cleanup_close_ int fd = -1;
        int r;

        fd = lockctl_open_file_at(dirfd, release_files[k].name, true);
        if (fd == -ENOENT && optional)
                return -ENOENT;
        if (fd < 0) {
                fprintf(stderr, "lockctl: %s/%s: %s\n", dir, release_files[k].name,
                        lockctl_open_strerror(fd));
                return LOCKCTL_EXIT_USAGE;
        }
        r = memfd_snapshot(fd, release_files[k].name, release_files[k].max, false);
        if (r == -EFBIG) {
                fprintf(stderr, "lockctl: %s/%s: larger than %llu bytes\n", dir,
                        release_files[k].name, (unsigned long long)release_files[k].max);
                return LOCKCTL_EXIT_USAGE;
        }
        if (r < 0) {
                fprintf(stderr, "lockctl: %s/%s: %s\n", dir, release_files[k].name, strerror(-r));
                return LOCKCTL_EXIT_USAGE;
        }
        f->snap[k] = r;
        return 0;
}

/* Prints a plugin's question and the meaning of its answers, indented, escaped. */
static void print_question(FILE *out, const json_t *plugin) {
        fputs("    question: ", out);
        console_fputs_escaped(console_json_string(plugin, "question"), out);
        fputs("\n    1 means:  ", out);
        console_fputs_escaped(console_json_string(plugin, "one"), out);
        fputs("\n    0 means:  ", out);
        console_fputs_escaped(console_json_string(plugin, "zero"), out);
        fputc('\n', out);
}

/* The installed plugin name at version, from ListPlugins (a new reference), or NULL. */
static json_t *find_installed(VarlinkClient *c, const char *name, const char *version) {
        _cleanup_(json_decrefp) json_t *reply = NULL;
        _cleanup_free_ char *error = NULL;
        json_t *plugins, *p;
        size_t i;

        if (console_all_pages_raw(c, "ListPlugins", NULL, "plugins", &reply, &error) < 0 || error)
                return NULL;
        plugins = json_object_get(reply, "plugins");
        json_array_foreach(plugins, i, p) {
                const char *n = console_json_string(p, "name");
                const char *v = console_json_string(p, "version");

                if (n && v && strcmp(n, name) == 0 && strcmp(v, version) == 0)
                        return json_incref(p);
        }
        return NULL;
}

/*
 * Writes which of question, one and zero differ between the installed plugin old (a ListPlugins
 * entry) and the new texts, as "question, one", into out; "" when old is NULL or none differ.
 */
static void changed_texts(const json_t *old, const char *question, const char *one,
                          const char *zero, char out[32]) {
        static const char *const keys[] = {"question", "one", "zero"};
        const char *now[] = {question, one, zero};

        out[0] = 0;
        for (size_t i = 0; old && i < ELEMENTSOF(keys); i++) {
                const char *was = console_json_string(old, keys[i]);

                if (!was || !now[i] || strcmp(was, now[i]) != 0) {
                        if (out[0])
                                strcat(out, ", ");
                        strcat(out, keys[i]);
                }
        }
}

/*
 * Formats what an update changes: the installed version's question, one and zero (from
 * ListPlugins) beside the new ones (UpdateNeedsTypedName's parameters err carry the new
 * version's), all escaped. Returns a new string or NULL on out of memory.
 */
static char *format_update(VarlinkClient *c, const json_t *err) {
        _cleanup_(json_decrefp) json_t *old = NULL;
        const char *name = console_json_string(err, "name");
        const char *installed = console_json_string(err, "installed");
        const char *version = console_json_string(err, "version");
        char *text = NULL;
        size_t text_len = 0;
        FILE *out;

        old = find_installed(c, name, installed);
        out = open_memstream(&text, &text_len);
        if (!out)
                return NULL;
        console_fputs_escaped(name, out);
        fputs(" ", out);
        console_fputs_escaped(version, out);
        fputs(" changes what the plugin asks or what its answers mean.\n  installed ", out);
        console_fputs_escaped(installed, out);
        fputs(":\n", out);
        if (old)
                print_question(out, old);
        else
                fputs("    (lockd did not list it)\n", out);
        fputs("  new ", out);
        console_fputs_escaped(version, out);
        fputs(":\n", out);
        print_question(out, err);
        if (old) {
                char changed[32];

                changed_texts(old, console_json_string(err, "question"),
                              console_json_string(err, "one"), console_json_string(err, "zero"),
                              changed);
                fprintf(out, "  changed: %s\n", changed[0] ? changed : "(none)");
        }
        if (fclose(out) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

/*
 * Shows the human what an update changes (err: UpdateNeedsTypedName's parameters) and reads the
 * plugin's name typed on the terminal. The terminal, not stdin: the consent must come from the
 * human at the keyboard, not from whatever feeds lockctl's input. Without a terminal the change
 * goes to stderr and --accept-name is the way. Returns 0 with *ret (the line without its
 * newline, nothing else trimmed), or an exit code after printing why.
 */
static int ask_typed_name(VarlinkClient *c, const json_t *err, char **ret) {
        _cleanup_free_ char *text = NULL, *name = NULL, *typed = NULL;
        const char *n = console_json_string(err, "name");
        int r;

        if (!n || !console_json_string(err, "installed") || !console_json_string(err, "version")) {
                fprintf(stderr, "lockctl: install refused: lockd asked for the plugin's name "
                                "without saying which update\n");
                return LOCKCTL_EXIT_FAIL;
        }
        text = format_update(c, err);
        name = escape_bytes(n, strlen(n));
        if (!text || !name) {
                fprintf(stderr, "lockctl: out of memory\n");
                return LOCKCTL_EXIT_FAIL;
        }
        r = console_tty_read_line(text, "Type the plugin's name to accept this update: ", false,
                                  TYPED_NAME_MAX, &typed);
        if (r == -ENXIO) {
                fputs(text, stderr);
                fprintf(stderr,
                        "lockctl: install refused: the update needs the plugin's name typed and "
                        "there is no terminal to type it on: run again with --accept-name %s to "
                        "accept it\n",
                        name);
                return LOCKCTL_EXIT_FAIL;
        }
        if (r == -EOVERFLOW) {
                fprintf(stderr, "lockctl: install refused: the typed name is longer than any "
                                "plugin name; nothing was changed\n");
                return LOCKCTL_EXIT_FAIL;
        }
        if (r < 0) {
                fprintf(stderr,
                        "lockctl: install refused: cannot read the name from the "
                        "terminal: %s\n",
                        r == -ENODATA ? "end of input" : strerror(-r));
                return LOCKCTL_EXIT_FAIL;
        }
        if (typed[0] == 0) {
                fprintf(stderr, "lockctl: install refused: nothing typed; the update was not "
                                "accepted\n");
                return LOCKCTL_EXIT_FAIL;
        }
        *ret = TAKE_PTR(typed);
        return 0;
}

/* Sends InstallPlugin with fresh read-only opens of the snapshots (each its own offset at 0). */
static int install_call(VarlinkClient *c, const InstallFiles *f, json_t *params,
                        json_t **ret_params, char **ret_error) {
        int fds[_FILE_MAX];
        size_t n = 0;
        int r;

        for (size_t k = 0; k < _FILE_MAX; k++) {
                if (f->snap[k] < 0)
                        continue;
                r = fd_reopen_readonly(f->snap[k]);
                if (r < 0) {
                        fprintf(stderr, "lockctl: %s: %s\n", release_files[k].name, strerror(-r));
                        for (size_t j = 0; j < n; j++)
                                safe_close(fds[j]);
                        return LOCKCTL_EXIT_FAIL;
                }
                /* Indexes follow the order of release_files[], skipping absent ones. */
                if (json_object_set_new(params, release_files[k].param,
                                        json_integer((json_int_t)n)) < 0) {
                        safe_close(r);
                        for (size_t j = 0; j < n; j++)
                                safe_close(fds[j]);
                        fprintf(stderr, "lockctl: out of memory\n");
                        return LOCKCTL_EXIT_FAIL;
                }
                fds[n++] = r;
        }
        r = console_call_raw(c, "install", "InstallPlugin", params, fds, n, ret_params, ret_error);
        for (size_t j = 0; j < n; j++)
                safe_close(fds[j]);
        return r;
}

/*
 * Prints UpdateRefused in words: a changed text without a new MAJOR version names the texts
 * that changed (the new manifest is in the snapshot f, the installed one from ListPlugins) and
 * the version the publisher must use; the others as console_print_error() does.
 */
static int print_update_refused(VarlinkClient *c, const InstallFiles *f, json_t *params) {
        _cleanup_(manifest_freep) Manifest *nm = NULL;
        _cleanup_(json_decrefp) json_t *old = NULL;
        _cleanup_free_ char *text = NULL;
        const char *reason = console_json_string(params, "reason");
        const char *installed = console_json_string(params, "installed");
        ManifestDiag diag = {};
        char changed[32] = "";
        size_t len;

        if (!reason || strcmp(reason, "UPDATE_REFUSED_MEANING") != 0 || !installed ||
            f->snap[FILE_MANIFEST] < 0 ||
            release_read_fd(f->snap[FILE_MANIFEST], RELEASE_MANIFEST_MAX, &text, &len) < 0 ||
            manifest_parse(text, len, &nm, &diag) < 0)
                return console_print_error("install", CONSOLE_INTERFACE ".UpdateRefused", params);
        old = find_installed(c, nm->name, installed);
        changed_texts(old, nm->question, nm->one, nm->zero, changed);
        fputs("lockctl: install refused: UPDATE_REFUSED_MEANING: ", stderr);
        console_fputs_escaped(nm->name, stderr);
        fputc(' ', stderr);
        console_fputs_escaped(nm->version, stderr);
        fprintf(stderr,
                " changes the %s of installed %s without a new MAJOR version: a changed "
                "question, one or zero needs version %u.0.0 or later (and the plugin's name "
                "typed to accept it); nothing was changed\n",
                changed[0] ? changed : "question, one or zero", installed, nm->version_major + 1);
        return LOCKCTL_EXIT_FAIL;
}

/*
 * Sends the release in f with params (marketplace, and accept when non-NULL), asking for the
 * plugin's typed name when an update needs it and sending the same snapshots again with it.
 * 0 and *ret_reply (InstallPlugin's answer), or an exit code after printing why.
 */
static int install_send(VarlinkClient *c, const InstallFiles *f, json_t *params, const char *accept,
                        json_t **ret_reply) {
        _cleanup_(json_decrefp) json_t *reply = NULL;
        _cleanup_free_ char *error = NULL, *typed = NULL;
        int r;

        if (accept && json_object_set_new(params, "accept_name", json_string(accept)) < 0) {
                fprintf(stderr, "lockctl: --accept-name must be UTF-8\n");
                return LOCKCTL_EXIT_USAGE;
        }
        r = install_call(c, f, params, &reply, &error);
        if (r != 0)
                return r;
        if (error && !accept && strcmp(error, CONSOLE_INTERFACE ".UpdateNeedsTypedName") == 0) {
                r = ask_typed_name(c, reply, &typed);
                if (r != 0)
                        return r;
                if (json_object_set_new(params, "accept_name", json_string(typed)) < 0) {
                        fprintf(stderr, "lockctl: install refused: the typed name is not "
                                        "UTF-8\n");
                        return LOCKCTL_EXIT_FAIL;
                }
                json_decref(TAKE_PTR(reply));
                free(TAKE_PTR(error));
                r = install_call(c, f, params, &reply, &error);
                if (r != 0)
                        return r;
                if (error && strcmp(error, CONSOLE_INTERFACE ".UpdateNeedsTypedName") == 0) {
                        fprintf(stderr, "lockctl: install refused: what was typed is not the "
                                        "plugin's name; nothing was changed\n");
                        return LOCKCTL_EXIT_FAIL;
                }
        } else if (error && strcmp(error, CONSOLE_INTERFACE ".UpdateNeedsTypedName") == 0) {
                fprintf(stderr, "lockctl: install refused: --accept-name is not the plugin's "
                                "name; nothing was changed\n");
                return LOCKCTL_EXIT_FAIL;
        }
        if (error && strcmp(error, CONSOLE_INTERFACE ".UpdateRefused") == 0)
                return print_update_refused(c, f, reply);
        if (error)
                return remote_print_error("install", error, reply);
        *ret_reply = TAKE_PTR(reply);
        return 0;
}

/* Prints an install's answer: "installed NAME VERSION from marketplace M[, replacing V]" and the
 * question. */
static int print_installed(const json_t *reply) {
        json_t *plugin = json_object_get(reply, "plugin");

        fputs("installed ", stdout);
        console_fputs_escaped(console_json_string(plugin, "name"), stdout);
        putchar(' ');
        console_fputs_escaped(console_json_string(plugin, "version"), stdout);
        if (json_is_true(json_object_get(plugin, "signed"))) {
                fputs(" from marketplace ", stdout);
                console_fputs_escaped(console_json_string(plugin, "marketplace"), stdout);
        } else
                fputs(" unsigned", stdout);
        if (console_json_string(reply, "replaced")) {
                fputs(", replacing ", stdout);
                console_fputs_escaped(console_json_string(reply, "replaced"), stdout);
        }
        putchar('\n');
        print_question(stdout, plugin);
        return fflush(stdout) == 0 ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
}

static int usage_install(void) {
        fprintf(stderr, "usage: lockctl plugin install DIR [--marketplace NAME] [--index DIR] "
                        "[--accept-name NAME] [--json]\n"
                        "       lockctl plugin install NAME[@VERSION] [--marketplace NAME] "
                        "[--cacert FILE] [--accept-name NAME] [--json]\n");
        return LOCKCTL_EXIT_USAGE;
}

/*
 * Downloads the release e of the index ri (releases/<name>/<version>/, its four files into
 * sealed memfds, each within its cap) and sends it with the index lockd admitted. The path is
 * made of the index's name and version only, which the parser allowed as a plugin name (no '/',
 * no "..") and a SemVer: a hostile index cannot point lockctl outside releases/. 0 and
 * *ret_reply, or an exit code after printing why.
 */
static int install_from_index(VarlinkClient *c, RemoteIndex *ri, const IndexRelease *e,
                              const char *accept, json_t **ret_reply) {
        _cleanup_(install_files_done) InstallFiles f = {
                .snap = {-1, -1, -1, -1, -1, -1},
        };
        _cleanup_(json_decrefp) json_t *params = NULL;
        int r;

        if (!manifest_name_valid(e->name) || !manifest_version_valid(e->version)) {
                fprintf(stderr, "lockctl: install refused: the index names an invalid release\n");
                return LOCKCTL_EXIT_FAIL;
        }
        for (size_t k = FILE_MANIFEST; k <= FILE_BINARY_BUNDLE; k++) {
                _cleanup_free_ char *path = NULL;

                if (asprintf(&path, "releases/%s/%s/%s", e->name, e->version,
                             release_files[k].name) < 0) {
                        fprintf(stderr, "lockctl: out of memory\n");
                        return LOCKCTL_EXIT_FAIL;
                }
                f.snap[k] = fetcher_get(ri->fetcher, path, release_files[k].max);
                if (f.snap[k] < 0)
                        return LOCKCTL_EXIT_FAIL;
        }
        f.snap[FILE_INDEX] = fd_reopen_readonly(ri->index_fd);
        f.snap[FILE_INDEX_BUNDLE] = fd_reopen_readonly(ri->bundle_fd);
        params = json_pack("{s:s}", "marketplace", ri->marketplace);
        if (!params || f.snap[FILE_INDEX] < 0 || f.snap[FILE_INDEX_BUNDLE] < 0) {
                fprintf(stderr, "lockctl: out of memory\n");
                return LOCKCTL_EXIT_FAIL;
        }
        r = install_send(c, &f, params, accept, ret_reply);
        return r;
}

/* Whether the installed entry p is exactly the release e of marketplace m: same version, same
 * marketplace, same digests. */
static bool same_release(const json_t *p, const IndexRelease *e, const char *m) {
        char msha[65], bsha[65];
        const char *pm = console_json_string(p, "marketplace");
        const char *pv = console_json_string(p, "version");

        hex_encode(e->manifest_sha256, 32, msha);
        hex_encode(e->binary_sha256, 32, bsha);
        return p && pv && pm && strcmp(pv, e->version) == 0 && strcmp(pm, m) == 0 &&
               json_is_true(json_object_get(p, "signed")) &&
               strcmp(console_json_string(p, "manifest_sha256") ?: "", msha) == 0 &&
               strcmp(console_json_string(p, "binary_sha256") ?: "", bsha) == 0;
}

/* What the marketplaces offer of one NAME[@VERSION]. */
typedef struct Offers {
        const IndexRelease *entry; /* the release found first, in the chosen index */
        size_t n_found;            /* how many marketplaces offer it */
        char offered[256];         /* their names, ", " between them, as many as fit */
        int failed;                /* the exit code of an index that could not be had, or 0 */
} Offers;

/*
 * Looks NAME (at version, or its newest) up in the index of each marketplace of list, keeping the
 * first index that offers it in *chosen and the rest in *o; an index that cannot be had says why.
 */
static void offers_find(VarlinkClient *c, const json_t *list, const char *name, const char *version,
                        const char *cacert, RemoteIndex **chosen, Offers *o) {
        json_t *m;
        size_t i;
        int r;

        json_array_foreach(list, i, m) {
                _cleanup_(remote_index_freep) RemoteIndex *ri = NULL;
                const IndexRelease *e;
                const char *mname = console_json_string(m, "name");

                r = remote_index_load(c, "install", mname, console_json_string(m, "url"), cacert,
                                      &ri);
                if (r != 0) {
                        o->failed = r;
                        continue;
                }
                e = version ? index_find(ri->index, name, version)
                            : index_find_newest(ri->index, name);
                if (!e)
                        continue;
                o->n_found++;
                if (strlen(o->offered) + strlen(mname) + 3 < sizeof(o->offered)) {
                        if (o->offered[0])
                                strcat(o->offered, ", ");
                        strcat(o->offered, mname);
                }
                if (!*chosen) {
                        o->entry = e;
                        *chosen = TAKE_PTR(ri);
                }
        }
}

/*
 * plugin install NAME[@VERSION] [--marketplace M] [--cacert FILE] [--accept-name N] [--json]:
 * finds NAME in the indexes of the marketplaces with a URL (or M's alone), at VERSION or its
 * newest, and installs it. The release already installed from there prints "no change" and
 * exits 0, so that configuration management can run it again and again.
 */
static int install_by_name(const char *spec, const char *marketplace, const char *cacert,
                           const char *accept, bool json) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(json_decrefp) json_t *list = NULL, *plugins = NULL, *reply = NULL;
        _cleanup_(remote_index_freep) RemoteIndex *chosen = NULL;
        _cleanup_free_ char *name = strdup(spec);
        const char *version = NULL;
        Offers o = {};
        char *at;
        json_t *p;
        int r;

        if (!name) {
                fprintf(stderr, "lockctl: out of memory\n");
                return LOCKCTL_EXIT_FAIL;
        }
        at = strchr(name, '@');
        if (at) {
                *at = 0;
                version = at + 1;
        }
        if (!manifest_name_valid(name) || (version && !manifest_version_valid(version))) {
                fprintf(stderr,
                        "lockctl: %s is neither a release directory nor a plugin "
                        "NAME[@MAJOR.MINOR.PATCH]\n",
                        spec);
                return usage_install();
        }
        r = console_connect(&c);
        if (r != 0)
                return r;
        varlink_client_set_timeout(c, INSTALL_TIMEOUT_USEC);
        r = remote_marketplaces(c, "install", marketplace, &list);
        if (r != 0)
                return r;
        offers_find(c, list, name, version, cacert, &chosen, &o);
        /* An index that could not be had said why already; "not offered" would be a guess. */
        if (o.n_found == 0 && o.failed)
                return o.failed;
        if (o.n_found == 0) {
                fprintf(stderr, "lockctl: install refused: %s%s%s is not offered by %s%s\n", name,
                        version ? "@" : "", version ? version : "",
                        marketplace ? "marketplace " : "any marketplace with a URL",
                        marketplace ? marketplace : "");
                return o.failed ? o.failed : LOCKCTL_EXIT_FAIL;
        }
        if (o.n_found > 1) {
                fprintf(stderr,
                        "lockctl: install refused: %s is offered by marketplaces %s: "
                        "choose one with --marketplace NAME\n",
                        name, o.offered);
                return LOCKCTL_EXIT_USAGE;
        }

        plugins = console_installed_plugins(c, "install");
        if (!plugins)
                return LOCKCTL_EXIT_FAIL;
        p = console_plugin_find(plugins, name);
        if (p && same_release(p, o.entry, chosen->marketplace)) {
                if (json)
                        return console_print_json_steal(
                                json_pack("{s:O, s:b}", "plugin", p, "changed", 0));
                printf("%s %s from marketplace %s: no change (installed already)\n", o.entry->name,
                       o.entry->version, chosen->marketplace);
                return fflush(stdout) == 0 ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
        }
        r = install_from_index(c, chosen, o.entry, accept, &reply);
        if (r != 0)
                return r;
        if (json) {
                /* As the "no change" answer has it, so that a script tells the two apart. */
                if (json_object_set_new(reply, "changed", json_true()) < 0)
                        return LOCKCTL_EXIT_FAIL;
                return console_print_json(reply);
        }
        return print_installed(reply);
}

/*
 * Snapshots the release in dir into *f, both bundles with marketplace (none without it), and the
 * index in the directory index (may be NULL): 0, or an exit code after printing why.
 */
static int snapshot_release(const char *dir, const char *marketplace, const char *index,
                            InstallFiles *f) {
        _cleanup_close_ int dirfd = -1, idxfd = -1;
        bool have_bundle = false, missing_bundle = false;
        int r;

        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", dir, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        r = snapshot_file(dirfd, dir, FILE_MANIFEST, false, f);
        if (r == 0)
                r = snapshot_file(dirfd, dir, FILE_BINARY, false, f);
        if (r != 0)
                return r;
        for (size_t k = FILE_MANIFEST_BUNDLE; k <= FILE_BINARY_BUNDLE; k++) {
                r = snapshot_file(dirfd, dir, k, true, f);
                if (r == -ENOENT) {
                        missing_bundle = true;
                        if (marketplace) {
                                fprintf(stderr,
                                        "lockctl: %s/%s: missing; a release installed from "
                                        "marketplace '%s' needs both bundles\n",
                                        dir, release_files[k].name, marketplace);
                                return LOCKCTL_EXIT_USAGE;
                        }
                } else if (r != 0)
                        return r;
                else
                        have_bundle = true;
        }
        /* A signed release is never installed as unsigned by leaving out --marketplace, nor is a
         * half-signed one sent at all: the human says which trust applies. */
        if (!marketplace && have_bundle) {
                fprintf(stderr,
                        "lockctl: %s holds %s: name the marketplace to verify it under with "
                        "--marketplace NAME\n",
                        dir, missing_bundle ? "one Sigstore bundle of two" : "Sigstore bundles");
                return LOCKCTL_EXIT_USAGE;
        }
        if (!index)
                return 0;
        idxfd = open(index, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (idxfd < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", index, strerror(errno));
                return LOCKCTL_EXIT_USAGE;
        }
        r = snapshot_file(idxfd, index, FILE_INDEX, false, f);
        if (r == 0)
                r = snapshot_file(idxfd, index, FILE_INDEX_BUNDLE, false, f);
        return r;
}

/*
 * plugin install DIR [--marketplace NAME] [--index DIR] [--accept-name NAME] [--json]: sends the
 * release in DIR to lockd (InstallPlugin). With --marketplace both bundles must be in DIR; without
 * it, DIR must hold none (an unsigned install, which lockd's policy decides). An update that
 * changes the question asks for the plugin's name on the terminal, or takes --accept-name.
 * plugin install NAME[@VERSION] installs from a marketplace's URL (install_by_name()): an
 * argument that is an existing directory is a release directory, anything else a name.
 */
int verb_plugin_install(int argc, char **argv) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(json_decrefp) json_t *params = NULL, *reply = NULL;
        _cleanup_(install_files_done) InstallFiles f = {
                .snap = {-1, -1, -1, -1, -1, -1},
        };
        const char *dir = NULL, *marketplace = NULL, *index = NULL, *accept = NULL;
        const char *cacert = NULL;
        bool json = false;
        struct stat st;
        int r;

        for (int i = 0; i < argc; i++) {
                if ((r = lockctl_option(argc, argv, &i, "--marketplace", &marketplace)) != 0 ||
                    (r = lockctl_option(argc, argv, &i, "--index", &index)) != 0 ||
                    (r = lockctl_option(argc, argv, &i, "--cacert", &cacert)) != 0 ||
                    (r = lockctl_option(argc, argv, &i, "--accept-name", &accept)) != 0) {
                        if (r < 0)
                                return usage_install();
                } else if (strcmp(argv[i], "--json") == 0)
                        json = true;
                else if (argv[i][0] == '-' && argv[i][1] != 0) {
                        fprintf(stderr, "lockctl: unknown option '%s'\n", argv[i]);
                        return usage_install();
                } else if (!dir)
                        dir = argv[i];
                else
                        return usage_install();
        }
        if (!dir)
                return usage_install();
        if (marketplace && marketplace[0] == 0) {
                fprintf(stderr, "lockctl: --marketplace takes a name\n");
                return usage_install();
        }
        if (stat(dir, &st) < 0 && errno == ENOENT && !strchr(dir, '/')) {
                if (index) {
                        fprintf(stderr, "lockctl: --index is for a release directory: a plugin "
                                        "installed by name comes with its marketplace's index\n");
                        return usage_install();
                }
                return install_by_name(dir, marketplace, cacert, accept, json);
        }
        if (cacert) {
                fprintf(stderr, "lockctl: --cacert is for an install by name from a "
                                "marketplace's https:// URL\n");
                return usage_install();
        }
        if (index && !marketplace) {
                fprintf(stderr, "lockctl: --index needs --marketplace: the index is verified "
                                "under that marketplace\n");
                return usage_install();
        }

        r = snapshot_release(dir, marketplace, index, &f);
        if (r != 0)
                return r;

        params = json_object();
        if (!params || (marketplace &&
                        json_object_set_new(params, "marketplace", json_string(marketplace)) < 0)) {
                fprintf(stderr, "lockctl: --marketplace must be UTF-8\n");
                return LOCKCTL_EXIT_USAGE;
        }

        r = console_connect(&c);
        if (r != 0)
                return r;
        varlink_client_set_timeout(c, INSTALL_TIMEOUT_USEC);
        r = install_send(c, &f, params, accept, &reply);
        if (r != 0)
                return r;
        if (json)
                return console_print_json(reply);
        return print_installed(reply);
}

/* Whether the plugin p (a ListPlugins entry) or index entry matches WORD: a case-insensitive
 * substring of its name or question; NULL matches everything. */
static bool matches(const char *word, const char *name, const char *question) {
        return !word || strcasestr(name, word) || (question && strcasestr(question, word));
}

/*
 * The question of release e: its plugin.toml downloaded (64 KiB at most), its SHA-256 checked
 * against the index lockd verified (so the text shown is the signed one) and parsed strictly.
 * A new manifest, or NULL after printing why.
 */
static Manifest *fetch_manifest(RemoteIndex *ri, const IndexRelease *e) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        _cleanup_close_ int fd = -1;
        Manifest *m = NULL;
        ManifestDiag diag = {};
        uint8_t digest[32];
        size_t len;

        if (asprintf(&path, "releases/%s/%s/%s", e->name, e->version, RELEASE_MANIFEST_FILE) < 0)
                return NULL;
        fd = fetcher_get(ri->fetcher, path, RELEASE_MANIFEST_MAX);
        if (fd < 0 || release_read_fd(fd, RELEASE_MANIFEST_MAX, &text, &len) < 0)
                return NULL;
        sha256(text, len, digest);
        if (memcmp(digest, e->manifest_sha256, 32) != 0) {
                fprintf(stderr,
                        "lockctl: %s %s of marketplace %s: %s: "
                        "RELEASE_E_INDEX_MISMATCH: its SHA-256 differs from the index\n",
                        e->name, e->version, ri->marketplace, path);
                return NULL;
        }
        if (manifest_parse(text, len, &m, &diag) < 0) {
                fprintf(stderr, "lockctl: %s %s of marketplace %s: %s does not parse\n", e->name,
                        e->version, ri->marketplace, path);
                return NULL;
        }
        return m;
}

/*
 * Appends to out each plugin of ri's index, at its newest release, whose name or question holds
 * word, with the version installed of it (plugins); a manifest that cannot be had sets *failed.
 * 0, or LOCKCTL_EXIT_FAIL when out of memory.
 */
static int search_index(RemoteIndex *ri, const char *word, json_t *plugins, json_t *out,
                        int *failed) {
        for (size_t k = 0; k < ri->index->n_releases; k++) {
                const IndexRelease *e = &ri->index->releases[k];
                _cleanup_(manifest_freep) Manifest *man = NULL;
                json_t *p;

                /* Each name once, at its newest version. */
                if (index_find_newest(ri->index, e->name) != e)
                        continue;
                man = fetch_manifest(ri, e);
                if (!man) {
                        *failed = LOCKCTL_EXIT_FAIL;
                        continue;
                }
                if (!matches(word, e->name, man->question))
                        continue;
                p = console_plugin_find(plugins, e->name);
                if (json_array_append_new(
                            out, json_pack("{s:s, s:s, s:s, s:s, s:s?}", "name", e->name, "version",
                                           e->version, "question", man->question, "marketplace",
                                           ri->marketplace, "installed",
                                           p ? console_json_string(p, "version") : NULL)) < 0)
                        return LOCKCTL_EXIT_FAIL;
        }
        return 0;
}

/* Prints search's findings (out) for the human: "NAME VERSION MARKETPLACE", the question below. */
static void print_search(const json_t *out) {
        json_t *m;
        size_t i;

        json_array_foreach(out, i, m) {
                console_fputs_escaped(console_json_string(m, "name"), stdout);
                putchar(' ');
                console_fputs_escaped(console_json_string(m, "version"), stdout);
                putchar(' ');
                console_fputs_escaped(console_json_string(m, "marketplace"), stdout);
                if (console_json_string(m, "installed")) {
                        fputs(" (installed: ", stdout);
                        console_fputs_escaped(console_json_string(m, "installed"), stdout);
                        putchar(')');
                }
                fputs("\n    ", stdout);
                console_fputs_escaped(console_json_string(m, "question"), stdout);
                putchar('\n');
        }
}

/*
 * plugin search [WORD] [--marketplace M] [--cacert FILE] [--json]: the newest release of every
 * plugin the marketplaces with a URL offer (their indexes admitted by lockd), whose name or
 * question holds WORD: "NAME VERSION MARKETPLACE" and the question indented; --json an array of
 * {name, version, question, marketplace, installed}. Exit 0, or 1 when a marketplace's index
 * could not be had (the others are still listed).
 */
int verb_plugin_search(int argc, char **argv) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(json_decrefp) json_t *list = NULL, *out = json_array(), *plugins = NULL;
        const char *word = NULL, *marketplace = NULL, *cacert = NULL;
        bool json = false;
        json_t *m;
        size_t i;
        int r, failed = 0;

        for (int k = 0; k < argc; k++) {
                if ((r = lockctl_option(argc, argv, &k, "--marketplace", &marketplace)) != 0 ||
                    (r = lockctl_option(argc, argv, &k, "--cacert", &cacert)) != 0) {
                        if (r < 0)
                                goto usage;
                } else if (strcmp(argv[k], "--json") == 0)
                        json = true;
                else if (argv[k][0] == '-' && argv[k][1] != 0) {
                        fprintf(stderr, "lockctl: unknown option '%s'\n", argv[k]);
                        goto usage;
                } else if (!word)
                        word = argv[k];
                else
                        goto usage;
        }
        if (!out)
                return LOCKCTL_EXIT_FAIL;
        r = console_connect(&c);
        if (r != 0)
                return r;
        varlink_client_set_timeout(c, INSTALL_TIMEOUT_USEC);
        r = remote_marketplaces(c, "search", marketplace, &list);
        if (r != 0)
                return r;
        if (json_array_size(list) == 0) {
                fprintf(stderr, "lockctl: search: no marketplace has a URL (lockctl marketplace "
                                "add NAME --url URL ...)\n");
                return LOCKCTL_EXIT_FAIL;
        }
        plugins = console_installed_plugins(c, "search");
        if (!plugins)
                return LOCKCTL_EXIT_FAIL;
        json_array_foreach(list, i, m) {
                _cleanup_(remote_index_freep) RemoteIndex *ri = NULL;

                r = remote_index_load(c, "search", console_json_string(m, "name"),
                                      console_json_string(m, "url"), cacert, &ri);
                if (r != 0) {
                        failed = r;
                        continue;
                }
                r = search_index(ri, word, plugins, out, &failed);
                if (r != 0)
                        return r;
        }
        if (json) {
                r = console_print_json_steal(json_pack("{s:O}", "plugins", out));
                return r != 0 ? r : failed;
        }
        print_search(out);
        if (fflush(stdout) != 0)
                return LOCKCTL_EXIT_FAIL;
        return failed;

usage:
        fprintf(stderr, "usage: lockctl plugin search [WORD] [--marketplace NAME] "
                        "[--cacert FILE] [--json]\n");
        return LOCKCTL_EXIT_USAGE;
}

/* What plugin update carries from one installed plugin to the next. */
typedef struct Update {
        VarlinkClient *c;
        const json_t *list; /* the marketplaces with a URL */
        const char *names[64];
        size_t n_names; /* the plugins named; none: every one */
        const char *cacert, *accept;
        bool json;
        RemoteIndex *indexes[64]; /* the indexes loaded so far, one per marketplace */
        size_t n_indexes;
        json_t *out; /* {name, installed, newest, result} of each plugin looked at */
        int result;  /* the exit code so far */
} Update;

/*
 * Updates the installed plugin p when it is wanted, signed, and its marketplace's index offers a
 * newer release, noting what became of it in u->out and u->result: false when the indexes are
 * full and no further plugin can be looked at, else true.
 */
static bool update_plugin(Update *u, const json_t *p) {
        _cleanup_(json_decrefp) json_t *reply = NULL;
        const char *name = console_json_string(p, "name");
        const char *version = console_json_string(p, "version");
        const char *mk = console_json_string(p, "marketplace");
        const IndexRelease *e;
        RemoteIndex *ri = NULL;
        const char *url = NULL, *state;
        json_t *m;
        size_t j;
        bool wanted = u->n_names == 0;
        int r;

        for (size_t k = 0; k < u->n_names; k++)
                wanted = wanted || strcmp(u->names[k], name) == 0;
        if (!wanted || !json_is_true(json_object_get(p, "signed")) || !mk)
                return true;
        json_array_foreach(u->list, j, m) {
                if (strcmp(console_json_string(m, "name"), mk) == 0)
                        url = console_json_string(m, "url");
        }
        if (!url) {
                if (u->n_names > 0) {
                        fprintf(stderr,
                                "lockctl: update: %s comes from marketplace %s, "
                                "which has no URL\n",
                                name, mk);
                        u->result = LOCKCTL_EXIT_FAIL;
                }
                return true;
        }
        for (size_t k = 0; k < u->n_indexes; k++)
                if (strcmp(u->indexes[k]->marketplace, mk) == 0)
                        ri = u->indexes[k];
        if (!ri) {
                if (u->n_indexes >= ELEMENTSOF(u->indexes))
                        return false;
                r = remote_index_load(u->c, "update", mk, url, u->cacert, &ri);
                if (r != 0) {
                        u->result = r;
                        return true;
                }
                u->indexes[u->n_indexes++] = ri;
        }
        e = index_find_newest(ri->index, name);
        if (!e || index_version_compare(e->version, version) <= 0) {
                state = "up to date";
                if (!u->json)
                        printf("%s %s: up to date\n", name, version);
        } else {
                const char *acc = u->accept && strcmp(u->accept, name) == 0 ? u->accept : NULL;

                r = install_from_index(u->c, ri, e, acc, &reply);
                if (r != 0)
                        u->result = r;
                state = r != 0 ? "refused" : "updated";
                if (r == 0 && !u->json)
                        (void)print_installed(reply);
        }
        if (json_array_append_new(u->out, json_pack("{s:s, s:s, s:s?, s:s}", "name", name,
                                                    "installed", version, "newest",
                                                    e ? e->version : NULL, "result", state)) < 0)
                u->result = LOCKCTL_EXIT_FAIL;
        return true;
}

/*
 * plugin update [NAME...] [--cacert FILE] [--accept-name NAME] [--json]: every installed plugin
 * (or those named) whose marketplace has a URL and whose index offers a newer release is
 * installed at that release; a MAJOR update that changes question, one or zero asks for the
 * typed name as install does. Prints one line per plugin ("updated", "up to date"); --json an
 * array of {name, installed, newest, result}. Exit 0 when every update went in.
 */
int verb_plugin_update(int argc, char **argv) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(json_decrefp) json_t *plugins = NULL, *list = NULL, *out = json_array();
        Update u = {};
        size_t i;
        json_t *p;
        int r;

        for (int k = 0; k < argc; k++) {
                if ((r = lockctl_option(argc, argv, &k, "--cacert", &u.cacert)) != 0 ||
                    (r = lockctl_option(argc, argv, &k, "--accept-name", &u.accept)) != 0) {
                        if (r < 0)
                                goto usage;
                } else if (strcmp(argv[k], "--json") == 0)
                        u.json = true;
                else if (argv[k][0] == '-' && argv[k][1] != 0) {
                        fprintf(stderr, "lockctl: unknown option '%s'\n", argv[k]);
                        goto usage;
                } else if (u.n_names < ELEMENTSOF(u.names))
                        u.names[u.n_names++] = argv[k];
                else
                        goto usage;
        }
        if (!out)
                return LOCKCTL_EXIT_FAIL;
        r = console_connect(&c);
        if (r != 0)
                return r;
        varlink_client_set_timeout(c, INSTALL_TIMEOUT_USEC);
        plugins = console_installed_plugins(c, "update");
        if (!plugins)
                return LOCKCTL_EXIT_FAIL;
        for (size_t k = 0; k < u.n_names; k++)
                if (!console_plugin_find(plugins, u.names[k])) {
                        fprintf(stderr, "lockctl: update refused: no plugin '%s' is installed\n",
                                u.names[k]);
                        return LOCKCTL_EXIT_FAIL;
                }
        r = remote_marketplaces(c, "update", NULL, &list);
        if (r != 0)
                return r;

        u.c = c;
        u.list = list;
        u.out = out;
        json_array_foreach(plugins, i, p) {
                if (!update_plugin(&u, p))
                        break;
        }
        for (size_t k = 0; k < u.n_indexes; k++)
                remote_index_free(u.indexes[k]);
        if (u.json) {
                r = console_print_json_steal(json_pack("{s:O}", "plugins", out));
                return r != 0 ? r : u.result;
        }
        return fflush(stdout) == 0 ? u.result : LOCKCTL_EXIT_FAIL;

usage:
        fprintf(stderr, "usage: lockctl plugin update [NAME...] [--cacert FILE] "
                        "[--accept-name NAME] [--json]\n");
        return LOCKCTL_EXIT_USAGE;
}

/* plugin list [--json]: one line per plugin, "NAME VERSION protocol N MARKETPLACE", then its
 * question indented. */
int verb_plugin_list(int argc, char **argv) {
        _cleanup_(json_decrefp) json_t *reply = NULL;
        json_t *plugins, *p;
        bool json = false;
        size_t i;
        int r;

        r = console_parse_json_only(argc, argv, "usage: lockctl plugin list [--json]", &json);
        if (r != LOCKCTL_EXIT_OK)
                return r;
        r = console_call_all_pages("plugin list", "ListPlugins", NULL, "plugins", &reply);
        if (r != 0)
                return r;
        if (json)
                return console_print_json(reply);
        plugins = json_object_get(reply, "plugins");
        json_array_foreach(plugins, i, p) {
                const char *m = console_json_string(p, "marketplace");

                console_fputs_escaped(console_json_string(p, "name"), stdout);
                putchar(' ');
                console_fputs_escaped(console_json_string(p, "version"), stdout);
                printf(" protocol %lld ", console_json_integer(p, "protocol", 0));
                if (json_is_true(json_object_get(p, "signed")) && m && m[0] != 0)
                        console_fputs_escaped(m, stdout);
                else
                        fputs("(unsigned)", stdout);
                fputs("\n    ", stdout);
                console_fputs_escaped(console_json_string(p, "question"), stdout);
                putchar('\n');
        }
        return fflush(stdout) == 0 ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
}

/* plugin remove NAME [--version V]: RemovePlugin. */
int verb_plugin_remove(int argc, char **argv) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(json_decrefp) json_t *params = NULL, *reply = NULL;
        _cleanup_free_ char *error = NULL;
        const char *name = NULL, *version = NULL;
        bool json = console_take_json(&argc, argv);
        int r;

        for (int i = 0; i < argc; i++) {
                if ((r = lockctl_option(argc, argv, &i, "--version", &version)) != 0) {
                        if (r < 0)
                                goto usage;
                } else if (argv[i][0] == '-' && argv[i][1] != 0) {
                        fprintf(stderr, "lockctl: unknown option '%s'\n", argv[i]);
                        goto usage;
                } else if (!name)
                        name = argv[i];
                else
                        goto usage;
        }
        if (!name || name[0] == 0)
                goto usage;
        params = json_object();
        if (!params || json_object_set_new(params, "name", json_string(name)) < 0 ||
            (version && json_object_set_new(params, "version", json_string(version)) < 0)) {
                fprintf(stderr, "lockctl: the name and version must be UTF-8\n");
                return LOCKCTL_EXIT_USAGE;
        }
        r = console_connect(&c);
        if (r != 0)
                return r;
        r = console_call_raw(c, "plugin remove", "RemovePlugin", params, NULL, 0, &reply, &error);
        if (r != 0)
                return r;
        /* A version that is not installed, of a plugin that is: say which version is. */
        if (error && version && strcmp(error, CONSOLE_INTERFACE ".UnknownPlugin") == 0) {
                _cleanup_(json_decrefp) json_t *plugins = console_installed_plugins(c, "plugin remove");
                json_t *p = plugins ? console_plugin_find(plugins, name) : NULL;
                const char *v = p ? console_json_string(p, "version") : NULL;

                if (v) {
                        fputs("lockctl: plugin remove refused: ", stderr);
                        console_fputs_escaped(name, stderr);
                        fputc(' ', stderr);
                        console_fputs_escaped(version, stderr);
                        fputs(" is not installed; the installed version is ", stderr);
                        console_fputs_escaped(v, stderr);
                        fputs(" (remove it with --version ", stderr);
                        console_fputs_escaped(v, stderr);
                        fputs(", or every version without --version)\n", stderr);
                        return LOCKCTL_EXIT_FAIL;
                }
        }
        if (error)
                return console_print_error("plugin remove", error, reply);
        if (json)
                return console_print_json_steal(json_pack("{s:s, s:s?, s:b}", "name", name,
                                                          "version", version, "removed", 1));
        fputs("removed ", stdout);
        console_fputs_escaped(name, stdout);
        if (version) {
                putchar(' ');
                console_fputs_escaped(version, stdout);
        }
        putchar('\n');
        return fflush(stdout) == 0 ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;

usage:
        fprintf(stderr, "usage: lockctl plugin remove NAME [--version VERSION] [--json]\n");
        return LOCKCTL_EXIT_USAGE;
}

/* Overwrites every string value of obj in place: the inputs are the human's and may be secrets. */
static void wipe_strings(json_t *obj) {
        const char *key;
        json_t *v;

        json_object_foreach(obj, key, v) {
                if (json_is_string(v))
                        explicit_bzero((char *)json_string_value(v), json_string_length(v));
        }
}

static void wipe_and_decrefp(json_t **obj) {
        if (*obj) {
                wipe_strings(*obj);
                json_decref(*obj);
        }
}

/* Prints TestPlugin's reply like plugin test does: the outcome on stdout, the rest on stderr. */
static int print_run(const json_t *reply) {
        json_t *result = json_object_get(reply, "result");
        const char *error = console_json_string(reply, "error");
        const char *unit = console_json_string(reply, "unit");
        const char *detail = console_json_string(reply, "detail");
        bool answered = false;

        if (json_is_integer(result) &&
            (json_integer_value(result) == 0 || json_integer_value(result) == 1)) {
                printf("%d\n", (int)json_integer_value(result));
                answered = true;
        } else if (error) {
                console_fputs_escaped(error, stdout);
                putchar('\n');
        } else {
                fprintf(stderr, "lockctl: plugin run failed: lockd answered neither a result "
                                "nor an error\n");
                return LOCKCTL_EXIT_FAIL;
        }
        if (fflush(stdout) != 0)
                return LOCKCTL_EXIT_FAIL;
        if (!answered) {
                fputs("cause: ", stderr);
                console_fputs_escaped(console_json_string(reply, "cause"), stderr);
                fputc('\n', stderr);
        }
        if (unit) {
                fputs("unit: ", stderr);
                console_fputs_escaped(unit, stderr);
                fputc('\n', stderr);
        }
        fprintf(stderr,
                "cpu: %.3f s, peak memory: ", console_json_integer(reply, "cpu_usec", 0) / 1e6);
        /* Absent: lockd could not tell the plugin's own peak. */
        if (console_json_integer(reply, "peak_memory_bytes", -1) >= 0)
                fprintf(stderr, "%.1f MiB",
                        console_json_integer(reply, "peak_memory_bytes", 0) / (double)MiB);
        else
                fputs("unknown", stderr);
        fprintf(stderr,
                ", wall: %.3f s (from execve; %.3f s before "
                "it, %.3f s of them waiting for the scope), stderr: %lld bytes (discarded)\n",
                console_json_integer(reply, "wall_usec", 0) / 1e6,
                console_json_integer(reply, "setup_usec", 0) / 1e6,
                console_json_integer(reply, "scope_wait_usec", 0) / 1e6,
                console_json_integer(reply, "stderr_bytes", 0));
        if (detail) {
                fputs("detail (shown here only): ", stderr);
                console_fputs_escaped(detail, stderr);
                fputc('\n', stderr);
        }
        return answered ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
}

/*
 * Asks for the value of input name on the terminal, without echo: a value typed there never
 * shows in the process list as a command line does. 0 with *ret (a JSON string; NULL when the
 * value is not UTF-8), or an exit code after printing why.
 */
static int ask_input(const char *name, json_t **ret) {
        _cleanup_free_ char *prompt = NULL, *esc = NULL, *value = NULL;
        int r;

        esc = escape_bytes(name, strlen(name));
        if (!esc || asprintf(&prompt, "Value of input '%s' (not echoed): ", esc) < 0) {
                fprintf(stderr, "lockctl: out of memory\n");
                return LOCKCTL_EXIT_FAIL;
        }
        r = console_tty_read_line(NULL, prompt, true, RUN_INPUT_BYTES_MAX, &value);
        if (r == -ENXIO) {
                fprintf(stderr,
                        "lockctl: --input %s asks for its value on the terminal, and "
                        "there is none: give --input %s=VALUE\n",
                        esc, esc);
                return LOCKCTL_EXIT_USAGE;
        }
        if (r < 0) {
                fprintf(stderr, "lockctl: input_invalid: the value of '%s': %s\n", esc,
                        r == -EOVERFLOW ? "too long"
                        : r == -ENODATA ? "nothing typed"
                                        : strerror(-r));
                return LOCKCTL_EXIT_USAGE;
        }
        *ret = json_string(value);
        explicit_bzero(value, strlen(value));
        return 0;
}

/*
 * Puts each --input NAME=VALUE (values[], wiped in place once copied) into inputs, a bare NAME as
 * a null to ask for later: 0, or an exit code after printing why (never a value).
 */
static int inputs_given(char **values, size_t n_values, json_t *inputs) {
        for (size_t k = 0; k < n_values; k++) {
                char *eq = strchr(values[k], '=');
                json_t *s;

                if (eq == values[k] || values[k][0] == 0) {
                        fprintf(stderr, "lockctl: --input takes NAME=VALUE or NAME\n");
                        return LOCKCTL_EXIT_USAGE;
                }
                if (eq)
                        *eq = 0;
                if (json_object_get(inputs, values[k])) {
                        fprintf(stderr, "lockctl: input '%s' given twice\n", values[k]);
                        return LOCKCTL_EXIT_USAGE;
                }
                /* Never echo the value, not even when it is refused. A value to ask for on the
                 * terminal is a null here until lockd was reached. */
                if (eq) {
                        s = json_string(eq + 1);
                        explicit_bzero(eq + 1, strlen(eq + 1));
                } else
                        s = json_null();
                if (!s || json_object_set_new(inputs, values[k], s) < 0) {
                        fprintf(stderr, "lockctl: input_invalid: the name or value of an input "
                                        "is not UTF-8\n");
                        return LOCKCTL_EXIT_USAGE;
                }
        }
        return 0;
}

/* Asks on the terminal for each input that is still a null in inputs, and puts its value there:
 * 0, or an exit code after printing why. */
static int inputs_asked(json_t *inputs) {
        const char *key;
        json_t *val;
        int r;

        json_object_foreach(inputs, key, val) {
                json_t *s;

                if (!json_is_null(val))
                        continue;
                r = ask_input(key, &s);
                if (r != 0)
                        return r;
                if (!s || json_object_set_new(inputs, key, s) < 0) {
                        fprintf(stderr,
                                "lockctl: input_invalid: the value of '%s' is not "
                                "UTF-8\n",
                                key);
                        return LOCKCTL_EXIT_USAGE;
                }
        }
        return 0;
}

static int usage_run(void) {
        fprintf(stderr, "usage: lockctl plugin run NAME FILE [--input NAME[=VALUE]]... [--json]\n");
        return LOCKCTL_EXIT_USAGE;
}

/*
 * plugin run NAME FILE [--input NAME[=VALUE]]... [--json]: runs the installed plugin NAME on FILE
 * (opened here, with the human's rights) in lockd (TestPlugin). --input NAME alone asks for the
 * value on the terminal without echo. Prints 1, 0 or plugin_error on
 * stdout and the cause, unit and figures on stderr; exit 0 for an answer, 1 otherwise. The
 * input values are the human's: they go to lockd only, are never printed, and are wiped from
 * lockctl's memory (argv included) once sent.
 */
int verb_plugin_run(int argc, char **argv) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(json_decrefp) json_t *params = NULL, *reply = NULL;
        _cleanup_(wipe_and_decrefp) json_t *inputs = NULL;
        _cleanup_close_ int fd = -1;
        const char *name = NULL, *file = NULL;
        char *values[RUN_INPUTS_MAX];
        size_t n_values = 0;
        bool json = false;
        int r;

        for (int i = 0; i < argc; i++) {
                const char *v;

                if ((r = lockctl_option(argc, argv, &i, "--input", &v)) != 0) {
                        if (r < 0)
                                return usage_run();
                        if (n_values >= ELEMENTSOF(values)) {
                                fprintf(stderr, "lockctl: more than %d --input\n", RUN_INPUTS_MAX);
                                return LOCKCTL_EXIT_USAGE;
                        }
                        values[n_values++] = (char *)v;
                } else if (strcmp(argv[i], "--json") == 0)
                        json = true;
                else if (argv[i][0] == '-' && argv[i][1] != 0) {
                        fprintf(stderr, "lockctl: unknown option '%s'\n", argv[i]);
                        return usage_run();
                } else if (!name)
                        name = argv[i];
                else if (!file)
                        file = argv[i];
                else
                        return usage_run();
        }
        if (!name || !file || name[0] == 0)
                return usage_run();

        params = json_object();
        inputs = json_object();
        if (!params || !inputs || json_object_set_new(params, "name", json_string(name)) < 0) {
                fprintf(stderr, "lockctl: the plugin name must be UTF-8\n");
                return LOCKCTL_EXIT_USAGE;
        }
        r = inputs_given(values, n_values, inputs);
        if (r != 0)
                return r;

        fd = lockctl_open_file_at(AT_FDCWD, file, false);
        if (fd < 0) {
                fprintf(stderr, "lockctl: %s: %s\n", file, lockctl_open_strerror(fd));
                return LOCKCTL_EXIT_USAGE;
        }
        if (json_object_set_new(params, "file_fd", json_integer(0)) < 0) {
                fprintf(stderr, "lockctl: out of memory\n");
                return LOCKCTL_EXIT_FAIL;
        }
        r = console_connect(&c);
        if (r != 0)
                return r;

        r = inputs_asked(inputs);
        if (r != 0)
                return r;
        if (n_values > 0 && json_object_set(params, "inputs", inputs) < 0) {
                fprintf(stderr, "lockctl: out of memory\n");
                return LOCKCTL_EXIT_FAIL;
        }

        /* lockd enforces the plugin's own timeout; lockctl waits as long as it takes. */
        varlink_client_set_timeout(c, 0);
        r = console_call(c, "plugin run", "TestPlugin", params, &fd, 1, &reply);
        if (r != 0)
                return r;
        if (json) {
                r = console_print_json(reply);
                if (r != 0)
                        return r;
                return json_is_integer(json_object_get(reply, "result")) ? LOCKCTL_EXIT_OK
                                                                         : LOCKCTL_EXIT_FAIL;
        }
        return print_run(reply);
}
