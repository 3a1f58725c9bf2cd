/* A marketplace's index.json: strict parsing with jansson, verification under the marketplace,
 * and the check of a release's digests against it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "index.h"
#include "codec.h"
#include "macro.h"
#include "sigstore-util.h"

MarketplaceIndex *index_free(MarketplaceIndex *idx) {
        if (!idx)
                return NULL;
        for (size_t i = 0; i < idx->n_releases; i++) {
                free(idx->releases[i].name);
                free(idx->releases[i].version);
        }
        free(idx->releases);
        free(idx->name);
        free(idx);
        return NULL;
}

/* Exactly 64 lowercase hex digits. */
static int parse_digest(const char *s, uint8_t out[32]) {
        if (strlen(s) != 64)
                return -EINVAL;
        for (size_t i = 0; i < 64; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return -EINVAL;
        return hex_decode(s, strlen(s), out, 32) < 0 ? -EINVAL : 0;
}

/* Refuses any key of o not in keys[], and any of keys[] missing or not a string. */
static int check_keys(json_t *o, const char *const *keys, size_t n, const char *what,
                      ReleaseError *err) {
        const char *key;
        json_t *v;

        json_object_foreach(o, key, v) {
                bool known = false;

                for (size_t i = 0; i < n; i++)
                        if (strcmp(key, keys[i]) == 0)
                                known = true;
                if (!known) {
                        release_error_set(err, RELEASE_E_INDEX, "%s: unknown key \"%.40s\"", what,
                                          key);
                        return -EINVAL;
                }
        }
        for (size_t i = 0; i < n; i++)
                if (!json_object_get(o, keys[i])) {
                        release_error_set(err, RELEASE_E_INDEX, "%s: missing key \"%s\"", what,
                                          keys[i]);
                        return -EINVAL;
                }
        return 0;
}

int index_parse_time(const char *s, int64_t *ret) {
        static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
        struct tm tm = {}, back;
        time_t t;

        if (!s || strlen(s) != sizeof(shape) - 1)
                return -EINVAL;
        for (size_t i = 0; shape[i]; i++)
                if (shape[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != shape[i])
                        return -EINVAL;
        tm.tm_year = atoi(s) - 1900;
        tm.tm_mon = atoi(s + 5) - 1;
        tm.tm_mday = atoi(s + 8);
        tm.tm_hour = atoi(s + 11);
        tm.tm_min = atoi(s + 14);
        tm.tm_sec = atoi(s + 17);
        if (tm.tm_year < 70 || tm.tm_mon > 11 || tm.tm_mon < 0 || tm.tm_mday < 1 ||
            tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 59)
                return -EINVAL;
        back = tm;
        t = timegm(&back);
        /* timegm() normalises: February 30th comes back as March 2nd, and is refused. */
        if (t == (time_t)-1 || back.tm_mday != tm.tm_mday || back.tm_mon != tm.tm_mon)
                return -EINVAL;
        *ret = (int64_t)t;
        return 0;
}

int index_format_time(int64_t t, char out[INDEX_TIME_SIZE]) {
        time_t tt = (time_t)t;
        struct tm tm;

        if (t < 0 || t > INT64_C(253402300799) || !gmtime_r(&tt, &tm) ||
            strftime(out, INDEX_TIME_SIZE, "%Y-%m-%dT%H:%M:%SZ", &tm) != INDEX_TIME_SIZE - 1)
                return -EINVAL;
        return 0;
}

int index_version_compare(const char *a, const char *b) {
        unsigned va[3] = {}, vb[3] = {};

        (void)sscanf(a, "%u.%u.%u", &va[0], &va[1], &va[2]);
        (void)sscanf(b, "%u.%u.%u", &vb[0], &vb[1], &vb[2]);
        for (size_t i = 0; i < 3; i++)
                if (va[i] != vb[i])
                        return va[i] < vb[i] ? -1 : 1;
        return 0;
}

const IndexRelease *index_find_newest(const MarketplaceIndex *idx, const char *name) {
        const IndexRelease *best = NULL;

        if (!idx || !name)
                return NULL;
        for (size_t i = 0; i < idx->n_releases; i++)
                if (strcmp(idx->releases[i].name, name) == 0 &&
                    (!best || index_version_compare(idx->releases[i].version, best->version) > 0))
                        best = &idx->releases[i];
        return best;
}

static const char *string_of(json_t *o, const char *key, const char *what, ReleaseError *err) {
        json_t *v = json_object_get(o, key);

        if (!json_is_string(v)) {
                release_error_set(err, RELEASE_E_INDEX, "%s: \"%s\" is not a string", what, key);
                return NULL;
        }
        return json_string_value(v);
}

/* Fills err with RELEASE_E_NOMEM. Returns -ENOMEM. */
static int index_oom(ReleaseError *err) {
        release_error_set(err, RELEASE_E_NOMEM, "out of memory");
        return -ENOMEM;
}

/* The len bytes at json as index.json's document: at most INDEX_BYTES_MAX bytes, no NUL, strict
 * JSON without duplicate keys, an object. 0 and the object in *ret, or a negative errno with err
 * filled. */
static int index_load_json(const char *json, size_t len, json_t **ret, ReleaseError *err) {
        json_error_t jerr;
        json_t *root;

        if (len > INDEX_BYTES_MAX) {
                release_error_set(err, RELEASE_E_TOO_LARGE, "index.json is over 1 MiB");
                return -EFBIG;
        }
        if (memchr(json, 0, len)) {
                release_error_set(err, RELEASE_E_INDEX, "index.json contains a NUL byte");
                return -EINVAL;
        }

        /* Duplicate keys refused; \u0000 in strings refused (no JSON_ALLOW_NUL); the document
         * must be an object or an array (no JSON_DECODE_ANY). */
        root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!root) {
                release_error_set(err, RELEASE_E_INDEX, "index.json: %s (%d:%d)", jerr.text,
                                  jerr.line, jerr.column);
                return -EINVAL;
        }
        if (!json_is_object(root)) {
                json_decref(root);
                release_error_set(err, RELEASE_E_INDEX, "index.json is not an object");
                return -EINVAL;
        }
        *ret = root;
        return 0;
}

/*
 * The top level of index.json (root): exactly its four keys, a marketplace name of 1 to 128
 * bytes, an integer version from 1 to INDEX_VERSION_MAX, an expiry as YYYY-MM-DDTHH:MM:SSZ and an
 * array of at most INDEX_RELEASES_MAX releases, checked in that order. 0 with the name (borrowed
 * from root), version, expiry and array in the ret_ arguments, or -EINVAL with err filled.
 */
static int index_parse_top(json_t *root, const char **ret_name, uint64_t *ret_version,
                           int64_t *ret_expires, json_t **ret_releases, ReleaseError *err) {
        static const char *const top_keys[] = {"name", "version", "expires", "releases"};
        json_t *releases, *jversion;
        const char *s, *expires_text;
        int r;

        r = check_keys(root, top_keys, ELEMENTSOF(top_keys), "index.json", err);
        if (r < 0)
                return r;
        s = string_of(root, "name", "index.json", err);
        if (!s)
                return -EINVAL;
        if (s[0] == 0 || strlen(s) > 128) {
                release_error_set(err, RELEASE_E_INDEX, "index.json: bad marketplace name");
                return -EINVAL;
        }
        /* The version is what rollback protection compares: an exact integer, never a float
         * that two readers could round apart. */
        jversion = json_object_get(root, "version");
        if (!json_is_integer(jversion) || json_integer_value(jversion) < 1 ||
            (uint64_t)json_integer_value(jversion) > INDEX_VERSION_MAX) {
                release_error_set(err, RELEASE_E_INDEX,
                                  "index.json: \"version\" is not an integer from 1 to 2^53");
                return -EINVAL;
        }
        expires_text = string_of(root, "expires", "index.json", err);
        if (!expires_text)
                return -EINVAL;
        if (index_parse_time(expires_text, ret_expires) < 0) {
                release_error_set(err, RELEASE_E_INDEX,
                                  "index.json: \"expires\" is not a time as "
                                  "YYYY-MM-DDTHH:MM:SSZ (UTC)");
                return -EINVAL;
        }
        releases = json_object_get(root, "releases");
        if (!json_is_array(releases)) {
                release_error_set(err, RELEASE_E_INDEX, "index.json: \"releases\" is not an array");
                return -EINVAL;
        }
        if (json_array_size(releases) > INDEX_RELEASES_MAX) {
                release_error_set(err, RELEASE_E_INDEX, "index.json: more than %d releases",
                                  INDEX_RELEASES_MAX);
                return -EINVAL;
        }
        *ret_name = s;
        *ret_version = (uint64_t)json_integer_value(jversion);
        *ret_releases = releases;
        return 0;
}

/*
 * releases[i] (e) of index.json into idx->releases[i], which idx has room for: exactly its four
 * keys, all strings, a valid plugin name and version, both digests 64 lowercase hex digits, and
 * no earlier entry of the same name and version, checked in that order. 0 and idx->n_releases
 * i + 1; or -EINVAL, or -ENOMEM (idx->n_releases then covers the half-filled entry), with err
 * filled.
 */
static int index_parse_release(json_t *e, size_t i, MarketplaceIndex *idx, ReleaseError *err) {
        static const char *const rel_keys[] = {"name", "version", "manifest_sha256",
                                               "binary_sha256"};
        IndexRelease *ir = &idx->releases[i];
        const char *name, *version, *md, *bd;
        char what[48];
        int r;

        snprintf(what, sizeof(what), "index.json: releases[%zu]", i);
        if (!json_is_object(e)) {
                release_error_set(err, RELEASE_E_INDEX, "%s is not an object", what);
                return -EINVAL;
        }
        r = check_keys(e, rel_keys, ELEMENTSOF(rel_keys), what, err);
        if (r < 0)
                return r;
        name = string_of(e, "name", what, err);
        version = name ? string_of(e, "version", what, err) : NULL;
        md = version ? string_of(e, "manifest_sha256", what, err) : NULL;
        bd = md ? string_of(e, "binary_sha256", what, err) : NULL;
        if (!bd)
                return -EINVAL;
        if (!manifest_name_valid(name)) {
                release_error_set(err, RELEASE_E_INDEX, "%s: bad plugin name", what);
                return -EINVAL;
        }
        if (!manifest_version_valid(version)) {
                release_error_set(err, RELEASE_E_INDEX, "%s: bad version", what);
                return -EINVAL;
        }
        if (parse_digest(md, ir->manifest_sha256) < 0 || parse_digest(bd, ir->binary_sha256) < 0) {
                release_error_set(err, RELEASE_E_INDEX,
                                  "%s: a digest is not 64 lowercase hex digits", what);
                return -EINVAL;
        }
        if (index_find(idx, name, version)) {
                release_error_set(err, RELEASE_E_INDEX, "%s: %s %s listed twice", what, name,
                                  version);
                return -EINVAL;
        }
        ir->name = strdup(name);
        ir->version = strdup(version);
        idx->n_releases = i + 1;
        if (!ir->name || !ir->version)
                return index_oom(err);
        return 0;
}

int index_parse(const char *json, size_t len, MarketplaceIndex **ret, ReleaseError *err) {
        _cleanup_(index_freep) MarketplaceIndex *idx = NULL;
        _cleanup_(json_decrefp) json_t *root = NULL;
        json_t *releases;
        const char *name;
        uint64_t version;
        int64_t expires;
        size_t n;
        int r;

        if (!json || !ret) {
                release_error_set(err, RELEASE_E_INDEX, "invalid arguments");
                return -EINVAL;
        }
        r = index_load_json(json, len, &root, err);
        if (r < 0)
                return r;
        r = index_parse_top(root, &name, &version, &expires, &releases, err);
        if (r < 0)
                return r;
        n = json_array_size(releases);

        idx = calloc(1, sizeof(*idx));
        if (!idx)
                return index_oom(err);
        idx->name = strdup(name);
        if (!idx->name)
                return index_oom(err);
        idx->version = version;
        idx->expires = expires;
        if (n > 0) {
                idx->releases = calloc(n, sizeof(IndexRelease));
                if (!idx->releases)
                        return index_oom(err);
        }
        for (size_t i = 0; i < n; i++) {
                r = index_parse_release(json_array_get(releases, i), i, idx, err);
                if (r < 0)
                        return r;
        }

        if (err)
                *err = (ReleaseError){};
        *ret = TAKE_PTR(idx);
        return 0;
}

const IndexRelease *index_find(const MarketplaceIndex *idx, const char *name, const char *version) {
        if (!idx || !name || !version)
                return NULL;
        /* Linear: the 1 MiB cap keeps an index to a few thousand entries, so even the duplicate
         * check of index_parse() (quadratic) stays in the tens of milliseconds. */
        for (size_t i = 0; i < idx->n_releases; i++)
                if (idx->releases[i].name && strcmp(idx->releases[i].name, name) == 0 &&
                    strcmp(idx->releases[i].version, version) == 0)
                        return &idx->releases[i];
        return NULL;
}

int index_verify(const Marketplace *m, const char *json, size_t len, const char *bundle_json,
                 size_t bundle_len, MarketplaceIndex **ret, ReleaseError *err) {
        _cleanup_(index_freep) MarketplaceIndex *idx = NULL;
        SigstoreResult res = {};
        int r;

        if (!m || !m->name || !json || !bundle_json || !ret) {
                release_error_set(err, RELEASE_E_INDEX, "invalid arguments");
                return -EINVAL;
        }
        if (len > INDEX_BYTES_MAX) {
                release_error_set(err, RELEASE_E_TOO_LARGE, "index.json is over 1 MiB");
                return -EFBIG;
        }

        r = marketplace_verify_file(m, json, len, bundle_json, bundle_len, &res);
        if (r < 0) {
                bool identity = strstr(res.reason, "identity") || strstr(res.reason, "issuer");

                release_error_set(err,
                                  r == -ENOMEM ? RELEASE_E_NOMEM
                                  : identity   ? RELEASE_E_IDENTITY
                                               : RELEASE_E_BUNDLE,
                                  "%s: %s", INDEX_BUNDLE_FILE,
                                  res.reason[0] ? res.reason : "does not verify");
                return r;
        }
        sigstore_result_done(&res);

        r = index_parse(json, len, &idx, err);
        if (r < 0)
                return r;
        if (strcmp(idx->name, m->name) != 0) {
                release_error_set(err, RELEASE_E_INDEX,
                                  "index.json names marketplace \"%.64s\", not \"%.64s\"",
                                  idx->name, m->name);
                return -EKEYREJECTED;
        }
        *ret = TAKE_PTR(idx);
        return 0;
}

int index_load(const Marketplace *m, int dirfd, MarketplaceIndex **ret, ReleaseError *err) {
        _cleanup_free_ char *json = NULL, *bundle = NULL;
        size_t len = 0, blen = 0;
        int r;

        r = release_read_file(dirfd, INDEX_FILE, INDEX_BYTES_MAX, &json, &len);
        if (r < 0) {
                release_error_set(err, r == -EFBIG ? RELEASE_E_TOO_LARGE : RELEASE_E_MISSING_FILE,
                                  "cannot read %s: %s", INDEX_FILE, strerror(-r));
                return r;
        }
        r = release_read_file(dirfd, INDEX_BUNDLE_FILE, SIGSTORE_JSON_MAX, &bundle, &blen);
        if (r < 0) {
                release_error_set(err, r == -EFBIG ? RELEASE_E_TOO_LARGE : RELEASE_E_MISSING_FILE,
                                  "cannot read %s: %s", INDEX_BUNDLE_FILE, strerror(-r));
                return r;
        }
        return index_verify(m, json, len, bundle, blen, ret, err);
}

int index_check_release(const MarketplaceIndex *idx, const Release *rel, ReleaseError *err) {
        const IndexRelease *ir;

        if (!idx || !rel || !rel->manifest) {
                release_error_set(err, RELEASE_E_INDEX, "invalid arguments");
                return -EINVAL;
        }
        ir = index_find(idx, rel->manifest->name, rel->manifest->version);
        if (!ir) {
                release_error_set(err, RELEASE_E_INDEX_MISSING,
                                  "%s %s is not listed in the index of %.64s", rel->manifest->name,
                                  rel->manifest->version, idx->name);
                return -ENOENT;
        }
        if (memcmp(ir->manifest_sha256, rel->manifest_sha256, 32) != 0) {
                release_error_set(err, RELEASE_E_INDEX_MISMATCH,
                                  "%s %s: the manifest's SHA-256 differs from the index",
                                  rel->manifest->name, rel->manifest->version);
                return -EKEYREJECTED;
        }
        if (memcmp(ir->binary_sha256, rel->binary_sha256, 32) != 0) {
                release_error_set(err, RELEASE_E_INDEX_MISMATCH,
                                  "%s %s: the binary's SHA-256 differs from the index",
                                  rel->manifest->name, rel->manifest->version);
                return -EKEYREJECTED;
        }
        return 0;
}
