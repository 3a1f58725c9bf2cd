/* The catalog: the installed plugins, loaded from the store, each with its image (the sealed
 * binary and its spec) shared, reference-counted, with the runs in flight. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "marketplaces.h"
#include "release.h"
#include "plugin-image.h"
#include "store.h"
#include "update.h"

/*
 * An installed plugin. Everything in it is immutable once it is in the catalog, so a worker
 * thread may read it while holding a reference (catalog_plugin_ref()). The release's binary_fd
 * is -1: the bytes live in image.binary_fd.
 */
typedef struct CatalogPlugin {
        Release *release; /* manifest, digests, bundles (empty when unsigned) */
        PluginImage image; /* the sealed binary and the spec the spawner runs it with */
        char *marketplace; /* NULL for an unsigned plugin */
        bool signed_;
        unsigned n_ref; /* private: atomic */
} CatalogPlugin;

typedef struct Catalog Catalog;

/* Takes a reference (thread-safe). The count is the only mutable part of a plugin. */
CatalogPlugin *catalog_plugin_ref(const CatalogPlugin *p);
/* Drops a reference (thread-safe); the last one frees the plugin and its image. NULL. */
CatalogPlugin *catalog_plugin_unref(CatalogPlugin *p);
static inline void catalog_plugin_unrefp(CatalogPlugin **p) {
        if (*p)
                catalog_plugin_unref(*p);
}

/* Called for each stored version that catalog_load() skips, so the daemon can log it: error is
 * a negative errno, message one line (a StoreError's, or the image check's refusal). */
typedef void (*CatalogSkipFn)(const char *name, const char *version, int error, const char *message,
                              void *userdata);

/* The SandboxSpec a manifest asks for. */
SandboxSpec catalog_sandbox_spec(const Manifest *m);

/*
 * Loads the catalog from the store below statefd: for each plugin name, the newest stored
 * version that loads (store_load_origin(): digests, strict manifest) and whose image passes the
 * check the spawner makes again before a run (plugin_image_spec_check(),
 * plugin_image_binary_check()) becomes the active one; every version that does not is skipped,
 * reported through skip (may be NULL), and never run. Older versions that load are left in the
 * store, unused. 0 and a new catalog in *ret, or a negative errno (listing the store failed,
 * -ENOMEM) and *ret untouched.
 */
int catalog_load(int statefd, CatalogSkipFn skip, void *userdata, Catalog **ret);
Catalog *catalog_free(Catalog *c); /* drops the catalog's references; runs keep theirs */
static inline void catalog_freep(Catalog **p) {
        if (*p)
                catalog_free(*p);
}

/* The active plugin named name, or NULL; borrowed: take a reference to keep it past the next
 * change of the catalog. */
const CatalogPlugin *catalog_find(const Catalog *c, const char *name);
/* The active plugins sorted by name: catalog_get(c, i) for i < catalog_n(c). */
size_t catalog_n(const Catalog *c);
const CatalogPlugin *catalog_get(const Catalog *c, size_t i);

typedef enum CatalogInstallStatus {
        CATALOG_INSTALLED,           /* res->plugin is the new active plugin */
        CATALOG_VERIFICATION_FAILED, /* res->release_error says why */
        CATALOG_NEEDS_TYPED_NAME,    /* res->verdict UPDATE_NEEDS_TYPED_NAME, accept_name missing
                                        or wrong; res->installed names the active version */
        CATALOG_UPDATE_REFUSED,      /* res->verdict is the UPDATE_REFUSED_* reason */
        CATALOG_STORE_FAILED,        /* res->store_error says why */
        CATALOG_SANDBOX_FAILED,      /* res->sandbox_error: plugin_image_strerror()'s errno */
} CatalogInstallStatus;

typedef struct CatalogInstallResult {
        CatalogInstallStatus status;
        UpdateVerdict verdict; /* when an active version was compared (has_verdict) */
        bool has_verdict;
        char installed[32];          /* the active version before, "" for a new plugin */
        char replaced[32];           /* the version replaced, "" when none */
        const CatalogPlugin *plugin; /* CATALOG_INSTALLED: borrowed, as catalog_find() */
        Manifest *manifest;          /* CATALOG_NEEDS_TYPED_NAME, CATALOG_UPDATE_REFUSED: the
                                        refused release's manifest (owned, freed by
                                        catalog_install_result_done()) */
        ReleaseError release_error;
        StoreError store_error;
        int sandbox_error;
} CatalogInstallResult;

void catalog_install_result_done(CatalogInstallResult *res);

/*
 * Verifies and installs a release. With m: every file (and with index_fds, both >= 0, NULL or both
 * -1 for none, the marketplace's signed index.json and its bundle) is first snapshotted into a
 * sealed memfd (release_snapshot_fds()), so the peer cannot change a byte afterwards; the engine
 * reads the manifest strictly, checks the ELF and takes both digests itself (release_load_fds()),
 * and the verification helper checks the signatures, the identity, the tag and the index on the
 * same memfds (verifier_verify_release(), as release_verify_fds(), index_verify() and
 * index_check_release() would): the engine never parses a bundle, a certificate or the trusted
 * root. It then requires the helper's ref to be the tag of the manifest it parsed itself. Without
 * m the release is unsigned (release_load_unsigned_fds(), index_fds must be none): whether
 * unsigned releases are allowed is the caller's decision. A name that never had a version is
 * simply installed. Otherwise update_check() runs against the highest version the name ever had
 * (the active one, or the plugin history's after a remove; reinstalling that very version with the
 * same meaning is no update), and a release that must be confirmed (a new major version that
 * changes question, one or zero, or one that comes from another marketplace or changes between
 * signed and unsigned: the human then trusts someone else for the same name) is installed only
 * when accept_name is exactly its name (update_confirm()). The image is then checked as the
 * spawner will check it (plugin_image_spec_check(), plugin_image_binary_check()), the manifest
 * recorded in the plugin history, the new version stored (with its origin), it becomes active,
 * and the version it replaces is removed from the store; runs holding the old plugin keep it until
 * they drop their reference. Returns 0 (CATALOG_INSTALLED) or a negative errno with res->status
 * saying which failure: verification errnos of release_verify_fds() (-EPROTO with
 * RELEASE_E_VERIFIER: the helper failed, so the release is refused); -EPERM for
 * CATALOG_NEEDS_TYPED_NAME and CATALOG_UPDATE_REFUSED; store and history errnos; the image check's
 * errnos (CATALOG_SANDBOX_FAILED); -EINVAL for bad arguments. Call
 * catalog_install_result_done(res) afterwards in every case.
 */
int catalog_install(Catalog *c, int statefd, const MarketplaceEntry *m, const ReleaseFds *fds,
                    const int index_fds[2], const char *accept_name, CatalogInstallResult *res);

/*
 * Removes a plugin: with version NULL every stored version of name, otherwise just that one.
 * When the active version goes and another stored version remains, the newest of those that
 * loads becomes active (the catalog is always what catalog_load() would give). Runs in flight
 * keep the removed plugin. 0, -ENOENT not installed (name or version), or a negative errno from
 * the store (then what was removed before the failure stays removed, and the catalog says so).
 */
int catalog_remove(Catalog *c, int statefd, const char *name, const char *version);
