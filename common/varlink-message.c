/* Varlink messages: parsing a call or an answer from untrusted bytes, checking a call's
 * parameters against a method's table, and formatting a message for the wire. Pure functions. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "varlink.h"

/*
 * Refuses text nested deeper than max before jansson sees it, so a hostile message of a million
 * '[' costs one linear scan and no recursion. Brackets inside strings do not count; an escape
 * skips the character after the backslash (the digits of \uXXXX hold no quote or bracket). For
 * invalid JSON the count may be off, but jansson refuses such text anyway.
 */
static bool json_depth_ok(const char *buf, size_t len, unsigned max) {
        unsigned depth = 0;
        bool in_string = false;

        for (size_t i = 0; i < len; i++) {
                char ch = buf[i];

                if (in_string) {
                        if (ch == '\\')
                                i++;
                        else if (ch == '"')
                                in_string = false;
                } else if (ch == '"')
                        in_string = true;
                else if (ch == '{' || ch == '[') {
                        if (++depth > max)
                                return false;
                } else if ((ch == '}' || ch == ']') && depth > 0)
                        depth--;
        }
        return true;
}

/* Loads one JSON object with duplicate keys refused, after the depth pre-scan; NULL otherwise. */
static json_t *json_load_object(const char *buf, size_t len) {
        json_error_t error;
        json_t *v;

        if (!buf || !json_depth_ok(buf, len, VARLINK_JSON_DEPTH_MAX))
                return NULL;
        /* Without JSON_ALLOW_NUL jansson refuses \u0000 in strings and keys alike. */
        v = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &error);
        if (v && !json_is_object(v)) {
                json_decref(v);
                return NULL;
        }
        return v;
}

static bool is_alpha(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_alnum(char c) {
        return is_alpha(c) || (c >= '0' && c <= '9');
}

bool varlink_interface_name_valid(const char *s, size_t len) {
        size_t n_segments = 0;

        /* Reverse-domain name: segments of [A-Za-z0-9-], no '-' at either end of one, the first
         * starting with a letter, at least two segments. */
        if (len == 0 || len > VARLINK_NAME_MAX || !is_alpha(s[0]))
                return false;
        for (size_t i = 0; i < len;) {
                size_t start = i;

                while (i < len && s[i] != '.') {
                        if (!is_alnum(s[i]) && s[i] != '-')
                                return false;
                        i++;
                }
                if (i == start || s[start] == '-' || s[i - 1] == '-')
                        return false;
                n_segments++;
                if (i < len && ++i == len) /* a trailing dot */
                        return false;
        }
        return n_segments >= 2;
}

/* "iface.Member" with a valid interface name and a member [A-Z][A-Za-z0-9]*. */
bool varlink_qualified_name_valid(const char *s) {
        const char *dot;
        size_t len;

        if (!s)
                return false;
        len = strlen(s);
        dot = memrchr(s, '.', len);
        if (!dot || len > VARLINK_NAME_MAX || !varlink_interface_name_valid(s, (size_t)(dot - s)))
                return false;
        if (!(dot[1] >= 'A' && dot[1] <= 'Z'))
                return false;
        for (const char *p = dot + 1; *p; p++)
                if (!is_alnum(*p))
                        return false;
        return true;
}

/* The "method" of a call: a string of at most VARLINK_NAME_MAX bytes with a non-empty part on
 * either side of its last dot. Which interface and member it names is the dispatcher's to find:
 * a name that is not found is InterfaceNotFound or MethodNotFound, whatever its spelling. */
static bool call_method_valid(const char *s) {
        const char *dot;
        size_t len;

        if (!s)
                return false;
        len = strlen(s);
        dot = memrchr(s, '.', len);
        return dot && dot > s && dot[1] != '\0' && len <= VARLINK_NAME_MAX;
}

int varlink_message_parse_call(const char *buf, size_t len, json_t **ret, const char **ret_bad) {
        _cleanup_(json_decrefp) json_t *m = NULL;
        const char *key, *bad = NULL;
        json_t *v;
        void *tmp;

        m = json_load_object(buf, len);
        if (!m) {
                bad = "json";
                goto fail;
        }

        /* Every key is known and of its type: a peer cannot smuggle anything past this. */
        json_object_foreach_safe(m, tmp, key, v) {
                if (strcmp(key, "method") == 0) {
                        if (!call_method_valid(json_string_value(v))) {
                                bad = "method";
                                goto fail;
                        }
                } else if (strcmp(key, "parameters") == 0) {
                        /* null is the same as absent (the specification's nullable fields). */
                        if (json_is_null(v)) {
                                if (json_object_del(m, key) < 0) {
                                        bad = "parameters";
                                        goto fail;
                                }
                        } else if (!json_is_object(v)) {
                                bad = "parameters";
                                goto fail;
                        }
                } else if (strcmp(key, "more") == 0 || strcmp(key, "oneway") == 0 ||
                           strcmp(key, "upgrade") == 0) {
                        /* "upgrade": false is the same as absent; true is refused by the
                         * dispatcher with a declared error (no method here upgrades). */
                        if (!json_is_boolean(v)) {
                                bad = strcmp(key, "more") == 0     ? "more"
                                      : strcmp(key, "oneway") == 0 ? "oneway"
                                                                   : "upgrade";
                                goto fail;
                        }
                } else {
                        /* The key itself is the peer's text: name the message, not the key. */
                        bad = "message";
                        goto fail;
                }
        }
        if (!json_object_get(m, "method")) {
                bad = "method";
                goto fail;
        }

        *ret = TAKE_PTR(m);
        return 0;

fail:
        if (ret_bad)
                *ret_bad = bad;
        return -EBADMSG;
}

bool varlink_message_is_oneway(const char *buf, size_t len) {
        _cleanup_(json_decrefp) json_t *m = json_load_object(buf, len);

        return m && json_is_true(json_object_get(m, "oneway"));
}

int varlink_message_parse_reply(const char *buf, size_t len, json_t **ret_params, char **ret_error,
                                bool *ret_continues) {
        _cleanup_(json_decrefp) json_t *m = NULL;
        json_t *params, *error, *continues;
        char *e = NULL;
        const char *key;
        json_t *v;

        m = json_load_object(buf, len);
        if (!m)
                return -EBADMSG;
        json_object_foreach(m, key, v) if (strcmp(key, "parameters") != 0 &&
                                           strcmp(key, "error") != 0 &&
                                           strcmp(key, "continues") != 0) return -EBADMSG;

        params = json_object_get(m, "parameters");
        error = json_object_get(m, "error");
        continues = json_object_get(m, "continues");
        if (params && !json_is_object(params))
                return -EBADMSG;
        if (error && !varlink_qualified_name_valid(json_string_value(error)))
                return -EBADMSG;
        if (continues && !json_is_boolean(continues))
                return -EBADMSG;
        /* An error ends a call: it never continues. */
        if (error && json_is_true(continues))
                return -EBADMSG;

        if (error) {
                e = strdup(json_string_value(error));
                if (!e)
                        return -ENOMEM;
        }
        if (ret_params)
                *ret_params = params ? json_incref(params) : json_object();
        if (ret_params && !*ret_params) {
                free(e);
                return -ENOMEM;
        }
        if (ret_error)
                *ret_error = e;
        else
                free(e);
        if (ret_continues)
                *ret_continues = json_is_true(continues);
        return 0;
}

int varlink_message_format(const json_t *m, char **ret, size_t *ret_len) {
        char *s;

        /* Compact, and jansson escapes any NUL inside a string, so the only NUL is the last. */
        s = json_dumps(m, JSON_COMPACT);
        if (!s)
                return -ENOMEM;
        *ret_len = strlen(s) + 1;
        *ret = s;
        return 0;
}

/* A table's bounds: with min == max == 0 none. */
static bool param_in_bounds(const VarlinkParam *p, int64_t v) {
        if (p->min == 0 && p->max == 0)
                return true;
        return v >= p->min && v <= p->max;
}

static bool size_in_bounds(const VarlinkParam *p, size_t n) {
        return n <= INT64_MAX && param_in_bounds(p, (int64_t)n);
}

/* UTF-8 is jansson's guarantee; an embedded NUL (length past the C string) is refused here. */
static bool string_ok(const json_t *v) {
        return json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v);
}

