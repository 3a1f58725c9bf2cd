/* The ELF checks of a plugin binary: a static executable for this machine, nothing to load; and
 * the reading of its header and program headers that lint's image reader (elf-image.c) shares. */
#pragma once

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

/* Checks that the ELF image in buf is a static x86-64 executable: 0, -ENOEXEC or -ELIBEXEC. */
int elf_check_static(const uint8_t *buf, size_t len);

/* The header of an x86-64 ELF64 executable (or PIE) in buf, into *ret: 0 or -ENOEXEC. */
int elf_header_read(const uint8_t *buf, size_t len, Elf64_Ehdr *ret);

/* The header, as elf_header_read(), of an image whose program header table is sound and lies
 * inside len bytes: 0 or -ENOEXEC. */
int elf_phdrs_read(const uint8_t *buf, size_t len, Elf64_Ehdr *ret);

/* Program header i (below eh->e_phnum) of an image whose table elf_phdrs_read() accepted. */
void elf_phdr(const uint8_t *buf, const Elf64_Ehdr *eh, unsigned i, Elf64_Phdr *ret);
