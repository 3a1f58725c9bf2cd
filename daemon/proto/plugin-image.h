/* What a plugin run needs of a plugin: its sealed binary and what its manifest asks of the
 * sandbox. The engine's catalogue keeps these; the spawner builds a Sandbox from them
 * (ARCHITECTURE.md, two processes). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

typedef struct SandboxLimits {
        uint64_t cpu_s;        /* RLIMIT_CPU soft; the hard limit is one second more */
        uint64_t memory_bytes; /* RLIMIT_DATA; RLIMIT_AS is this + 4 GiB */
        uint64_t timeout_s;    /* wall clock, then SIGKILL */
} SandboxLimits;

/* What a run's sandbox needs of a manifest. */
typedef struct SandboxSpec {
        unsigned protocol; /* 1 or 2: LOCKFILE_PLUGIN_PROTOCOL */
        bool inputs;       /* protocol 2 with inputs: fd 6 is given */
        bool detail;       /* protocol 2 with detail = true: fd 7 is given */
        SandboxLimits limits;
} SandboxSpec;

/* A verified plugin as the engine holds it: the bytes the spawner runs and their spec. */
typedef struct PluginImage {
        SandboxSpec spec;
        int binary_fd; /* a sealed memfd (F_SEAL_WRITE|SHRINK|GROW|SEAL) of the verified bytes */
} PluginImage;

/* The largest plugin binary either process takes. */
#define PLUGIN_BINARY_MAX (256ULL * 1024 * 1024)

/* Checks the protocol and the limits: neither process trusts a spec it did not check. 0 or
 * -EINVAL. */
int plugin_image_spec_check(const SandboxSpec *spec);
/* Checks the binary behind fd (read through a private map, the offset untouched): not empty, at
 * most PLUGIN_BINARY_MAX, a static x86-64 ELF executable (elf-check.h). 0, -ENOEXEC, -ELIBEXEC,
 * -EFBIG, or another negative errno. */
int plugin_image_binary_check(int fd);
/* Says in one sentence why a check above refused, for a negative errno it returned. */
const char *plugin_image_strerror(int r);
