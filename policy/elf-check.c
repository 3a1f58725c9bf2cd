/* The static-binary check: a plugin must be a static x86-64 ELF executable, with no PT_INTERP. */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "elf-check.h"

/*
 * Landlock lets a plugin read and execute its own bytes only, so a dynamic loader and shared
 * libraries could not be opened anyway; refusing PT_INTERP up front turns an obscure exec failure
 * into a clear message. Every offset and count is checked against len before use: the bytes come
 * from a marketplace, not from us.
 */
int elf_check_static(const uint8_t *buf, size_t len) {
        Elf64_Ehdr eh;

        if (len < sizeof(eh))
                return -ENOEXEC;
        memcpy(&eh, buf, sizeof(eh));
        if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
            eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_ident[EI_VERSION] != EV_CURRENT ||
            eh.e_machine != EM_X86_64 || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN))
                return -ENOEXEC;
        if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum >= PN_XNUM)
                return -ENOEXEC;
        if (eh.e_phoff > len || (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > len - eh.e_phoff)
                return -ENOEXEC;

        for (unsigned i = 0; i < eh.e_phnum; i++) {
                Elf64_Phdr ph;

                memcpy(&ph, buf + eh.e_phoff + (uint64_t)i * sizeof(ph), sizeof(ph));
                if (ph.p_type == PT_INTERP)
                        return -ELIBEXEC;
        }
        return 0;
}
