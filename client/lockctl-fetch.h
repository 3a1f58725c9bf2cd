/* lockctl's downloads: a marketplace's files fetched with libcurl as the human, into sealed
 * memfds (nothing written to disk), with caps, timeouts and TLS verified. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* How long a connection may take to be made, and how long a transfer may move no byte. */
#define FETCH_CONNECT_TIMEOUT_S 30
#define FETCH_IDLE_TIMEOUT_S    30
#define FETCH_REDIRECTS_MAX     5

typedef struct Fetcher Fetcher;

/*
 * A downloader for the marketplace at base_url (https:// or file://, as lockd keeps it), reusing
 * its connection across files. With cacert (a PEM file) TLS trusts that CA instead of the
 * system's; without it, the system's CAs. 0 and *ret, or a negative errno (-EINVAL for a URL of
 * another scheme, -ENOMEM). Prints nothing.
 */
int fetcher_new(const char *base_url, const char *cacert, Fetcher **ret);
Fetcher *fetcher_free(Fetcher *f);
static inline void fetcher_freep(Fetcher **p) {
        if (*p)
                fetcher_free(*p);
}

/*
 * Downloads base_url/path into a new sealed memfd of at most max bytes: only the marketplace's
 * own scheme, redirects only to https:// (a https marketplace never reads a local file), the
 * connect and idle timeouts above, HTTP errors as failures, progress on stderr when it is a
 * terminal. Returns the memfd, or -1 after printing "lockctl: URL: why" on stderr.
 */
int fetcher_get(Fetcher *f, const char *path, uint64_t max);
