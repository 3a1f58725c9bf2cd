/*
 * A preload for the wall-clock fault test, loaded before libfaketime: libfaketime (0.9.10) moves
 * the absolute expiry of every timerfd by its offset, CLOCK_MONOTONIC and CLOCK_BOOTTIME ones too
 * (FAKETIME_DONT_FAKE_MONOTONIC notwithstanding). An hour forward then puts sd-event's monotonic
 * timers an hour before the boot on a machine up for less than that: timerfd_settime() fails with
 * EINVAL, sd_event_loop() with it, and lockd's event loops end. A real clock jump moves no
 * monotonic timer: this sends the timerfds of every clock but the wall clock straight to the
 * kernel, and only CLOCK_REALTIME ones on to libfaketime.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/* The clock a timerfd counts ("clockid:" in its fdinfo), or -1. */
static int timerfd_clock(int fd) {
        char path[64], line[128];
        int clock = -1;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
        f = fopen(path, "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "clockid: %d", &clock) == 1)
                        break;
        fclose(f);
        return clock;
}

int timerfd_settime(int fd, int flags, const struct itimerspec *new_value,
                    struct itimerspec *old_value) {
        int clock = timerfd_clock(fd);

        if (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_ALARM) {
                int (*next)(int, int, const struct itimerspec *, struct itimerspec *) =
                        (int (*)(int, int, const struct itimerspec *, struct itimerspec *))dlsym(
                                RTLD_NEXT, "timerfd_settime");
                if (next)
                        return next(fd, flags, new_value, old_value);
        }
        return (int)syscall(SYS_timerfd_settime, fd, flags, new_value, old_value);
}

int timerfd_gettime(int fd, struct itimerspec *curr_value) {
        int clock = timerfd_clock(fd);

        if (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_ALARM) {
                int (*next)(int, struct itimerspec *) =
                        (int (*)(int, struct itimerspec *))dlsym(RTLD_NEXT, "timerfd_gettime");
                if (next)
                        return next(fd, curr_value);
        }
        return (int)syscall(SYS_timerfd_gettime, fd, curr_value);
}
