/* A marketplace's index as lockctl uses it: downloaded from the marketplace's URL, verified and
 * admitted by lockd (VerifyIndex: signature, rollback, freeze), then read here from the very
 * bytes lockd verified. */
#pragma once

#include <jansson.h>

#include "index.h"
#include "lockctl-fetch.h"
#include "varlink.h"

typedef struct RemoteIndex {
        char *marketplace;
        char *url;
        Fetcher *fetcher;
        MarketplaceIndex *index;
        int index_fd, bundle_fd; /* sealed memfds: what lockd verified, for InstallPlugin */
} RemoteIndex;

RemoteIndex *remote_index_free(RemoteIndex *ri);
static inline void remote_index_freep(RemoteIndex **p) {
        if (*p)
                remote_index_free(*p);
}

/*
 * Downloads index.json and its bundle from marketplace's url (cacert as fetcher_new() takes it),
 * has lockd verify and admit them (VerifyIndex), and parses the same bytes (their SHA-256 must be
 * the one lockd answered). 0 and *ret, or an exit code after printing why on stderr ("lockctl:
 * WHAT refused: ..." for lockd's refusals, named).
 */
int remote_index_load(VarlinkClient *c, const char *what, const char *marketplace, const char *url,
                      const char *cacert, RemoteIndex **ret);

/*
 * The marketplaces lockd knows (ListMarketplaces) that have a URL, or only the one named only
 * (when non-NULL; an exit code after printing why when it is unknown or has no URL). 0 and *ret
 * (a new reference to an array of Marketplace objects), or an exit code.
 */
int remote_marketplaces(VarlinkClient *c, const char *what, const char *only, json_t **ret);

/* Prints lockd's refusals of an index (IndexRollback, IndexExpired) in words, others as
 * console_print_error() does. Returns the exit code. */
int remote_print_error(const char *what, const char *error, json_t *params);
