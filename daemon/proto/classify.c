/* Classification of a finished plugin run: the answer, or plugin_error with its precise cause. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "classify.h"
#include "macro.h"

void run_classify(const uint8_t *out, size_t out_len, uint64_t out_total, const RunExit *e,
                  RunResult *r) {
        r->outcome = RUN_PLUGIN_ERROR;
        r->cause = RUN_CAUSE_NONE;
        r->exit_status = 0;
        r->signal = 0;
        r->stdout_bytes = out_total;

        /*
         * The order matters: a timeout or an OOM kill shows up as SIGKILL, and the human must learn
         * which limit ended the run, not just the signal. Only then the way the process ended, and
         * only an exit status of 0 lets stdout count at all: a plugin that printed "1" and then
         * crashed or called exit(1) has not answered (a panic must never read as an answer).
         */
        if (e->timed_out) {
                r->cause = RUN_CAUSE_TIMEOUT;
                r->signal = SIGKILL;
                return;
        }
        if (e->oom) {
                r->cause = RUN_CAUSE_OOM;
                r->signal = SIGKILL;
                return;
        }
        if (e->signal != 0) {
                r->cause = RUN_CAUSE_SIGNAL;
                r->signal = e->signal;
                return;
        }
        if (!e->exited || e->exit_status != 0) {
                r->cause = RUN_CAUSE_EXIT;
                r->exit_status = e->exited ? e->exit_status : -1;
                return;
        }
        if (out_total == 0) {
                r->cause = RUN_CAUSE_NO_OUTPUT;
                return;
        }
        /* Exactly "1" or "0", one trailing newline tolerated; a count that disagrees is a lie. */
        if (out_total != out_len || out_len > 2 || (out_len == 2 && out[1] != '\n') ||
            (out[0] != '0' && out[0] != '1')) {
                r->cause = RUN_CAUSE_BAD_OUTPUT;
                return;
        }
        r->outcome = out[0] == '1' ? RUN_ONE : RUN_ZERO;
}

static const char *const stage_names[_SPAWN_STAGE_MAX] = {
        [SPAWN_STAGE_NONE] = "none",
        [SPAWN_STAGE_CLONE] = "clone",
        [SPAWN_STAGE_SCOPE] = "scope",
        [SPAWN_STAGE_GROUPS] = "setgroups",
        [SPAWN_STAGE_GID] = "setresgid",
        [SPAWN_STAGE_UID] = "setresuid",
        [SPAWN_STAGE_PDEATHSIG] = "pdeathsig",
        [SPAWN_STAGE_CAPS] = "capabilities",
        [SPAWN_STAGE_RLIMIT] = "rlimit",
        [SPAWN_STAGE_FDS] = "fds",
        [SPAWN_STAGE_CWD] = "cwd",
        [SPAWN_STAGE_NO_NEW_PRIVS] = "no_new_privs",
        [SPAWN_STAGE_LANDLOCK] = "landlock",
        [SPAWN_STAGE_CLOSE_FDS] = "close_fds",
        [SPAWN_STAGE_SECCOMP] = "seccomp",
        [SPAWN_STAGE_EXEC] = "exec",
};

const char *spawn_stage_name(SpawnStage s) {
        if ((unsigned)s >= _SPAWN_STAGE_MAX)
                return "unknown";
        return stage_names[s];
}

const char *run_outcome_name(RunOutcome o) {
        switch (o) {
        case RUN_ZERO:
                return "0";
        case RUN_ONE:
                return "1";
        default:
                return "plugin_error";
        }
}

const char *run_cause_format(const RunResult *r, char *buf, size_t size) {
        const char *sig;

        switch (r->cause) {
        case RUN_CAUSE_NONE:
                snprintf(buf, size, "none");
                break;
        case RUN_CAUSE_BAD_OUTPUT:
                snprintf(buf, size, "bad_output");
                break;
        case RUN_CAUSE_NO_OUTPUT:
                snprintf(buf, size, "no_output");
                break;
        case RUN_CAUSE_EXIT:
                snprintf(buf, size, "exit:%d", r->exit_status);
                break;
        case RUN_CAUSE_SIGNAL:
                sig = sigabbrev_np(r->signal);
                if (sig)
                        snprintf(buf, size, "signal:SIG%s", sig);
                else
                        snprintf(buf, size, "signal:%d", r->signal);
                break;
        case RUN_CAUSE_TIMEOUT:
                snprintf(buf, size, "timeout");
                break;
        case RUN_CAUSE_OOM:
                snprintf(buf, size, "oom");
                break;
        case RUN_CAUSE_SPAWN:
                snprintf(buf, size, "spawn:%s:%d", spawn_stage_name(r->spawn_stage),
                         r->spawn_errno);
                break;
        default:
                snprintf(buf, size, "unknown");
        }
        return buf;
}

bool run_drain(int fd, uint8_t *buf, size_t keep, size_t *kept, uint64_t *total) {
        uint8_t scratch[16384];

        for (;;) {
                ssize_t n = read(fd, scratch, sizeof(scratch));
                if (n < 0)
                        return errno == EAGAIN || errno == EINTR;
                if (n == 0)
                        return false;
                if (buf && *kept < keep) {
                        size_t take = (size_t)n < keep - *kept ? (size_t)n : keep - *kept;
                        memcpy(buf + *kept, scratch, take);
                        *kept += take;
                }
                *total += (uint64_t)n;
        }
}
