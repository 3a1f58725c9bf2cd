/* Human-typed input values: the check of a value against the input it is bound to. */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "codec.h"
#include "inputs.h"
#include "macro.h"

static bool email_valid(const char *v, size_t len) {
        const char *at = memchr(v, '@', len);
        size_t local, domain;
        bool dot = false;

        if (!at || memchr(at + 1, '@', len - (size_t)(at - v) - 1))
                return false;
        local = (size_t)(at - v);
        domain = len - local - 1;
        if (local == 0 || domain < 3)
                return false;
        for (size_t i = 0; i < len; i++)
                if (v[i] <= 0x20 || v[i] >= 0x7f)
                        return false;
        for (size_t i = local + 1; i < len; i++) {
                char c = v[i];
                if (c == '.') {
                        /* No empty label: not first, not last, not two dots in a row. */
                        if (i == local + 1 || i == len - 1 || v[i - 1] == '.')
                                return false;
                        dot = true;
                } else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                             (c >= '0' && c <= '9') || c == '-')) {
                        return false;
                }
        }
        return dot;
}

int input_value_check(const ManifestInput *in, const char *value, size_t len) {
        if (len == 0 || len > in->max_bytes)
                return -EINVAL;
        switch (in->kind) {
        case INPUT_KIND_TEXT:
                if (!utf8_valid(value, len))
                        return -EINVAL;
                for (size_t i = 0; i < len; i++)
                        if ((uint8_t)value[i] < 0x20 || value[i] == 0x7f)
                                return -EINVAL;
                return 0;
        case INPUT_KIND_EMAIL:
                return email_valid(value, len) ? 0 : -EINVAL;
        case INPUT_KIND_DIGITS:
                for (size_t i = 0; i < len; i++)
                        if (value[i] < '0' || value[i] > '9')
                                return -EINVAL;
                return 0;
        }
        return -EINVAL;
}

int inputs_canonical_json(const Manifest *m, const char *const values[MANIFEST_INPUTS_MAX],
                          char **ret, size_t *ret_bad) {
        json_t *obj;
        char *out;

        for (size_t k = 0; k < m->n_inputs; k++) {
                *ret_bad = k;
                if (!values[k])
                        return -ENOENT;
                if (input_value_check(&m->inputs[k], values[k], strlen(values[k])) < 0)
                        return -EINVAL;
        }
        obj = json_object();
        if (!obj)
                return -ENOMEM;
        for (size_t k = 0; k < m->n_inputs; k++)
                if (json_object_set_new(obj, m->inputs[k].name, json_string(values[k])) < 0) {
                        json_decref(obj);
                        return -ENOMEM;
                }
        out = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
        json_decref(obj);
        if (!out)
                return -ENOMEM;
        *ret = out;
        return 0;
}
