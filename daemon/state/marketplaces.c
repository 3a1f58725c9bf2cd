/* The set of trusted marketplaces: the policy's, and the added ones stored under marketplaces/. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "identity.h"
#include "index-versions.h"
#include "codec.h"
#include "macro.h"
#include "marketplaces.h"
#include "release.h"
#include "sigstore-util.h"
#include "store.h"
#include "verifier.h"

_Static_assert(MARKETPLACE_NAME_MAX == MARKETPLACE_NAME_MAX,
               "the store's origin file holds marketplace names");

struct Marketplaces {
        MarketplaceEntry **entries; /* sorted by name */
        size_t n;
        size_t n_added;
};

const char *marketplace_source_name(MarketplaceSource s) {
        return s == MARKETPLACE_SOURCE_POLICY ? "policy" : "added";
}

static bool printable_ascii(const char *s) {
        for (; *s; s++)
                if (*s < 0x21 || *s > 0x7e)
                        return false;
        return true;
}

int marketplace_spec_check(const char *name, const char *issuer, const char *identity,
                           const char **ret_reason) {
        const char *reason = NULL, *why;
        size_t n_warnings;

        if (!marketplace_name_valid(name))
                reason = "the marketplace name is not [a-z0-9][a-z0-9-]{0,63}";
        else if (!issuer || strlen(issuer) > MARKETPLACE_ISSUER_MAX ||
                 strncmp(issuer, "https://", 8) != 0 || issuer[8] == 0 || !printable_ascii(issuer))
                reason = "the issuer is not an https:// URL of at most 512 printable bytes";
        /* A SAN is a URI or an e-mail address: printable ASCII without spaces. */
        else if (!identity || identity[0] == 0 || strlen(identity) > MARKETPLACE_IDENTITY_MAX ||
                 !printable_ascii(identity))
                reason = "the identity pattern is empty, too long or not printable ASCII";
        /* Before anything compiles it: some patterns make regcomp() itself exhaust memory. */
        else if (identity_pattern_check(identity, &why) < 0)
                reason = why;
        else if (identity_pattern_lint(identity, NULL, 0, &n_warnings) < 0)
                reason = "the identity pattern is not a valid extended regular expression";
        if (reason) {
                if (ret_reason)
                        *ret_reason = reason;
                return -EINVAL;
        }
        return 0;
}

int marketplace_url_check(const char *url, const char **ret_reason) {
        const char *rest = NULL;

        if (url && strncmp(url, "https://", 8) == 0)
                rest = url + 8;
        else if (url && strncmp(url, "file://", 7) == 0)
                rest = url + 7;
        if (!rest || rest[0] == 0 || strlen(url) > MARKETPLACE_URL_MAX || !printable_ascii(url) ||
            strpbrk(url, "?#") || strstr(rest, "/..")) {
                if (ret_reason)
                        *ret_reason = "the URL is not an https:// or file:// URL of at most 1024 "
                                      "printable bytes without '?', '#' or a '..' segment";
                return -EINVAL;
        }
        return 0;
}

