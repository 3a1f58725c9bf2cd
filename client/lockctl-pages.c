/* lockctl's side of lockd's paged listings: every page of a console listing fetched and joined
 * (ARCHITECTURE.md, Listings). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockctl-console.h"
#include "lockctl-pages.h"
#include "lockctl.h"
#include "macro.h"

int console_all_pages_raw(VarlinkClient *c, const char *method, json_t *params, const char *key,
                          json_t **ret_params, char **ret_error) {
        _cleanup_(json_decrefp) json_t *all = json_array(), *p = NULL, *out = NULL;
        _cleanup_free_ char *cursor = NULL, *full = NULL;

        if (!all || asprintf(&full, "%s.%s", CONSOLE_INTERFACE, method) < 0)
                return -ENOMEM;
        p = params ? json_deep_copy(params) : json_object();
        if (!p)
                return -ENOMEM;
        for (unsigned page = 0;; page++) {
                _cleanup_(json_decrefp) json_t *reply = NULL;
                _cleanup_free_ char *error = NULL;
                const char *next;
                int r;

                /* A listing that never ends would hold lockctl forever: lockd's do end. */
                if (page == CONSOLE_PAGES_MAX)
                        return -EBADMSG;
                if (json_object_set_new(p, "cursor", cursor ? json_string(cursor) : json_null()) < 0)
                        return -ENOMEM;
                r = varlink_client_call(c, full, p, NULL, 0, &reply, &error);
                if (r < 0)
                        return r;
                if (error) {
                        *ret_params = TAKE_PTR(reply);
                        *ret_error = TAKE_PTR(error);
                        return 0;
                }
                if (json_array_extend(all, json_object_get(reply, key)) < 0)
                        return -EBADMSG;
                next = json_string_value(json_object_get(reply, "next"));
                /* A cursor that does not move would loop: lockd's always move. */
                if (!next || (cursor && strcmp(next, cursor) == 0))
                        break;
                free(cursor);
                cursor = strdup(next);
                if (!cursor)
                        return -ENOMEM;
        }
        out = json_pack("{s:O}", key, all);
        if (!out)
                return -ENOMEM;
        *ret_params = TAKE_PTR(out);
        *ret_error = NULL;
        return 0;
}

int console_call_all_pages(const char *what, const char *method, json_t *params, const char *key,
                           json_t **ret_params) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(json_decrefp) json_t *reply = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        r = console_connect(&c);
        if (r != 0)
                return r;
        r = console_all_pages_raw(c, method, params, key, &reply, &error);
        if (r < 0) {
                fprintf(stderr, "lockctl: %s failed: lost the connection to lockd: %s\n", what,
                        console_transport_error(r));
                return LOCKCTL_EXIT_FAIL;
        }
        if (error)
                return console_print_error(what, error, reply);
        *ret_params = TAKE_PTR(reply);
        return 0;
}

static int by_created(const void *a, const void *b) {
        long long x = console_json_integer(*(json_t *const *)a, "created_usec", 0);
        long long y = console_json_integer(*(json_t *const *)b, "created_usec", 0);

        return x < y ? -1 : x > y;
}

int console_tickets_load(VarlinkClient *c, size_t max, json_t **ret_tickets, char **ret_error,
                         json_t **ret_params) {
        _cleanup_(json_decrefp) json_t *all = json_array(), *p = json_object(), *out = NULL;
        _cleanup_free_ char *cursor = NULL;
        _cleanup_free_ json_t **v = NULL;
        size_t n;
        json_t *t;

        if (!all || !p)
                return -ENOMEM;
        for (unsigned page = 0;; page++) {
                _cleanup_(json_decrefp) json_t *reply = NULL;
                _cleanup_free_ char *error = NULL;
                const char *next;
                int r;

                if (page == CONSOLE_PAGES_MAX)
                        return -EBADMSG;
                if (json_object_set_new(p, "cursor", cursor ? json_string(cursor) : json_null()) < 0)
                        return -ENOMEM;
                r = varlink_client_call(c, CONSOLE_INTERFACE ".ListTickets", p, NULL, 0, &reply,
                                        &error);
                if (r < 0)
                        return r;
                if (error) {
                        *ret_params = TAKE_PTR(reply);
                        *ret_error = TAKE_PTR(error);
                        return 0;
                }
                if (json_array_extend(all, json_object_get(reply, "tickets")) < 0)
                        return -EBADMSG;
                next = json_string_value(json_object_get(reply, "next"));
                if (!next || (cursor && strcmp(next, cursor) == 0))
                        break;
                /* Enough once max are in, unless the last was pending: pending tickets come
                 * first, and every one of them is loaded. */
                t = json_array_get(all, json_array_size(all) - 1);
                if (json_array_size(all) >= max &&
                    strcmp(json_string_value(json_object_get(t, "state")) ?: "", "pending") != 0)
                        break;
                free(cursor);
                cursor = strdup(next);
                if (!cursor)
                        return -ENOMEM;
        }
        n = json_array_size(all);
        v = calloc(n ?: 1, sizeof(*v));
        out = json_array();
        if (!v || !out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                v[i] = json_array_get(all, i);
        qsort(v, n, sizeof(*v), by_created);
        for (size_t i = 0; i < n; i++) {
                t = v[i];
                if (json_array_append(out, t) < 0)
                        return -ENOMEM;
        }
        *ret_tickets = TAKE_PTR(out);
        *ret_error = NULL;
        return 0;
}
