/* Downloads for lockctl with libcurl: a marketplace's index and releases into sealed memfds, so
 * that what lockd verifies is exactly what was downloaded and nothing lands on disk. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <curl/curl.h>

#include "escape.h"
#include "fd-util.h"
#include "lockctl-fetch.h"
#include "macro.h"

struct Fetcher {
        CURL *curl;
        char *base;         /* without a trailing '/' */
        char *cacert;       /* NULL: the system's CAs */
        const char *scheme; /* "https" or "file": the only protocol this fetcher speaks */
};

/* One download in flight: the memfd it fills and its cap. */
typedef struct Transfer {
        int fd;
        uint64_t max;
        uint64_t got;
        bool over; /* the body went past max: aborted */
        int error; /* a write to the memfd failed */
        bool progress;
        const char *label;
} Transfer;

Fetcher *fetcher_free(Fetcher *f) {
        if (!f)
                return NULL;
        if (f->curl)
                curl_easy_cleanup(f->curl);
        free(f->base);
        free(f->cacert);
        free(f);
        return NULL;
}

int fetcher_new(const char *base_url, const char *cacert, Fetcher **ret) {
        _cleanup_(fetcher_freep) Fetcher *f = NULL;
        size_t n;

        if (!base_url || !ret)
                return -EINVAL;
        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        if (strncmp(base_url, "https://", 8) == 0)
                f->scheme = "https";
        else if (strncmp(base_url, "file://", 7) == 0)
                f->scheme = "file";
        else
                return -EINVAL;
        f->base = strdup(base_url);
        if (!f->base || (cacert && !(f->cacert = strdup(cacert))))
                return -ENOMEM;
        n = strlen(f->base);
        while (n > 0 && f->base[n - 1] == '/')
                f->base[--n] = 0;
        /* Once per process; lockctl makes one fetcher per verb and no threads. */
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return -ENOMEM;
        f->curl = curl_easy_init();
        if (!f->curl)
                return -ENOMEM;
        *ret = TAKE_PTR(f);
        return 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata) {
        Transfer *t = userdata;
        size_t n = size * nmemb;
        int r;

        /* The cap holds whatever the server announced (or did not): a body that grows past it
         * is cut off here, before its bytes are kept. */
        if (n > t->max - t->got) {
                t->over = true;
                return 0;
        }
        r = loop_write(t->fd, data, n);
        if (r < 0) {
                t->error = r;
                return 0;
        }
        t->got += n;
        return n;
}

static int on_progress(void *userdata, curl_off_t total, curl_off_t now, curl_off_t ut,
                       curl_off_t un) {
        Transfer *t = userdata;

        if (t->progress && total > 0)
                fprintf(stderr, "\r%s: %.1f of %.1f KiB", t->label, (double)now / 1024,
                        (double)total / 1024);
        else if (t->progress)
                fprintf(stderr, "\r%s: %.1f KiB", t->label, (double)now / 1024);
        return 0;
}

/* Prints "lockctl: URL: what" with the URL escaped. */
static void print_failure(const char *url, const char *what) {
        _cleanup_free_ char *u = escape_bytes(url, strlen(url));

        fprintf(stderr, "lockctl: %s: %s\n", u ? u : "?", what);
}

