/* A run request's life: made with every fd closed, freed with its fds and its secrets wiped. */
#include <stdlib.h>
#include <string.h>

#include "fd-util.h"
#include "macro.h"
#include "run-request.h"

RunRequest *run_request_new(void) {
        RunRequest *req = calloc(1, sizeof(*req));

        if (req) {
                req->input_fd = -1;
                req->inputs_fd = req->stdout_fd = req->stderr_fd = req->detail_fd = -1;
        }
        return req;
}

RunRequest *run_request_free(RunRequest *req) {
        if (!req)
                return NULL;
        safe_close(req->input_fd);
        safe_close(req->inputs_fd);
        safe_close(req->stdout_fd);
        safe_close(req->stderr_fd);
        safe_close(req->detail_fd);
        if (req->inputs_json) {
                /* Human-typed values: wiped, never left behind in freed memory. */
                explicit_bzero(req->inputs_json, req->inputs_len);
                free(req->inputs_json);
        }
        explicit_bzero(req->result.detail, sizeof(req->result.detail));
        free(req);
        return NULL;
}
