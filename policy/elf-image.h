/* What lint reads of a plugin's ELF image: its writable segments and its symbols (no I/O). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The bytes the kernel maps writable and private at execve: the sum of p_memsz over the PT_LOAD
 * segments with PF_W (data, bss). They count against RLIMIT_DATA (the manifest's memory) before
 * the plugin's first instruction. 0 with *ret; -ENOEXEC when buf is not an x86-64 ELF64 image
 * with sound program headers (elf-check.c's rules), -EOVERFLOW when the sum does not fit.
 */
int elf_writable_bytes(const uint8_t *buf, size_t len, uint64_t *ret);

/*
 * Calls fn for the symbols of the image's symbol table (SHT_SYMTAB): with relocation sections
 * that use it (a binary linked with --emit-relocs), once per relocation that names a symbol,
 * with that symbol's name (what the code refers to: several times for the same name); without,
 * once per named symbol, defined or not. *ret_relocations says which. A non-zero return of fn
 * stops the walk and is returned. 0 when done; -ENOEXEC for an image that is not a sound x86-64
 * ELF64 (every offset, size, count and link checked against len; fn may have been called for
 * what came before the fault); -ENOENT without a symbol table (stripped).
 */
int elf_symbols_foreach(const uint8_t *buf, size_t len, int (*fn)(const char *name, void *userdata),
                        void *userdata, bool *ret_relocations);
