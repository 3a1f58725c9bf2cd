/*
 * A preload for the fault test of an engine that a library ends: once the file that
 * LOCKD_TEST_EXIT_TRIGGER names exists, the next epoll_wait() of the process calls exit(3) from
 * here, as libfaketime's failure once ended lockd's engine from inside sd-event without a word.
 * The engine must still say why it ended (its exit handler names the status and the callers).
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

/* A frame of this library's own between exit() and the loop: the engine's log names the library. */
static __attribute__((noinline)) void exit_now(void) {
        exit(3);
}

int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout) {
        const char *trigger = getenv("LOCKD_TEST_EXIT_TRIGGER");
        int (*next)(int, struct epoll_event *, int, int);

        if (trigger && access(trigger, F_OK) == 0)
                exit_now();
        next = (int (*)(int, struct epoll_event *, int, int))dlsym(RTLD_NEXT, "epoll_wait");
        /* A bounded wait, so that the trigger is seen within a second however idle the loop. */
        return next(epfd, events, maxevents, timeout < 0 || timeout > 1000 ? 1000 : timeout);
}