int fetcher_get(Fetcher *f, const char *path, uint64_t max) {
        _cleanup_free_ char *url = NULL;
        _cleanup_close_ int fd = -1;
        char errbuf[CURL_ERROR_SIZE] = "", what[CURL_ERROR_SIZE + 96];
        Transfer t = {.max = max, .label = path, .progress = isatty(STDERR_FILENO) == 1};
        CURLcode cc;
        int r;

        if (asprintf(&url, "%s/%s", f->base, path) < 0) {
                fprintf(stderr, "lockctl: out of memory\n");
                return -1;
        }
        fd = memfd_new(path, false);
        if (fd < 0) {
                print_failure(url, strerror(-fd));
                return -1;
        }
        t.fd = fd;

        curl_easy_reset(f->curl);
        /*
         * Only the marketplace's own scheme, and redirects only to https: a server that answers
         * with a redirect to file:// (or to plain http) gets nothing, so a https marketplace can
         * never make lockctl read a local file as the human. TLS peers are verified (curl's
         * default, stated here) against the system's CAs or --cacert.
         */
        if (curl_easy_setopt(f->curl, CURLOPT_URL, url) != CURLE_OK ||
            curl_easy_setopt(f->curl, CURLOPT_PROTOCOLS_STR, f->scheme) != CURLE_OK ||
            curl_easy_setopt(f->curl, CURLOPT_REDIR_PROTOCOLS_STR, "https") != CURLE_OK ||
            curl_easy_setopt(f->curl, CURLOPT_FOLLOWLOCATION, 1L) != CURLE_OK ||
            curl_easy_setopt(f->curl, CURLOPT_MAXREDIRS, (long)FETCH_REDIRECTS_MAX) != CURLE_OK ||
            curl_easy_setopt(f->curl, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK ||
            curl_easy_setopt(f->curl, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK ||
            (f->cacert && curl_easy_setopt(f->curl, CURLOPT_CAINFO, f->cacert) != CURLE_OK) ||
            curl_easy_setopt(f->curl, CURLOPT_CONNECTTIMEOUT, (long)FETCH_CONNECT_TIMEOUT_S) !=
                    CURLE_OK ||
            /* Idle: less than one byte a second for that long ends the transfer. */
            curl_easy_setopt(f->curl, CURLOPT_LOW_SPEED_LIMIT, 1L) != CURLE_OK ||
            curl_easy_setopt(f->curl, CURLOPT_LOW_SPEED_TIME, (long)FETCH_IDLE_TIMEOUT_S) !=
                    CURLE_OK ||
            curl_easy_setopt(f->curl, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max) != CURLE_OK ||
            curl_easy_setopt(f->curl, CURLOPT_FAILONERROR, 1L) != CURLE_OK ||
            curl_easy_setopt(f->curl, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
            curl_easy_setopt(f->curl, CURLOPT_USERAGENT, "lockctl") != CURLE_OK ||
            curl_easy_setopt(f->curl, CURLOPT_ERRORBUFFER, errbuf) != CURLE_OK ||
            curl_easy_setopt(f->curl, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK ||
            curl_easy_setopt(f->curl, CURLOPT_WRITEDATA, &t) != CURLE_OK ||
            curl_easy_setopt(f->curl, CURLOPT_NOPROGRESS, t.progress ? 0L : 1L) != CURLE_OK ||
            curl_easy_setopt(f->curl, CURLOPT_XFERINFOFUNCTION, on_progress) != CURLE_OK ||
            curl_easy_setopt(f->curl, CURLOPT_XFERINFODATA, &t) != CURLE_OK) {
                print_failure(url, "this libcurl lacks an option lockctl needs");
                return -1;
        }
        cc = curl_easy_perform(f->curl);
        if (t.progress)
                fputc('\n', stderr);
        if (t.over || cc == CURLE_FILESIZE_EXCEEDED) {
                snprintf(what, sizeof(what), "larger than %llu bytes: refused",
                         (unsigned long long)max);
                print_failure(url, what);
                return -1;
        }
        if (t.error < 0) {
                print_failure(url, strerror(-t.error));
                return -1;
        }
        if (cc != CURLE_OK) {
                snprintf(what, sizeof(what), "%s%s%s", curl_easy_strerror(cc),
                         errbuf[0] ? ": " : "", errbuf);
                if (cc == CURLE_OPERATION_TIMEDOUT)
                        snprintf(what, sizeof(what),
                                 "no connection within %d s, or no byte for %d s: %s",
                                 FETCH_CONNECT_TIMEOUT_S, FETCH_IDLE_TIMEOUT_S,
                                 errbuf[0] ? errbuf : "timed out");
                print_failure(url, what);
                return -1;
        }
        r = memfd_seal(fd, false);
        if (r < 0) {
                print_failure(url, strerror(-r));
                return -1;
        }
        if (lseek(fd, 0, SEEK_SET) < 0) {
                print_failure(url, strerror(errno));
                return -1;
        }
        return TAKE_FD(fd);
}
