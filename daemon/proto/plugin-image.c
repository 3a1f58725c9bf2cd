/* The checks both processes make of a plugin image: the spec's protocol and limits, the binary's
 * size and ELF form, and what each refusal means in words. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf-check.h"
#include "macro.h"
#include "plugin-image.h"

int plugin_image_spec_check(const SandboxSpec *spec) {
        if (!spec || (spec->protocol != 1 && spec->protocol != 2))
                return -EINVAL;
        if (spec->protocol == 1 && (spec->inputs || spec->detail))
                return -EINVAL;
        if (spec->limits.cpu_s == 0 || spec->limits.cpu_s > 24 * 3600 ||
            spec->limits.timeout_s == 0 || spec->limits.timeout_s > 24 * 3600 ||
            spec->limits.memory_bytes < MiB || spec->limits.memory_bytes > 1024 * GiB)
                return -EINVAL;
        return 0;
}

int plugin_image_binary_check(int fd) {
        uint8_t head[4096];
        struct stat st;
        Elf64_Ehdr eh;
        ssize_t n;
        void *map;
        int r;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (st.st_size == 0)
                return -ENOEXEC;
        if ((uint64_t)st.st_size > PLUGIN_BINARY_MAX)
                return -EFBIG;
        /*
         * The header and the program header table are nearly always in the first page: read
         * there, the check costs one pread(). A table inside the page is inside the file, so the
         * verdict is the whole image's. Only a table further in is checked through a mapping,
         * whose munmap() costs a TLB shootdown across the CPUs this process ran on (tens of
         * microseconds on the spawner's loop after a quiet spell).
         */
        n = pread(fd, head, sizeof(head), 0);
        if (n < 0)
                return negative_errno();
        if (elf_phdrs_read(head, (size_t)n, &eh) == 0)
                return elf_check_static(head, (size_t)n);
        map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED)
                return negative_errno();
        r = elf_check_static(map, (size_t)st.st_size);
        munmap(map, (size_t)st.st_size);
        return r;
}

const char *plugin_image_strerror(int r) {
        switch (r) {
        case -ENOEXEC:
                return "not a static x86-64 ELF executable";
        case -ELIBEXEC:
                return "the binary is dynamically linked (it has a PT_INTERP program header); "
                       "plugins must be static executables, since Landlock lets them open "
                       "nothing but themselves";
        case -EFBIG:
                return "the binary is larger than 256 MiB";
        case -EINVAL:
                return "invalid protocol or limits";
        default:
                return strerror(-r);
        }
}
