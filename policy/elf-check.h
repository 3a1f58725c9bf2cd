/* The ELF check of a plugin binary: a static executable for this machine, nothing to load. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Checks that the ELF image in buf is a static x86-64 executable: 0, -ENOEXEC or -ELIBEXEC. */
int elf_check_static(const uint8_t *buf, size_t len);
