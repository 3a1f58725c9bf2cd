/* Console methods that read files a console passed: the copies are made off the event loop. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console-files.h"
#include "console-reply.h"
#include "file-copy.h"
#include "log.h"
#include "macro.h"
#include "policy.h"

#define FDS_MAX                   16
#define FILE_READ_TIMEOUT_DEFAULT 30 /* s, without a policy (the tests' servers) */

typedef struct FilesJob {
        Manager *manager;
        VarlinkCall *call; /* a reference */
        json_t *params;    /* a reference */
        VarlinkMethodFn then;
        const char *too_big;
        FileCopy *copy;
        int fds[FDS_MAX];
        size_t n;
} FilesJob;

static uint64_t read_timeout_sec(const Manager *m) {
        return m->policy ? m->policy->limits.file_read_timeout_sec : FILE_READ_TIMEOUT_DEFAULT;
}

static FilesJob *job_free(FilesJob *j) {
        if (!j)
                return NULL;
        file_copy_cancel(j->copy);
        for (size_t i = 0; i < j->n; i++)
                safe_close(j->fds[i]);
        varlink_call_unref(j->call);
        json_decref(j->params);
        free(j);
        return NULL;
}

/* The peer went away while its files were read: the copy (and a child that may hang) ends. */
static void on_cancel(VarlinkCall *call, void *userdata) {
        job_free(userdata);
}

static void copied(int error, void *userdata) {
        FilesJob *j = userdata;
        Manager *m = j->manager;
        VarlinkCall *call = j->call;
        char reason[256];
        int r;

        j->copy = NULL;
        varlink_call_set_cancel(call, NULL, NULL);
        if (error == -ETIMEDOUT) {
                log_struct(LOG_WARNING, NULL, NULL,
                           "%s refused: reading the file(s) passed took longer than %" PRIu64 " s",
                           varlink_call_method(call), read_timeout_sec(m));
                snprintf(reason, sizeof(reason),
                         "reading the file took longer than limits.file_read_timeout (%" PRIu64
                         " s): is it on a hung network or FUSE file system?",
                         read_timeout_sec(m));
                (void)reply_unavailable(call, reason);
        } else if (error == -EFBIG)
                (void)reply_invalid_request(call, j->too_big);
        else if (error < 0) {
                snprintf(reason, sizeof(reason), "a file passed cannot be read: %s",
                         strerror(-error));
                (void)reply_invalid_request(call, reason);
        } else {
                for (size_t i = 0; i < j->n; i++)
                        if (j->fds[i] >= 0 && varlink_call_put_fd(call, (int64_t)i, j->fds[i]) == 0)
                                j->fds[i] = -1;
                r = j->then(call, j->params, m);
                /* A method that failed without answering: the peer gets a word, never silence
                 * (an answer already sent makes this a no-op: the call is no longer pending). */
                if (r < 0) {
                        snprintf(reason, sizeof(reason), "%s failed: %s", varlink_call_method(call),
                                 strerror(-r));
                        (void)reply_unavailable(call, reason);
                }
        }
        job_free(j);
}

int console_read_files_then(VarlinkCall *call, json_t *params, Manager *m, uint64_t max_bytes,
                            const char *too_big, VarlinkMethodFn then) {
        FilesJob *j;
        size_t n = varlink_call_n_fds(call);
        int r;

        if (n == 0)
                return then(call, params, m);
        if (n > FDS_MAX)
                return reply_invalid_request(call, "too many file descriptors");
        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        *j = (FilesJob){.manager = m,
                        .call = varlink_call_ref(call),
                        .params = json_incref(params),
                        .then = then,
                        .too_big = too_big,
                        .n = n};
        for (size_t i = 0; i < n; i++)
                j->fds[i] = varlink_call_take_fd(call, (int64_t)i); /* -1 for an empty slot */
        r = file_copy_start(m->event, j->fds, n, max_bytes, read_timeout_sec(m) * 1000000ULL,
                            copied, j, &j->copy);
        if (r < 0) {
                job_free(j);
                return r;
        }
        varlink_call_set_cancel(call, on_cancel, j);
        return 0;
}
