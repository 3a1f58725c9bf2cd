/* libFuzzer target: varlink_message_parse_call() and varlink_message_is_oneway(), then
 * varlink_params_check() against a sample table, and varlink_message_parse_reply(), on arbitrary
 * bytes: never a crash, leak or overread, and every refusal names what was wrong. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "varlink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const VarlinkParam sample[] = {
        {"ticket", VARLINK_STRING, true, 1, 64},
        {"step", VARLINK_INT, false, 0, 15},
        {"auto", VARLINK_BOOL, false, 0, 0},
        {"inputs", VARLINK_STRING_MAP, false, 0, 8},
        {"steps", VARLINK_ARRAY, false, 1, 16},
        {"extra", VARLINK_OBJECT, false, 0, 0},
        {},
};

static void check_call(const char *buf, size_t len) {
        json_t *m = NULL, *params;
        const char *bad = NULL;
        int r;

        r = varlink_message_parse_call(buf, len, &m, &bad);
        if (r < 0) {
                if (r != -EBADMSG || m || !bad)
                        abort();
                return;
        }
        /* An accepted call has a method "x.Y" of at most VARLINK_NAME_MAX bytes (whether it
         * names anything is the dispatcher's business), parameters absent or an object (never
         * null), and boolean flags. */
        {
                const char *method = json_string_value(json_object_get(m, "method"));
                const char *dot = method ? strrchr(method, '.') : NULL;

                if (!json_is_object(m) || !dot || dot == method || !dot[1] ||
                    strlen(method) > VARLINK_NAME_MAX)
                        abort();
                if (json_object_get(m, "parameters") &&
                    !json_is_object(json_object_get(m, "parameters")))
                        abort();
                if (varlink_message_is_oneway(buf, len) !=
                    json_is_true(json_object_get(m, "oneway")))
                        abort();
        }
        params = json_object_get(m, "parameters");
        if (params) {
                bad = NULL;
                r = varlink_params_check(params, sample, &bad);
                if (r < 0 && (r != -EINVAL || !bad))
                        abort();
                if (r == 0 && !json_object_get(params, "ticket"))
                        abort();
        }
        json_decref(m);
}

static void check_reply(const char *buf, size_t len) {
        json_t *params = NULL;
        char *error = NULL;
        bool continues = false;

        if (varlink_message_parse_reply(buf, len, &params, &error, &continues) < 0)
                return;
        if (!json_is_object(params) || (error && continues))
                abort();
        json_decref(params);
        free(error);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *copy;

        /* An exact-size copy, so ASan catches any read past the end of the buffer. */
        copy = malloc(size ? size : 1);
        if (!copy)
                return 0;
        if (size)
                memcpy(copy, data, size);
        check_call(copy, size);
        check_reply(copy, size);
        free(copy);
        return 0;
}
