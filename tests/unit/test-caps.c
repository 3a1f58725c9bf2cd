/*
 * lockd's capability cut, checked from the kernel's side: in a forked child of root,
 * caps_drop_except() leaves exactly the kept capabilities in the effective, permitted and bounding
 * sets (as /proc/self/status reads them, also after an execve), and nothing inheritable or
 * ambient; caps_names() spells them as libcap does.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caps.h"
#include "check-run.h"
#include "fd-util.h"
#include "macro.h"

/* The five sets of a status file. */
typedef struct CapSets {
        uint64_t inh, prm, eff, bnd, amb;
} CapSets;

static uint64_t mask_of(const cap_value_t *caps, size_t n) {
        uint64_t m = 0;

        for (size_t i = 0; i < n; i++)
                m |= UINT64_C(1) << caps[i];
        return m;
}

/* Parses the Cap* lines of a status text: false unless all five are there. */
static bool parse_status(const char *text, CapSets *ret) {
        static const char *const keys[] = {"CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"};
        uint64_t *fields[] = {&ret->inh, &ret->prm, &ret->eff, &ret->bnd, &ret->amb};

        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                const char *p = strstr(text, keys[i]);
                char *end;

                if (!p || (p != text && p[-1] != '\n'))
                        return false;
                p += strlen(keys[i]);
                errno = 0;
                *fields[i] = strtoull(p, &end, 16);
                if (errno != 0 || end == p || *end != '\n')
                        return false;
        }
        return true;
}

static bool read_status(const char *path, CapSets *ret) {
        _cleanup_free_ char *text = NULL;
        size_t len;

        return read_full_file(path, 64 * 1024, &text, &len) == 0 && parse_status(text, ret);
}

/* Runs cat on /proc/self/status, so the sets are the ones an execve as uid 0 gives. */
static bool status_after_exec(CapSets *ret) {
        _cleanup_free_ char *text = NULL;
        int p[2], status;
        size_t len;
        pid_t pid;

        if (pipe2(p, O_CLOEXEC) < 0)
                return false;
        pid = fork();
        if (pid < 0)
                return false;
        if (pid == 0) {
                if (dup2(p[1], STDOUT_FILENO) < 0)
                        _exit(127);
                execl("/bin/cat", "cat", "/proc/self/status", (char *)NULL);
                _exit(127);
        }
        close(p[1]);
        if (read_full_fd(p[0], 64 * 1024, &text, &len) < 0)
                len = 0;
        close(p[0]);
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return false;
        return len > 0 && parse_status(text, ret);
}

/* Raises cap in the inheritable and the ambient set, so the drop has something to clear. */
static bool raise_ambient(cap_value_t cap) {
        cap_t c = cap_get_proc();
        bool ok;

        if (!c)
                return false;
        ok = cap_set_flag(c, CAP_INHERITABLE, 1, &cap, CAP_SET) == 0 && cap_set_proc(c) == 0 &&
             prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) == 0;
        cap_free(c);
        return ok;
}

/* What the child found, for the parent's message. */
enum {
        STEP_OK = 0,
        STEP_SETUP,
        STEP_DROP,
        STEP_STATUS,
        STEP_EFFECTIVE,
        STEP_PERMITTED,
        STEP_INHERITABLE,
        STEP_AMBIENT,
        STEP_BOUNDING,
        STEP_EXEC,
        STEP_EXEC_SETS,
        STEP_DAC,
        STEP_SETUID,
};

static const char *const step_names[] = {
        [STEP_OK] = "ok",
        [STEP_SETUP] = "raising the inheritable and ambient sets first",
        [STEP_DROP] = "caps_drop_except() failed",
        [STEP_STATUS] = "reading /proc/self/status",
        [STEP_EFFECTIVE] = "CapEff is not the kept set",
        [STEP_PERMITTED] = "CapPrm is not the kept set",
        [STEP_INHERITABLE] = "CapInh is not empty",
        [STEP_AMBIENT] = "CapAmb is not empty",
        [STEP_BOUNDING] = "CapBnd is not the kept set",
        [STEP_EXEC] = "running cat after the drop",
        [STEP_EXEC_SETS] = "after an execve as root, the sets are not the kept set",
        [STEP_DAC] = "a mode 0000 file could still be opened (CAP_DAC_OVERRIDE)",
        [STEP_SETUID] = "setresuid() failed although CAP_SETUID was kept",
};

