/* The marketplaces lockd trusts: the policy's (read-only) and those added at run time, persisted
 * in the state directory under marketplaces/<name>/. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "marketplace.h"

#define MARKETPLACES_DIR         "marketplaces"
#define MARKETPLACES_CONFIG_FILE "marketplace.json"
#define MARKETPLACES_ROOT_FILE   "trusted_root.json"
#define MARKETPLACE_URL_MAX      1024
#define MARKETPLACE_CONFIG_MAX   ((size_t)4096)
#define MARKETPLACES_MAX         256 /* added ones; the policy's are bounded by the policy */
#define MARKETPLACE_WARNINGS_MAX 16

/* A marketplace as the policy names it (the lead fills these from the Policy). */
typedef struct MarketplaceSpec {
        const char *name;
        const char *issuer;
        const char *identity;
        const char *trusted_root_path; /* an administrator's file: lockd may open it */
} MarketplaceSpec;

typedef enum MarketplaceSource {
        MARKETPLACE_SOURCE_POLICY,
        MARKETPLACE_SOURCE_ADDED,
} MarketplaceSource;

/*
 * A trusted marketplace as the engine holds it. The engine never parses a trusted root
 * (verifier.h): it keeps the raw bytes in a sealed memfd, checked by the verification helper when
 * the marketplace was loaded or added, and hands that memfd to the helper for each install.
 */
typedef struct MarketplaceEntry {
        Marketplace marketplace; /* name, issuer, identity_pattern; root is always NULL */
        int trusted_root_fd;     /* trusted_root.json, a sealed memfd */
        uint8_t trusted_root_digest[32];
        char trusted_root_sha256[65]; /* the same, in hex */
        char *url; /* where lockctl downloads index.json and releases/ from; NULL for none */
        MarketplaceSource source;
} MarketplaceEntry;

typedef struct Marketplaces Marketplaces;

/* Called for a stored marketplace that is skipped at load (error is a negative errno), so the
 * daemon can log it. */
typedef void (*MarketplacesReportFn)(const char *name, int error, const char *message,
                                     void *userdata);

/* "policy" or "added". */
const char *marketplace_source_name(MarketplaceSource s);

/*
 * Checks the parts of a marketplace: the name (marketplace_name_valid()), the issuer (an https://
 * URL of printable ASCII, at most 512 bytes) and the identity pattern (at most 1024 bytes,
 * printable ASCII, a valid ERE for identity_pattern_lint()). 0, or -EINVAL with *ret_reason (if
 * non-NULL) a static sentence saying which.
 */
int marketplace_spec_check(const char *name, const char *issuer, const char *identity,
                           const char **ret_reason);

/*
 * Checks a marketplace's URL: https:// or file:// followed by at least one byte, at most 1024
 * printable ASCII bytes, no query or fragment ('?', '#': lockctl appends paths to it), no "/.."
 * segment. 0, or -EINVAL with *ret_reason (if non-NULL) a static sentence. lockd never fetches
 * the URL: it keeps it for lockctl, which downloads as the human.
 */
int marketplace_url_check(const char *url, const char **ret_reason);

/*
 * Builds the set: the n_specs marketplaces of the policy, each with its trusted root read from
 * trusted_root_path (at most 1 MiB) into a sealed memfd and checked by the verification helper
 * (verifier_check_root(): one short-lived helper per root); then the ones stored below statefd in
 * marketplaces/<name>/ (marketplace.json: exactly "name", "issuer", "identity", the name that of
 * the directory, and optionally "url"; trusted_root.json), checked the same way. A policy
 * marketplace that is invalid, duplicated or whose root does not load fails the whole load
 * (-EINVAL, -EPROTO when the helper failed, or the errno reading the root), reported through report
 * first: the policy names a marketplace lockd cannot trust. A stored marketplace that does not
 * load, or whose name a policy one has, is skipped and reported. 0 and a new set in *ret, or a
 * negative errno and *ret untouched.
 */
int marketplaces_load(int statefd, const MarketplaceSpec *specs, size_t n_specs,
                      MarketplacesReportFn report, void *userdata, Marketplaces **ret);

/*
 * Adds a marketplace and stores it below statefd, with its URL when url is non-NULL
 * (marketplace_url_check()), and forgets any index version recorded under its name before (a
 * marketplace added anew starts from the first index it verifies). The trusted root is snapshotted
 * from trusted_root_fd (a peer's fd: a regular file open for reading, at most 1 MiB) into a sealed
 * memfd, which the verification helper must find to parse (verifier_check_root()). The identity
 * pattern is linted (identity_pattern_lint()): its warnings, one line each, are returned in
 * *ret_warnings (a NULL-terminated array, possibly empty; if ret_warnings is non-NULL) on success
 * and with -EAGAIN, which is what a lint warning without force gives (nothing is added then). The
 * directory is written as the plugin store writes: files under O_EXCL temporary names with fsync(),
 * a temporary directory renamed into place with RENAME_NOREPLACE, the parent fsync()ed. Returns 0;
 * -EINVAL with *ret_reason set (bad name, issuer, pattern, or a root that is not a regular readable
 * file or does not parse); -EPROTO the verification helper failed (*ret_reason set); -EEXIST the
 * name is taken; -EAGAIN lint warnings; -ENOSPC over MARKETPLACES_MAX; -ENOMEM; an I/O errno.
 */
int marketplaces_add(Marketplaces *ms, int statefd, const char *name, const char *issuer,
                     const char *identity, const char *url, int trusted_root_fd, bool force,
                     char ***ret_warnings, const char **ret_reason);

/* Removes an added marketplace from the set and the state directory. 0, -ENOENT unknown, -EPERM
 * one of the policy's, or an I/O errno (the set is unchanged then). */
int marketplaces_remove(Marketplaces *ms, int statefd, const char *name);

/* The marketplace named name, or NULL. Valid until the set changes. */
const MarketplaceEntry *marketplaces_find(const Marketplaces *ms, const char *name);
/* The set sorted by name: marketplaces_get(ms, i) for i < marketplaces_n(ms). */
size_t marketplaces_n(const Marketplaces *ms);
const MarketplaceEntry *marketplaces_get(const Marketplaces *ms, size_t i);

Marketplaces *marketplaces_free(Marketplaces *ms);
static inline void marketplaces_freep(Marketplaces **p) {
        if (*p)
                marketplaces_free(*p);
}

/* Frees the NULL-terminated warnings of marketplaces_add(). */
void marketplace_warnings_free(char **warnings);
