/*
 * Test plugin perf-event-open: Opens a software perf event on itself: seccomp refuses with EPERM.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hostile.h"

int main(void) {
        struct perf_event_attr attr = {
                .type = PERF_TYPE_SOFTWARE,
                .size = sizeof(attr),
                .config = PERF_COUNT_SW_TASK_CLOCK,
                .exclude_kernel = 1,
        };

        hostile_check(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
}
