/* lockd-engine: everything of lockd but spawning, as user lockd; started by lockd only. */
#include <assert.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "engine-fds.h"
#include "log.h"
#include "macro.h"

#define EXIT_FRAMES 12

static bool main_returned;

/*
 * The engine's log (ARCHITECTURE.md, two processes): fds 0-2 are /dev/null, so its lines go to
 * the fd the spawner gave it (LOCKD_LOG_FD names exactly ENGINE_LOG_FD, and it is open), or to
 * journald's socket when the spawner gave none (its stderr was a terminal).
 */
static void log_setup(void) {
        const char *e = getenv(ENGINE_LOG_ENV);
        char want[16];

        snprintf(want, sizeof(want), "%d", ENGINE_LOG_FD);
        if (e && strcmp(e, want) == 0 && fcntl(ENGINE_LOG_FD, F_SETFD, FD_CLOEXEC) == 0)
                log_set_fd(ENGINE_LOG_FD);
        else
                log_set_fd(-1);
}

/*
 * An exit that is not main()'s return: a library called exit() (libfaketime once did, with no
 * word). Its status and the calling frames go to the log, so that no way the engine ends is
 * silent; main()'s own returns were logged where they were decided.
 */
static void on_engine_exit(int status, void *userdata) {
        void *frames[EXIT_FRAMES];
        char text[1024] = "";
        char **names;
        size_t pos = 0;
        int n;

        if (main_returned)
                return;
        n = backtrace(frames, EXIT_FRAMES);
        names = backtrace_symbols(frames, n);
        /* Frame 0 is this handler, then libc's exit handlers and exit() itself. */
        for (int i = 1; names && i < n && pos + 8 < sizeof(text); i++) {
                int w = snprintf(text + pos, sizeof(text) - pos, "%s%s", i > 1 ? " <- " : "",
                                 names[i]);
                if (w < 0)
                        break;
                pos += (size_t)w;
        }
        free(names);
        log_struct(LOG_CRIT, NULL, NULL,
                   "the engine exits with status %d from outside its main loop (exit() called "
                   "by: %s)",
                   status, text[0] ? text : "unknown");
}

/*
 * A failed assertion, anywhere in the engine or a library it loads: glibc would write it to
 * stderr, which is /dev/null here. It goes to the log first, then the engine aborts as glibc
 * would (the spawner logs the SIGABRT).
 */
void __assert_fail(const char *assertion, const char *file, unsigned int line,
                   const char *function) {
        log_struct(LOG_CRIT, NULL, NULL, "the engine aborts: assertion failed at %s:%u (%s): %s",
                   file ? file : "?", line, function ? function : "?", assertion ? assertion : "?");
        abort();
}

int main(int argc, char **argv) {
        int r;

        log_setup();
        (void)on_exit(on_engine_exit, NULL);
        r = lockd_main(argc, argv);
        main_returned = true;
        return r;
}
