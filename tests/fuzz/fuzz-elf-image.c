/* libFuzzer target: an ELF image's writable segments and symbols read from arbitrary bytes must
 * never crash or read outside the buffer, and must name only strings inside it. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elf-image.h"
#include "import-check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct Walk {
        const uint8_t *buf;
        size_t len, calls;
} Walk;

static int on_symbol(const char *name, void *userdata) {
        Walk *w = userdata;
        size_t n = strlen(name);

        /* A name lies, with its NUL, inside the image; never empty. */
        if (n == 0 || (const uint8_t *)name < w->buf ||
            (const uint8_t *)name + n >= w->buf + w->len)
                abort();
        (void)c_symbol_denied(name, w->calls & 1);
        w->calls++;
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t *copy = malloc(size ? size : 1);
        uint64_t writable = 42;
        bool relocations = false;
        Walk w;
        int r;

        if (!copy)
                return 0;
        if (size)
                memcpy(copy, data, size);
        w = (Walk){.buf = copy, .len = size};

        r = elf_writable_bytes(copy, size, &writable);
        if (r != 0 && (writable != 42 || (r != -ENOEXEC && r != -EOVERFLOW)))
                abort();
        r = elf_symbols_foreach(copy, size, on_symbol, &w, &relocations);
        if (r != 0 && r != -ENOEXEC && r != -ENOENT)
                abort();
        free(copy);
        return 0;
}
