/* The static-binary check: a plugin must be a static x86-64 ELF executable, with no PT_INTERP;
 * and the header reading it shares with elf-image.c. Every offset and count is checked against
 * the image's length before use: the bytes come from a marketplace, not from us. */
#include <errno.h>
#include <string.h>

#include "elf-check.h"

int elf_header_read(const uint8_t *buf, size_t len, Elf64_Ehdr *ret) {
        Elf64_Ehdr eh;

        if (!buf || len < sizeof(eh))
                return -ENOEXEC;
        memcpy(&eh, buf, sizeof(eh));
        if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
            eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_ident[EI_VERSION] != EV_CURRENT ||
            eh.e_machine != EM_X86_64 || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN))
                return -ENOEXEC;
        *ret = eh;
        return 0;
}

int elf_phdrs_read(const uint8_t *buf, size_t len, Elf64_Ehdr *ret) {
        Elf64_Ehdr eh;
        int r;

        r = elf_header_read(buf, len, &eh);
        if (r < 0)
                return r;
        if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum >= PN_XNUM)
                return -ENOEXEC;
        if (eh.e_phoff > len || (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > len - eh.e_phoff)
                return -ENOEXEC;
        *ret = eh;
        return 0;
}

void elf_phdr(const uint8_t *buf, const Elf64_Ehdr *eh, unsigned i, Elf64_Phdr *ret) {
        memcpy(ret, buf + eh->e_phoff + (uint64_t)i * sizeof(*ret), sizeof(*ret));
}

/*
 * Landlock lets a plugin read and execute its own bytes only, so a dynamic loader and shared
 * libraries could not be opened anyway; refusing PT_INTERP up front turns an obscure exec failure
 * into a clear message.
 */
int elf_check_static(const uint8_t *buf, size_t len) {
        Elf64_Ehdr eh;
        int r;

        r = elf_phdrs_read(buf, len, &eh);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < eh.e_phnum; i++) {
                Elf64_Phdr ph;

                elf_phdr(buf, &eh, i, &ph);
                if (ph.p_type == PT_INTERP)
                        return -ELIBEXEC;
        }
        return 0;
}
