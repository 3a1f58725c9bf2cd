/* lockctl's side of lockd's paged listings: every page of a console listing fetched and joined
 * (ARCHITECTURE.md, Listings). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockctl-console.h"
#include "lockctl-pages.h"
#include "lockctl.h"
#include "macro.h"

/* Whether the pages read so far (all) are enough, before the listing's last page. */
typedef bool (*PagesEnoughFn)(const json_t *all, size_t max);

/*
 * Reads pages of method (params borrowed) on c until the last one, or until enough says so,
 * joining their arrays under key into *ret_all. 0 with *ret_all, or with *ret_error and
 * *ret_params (an error answer); a negative errno when the transport failed or an answer was
 * malformed.
 */
static int pages_read(VarlinkClient *c, const char *method, json_t *params, const char *key,
                      PagesEnoughFn enough, size_t max, json_t **ret_all, json_t **ret_params,
                      char **ret_error) {
        _cleanup_(json_decrefp) json_t *all = json_array(), *p = NULL;
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
                if (json_object_set_new(p, "cursor", cursor ? json_string(cursor) : json_null()) <
                    0)
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
                if (!next || (cursor && strcmp(next, cursor) == 0) || (enough && enough(all, max)))
                        break;
                free(cursor);
                cursor = strdup(next);
                if (!cursor)
                        return -ENOMEM;
        }
        *ret_all = TAKE_PTR(all);
        *ret_error = NULL;
        return 0;
}

int console_all_pages_raw(VarlinkClient *c, const char *method, json_t *params, const char *key,
                          json_t **ret_params, char **ret_error) {
        _cleanup_(json_decrefp) json_t *all = NULL, *out = NULL;
        char *error = NULL;
        int r;

        r = pages_read(c, method, params, key, NULL, 0, &all, ret_params, &error);
        if (r < 0)
                return r;
        if (error) {
                *ret_error = error;
                return 0;
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

/* Enough tickets for the console once max are in, unless the last was pending: pending tickets
 * come first, and every one of them is loaded. */
static bool tickets_enough(const json_t *all, size_t max) {
        const json_t *t = json_array_get(all, json_array_size(all) - 1);

        return json_array_size(all) >= max &&
               strcmp(json_string_value(json_object_get(t, "state")) ?: "", "pending") != 0;
}

int console_tickets_load(VarlinkClient *c, size_t max, json_t **ret_tickets, char **ret_error,
                         json_t **ret_params) {
        _cleanup_(json_decrefp) json_t *all = NULL, *out = NULL;
        _cleanup_free_ json_t **v = NULL;
        char *error = NULL;
        size_t n;
        int r;

        r = pages_read(c, "ListTickets", NULL, "tickets", tickets_enough, max, &all, ret_params,
                       &error);
        if (r < 0)
                return r;
        if (error) {
                *ret_error = error;
                return 0;
        }
        n = json_array_size(all);
        v = calloc(n ?: 1, sizeof(*v));
        out = json_array();
        if (!v || !out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                v[i] = json_array_get(all, i);
        qsort(v, n, sizeof(*v), by_created);
        for (size_t i = 0; i < n; i++)
                if (json_array_append(out, v[i]) < 0)
                        return -ENOMEM;
        *ret_tickets = TAKE_PTR(out);
        *ret_error = NULL;
        return 0;
}

/* The installed plugins (ListPlugins), a new reference, or NULL after printing why. */
json_t *console_installed_plugins(VarlinkClient *c, const char *what) {
        _cleanup_(json_decrefp) json_t *reply = NULL;
        _cleanup_free_ char *error = NULL;
        json_t *plugins;

        if (console_all_pages_raw(c, "ListPlugins", NULL, "plugins", &reply, &error) < 0) {
                fprintf(stderr, "lockctl: %s failed: lost the connection to lockd\n", what);
                return NULL;
        }
        if (error) {
                console_print_error(what, error, reply);
                return NULL;
        }
        plugins = json_object_get(reply, "plugins");
        return json_is_array(plugins) ? json_incref(plugins) : NULL;
}

/* The installed entry of name in plugins (ListPlugins' array), or NULL. */
json_t *console_plugin_find(json_t *plugins, const char *name) {
        json_t *p;
        size_t i;

        json_array_foreach(plugins, i, p) {
                const char *n = console_json_string(p, "name");

                if (n && strcmp(n, name) == 0)
                        return p;
        }
        return NULL;
}