static bool param_value_ok(const VarlinkParam *p, const json_t *v) {
        switch (p->type) {
        case VARLINK_STRING:
                return string_ok(v) && size_in_bounds(p, json_string_length(v));
        case VARLINK_INT:
                return json_is_integer(v) && param_in_bounds(p, json_integer_value(v));
        case VARLINK_BOOL:
                return json_is_boolean(v);
        case VARLINK_STRING_MAP: {
                const char *key;
                size_t key_len;
                json_t *item;

                if (!json_is_object(v) || !size_in_bounds(p, json_object_size(v)))
                        return false;
                json_object_keylen_foreach((json_t *)v, key, key_len,
                                           item) if (strlen(key) != key_len ||
                                                     !string_ok(item)) return false;
                return true;
        }
        case VARLINK_ARRAY:
                return json_is_array(v) && size_in_bounds(p, json_array_size(v));
        case VARLINK_OBJECT:
                return json_is_object(v);
        }
        return false;
}

static const VarlinkParam *param_find(const VarlinkParam *table, const char *name) {
        for (const VarlinkParam *p = table; p && p->name; p++)
                if (strcmp(p->name, name) == 0)
                        return p;
        return NULL;
}

int varlink_params_check(const json_t *params, const VarlinkParam *table, const char **ret_bad) {
        const char *key;
        size_t key_len;
        json_t *v;

        if (!json_is_object(params)) {
                if (ret_bad)
                        *ret_bad = "parameters";
                return -EINVAL;
        }

        /* Keys in the peer's order, so the first offending one is named; a key with an embedded
         * NUL could otherwise pass as its prefix. */
        json_object_keylen_foreach((json_t *)params, key, key_len, v) {
                const VarlinkParam *p = strlen(key) == key_len ? param_find(table, key) : NULL;

                if (!p) {
                        if (ret_bad)
                                *ret_bad = key;
                        return -EINVAL;
                }
                if (!json_is_null(v) && !param_value_ok(p, v)) {
                        if (ret_bad)
                                *ret_bad = p->name;
                        return -EINVAL;
                }
        }

        for (const VarlinkParam *p = table; p && p->name; p++) {
                if (!p->required)
                        continue;
                v = json_object_get(params, p->name);
                if (!v || json_is_null(v)) {
                        if (ret_bad)
                                *ret_bad = p->name;
                        return -EINVAL;
                }
        }
        return 0;
}
