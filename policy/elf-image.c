/* A plugin's ELF image as lint reads it: writable segments and symbols, every offset checked. */
#include <elf.h>
#include <errno.h>
#include <string.h>

#include "elf-check.h"
#include "elf-image.h"

int elf_writable_bytes(const uint8_t *buf, size_t len, uint64_t *ret) {
        Elf64_Ehdr eh;
        uint64_t sum = 0;
        int r;

        r = elf_phdrs_read(buf, len, &eh);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < eh.e_phnum; i++) {
                Elf64_Phdr ph;

                elf_phdr(buf, &eh, i, &ph);
                if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_W))
                        continue;
                if (ph.p_memsz > UINT64_MAX - sum)
                        return -EOVERFLOW;
                sum += ph.p_memsz;
        }
        *ret = sum;
        return 0;
}

/* Section i's header, its contents checked to lie inside the image (unless SHT_NOBITS). */
static int section(const uint8_t *buf, size_t len, const Elf64_Ehdr *eh, unsigned i,
                   Elf64_Shdr *ret) {
        Elf64_Shdr sh;

        if (i >= eh->e_shnum)
                return -ENOEXEC;
        memcpy(&sh, buf + eh->e_shoff + (uint64_t)i * sizeof(sh), sizeof(sh));
        if (sh.sh_type != SHT_NOBITS && (sh.sh_offset > len || sh.sh_size > len - sh.sh_offset))
                return -ENOEXEC;
        *ret = sh;
        return 0;
}

/* The symbol table's parts: its entries and their string table. */
typedef struct SymbolTable {
        const uint8_t *syms;
        size_t n_syms;
        const char *strs;
        size_t strs_len;
} SymbolTable;

/* Symbol k's name: "" for none; NULL when it does not lie, NUL-terminated, in the strings. */
static const char *symbol_name(const SymbolTable *t, size_t k) {
        Elf64_Sym sym;

        memcpy(&sym, t->syms + k * sizeof(sym), sizeof(sym));
        if (sym.st_name >= t->strs_len ||
            !memchr(t->strs + sym.st_name, 0, t->strs_len - sym.st_name))
                return NULL;
        return t->strs + sym.st_name;
}

int elf_symbols_foreach(const uint8_t *buf, size_t len, int (*fn)(const char *name, void *userdata),
                        void *userdata, bool *ret_relocations) {
        SymbolTable t = {};
        Elf64_Ehdr eh;
        Elf64_Shdr sh, strsh;
        unsigned symtab = 0;
        bool relocations = false;
        int r;

        r = elf_header_read(buf, len, &eh);
        if (r < 0)
                return r;
        if (eh.e_shnum == 0)
                return -ENOENT; /* no sections: nothing to read symbols from */
        if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum >= SHN_LORESERVE)
                return -ENOEXEC;
        if (eh.e_shoff > len || (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > len - eh.e_shoff)
                return -ENOEXEC;

        for (unsigned i = 1; i < eh.e_shnum && symtab == 0; i++) {
                r = section(buf, len, &eh, i, &sh);
                if (r < 0)
                        return r;
                if (sh.sh_type == SHT_SYMTAB)
                        symtab = i;
        }
        if (symtab == 0)
                return -ENOENT;
        r = section(buf, len, &eh, symtab, &sh);
        if (r < 0)
                return r;
        if (sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_size % sizeof(Elf64_Sym) != 0)
                return -ENOEXEC;
        r = section(buf, len, &eh, sh.sh_link, &strsh);
        if (r < 0)
                return r;
        if (strsh.sh_type != SHT_STRTAB || sh.sh_link == symtab)
                return -ENOEXEC;
        t = (SymbolTable){.syms = buf + sh.sh_offset,
                          .n_syms = sh.sh_size / sizeof(Elf64_Sym),
                          .strs = (const char *)buf + strsh.sh_offset,
                          .strs_len = strsh.sh_size};

        /*
         * Relocation sections that refer to this table and are not loaded: those --emit-relocs
         * kept, the code's own references. A loaded one (SHF_ALLOC: a static binary's .rela.plt
         * of IRELATIVE entries) is the loader's, and names nothing.
         */
        for (unsigned i = 1; i < eh.e_shnum; i++) {
                size_t entsize;

                r = section(buf, len, &eh, i, &sh);
                if (r < 0)
                        return r;
                if ((sh.sh_type != SHT_RELA && sh.sh_type != SHT_REL) || sh.sh_link != symtab ||
                    (sh.sh_flags & SHF_ALLOC))
                        continue;
                entsize = sh.sh_type == SHT_RELA ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel);
                if (sh.sh_entsize != entsize || sh.sh_size % entsize != 0)
                        return -ENOEXEC;
                relocations = true;
                for (size_t k = 0; k < sh.sh_size / entsize; k++) {
                        Elf64_Rel rel; /* r_info is at the same offset in Elf64_Rela */
                        const char *name;
                        size_t s;

                        memcpy(&rel, buf + sh.sh_offset + k * entsize, sizeof(rel));
                        s = ELF64_R_SYM(rel.r_info);
                        if (s == 0)
                                continue;
                        if (s >= t.n_syms)
                                return -ENOEXEC;
                        name = symbol_name(&t, s);
                        if (!name)
                                return -ENOEXEC;
                        if (name[0] && (r = fn(name, userdata)) != 0)
                                return r;
                }
        }
        if (!relocations)
                for (size_t k = 1; k < t.n_syms; k++) {
                        const char *name = symbol_name(&t, k);

                        if (!name)
                                return -ENOEXEC;
                        if (name[0] && (r = fn(name, userdata)) != 0)
                                return r;
                }
        if (ret_relocations)
                *ret_relocations = relocations;
        return 0;
}
