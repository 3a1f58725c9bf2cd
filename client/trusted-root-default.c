/*
 * Sigstore's production public-good trusted root, compiled in from data/trusted_root.json: the
 * default of verify-bundle when the installed copy (which an administrator may replace) is absent.
 */
#include <stddef.h>

#include "trusted-root-default.h"

/* The file's bytes, followed by a NUL, placed in .rodata by the assembler. */
__asm__(".section .rodata\n"
        ".balign 16\n"
        ".global lockd_trusted_root_default\n"
        "lockd_trusted_root_default:\n"
        ".incbin \"" LOCKD_TRUSTED_ROOT_FILE "\"\n"
        ".global lockd_trusted_root_default_end\n"
        "lockd_trusted_root_default_end:\n"
        ".byte 0\n"
        ".previous\n");

extern const char lockd_trusted_root_default[];
extern const char lockd_trusted_root_default_end[];

const char *trusted_root_default(size_t *ret_len) {
        *ret_len = (size_t)(lockd_trusted_root_default_end - lockd_trusted_root_default);
        return lockd_trusted_root_default;
}
