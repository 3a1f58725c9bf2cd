/* libFuzzer target: policy_parse on arbitrary bytes must never crash, leak or overread, and what
 * it accepts must print and parse back to the same print. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* policy_format() into a new string, or NULL. */
static char *format(const Policy *p) {
        char *s = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&s, &n);

        if (!f)
                return NULL;
        if (policy_format(p, f) < 0) {
                fclose(f);
                free(s);
                return NULL;
        }
        if (fclose(f) != 0) {
                free(s);
                return NULL;
        }
        return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Policy *p = NULL, *q = NULL;
        PolicyDiag d;
        char *copy, *a, *b;
        int r;

        /* An exact-size copy, so ASan catches any read past the end of the buffer. */
        copy = malloc(size ? size : 1);
        if (!copy)
                return 0;
        if (size)
                memcpy(copy, data, size);

        r = policy_parse(copy, size, &p, &d);
        if (r == 0) {
                if (!p || !p->agent_socket.path || !p->scope.slice)
                        abort();
                a = format(p);
                if (!a)
                        abort();
                if (policy_parse(a, strlen(a), &q, &d) != 0)
                        abort();
                b = format(q);
                if (!b || strcmp(a, b) != 0)
                        abort();
                free(a);
                free(b);
                policy_free(q);
                policy_free(p);
        } else if (r == -EINVAL) {
                if (p || d.code == POLICY_OK || !policy_error_name(d.code) ||
                    memchr(d.message, '\0', sizeof(d.message)) == NULL || d.message[0] == '\0')
                        abort();
                if (d.code != E_POLICY_TOO_LARGE && (d.line == 0 || d.column == 0))
                        abort();
        } else if (r != -ENOMEM)
                abort();

        free(copy);
        return 0;
}
