/* A marketplace's index.json: the releases it publishes with the SHA-256 of their manifest and
 * binary, strictly parsed and verified under the marketplace. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "marketplace.h"
#include "release.h"

#define INDEX_FILE         "index.json"
#define INDEX_BUNDLE_FILE  "index.json.sigstore.json"
#define INDEX_BYTES_MAX    ((size_t)1024 * 1024)
#define INDEX_RELEASES_MAX 10000
/* The largest "version": JSON numbers are exact integers up to 2^53 in every common parser. */
#define INDEX_VERSION_MAX ((uint64_t)1 << 53)
/* "expires" as the index writes it: YYYY-MM-DDTHH:MM:SSZ, and its terminating NUL. */
#define INDEX_TIME_SIZE 21

typedef struct IndexRelease {
        char *name;
        char *version;
        uint8_t manifest_sha256[32];
        uint8_t binary_sha256[32];
} IndexRelease;

typedef struct MarketplaceIndex {
        char *name;       /* the marketplace's name */
        uint64_t version; /* raised by the publisher with every index, 1..INDEX_VERSION_MAX */
        int64_t expires;  /* seconds since the epoch (UTC): no client trusts the index after it */
        IndexRelease *releases;
        size_t n_releases;
} MarketplaceIndex;

/*
 * Parses index.json (len bytes, need not be NUL-terminated) strictly: at most 1 MiB, one object
 * with exactly the keys "name" (string), "version" (an integer, 1..2^53), "expires" (a string,
 * index_parse_time()) and "releases" (array of at most 10000 objects with exactly the keys
 * "name", "version", "manifest_sha256", "binary_sha256", all strings); plugin names and versions
 * as in a manifest, digests 64 lowercase hex digits; duplicate keys, a NUL, and a second entry
 * for the same name and version are refused. Returns 0 and a new index in *ret, or -EINVAL (err
 * code RELEASE_E_INDEX, with a message), -EFBIG, -ENOMEM; *ret untouched on failure.
 */
int index_parse(const char *json, size_t len, MarketplaceIndex **ret, ReleaseError *err);

/*
 * Verifies bundle_json for the index bytes under m (marketplace_verify_file(): issuer exact, SAN
 * matching the identity pattern; any source ref the pattern admits), parses the index and
 * requires its "name" to be m->name. 0 and a new index, or a negative errno with err filled
 * (RELEASE_E_BUNDLE, RELEASE_E_IDENTITY, RELEASE_E_INDEX).
 */
int index_verify(const Marketplace *m, const char *json, size_t len, const char *bundle_json,
                 size_t bundle_len, MarketplaceIndex **ret, ReleaseError *err);

/* Reads index.json and index.json.sigstore.json below dirfd (O_NOFOLLOW, 1 MiB each) and
 * index_verify()s them. */
int index_load(const Marketplace *m, int dirfd, MarketplaceIndex **ret, ReleaseError *err);

/*
 * Parses an RFC 3339 time in UTC exactly as an index writes it, "YYYY-MM-DDTHH:MM:SSZ" (years
 * 1970..9999, no fraction, no other offset): one spelling per instant, so a signed index means one
 * thing to every reader. 0 and the seconds since the epoch in *ret, or -EINVAL (*ret untouched).
 */
int index_parse_time(const char *s, int64_t *ret);
/* Writes t (seconds since the epoch, 0..9999-12-31T23:59:59Z) as index_parse_time() reads it. */
int index_format_time(int64_t t, char out[INDEX_TIME_SIZE]);

/* Compares two valid SemVer MAJOR.MINOR.PATCH strings: <0, 0 or >0 as a is older, the same or
 * newer than b (1.10.0 is newer than 1.9.0). */
int index_version_compare(const char *a, const char *b);

/* The newest version of name the index lists (SemVer order), or NULL. */
const IndexRelease *index_find_newest(const MarketplaceIndex *idx, const char *name);

/* The entry for name and version, or NULL. */
const IndexRelease *index_find(const MarketplaceIndex *idx, const char *name, const char *version);

/*
 * Checks that rel is listed in idx with the same manifest and binary digests. 0, or -ENOENT
 * (RELEASE_E_INDEX_MISSING) or -EKEYREJECTED (RELEASE_E_INDEX_MISMATCH) with err filled.
 */
int index_check_release(const MarketplaceIndex *idx, const Release *rel, ReleaseError *err);

MarketplaceIndex *index_free(MarketplaceIndex *idx);
static inline void index_freep(MarketplaceIndex **p) {
        if (*p)
                index_free(*p);
}
