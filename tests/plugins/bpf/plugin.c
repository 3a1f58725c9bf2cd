/*
 * Test plugin bpf: Creates a BPF map: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        union bpf_attr attr = {
                .map_type = BPF_MAP_TYPE_ARRAY,
                .key_size = 4,
                .value_size = 4,
                .max_entries = 1,
        };

        hostile_check(syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr)));
}
