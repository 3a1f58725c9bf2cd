/* The catalog of installed plugins: loaded from the store, changed by install and remove, shared
 * with the runs by reference counts. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "history.h"
#include "index.h"
#include "macro.h"
#include "verifier.h"

struct Catalog {
        CatalogPlugin **plugins; /* the active version of each name, sorted by name */
        size_t n;
        CatalogSkipFn skip;
        void *userdata;
};

CatalogPlugin *catalog_plugin_ref(const CatalogPlugin *p) {
        CatalogPlugin *q = (CatalogPlugin *)p; /* only the atomic count changes */

        if (q)
                __atomic_add_fetch(&q->n_ref, 1, __ATOMIC_RELAXED);
        return q;
}

CatalogPlugin *catalog_plugin_unref(CatalogPlugin *p) {
        if (!p)
                return NULL;
        /* Release: this thread's reads of the plugin happen before another frees it. */
        if (__atomic_sub_fetch(&p->n_ref, 1, __ATOMIC_ACQ_REL) > 0)
                return NULL;
        safe_close(p->image.binary_fd);
        release_free(p->release);
        free(p->marketplace);
        free(p);
        return NULL;
}

SandboxSpec catalog_sandbox_spec(const Manifest *m) {
        return (SandboxSpec){
                .protocol = m->protocol,
                .inputs = m->n_inputs > 0,
                .detail = m->detail,
                .limits = {.cpu_s = m->cpu_s,
                           .memory_bytes = m->memory_bytes,
                           .timeout_s = m->timeout_s},
        };
}

/*
 * Checks that rel can run: its spec (protocol and limits) and its binary (a static ELF within
 * the size cap) — what the spawner checks again when it builds the sandbox. 0, or a negative
 * errno for plugin_image_strerror().
 */
static int check_image(const Release *rel) {
        SandboxSpec spec = catalog_sandbox_spec(rel->manifest);
        int r;

        r = plugin_image_spec_check(&spec);
        if (r < 0)
                return r;
        return plugin_image_binary_check(rel->binary_fd);
}

/*
 * A plugin with one reference from rel (taken on success): its image is the release's sealed
 * memfd, moved out of it, and the spec its manifest asks for. The spawner builds the sandbox
 * (the Landlock ruleset, its own copy) when it first runs it; the engine keeps no Sandbox.
 */
static int plugin_new(Release **rel, const StoreOrigin *origin, CatalogPlugin **ret) {
        CatalogPlugin *p;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        if (origin->signed_) {
                p->marketplace = strdup(origin->marketplace);
                if (!p->marketplace) {
                        free(p);
                        return -ENOMEM;
                }
        }
        p->signed_ = origin->signed_;
        p->n_ref = 1;
        p->release = TAKE_PTR(*rel);
        p->image = (PluginImage){.spec = catalog_sandbox_spec(p->release->manifest),
                                 .binary_fd = TAKE_FD(p->release->binary_fd)};
        /* The bundles were verified at install, the store keeps them and checks their digests at
         * every load, and nothing reads them from the catalog: they would only cost memory. */
        p->release->manifest_bundle = mfree(p->release->manifest_bundle);
        p->release->binary_bundle = mfree(p->release->binary_bundle);
        p->release->manifest_bundle_len = p->release->binary_bundle_len = 0;
        *ret = p;
        return 0;
}

static void skipped(const Catalog *c, const char *name, const char *version, int error,
                    const char *message) {
        if (c->skip)
                c->skip(name, version, error, message, c->userdata);
}

/*
 * The newest of the n stored versions of one name (sorted oldest first) that loads and passes the
 * image check, in *ret (NULL when none does); the others tried are reported as skipped. 0, or
 * -ENOMEM.
 */
static int load_newest(const Catalog *c, int statefd, const StoreEntry *versions, size_t n,
                       CatalogPlugin **ret) {
        *ret = NULL;
        for (size_t i = n; i-- > 0;) {
                _cleanup_(release_freep) Release *rel = NULL;
                StoreOrigin origin = {};
                StoreError err = {};
                char msg[300];
                int r;

                r = store_load_origin(statefd, versions[i].name, versions[i].version, &rel, &origin,
                                      &err);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        snprintf(msg, sizeof(msg), "%s: %s", store_error_name(err.code),
                                 err.message);
                        skipped(c, versions[i].name, versions[i].version, r, msg);
                        continue;
                }
                r = check_image(rel);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        skipped(c, versions[i].name, versions[i].version, r,
                                plugin_image_strerror(r));
                        continue;
                }
                return plugin_new(&rel, &origin, ret);
        }
        return 0;
}