static MarketplaceEntry *entry_free(MarketplaceEntry *e) {
        if (!e)
                return NULL;
        free(e->url);
        marketplace_done(&e->marketplace);
        safe_close(e->trusted_root_fd);
        free(e);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(MarketplaceEntry *, entry_free);

/*
 * A new entry from its checked parts and the trusted root's sealed memfd *root_fd (taken on
 * success). The root is checked by the verification helper, never parsed here: -EINVAL with
 * *ret_reason when it does not parse, -EPROTO when the helper failed (the helper's message in
 * *verr, if non-NULL).
 */
static int entry_new(const char *name, const char *issuer, const char *identity, int *root_fd,
                     MarketplaceSource source, MarketplaceEntry **ret, const char **ret_reason,
                     ReleaseError *verr) {
        _cleanup_(entry_freep) MarketplaceEntry *e = NULL;
        ReleaseError err = {};
        int r;

        r = marketplace_spec_check(name, issuer, identity, ret_reason);
        if (r < 0)
                return r;

        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->trusted_root_fd = -1;
        e->source = source;
        e->marketplace.name = strdup(name);
        e->marketplace.issuer = strdup(issuer);
        e->marketplace.identity_pattern = strdup(identity);
        if (!e->marketplace.name || !e->marketplace.issuer || !e->marketplace.identity_pattern)
                return -ENOMEM;
        r = sha256_fd(*root_fd, e->trusted_root_digest);
        if (r < 0)
                return r;
        r = verifier_check_root(*root_fd, e->trusted_root_digest, &err);
        if (verr)
                *verr = err;
        if (r == -ENOMEM)
                return r;
        if (r == -EPROTO) {
                if (ret_reason)
                        *ret_reason = "the trusted root could not be checked: the verification "
                                      "helper failed";
                return r;
        }
        if (r < 0) {
                if (ret_reason)
                        *ret_reason = "the trusted root does not parse as a Sigstore trusted root";
                return -EINVAL;
        }
        hex_encode(e->trusted_root_digest, sizeof(e->trusted_root_digest), e->trusted_root_sha256);
        e->trusted_root_fd = TAKE_FD(*root_fd);
        *ret = TAKE_PTR(e);
        return 0;
}

/* Snapshots the trusted root open at fd into a sealed memfd; -EINVAL with *ret_reason for a file
 * that is not a readable regular file or is over 1 MiB. */
static int root_snapshot(int fd, const char **ret_reason) {
        int r = release_snapshot_fd(fd, MARKETPLACE_ROOT_MAX, MARKETPLACES_ROOT_FILE, NULL);

        if (r >= 0 || r == -ENOMEM)
                return r;
        if (ret_reason)
                *ret_reason = r == -EFBIG ? "the trusted root is over 1 MiB"
                                          : "the trusted root is not a readable regular file";
        return -EINVAL;
}

/* The index where name is or would be inserted; *found says which. */
static size_t lookup(const Marketplaces *ms, const char *name, bool *found) {
        size_t lo = 0, hi = ms->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(ms->entries[mid]->marketplace.name, name);

                if (c == 0) {
                        *found = true;
                        return mid;
                }
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *found = false;
        return lo;
}

/* Inserts e (taking it) in order; the caller checked that its name is free. */
static int insert(Marketplaces *ms, MarketplaceEntry *e) {
        MarketplaceEntry **n;
        bool found;
        size_t i = lookup(ms, e->marketplace.name, &found);

        n = reallocarray(ms->entries, ms->n + 1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        ms->entries = n;
        memmove(ms->entries + i + 1, ms->entries + i, (ms->n - i) * sizeof(*n));
        ms->entries[i] = e;
        ms->n++;
        if (e->source == MARKETPLACE_SOURCE_ADDED)
                ms->n_added++;
        return 0;
}

const MarketplaceEntry *marketplaces_find(const Marketplaces *ms, const char *name) {
        bool found;
        size_t i;

        if (!ms || !name)
                return NULL;
        i = lookup(ms, name, &found);
        return found ? ms->entries[i] : NULL;
}

size_t marketplaces_n(const Marketplaces *ms) {
        return ms ? ms->n : 0;
}

const MarketplaceEntry *marketplaces_get(const Marketplaces *ms, size_t i) {
        return ms && i < ms->n ? ms->entries[i] : NULL;
}

Marketplaces *marketplaces_free(Marketplaces *ms) {
        if (!ms)
                return NULL;
        for (size_t i = 0; i < ms->n; i++)
                entry_free(ms->entries[i]);
        free(ms->entries);
        free(ms);
        return NULL;
}

void marketplace_warnings_free(char **warnings) {
        if (!warnings)
                return;
        for (char **w = warnings; *w; w++)
                free(*w);
        free(warnings);
}

static void report_fn(MarketplacesReportFn report, void *userdata, const char *name, int error,
                      const char *message) {
        if (report)
                report(name, error, message, userdata);
}

/* One policy marketplace: every failure is the policy's, and fails the load. */
static int load_spec(Marketplaces *ms, const MarketplaceSpec *spec, MarketplacesReportFn report,
                     void *userdata) {
        _cleanup_(entry_freep) MarketplaceEntry *e = NULL;
        _cleanup_close_ int fd = -1, root = -1;
        const char *reason = "invalid";
        ReleaseError verr = {};
        char msg[400];
        int r;

        if (!spec->name || !spec->trusted_root_path) {
                report_fn(report, userdata, spec->name ? spec->name : "", -EINVAL,
                          "no name or no trusted root");
                return -EINVAL;
        }
        if (marketplaces_find(ms, spec->name)) {
                report_fn(report, userdata, spec->name, -EEXIST, "named twice in the policy");
                return -EINVAL;
        }
        /* An administrator's file: lockd may open it. Snapshotted, so what was checked is kept. */
        fd = open(spec->trusted_root_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        r = fd < 0 ? negative_errno()
                   : release_snapshot_fd(fd, MARKETPLACE_ROOT_MAX, MARKETPLACES_ROOT_FILE, NULL);
        if (r < 0) {
                snprintf(msg, sizeof(msg), "cannot read the trusted root %s: %s",
                         spec->trusted_root_path,
                         r == -EBADFD ? "not a regular file" : strerror(-r));
                report_fn(report, userdata, spec->name, r, msg);
                return r;
        }
        root = r;
        r = entry_new(spec->name, spec->issuer, spec->identity, &root, MARKETPLACE_SOURCE_POLICY,
                      &e, &reason, &verr);
        if (r < 0) {
                if (r == -EPROTO)
                        snprintf(msg, sizeof(msg), "%s", verr.message);
                else
                        snprintf(msg, sizeof(msg), "%s", r == -ENOMEM ? "out of memory" : reason);
                report_fn(report, userdata, spec->name, r, msg);
                return r;
        }
        r = insert(ms, e);
        if (r < 0)
                return r;
        TAKE_PTR(e);
        return 0;
}

/* Parses marketplace.json strictly: exactly the string keys name, issuer and identity, and
 * optionally url (*ret_url NULL without it). */
static int parse_config(const char *json, size_t len, char **ret_name, char **ret_issuer,
                        char **ret_identity, char **ret_url) {
        json_t *root, *name, *issuer, *identity, *url;
        json_error_t jerr;
        int r = -EINVAL;

        /* jansson refuses a \u0000 in a string unless asked to allow it. */
        root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!root)
                return -EINVAL;
        name = json_object_get(root, "name");
        issuer = json_object_get(root, "issuer");
        identity = json_object_get(root, "identity");
        url = json_object_get(root, "url");
        if (json_is_object(root) && json_object_size(root) == (url ? 4u : 3u) &&
            json_is_string(name) && json_is_string(issuer) && json_is_string(identity) &&
            (!url || json_is_string(url))) {
                *ret_name = strdup(json_string_value(name));
                *ret_issuer = strdup(json_string_value(issuer));
                *ret_identity = strdup(json_string_value(identity));
                *ret_url = url ? strdup(json_string_value(url)) : NULL;
                r = *ret_name && *ret_issuer && *ret_identity && (!url || *ret_url) ? 0 : -ENOMEM;
        }
        json_decref(root);
        return r;
}

/* One stored marketplace, the directory name below mfd. */
static int load_stored(Marketplaces *ms, int mfd, const char *dir, const char **ret_reason) {
        _cleanup_(entry_freep) MarketplaceEntry *e = NULL;
        _cleanup_free_ char *config = NULL, *name = NULL, *issuer = NULL, *identity = NULL,
                            *url = NULL;
        _cleanup_close_ int dfd = -1, fd = -1, root = -1;
        size_t config_len;
        int r;

        *ret_reason = "cannot be read";
        dfd = openat(mfd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return negative_errno();
        r = release_read_file(dfd, MARKETPLACES_CONFIG_FILE, MARKETPLACE_CONFIG_MAX, &config,
                              &config_len);
        if (r < 0)
                return r;
        fd = openat(dfd, MARKETPLACES_ROOT_FILE,
                    O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return negative_errno();
        r = release_snapshot_fd(fd, MARKETPLACE_ROOT_MAX, MARKETPLACES_ROOT_FILE, NULL);
        if (r < 0)
                return r;
        root = r;
        r = parse_config(config, config_len, &name, &issuer, &identity, &url);
        if (r < 0) {
                *ret_reason = "malformed " MARKETPLACES_CONFIG_FILE;
                return r;
        }
        if (url) {
                r = marketplace_url_check(url, ret_reason);
                if (r < 0)
                        return r;
        }
        if (strcmp(name, dir) != 0) {
                *ret_reason = MARKETPLACES_CONFIG_FILE " names another marketplace";
                return -EINVAL;
        }
        if (marketplaces_find(ms, name)) {
                *ret_reason = "the policy has a marketplace of that name";
                return -EEXIST;
        }
        if (ms->n_added >= MARKETPLACES_MAX) {
                *ret_reason = "too many marketplaces";
                return -ENOSPC;
        }
        r = entry_new(name, issuer, identity, &root, MARKETPLACE_SOURCE_ADDED, &e, ret_reason,
                      NULL);
        if (r < 0)
                return r;
        e->url = TAKE_PTR(url);
        r = insert(ms, e);
        if (r < 0)
                return r;
        TAKE_PTR(e);
        return 0;
}

static int load_all_stored(Marketplaces *ms, int statefd, MarketplacesReportFn report,
                           void *userdata) {
        _cleanup_close_ int mfd = -1;
        struct dirent *de;
        DIR *d;
        int r = 0;

        mfd = openat(statefd, MARKETPLACES_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (mfd < 0)
                return errno == ENOENT ? 0 : negative_errno();
        d = fdopendir(mfd);
        if (!d)
                return negative_errno();
        mfd = -1; /* owned by d */

        while ((errno = 0, de = readdir(d))) {
                const char *reason = NULL;
                char msg[256];

                if (de->d_name[0] == '.')
                        continue; /* ".", "..", temporary directories */
                if (!marketplace_name_valid(de->d_name)) {
                        report_fn(report, userdata, de->d_name, -EINVAL, "not a marketplace name");
                        continue;
                }
                r = load_stored(ms, dirfd(d), de->d_name, &reason);
                if (r == -ENOMEM)
                        break;
                if (r < 0) {
                        snprintf(msg, sizeof(msg), "skipped: %s%s%s", reason ? reason : "",
                                 reason ? ": " : "", strerror(-r));
                        report_fn(report, userdata, de->d_name, r, msg);
                }
                r = 0;
        }
        if (r == 0 && errno != 0)
                r = negative_errno();
        closedir(d);
        return r;
}

int marketplaces_load(int statefd, const MarketplaceSpec *specs, size_t n_specs,
                      MarketplacesReportFn report, void *userdata, Marketplaces **ret) {
        _cleanup_(marketplaces_freep) Marketplaces *ms = NULL;
        int r;

        if (statefd < 0 || (!specs && n_specs > 0) || !ret)
                return -EINVAL;
        ms = calloc(1, sizeof(*ms));
        if (!ms)
                return -ENOMEM;
        for (size_t i = 0; i < n_specs; i++) {
                r = load_spec(ms, &specs[i], report, userdata);
                if (r < 0)
                        return r;
        }
        r = load_all_stored(ms, statefd, report, userdata);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(ms);
        return 0;
}

/* The lint's warnings as lines, NULL-terminated. */
static int lint_warnings(const char *identity, char ***ret) {
        IdentityWarning w[MARKETPLACE_WARNINGS_MAX];
        char **v;
        size_t n = 0, k;
        int r;

        r = identity_pattern_lint(identity, w, ELEMENTSOF(w), &n);
        if (r < 0)
                return r;
        k = n < ELEMENTSOF(w) ? n : ELEMENTSOF(w);
        v = calloc(k + 2, sizeof(char *));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < k; i++)
                if (asprintf(&v[i], "%s: %s (at byte %zu)", identity_warning_name(w[i].code),
                             w[i].message, w[i].offset) < 0) {
                        v[i] = NULL;
                        marketplace_warnings_free(v);
                        return -ENOMEM;
                }
        if (n > k && asprintf(&v[k], "%zu more warnings not shown", n - k) < 0) {
                v[k] = NULL;
                marketplace_warnings_free(v);
                return -ENOMEM;
        }
        *ret = v;
        return 0;
}

/* Removes the stored directory name below mfd: renamed away first, so it vanishes at once. */
static int remove_stored(int mfd, const char *name) {
        char gone[NAME_MAX];
        int r;

        r = store_temp_name(".rm-", name, gone, sizeof(gone));
        if (r < 0)
                return r;
        if (renameat2(mfd, name, mfd, gone, RENAME_NOREPLACE) < 0)
                return negative_errno();
        if (fsync(mfd) < 0)
                return negative_errno();
        (void)store_remove_dir(mfd, gone); /* a leftover .rm- directory is skipped at load */
        return 0;
}

/* Writes marketplaces/<e's name>/ atomically below statefd: the root's bytes from its memfd. */
static int store_entry(int statefd, const MarketplaceEntry *e) {
        _cleanup_close_ int mfd = -1, tfd = -1;
        _cleanup_free_ char *config = NULL, *root = NULL;
        char tmp[NAME_MAX];
        size_t root_len;
        json_t *j;
        int r;

        r = release_read_fd(e->trusted_root_fd, MARKETPLACE_ROOT_MAX, &root, &root_len);
        if (r < 0)
                return r;

        j = json_pack("{s:s, s:s, s:s}", "name", e->marketplace.name, "issuer",
                      e->marketplace.issuer, "identity", e->marketplace.identity_pattern);
        if (!j || (e->url && json_object_set_new(j, "url", json_string(e->url)) < 0)) {
                json_decref(j);
                return -ENOMEM;
        }
        config = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
        json_decref(j);
        if (!config)
                return -ENOMEM;

        if (mkdirat(statefd, MARKETPLACES_DIR, 0755) == 0) {
                if (fsync(statefd) < 0)
                        return negative_errno();
        } else if (errno != EEXIST)
                return negative_errno();
        mfd = openat(statefd, MARKETPLACES_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (mfd < 0)
                return negative_errno();

        r = store_temp_name(".tmp-", e->marketplace.name, tmp, sizeof(tmp));
        if (r < 0)
                return r;
        if (mkdirat(mfd, tmp, 0755) < 0)
                return negative_errno();
        tfd = openat(mfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (tfd < 0) {
                r = negative_errno();
                goto fail;
        }
        r = store_write_file(tfd, MARKETPLACES_ROOT_FILE, root, root_len);
        if (r < 0)
                goto fail;
        r = store_write_file(tfd, MARKETPLACES_CONFIG_FILE, config, strlen(config));
        if (r < 0)
                goto fail;
        if (fsync(tfd) < 0) {
                r = negative_errno();
                goto fail;
        }

        if (renameat2(mfd, tmp, mfd, e->marketplace.name, RENAME_NOREPLACE) < 0) {
                r = negative_errno();
                if (r != -EEXIST)
                        goto fail;
                /* A stored directory of that name that did not load (it is not in the set, the
                 * caller checked): the human's new marketplace replaces it. */
                r = remove_stored(mfd, e->marketplace.name);
                if (r < 0)
                        goto fail;
                if (renameat2(mfd, tmp, mfd, e->marketplace.name, RENAME_NOREPLACE) < 0) {
                        r = negative_errno();
                        goto fail;
                }
        }
        if (fsync(mfd) < 0)
                return negative_errno();
        return 0;

fail:
        (void)store_remove_dir(mfd, tmp);
        return r;
}

int marketplaces_add(Marketplaces *ms, int statefd, const char *name, const char *issuer,
                     const char *identity, const char *url, int trusted_root_fd, bool force,
                     char ***ret_warnings, const char **ret_reason) {
        _cleanup_(entry_freep) MarketplaceEntry *e = NULL;
        _cleanup_close_ int root = -1;
        char **warnings = NULL;
        int r;

        if (!ms || statefd < 0)
                return -EINVAL;
        r = marketplace_spec_check(name, issuer, identity, ret_reason);
        if (r < 0)
                return r;
        if (url) {
                r = marketplace_url_check(url, ret_reason);
                if (r < 0)
                        return r;
        }
        if (marketplaces_find(ms, name))
                return -EEXIST;
        if (ms->n_added >= MARKETPLACES_MAX)
                return -ENOSPC;

        /* The root comes from the peer as an fd it opened with its own rights: snapshotted
         * first, so what the helper checks is what is stored and used. */
        root = root_snapshot(trusted_root_fd, ret_reason);
        if (root < 0)
                return root;
        r = entry_new(name, issuer, identity, &root, MARKETPLACE_SOURCE_ADDED, &e, ret_reason,
                      NULL);
        if (r < 0)
                return r;

        if (url) {
                e->url = strdup(url);
                if (!e->url)
                        return -ENOMEM;
        }

        r = lint_warnings(identity, &warnings);
        if (r < 0)
                return r;
        if (warnings[0] && !force) {
                if (ret_warnings)
                        *ret_warnings = warnings;
                else
                        marketplace_warnings_free(warnings);
                return -EAGAIN;
        }

        r = store_entry(statefd, e);
        if (r >= 0)
                r = index_versions_remove(statefd, name);
        if (r >= 0)
                r = insert(ms, e);
        if (r < 0) {
                marketplace_warnings_free(warnings);
                return r;
        }
        TAKE_PTR(e);
        if (ret_warnings)
                *ret_warnings = warnings;
        else
                marketplace_warnings_free(warnings);
        return 0;
}

int marketplaces_remove(Marketplaces *ms, int statefd, const char *name) {
        _cleanup_close_ int mfd = -1;
        bool found;
        size_t i;
        int r;

        if (!ms || statefd < 0 || !name)
                return -EINVAL;
        i = lookup(ms, name, &found);
        if (!found)
                return -ENOENT;
        if (ms->entries[i]->source == MARKETPLACE_SOURCE_POLICY)
                return -EPERM;

        mfd = openat(statefd, MARKETPLACES_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (mfd < 0 && errno != ENOENT)
                return negative_errno();
        if (mfd >= 0) {
                r = remove_stored(mfd, name);
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        /* The record goes with the marketplace: one added again under this name is another
         * trust decision, and starts from the first index it verifies. */
        (void)index_versions_remove(statefd, name);

        entry_free(ms->entries[i]);
        memmove(ms->entries + i, ms->entries + i + 1, (ms->n - i - 1) * sizeof(ms->entries[0]));
        ms->n--;
        ms->n_added--;
        return 0;
}