/* The child's side: drops to keep[] and checks every set; returns the first failed step. */
static int drop_child(const cap_value_t *keep, size_t n, const char *secret) {
        uint64_t want = mask_of(keep, n);
        CapSets s;
        int fd;

        if (!raise_ambient(CAP_SETUID) || !read_status("/proc/self/status", &s) || s.amb == 0 ||
            s.inh == 0)
                return STEP_SETUP;
        if (caps_drop_except(keep, n) < 0)
                return STEP_DROP;
        if (!read_status("/proc/self/status", &s))
                return STEP_STATUS;
        if (s.eff != want)
                return STEP_EFFECTIVE;
        if (s.prm != want)
                return STEP_PERMITTED;
        if (s.inh != 0)
                return STEP_INHERITABLE;
        if (s.amb != 0)
                return STEP_AMBIENT;
        if (s.bnd != want)
                return STEP_BOUNDING;

        /* An execve as uid 0 gets the full bounding set back: it must be the kept set. */
        if (!status_after_exec(&s))
                return STEP_EXEC;
        if (s.eff != want || s.prm != want || s.bnd != want || s.inh != 0 || s.amb != 0)
                return STEP_EXEC_SETS;

        /* The capabilities that went really are gone... */
        fd = open(secret, O_RDONLY | O_CLOEXEC);
        if (fd >= 0 || errno != EACCES)
                return STEP_DAC;
        /* ...and the kept ones still work. */
        if ((want & (UINT64_C(1) << CAP_SETUID)) && setresuid(65534, 65534, 65534) < 0)
                return STEP_SETUID;
        return STEP_OK;
}

static void run_drop(const cap_value_t *keep, size_t n) {
        const char *base = getenv("TMPDIR");
        char secret[PATH_MAX];
        size_t step;
        int fd, status;
        pid_t pid;

        ck_assert_msg(geteuid() == 0, "needs root: the capabilities to drop");
        snprintf(secret, sizeof(secret), "%s/test-caps-XXXXXX", base ? base : "/tmp");
        fd = mkstemp(secret);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(fchmod(fd, 0), 0);
        close(fd);

        fflush(NULL);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0)
                _exit(drop_child(keep, n, secret));
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        unlink(secret);
        ck_assert_msg(WIFEXITED(status), "the child died of signal %d", WTERMSIG(status));
        step = (size_t)WEXITSTATUS(status);
        ck_assert_msg(step == STEP_OK, "%s",
                      step < ELEMENTSOF(step_names) ? step_names[step] : "unknown step");
}

START_TEST(test_drop_kept) {
        run_drop(caps_kept, caps_n_kept);
}
END_TEST

START_TEST(test_drop_all) {
        run_drop(NULL, 0);
}
END_TEST

/* The list lockd keeps is the one spawning needs, no more. */
START_TEST(test_kept_list) {
        ck_assert_uint_eq(mask_of(caps_kept, caps_n_kept),
                          (UINT64_C(1) << CAP_SETUID) | (UINT64_C(1) << CAP_SETGID) |
                                  (UINT64_C(1) << CAP_SETPCAP) | (UINT64_C(1) << CAP_KILL));
        ck_assert_uint_eq(caps_n_kept, 4);
}
END_TEST

START_TEST(test_names) {
        static const char *const want[] = {"cap_setuid", "cap_setgid", "cap_setpcap", "cap_kill"};
        char **v = caps_names(caps_kept, caps_n_kept);
        size_t i;

        ck_assert_ptr_nonnull(v);
        for (i = 0; v[i]; i++) {
                ck_assert_uint_lt(i, ELEMENTSOF(want));
                ck_assert_str_eq(v[i], want[i]);
        }
        ck_assert_uint_eq(i, ELEMENTSOF(want));
        strv_free(v);

        v = caps_names(NULL, 0);
        ck_assert_ptr_nonnull(v);
        ck_assert_ptr_null(v[0]);
        strv_free(v);
        strv_free(NULL);
}
END_TEST

static Suite *caps_suite(void) {
        Suite *s = suite_create("caps");

        suite_add_case(s, NULL, test_drop_kept);
        suite_add_case(s, NULL, test_drop_all);
        suite_add_case(s, NULL, test_kept_list);
        suite_add_case(s, NULL, test_names);
        return s;
}

int main(void) {
        return check_run(caps_suite());
}