/* The index where name is or would be; *found says which. */
static size_t lookup(const Catalog *c, const char *name, bool *found) {
        size_t lo = 0, hi = c->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int k = strcmp(c->plugins[mid]->release->manifest->name, name);

                if (k == 0) {
                        *found = true;
                        return mid;
                }
                if (k < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *found = false;
        return lo;
}

/* Makes p (its reference taken) the active plugin of its name, or removes the name's active
 * plugin when p is NULL. Only an insertion can fail (-ENOMEM; p is then not taken). */
static int set_active(Catalog *c, const char *name, CatalogPlugin *p) {
        bool found;
        size_t i = lookup(c, name, &found);

        if (found) {
                catalog_plugin_unref(c->plugins[i]);
                if (p)
                        c->plugins[i] = p;
                else {
                        memmove(c->plugins + i, c->plugins + i + 1,
                                (c->n - i - 1) * sizeof(*c->plugins));
                        c->n--;
                }
                return 0;
        }
        if (!p)
                return 0;

        CatalogPlugin **n = reallocarray(c->plugins, c->n + 1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        c->plugins = n;
        memmove(c->plugins + i + 1, c->plugins + i, (c->n - i) * sizeof(*n));
        c->plugins[i] = p;
        c->n++;
        return 0;
}

const CatalogPlugin *catalog_find(const Catalog *c, const char *name) {
        bool found;
        size_t i;

        if (!c || !name)
                return NULL;
        i = lookup(c, name, &found);
        return found ? c->plugins[i] : NULL;
}

size_t catalog_n(const Catalog *c) {
        return c ? c->n : 0;
}

const CatalogPlugin *catalog_get(const Catalog *c, size_t i) {
        return c && i < c->n ? c->plugins[i] : NULL;
}

Catalog *catalog_free(Catalog *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n; i++)
                catalog_plugin_unref(c->plugins[i]);
        free(c->plugins);
        free(c);
        return NULL;
}

typedef struct Entries {
        StoreEntry *v;
        size_t n;
} Entries;

static void entries_done(Entries *e) {
        store_entries_free(e->v, e->n);
}

/* The stored versions of name: a slice of e (sorted by name, then version). */
static const StoreEntry *versions_of(const Entries *e, const char *name, size_t *ret_n) {
        size_t i = 0, k;

        while (i < e->n && strcmp(e->v[i].name, name) != 0)
                i++;
        for (k = i; k < e->n && strcmp(e->v[k].name, name) == 0; k++)
                ;
        *ret_n = k - i;
        return e->v + i;
}

int catalog_load(int statefd, CatalogSkipFn skip, void *userdata, Catalog **ret) {
        _cleanup_(catalog_freep) Catalog *c = NULL;
        _cleanup_(entries_done) Entries e = {};
        int r;

        if (statefd < 0 || !ret)
                return -EINVAL;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->skip = skip;
        c->userdata = userdata;

        r = store_list(statefd, &e.v, &e.n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < e.n;) {
                CatalogPlugin *p;
                size_t n;
                const StoreEntry *versions = versions_of(&e, e.v[i].name, &n);

                r = load_newest(c, statefd, versions, n, &p);
                if (r < 0)
                        return r;
                if (p) {
                        const Release *rel = p->release;

                        r = set_active(c, rel->manifest->name, p);
                        if (r < 0) {
                                catalog_plugin_unref(p);
                                return r;
                        }
                        /* A store from before the history: the active version is its start. */
                        r = history_record(statefd, rel->manifest, rel->manifest_data,
                                           rel->manifest_len);
                        if (r < 0)
                                return r;
                }
                i += n;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

/*
 * Makes the catalog's entry for name what catalog_load() would give after the store changed: the
 * active version stays while it is stored; otherwise the newest stored version that loads
 * replaces it, or the name leaves the catalog.
 */
static int resync(Catalog *c, int statefd, const char *name) {
        _cleanup_(entries_done) Entries e = {};
        const CatalogPlugin *active = catalog_find(c, name);
        const StoreEntry *versions;
        CatalogPlugin *p = NULL;
        size_t n;
        int r;

        r = store_list(statefd, &e.v, &e.n);
        if (r < 0)
                return r;
        versions = versions_of(&e, name, &n);
        if (active)
                for (size_t i = 0; i < n; i++)
                        if (strcmp(versions[i].version, active->release->manifest->version) == 0)
                                return 0;
        r = load_newest(c, statefd, versions, n, &p);
        if (r < 0)
                return r;
        r = set_active(c, name, p);
        if (r < 0)
                catalog_plugin_unref(p);
        return r;
}

int catalog_remove(Catalog *c, int statefd, const char *name, const char *version) {
        _cleanup_(entries_done) Entries e = {};
        _cleanup_free_ char *name_copy = NULL;
        const CatalogPlugin *active;
        const StoreEntry *versions;
        size_t n;
        bool any = false;
        int r = 0, q;

        if (!c || statefd < 0 || !manifest_name_valid(name) ||
            (version && !manifest_version_valid(version)))
                return -EINVAL;
        /* name may point into the plugin about to be dropped. */
        name_copy = strdup(name);
        if (!name_copy)
                return -ENOMEM;
        name = name_copy;

        active = catalog_find(c, name);
        q = store_list(statefd, &e.v, &e.n);
        if (q < 0)
                return q;
        versions = versions_of(&e, name, &n);
        for (size_t i = 0; i < n; i++) {
                if (version && strcmp(versions[i].version, version) != 0)
                        continue;
                any = true;
                q = store_remove(statefd, name, versions[i].version);
                if (q < 0 && q != -ENOENT) {
                        r = q;
                        break;
                }
        }
        if (!any &&
            !(active && (!version || strcmp(active->release->manifest->version, version) == 0)))
                return -ENOENT;
        q = resync(c, statefd, name);
        return r < 0 ? r : q;
}

void catalog_install_result_done(CatalogInstallResult *res) {
        if (!res)
                return;
        manifest_free(res->manifest);
        res->manifest = NULL;
}

/* Snapshots one file of the index into a sealed memfd; refusals as lockd always named them. */
static int index_snapshot(int fd, uint64_t max, const char *file, ReleaseError *err) {
        int r = release_snapshot_fd(fd, max, file, NULL);

        if (r < 0)
                release_error_set(err, r == -ENOMEM ? RELEASE_E_NOMEM : RELEASE_E_INDEX, "%s: %s",
                                  file, r == -EFBIG ? "too large" : "not a readable regular file");
        return r;
}

/*
 * A signed release: snapshotted, read by the engine, its signatures (and with index_fds the index)
 * verified by the helper on the very same sealed memfds. 0 and the Release in *ret, or a
 * negative errno with err filled.
 */
static int verify_signed(const MarketplaceEntry *m, const ReleaseFds *fds, const int index_fds[2],
                         Release **ret, ReleaseError *err) {
        _cleanup_(release_fds_close) ReleaseFds sealed = {-1, -1, -1, -1};
        _cleanup_(release_freep) Release *rel = NULL;
        _cleanup_(verified_release_done) VerifiedRelease v = {};
        _cleanup_close_ int index = -1, index_bundle = -1;
        int r;

        /* What is verified is exactly what is kept: no peer can change a byte from here on. */
        r = release_snapshot_fds(fds, true, &sealed, err);
        if (r < 0)
                return r;
        /* The engine's own reading, no signature: the manifest strictly, the ELF, the digests. */
        r = release_load_fds(&sealed, true, &rel, err);
        if (r < 0)
                return r;
        if (index_fds) {
                index = index_snapshot(index_fds[0], INDEX_BYTES_MAX, INDEX_FILE, err);
                if (index < 0)
                        return index;
                index_bundle =
                        index_snapshot(index_fds[1], RELEASE_BUNDLE_MAX, INDEX_BUNDLE_FILE, err);
                if (index_bundle < 0)
                        return index_bundle;
        }

        r = verifier_verify_release(&m->marketplace, m->trusted_root_fd, m->trusted_root_digest,
                                    &sealed, index_fds ? (const int[2]){index, index_bundle} : NULL,
                                    rel->manifest_sha256, rel->binary_sha256, &v, err);
        if (r < 0)
                return r;
        /* The tag once more, against the manifest the engine parsed itself. */
        if (release_check_ref(rel->manifest, v.source_ref) < 0) {
                release_error_set(err, RELEASE_E_VERIFIER,
                                  "the verification helper failed: it reported a ref that is not "
                                  "the manifest's tag");
                return -EPROTO;
        }
        rel->san = TAKE_PTR(v.san);
        rel->source_ref = TAKE_PTR(v.source_ref);
        if (err)
                *err = (ReleaseError){};
        *ret = TAKE_PTR(rel);
        return 0;
}

static bool same_origin(const CatalogPlugin *p, const MarketplaceEntry *m) {
        if (!m)
                return !p->signed_;
        return p->signed_ && p->marketplace && strcmp(p->marketplace, m->marketplace.name) == 0;
}

/* Fills res with a store failure of code STORE_E_IO and the message fmt. */
__attribute__((format(printf, 2, 3))) static void install_io_failed(CatalogInstallResult *res,
                                                                    const char *fmt, ...) {
        va_list ap;

        res->status = CATALOG_STORE_FAILED;
        res->store_error = (StoreError){.code = STORE_E_IO};
        va_start(ap, fmt);
        vsnprintf(res->store_error.message, sizeof(res->store_error.message), fmt, ap);
        va_end(ap);
}

/*
 * The update rule for rel (from m, NULL for unsigned) against the name's active plugin (or NULL)
 * and the manifest remembered in its history (or NULL). 0 lets the install go on (res->verdict
 * set when there was a version to compare with); -EPERM with res CATALOG_UPDATE_REFUSED or
 * CATALOG_NEEDS_TYPED_NAME (res->manifest then taken from rel, res->installed the version
 * compared with); another negative errno from update_check().
 */
static int install_check_update(const CatalogPlugin *active, const Manifest *remembered,
                                const MarketplaceEntry *m, Release *rel, const char *accept_name,
                                CatalogInstallResult *res) {
        const Manifest *reference;
        bool reinstall;
        int r;

        /*
         * The update rule compares with the highest version this name ever had, not only the
         * active one: otherwise removing a plugin and installing another meaning under its name
         * would skip the new major version and the typed name. Reinstalling exactly the
         * remembered version with the same meaning, after a remove, is no update at all.
         */
        reference = active ? active->release->manifest : NULL;
        if (remembered && (!reference || update_version_compare(remembered, reference) > 0))
                reference = remembered;
        reinstall = !active && reference && update_version_compare(reference, rel->manifest) == 0 &&
                    update_same_meaning(reference, rel->manifest);
        if (!reference || reinstall)
                return 0;

        res->has_verdict = true;
        r = update_check(reference, rel->manifest, &res->verdict);
        if (r == -EPERM) {
                if (!active)
                        snprintf(res->installed, sizeof(res->installed), "%s", reference->version);
                res->status = CATALOG_UPDATE_REFUSED;
                res->manifest = TAKE_PTR(rel->manifest);
                return r;
        }
        if (r < 0)
                return r;
        /*
         * Another marketplace, or signed becoming unsigned (or the reverse), means the human
         * would trust someone else's code under a name they know: as with a changed question,
         * only their typing the name lets it through.
         */
        if (active && !same_origin(active, m))
                res->verdict = UPDATE_NEEDS_TYPED_NAME;
        if (res->verdict == UPDATE_NEEDS_TYPED_NAME &&
            !update_confirm(rel->manifest, accept_name)) {
                if (!active)
                        snprintf(res->installed, sizeof(res->installed), "%s", reference->version);
                res->status = CATALOG_NEEDS_TYPED_NAME;
                res->manifest = TAKE_PTR(rel->manifest);
                return -EPERM;
        }
        return 0;
}

/*
 * Keeps rel under name below statefd: its manifest in the plugin history first, then the release
 * in the store with origin, replacing a stored copy of the same version that is not active. 0, or
 * a negative errno with res CATALOG_STORE_FAILED.
 */
static int install_store(int statefd, const char *name, const Release *rel,
                         const StoreOrigin *origin, CatalogInstallResult *res) {
        int r;

        /* The history first: a release stored without it could later be replaced by another
         * meaning once removed. A record of a version that then fails to store is harmless. */
        r = history_record(statefd, rel->manifest, rel->manifest_data, rel->manifest_len);
        if (r < 0) {
                install_io_failed(res, "the plugin history of %s cannot be written: %s", name,
                                  strerror(-r));
                return r;
        }

        r = store_install_origin(statefd, rel, origin, &res->store_error);
        if (r == -EEXIST) {
                /* That version is stored but not active, newer than the active one (or the name
                 * has none): it failed to load. The verified release replaces it. */
                if (store_remove(statefd, name, rel->manifest->version) >= 0)
                        r = store_install_origin(statefd, rel, origin, &res->store_error);
        }
        if (r < 0) {
                res->status = CATALOG_STORE_FAILED;
                return r;
        }
        return 0;
}

/* Makes the stored release *rel (taken) the active plugin of name. 0, or a negative errno with res
 * CATALOG_STORE_FAILED (out of memory). */
static int install_activate(Catalog *c, const char *name, Release **rel, const StoreOrigin *origin,
                            CatalogInstallResult *res) {
        CatalogPlugin *p = NULL;
        int r;

        r = plugin_new(rel, origin, &p);
        if (r >= 0) {
                r = set_active(c, name, p);
                if (r < 0)
                        catalog_plugin_unref(p);
        }
        if (r < 0) {
                res->status = CATALOG_STORE_FAILED;
                res->store_error = (StoreError){.code = STORE_E_NOMEM};
                snprintf(res->store_error.message, sizeof(res->store_error.message),
                         "out of memory");
                return r;
        }
        return 0;
}

int catalog_install(Catalog *c, int statefd, const MarketplaceEntry *m, const ReleaseFds *fds,
                    const int index_fds[2], const char *accept_name, CatalogInstallResult *res) {
        _cleanup_(release_freep) Release *rel = NULL;
        _cleanup_free_ char *name = NULL, *old_version = NULL;
        _cleanup_(manifest_freep) Manifest *remembered = NULL;
        const CatalogPlugin *active;
        StoreOrigin origin = {};
        bool with_index;
        int r;

        if (!res)
                return -EINVAL;
        *res = (CatalogInstallResult){.status = CATALOG_VERIFICATION_FAILED};
        with_index = index_fds && (index_fds[0] >= 0 || index_fds[1] >= 0);
        if (!c || statefd < 0 || !fds ||
            (with_index && (!m || index_fds[0] < 0 || index_fds[1] < 0))) {
                release_error_set(&res->release_error, RELEASE_E_IO, "invalid arguments");
                return -EINVAL;
        }
        if (m &&
            (!m->marketplace.name || strlen(m->marketplace.name) >= sizeof(origin.marketplace))) {
                release_error_set(&res->release_error, RELEASE_E_IO, "bad marketplace name");
                return -EINVAL;
        }

        /* Everything about the release is checked before the catalog is looked at. */
        if (m)
                r = verify_signed(m, fds, with_index ? index_fds : NULL, &rel, &res->release_error);
        else
                r = release_load_unsigned_fds(fds, &rel, &res->release_error);
        if (r < 0)
                return r;
        if (m) {
                origin.signed_ = true;
                strcpy(origin.marketplace, m->marketplace.name);
        }
        name = strdup(rel->manifest->name);
        if (!name)
                return -ENOMEM;

        active = catalog_find(c, name);
        r = history_load(statefd, name, &remembered);
        if (r < 0) {
                install_io_failed(res, "the plugin history of %s cannot be read: %s", name,
                                  strerror(-r));
                return r;
        }
        if (active) {
                snprintf(res->installed, sizeof(res->installed), "%s",
                         active->release->manifest->version);
                old_version = strdup(active->release->manifest->version);
                if (!old_version)
                        return -ENOMEM;
        }
        r = install_check_update(active, remembered, m, rel, accept_name, res);
        if (r < 0)
                return r;

        /* The image's check before the store: a release that cannot run is not installed. */
        r = check_image(rel);
        if (r < 0) {
                res->status = CATALOG_SANDBOX_FAILED;
                res->sandbox_error = r;
                return r;
        }
        r = install_store(statefd, name, rel, &origin, res);
        if (r < 0)
                return r;
        r = install_activate(c, name, &rel, &origin, res);
        if (r < 0)
                return r;

        /* The replaced version leaves the store; should that fail, the newer one still wins at
         * the next load. */
        if (old_version) {
                (void)store_remove(statefd, name, old_version);
                snprintf(res->replaced, sizeof(res->replaced), "%s", old_version);
        }
        res->status = CATALOG_INSTALLED;
        res->plugin = catalog_find(c, name);
        return 0;
}
