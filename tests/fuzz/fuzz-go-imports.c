/* libFuzzer target: go_imports_parse, go_mod_module_path and go_mod_replacements on arbitrary
 * bytes must never crash, leak or overread, and what they return must hold their promises. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "go-imports.h"
#include "import-check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A refusal: -EINVAL with a named code and a terminated message, or -ENOMEM. */
static void check_refusal(int r, const GoSourceDiag *d) {
        if (r == -ENOMEM)
                return;
        if (r != -EINVAL || d->code == GO_SOURCE_OK || d->code >= _E_GO_SOURCE_MAX ||
            !memchr(d->message, 0, sizeof(d->message)) || !d->message[0])
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        GoImports *g = NULL;
        GoSourceDiag d;
        char *copy, *module = NULL;
        int r;

        /* An exact-size copy, so ASan catches any read past the end of the buffer. */
        copy = malloc(size ? size : 1);
        if (!copy)
                return 0;
        if (size)
                memcpy(copy, data, size);

        r = go_imports_parse(copy, size, &g, &d);
        if (r == 0) {
                if (!g || g->n > GO_IMPORTS_MAX)
                        abort();
                for (size_t i = 0; i < g->n; i++) {
                        const char *p = g->items[i].path;

                        if (!p || !p[0] || strlen(p) > GO_IMPORT_PATH_MAX ||
                            g->items[i].line == 0 || g->items[i].column == 0)
                                abort();
                        (void)go_import_allowed("acme.fuzz", p);
                }
                go_imports_free(g);
        } else {
                if (g)
                        abort();
                check_refusal(r, &d);
        }

        r = go_mod_module_path(copy, size, &module, &d);
        if (r == 0) {
                if (!module || !module[0] || strlen(module) > GO_IMPORT_PATH_MAX)
                        abort();
                (void)go_module_path_check(module);
                (void)go_import_allowed(module, module);
                free(module);
        } else {
                if (module)
                        abort();
                check_refusal(r, &d);
        }
        GoReplaces *rs = NULL;
        r = go_mod_replacements(copy, size, &rs, &d);
        if (r == 0) {
                if (!rs || rs->n > GO_REPLACES_MAX)
                        abort();
                for (size_t i = 0; i < rs->n; i++)
                        if (!rs->items[i].module || !rs->items[i].module[0])
                                abort();
                go_replaces_free(rs);
        } else {
                if (rs)
                        abort();
                check_refusal(r, &d);
        }
        free(copy);
        return 0;
}
