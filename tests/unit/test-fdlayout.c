/* The fd layout, environment and cwd a plugin gets, seen from inside by a real sandboxed plugin. */
#include <check.h>
#include <dirent.h>
#include <elf.h>
#include <signal.h>
#include <stdio.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "fd-util.h"
#include "macro.h"
#include "plugin-image.h"
#include "runner.h"
#include "check-run.h"

/* The fdlayout plugin loaded under spec, as lockd loads a manifest's binary. */
static Sandbox *load_plugin(const SandboxSpec *spec) {
        const char *path = getenv("LOCKD_FDLAYOUT_PLUGIN");
        Sandbox *sb = NULL;
        int bin;

        ck_assert_ptr_nonnull(path);
        bin = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(bin, 0);
        ck_assert_int_eq(sandbox_new(bin, spec, &sb), 0);
        close(bin);
        return sb;
}

/* text as lockd gives a run its input: a sealed memfd (*ret_snap), reopened read-only. */
static int sealed_input(const char *text, int *ret_snap) {
        int snap, in;

        snap = memfd_from_buffer(text, strlen(text), "input");
        ck_assert_int_ge(snap, 0);
        in = fd_reopen_readonly(snap);
        ck_assert_int_ge(in, 0);
        *ret_snap = snap;
        return in;
}

/* A run's params on the input in, as the ephemeral uid when we are root (as lockd runs them). */
static RunParams params_on(int in, uid_t uid) {
        RunParams p = {.input_fd = in};

        if (geteuid() == 0) {
                p.drop_to_uid = true;
                p.uid = p.gid = uid;
        }
        return p;
}

/* One run of sb (freed after it) on the input "x", as the test's ephemeral uid when root. */
static RunResult run_once(Sandbox *sb) {
        RunParams p;
        RunResult res;
        int snap, in;

        in = sealed_input("x", &snap);
        p = params_on(in, 655301);
        ck_assert_int_eq(runner_run(sb, &p, &res), 0);
        close(in);
        close(snap);
        sandbox_free(sb);
        return res;
}

static RunResult run_layout(unsigned protocol, bool inputs, bool detail, bool as_root) {
        Sandbox *sb = NULL;
        SandboxSpec spec = {.protocol = protocol,
                            .inputs = inputs,
                            .detail = detail,
                            .limits = {.cpu_s = 5, .memory_bytes = 128 * MiB, .timeout_s = 10}};
        int snap, in, r;
        RunParams p = {.inputs_json = "{\"needle\":\"x\"}", .inputs_len = 14};
        RunResult res;
        char junk[] = "/tmp/lockd-test-leak-XXXXXX";
        int leak;

        sb = load_plugin(&spec);
        in = sealed_input("hello", &snap);
        /* An fd the parent holds without O_CLOEXEC must not leak into the plugin. */
        leak = mkstemp(junk);
        ck_assert_int_ge(leak, 0);
        unlink(junk);

        p.input_fd = in;
        if (as_root) {
                p.drop_to_uid = true;
                p.uid = p.gid = 655300;
        }
        r = runner_run(sb, &p, &res);
        ck_assert_int_eq(r, 0);
        close(leak);
        close(in);
        close(snap);
        sandbox_free(sb);
        return res;
}

START_TEST(test_layout_protocol1) {
        RunResult res = run_layout(1, false, false, geteuid() == 0);
        char c[64];
        ck_assert_msg(res.outcome == RUN_ONE, "outcome %s cause %s", run_outcome_name(res.outcome),
                      run_cause_format(&res, c, sizeof(c)));
        ck_assert_uint_eq(res.detail_total, 0);
}
END_TEST

START_TEST(test_layout_protocol2) {
        RunResult res = run_layout(2, true, true, geteuid() == 0);
        char c[64];

        ck_assert_msg(res.outcome == RUN_ONE, "outcome %s cause %s detail %.*s",
                      run_outcome_name(res.outcome), run_cause_format(&res, c, sizeof(c)),
                      (int)res.detail_len, res.detail);
        ck_assert_ptr_nonnull(memmem(res.detail, res.detail_len, "fds: 0 1 2 3 6 7\n", 17));
        ck_assert_ptr_nonnull(
                memmem(res.detail, res.detail_len, "env: LOCKFILE_PLUGIN_PROTOCOL=2\n", 32));
        ck_assert_ptr_nonnull(memmem(res.detail, res.detail_len, "fd3: ro fd6: ro", 15));
}
END_TEST

START_TEST(test_ephemeral_uid) {
        RunResult res;

        /* A missing prerequisite is a failure, not a silent pass. */
        ck_assert_msg(geteuid() == 0, "the ephemeral-uid test needs root");
        res = run_layout(1, false, false, true);
        ck_assert_uint_eq(res.uid, 655300);
        ck_assert_int_ge(res.landlock_abi, 1);
}
END_TEST

/* The plugin runs the bytes loaded, not what the path holds at run time. */
START_TEST(test_binary_replaced_after_load) {
        char tmpl[] = "/tmp/lockd-test-binary-XXXXXX";
        const char *path = getenv("LOCKD_FDLAYOUT_PLUGIN");
        SandboxSpec spec = {.protocol = 1,
                            .limits = {.cpu_s = 5, .memory_bytes = 128 * MiB, .timeout_s = 10}};
        Sandbox *sb = NULL;
        RunResult res;
        char buf[65536];
        ssize_t n;
        int src, copy;

        src = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(src, 0);
        copy = mkstemp(tmpl);
        ck_assert_int_ge(copy, 0);
        while ((n = read(src, buf, sizeof(buf))) > 0)
                ck_assert_int_eq(write(copy, buf, (size_t)n), n);
        close(src);
        ck_assert_int_eq(sandbox_new(copy, &spec, &sb), 0);

        /* Overwrite the file in place and truncate it: the loaded plugin must not notice. */
        ck_assert_int_eq(ftruncate(copy, 0), 0);
        ck_assert_int_eq(pwrite(copy, "#!/bin/sh\necho 0\n", 18, 0), 18);
        close(copy);
        unlink(tmpl);

        res = run_once(sb);
        ck_assert_int_eq(res.outcome, RUN_ONE);
}
END_TEST

/* A dynamically linked binary is refused when loaded, before anything is spawned. */
START_TEST(test_dynamic_refused) {
        SandboxSpec spec = {.protocol = 1,
                            .limits = {.cpu_s = 5, .memory_bytes = 128 * MiB, .timeout_s = 10}};
        Sandbox *sb = NULL;
        int fd = open("/bin/true", O_RDONLY | O_CLOEXEC);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(sandbox_new(fd, &spec, &sb), -ELIBEXEC);
        ck_assert_ptr_null(sb);
        ck_assert_ptr_nonnull(strstr(sandbox_strerror(-ELIBEXEC), "PT_INTERP"));
        close(fd);
}
END_TEST

static int refuse_scope(pid_t pid, int pidfd, void *userdata) {
        (*(int *)userdata)++;
        return -EIO;
}

/* A run whose start hook (the scope, later) fails never reaches the plugin: it fails closed. */
START_TEST(test_start_hook_fails_closed) {
        SandboxSpec spec = {.protocol = 1,
                            .limits = {.cpu_s = 5, .memory_bytes = 128 * MiB, .timeout_s = 10}};
        Sandbox *sb = NULL;
        RunParams p = {};
        RunResult res;
        char cause[64];
        int snap, in, called = 0;

        sb = load_plugin(&spec);
        in = sealed_input("x", &snap);
        p.input_fd = in;
        p.start_hook = refuse_scope;
        p.start_hook_userdata = &called;
        ck_assert_int_eq(runner_run(sb, &p, &res), 0);
        ck_assert_int_eq(called, 1);
        ck_assert_int_eq(res.outcome, RUN_PLUGIN_ERROR);
        /* The hook's errno is the cause's: EIO here, not a catch-all. */
        ck_assert_str_eq(run_cause_format(&res, cause, sizeof(cause)), "spawn:scope:5");
        ck_assert_uint_eq(res.stdout_bytes, 0);
        close(in);
        close(snap);
        sandbox_free(sb);
}
END_TEST

/* The number of fds open in pid, or -1. */
static int count_fds(pid_t pid) {
        char path[64];
        DIR *d;
        struct dirent *de;
        int n = 0;

        snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
        d = opendir(path);
        if (!d)
                return -1;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        closedir(d);
        return n;
}

/* A child made ahead keeps only its control socket, whatever we held when it was cloned; one
 * that dies before its release fails its run closed (spawn:scope), and a live one runs it. */
START_TEST(test_child_made_ahead) {
        SandboxSpec spec = {.protocol = 1,
                            .limits = {.cpu_s = 5, .memory_bytes = 128 * MiB, .timeout_s = 10}};
        RunChild *c = NULL, *dead = NULL;
        Sandbox *sb = NULL;
        RunParams p = {};
        RunResult res;
        char cause[64];
        int snap, in, held[2], n = -1;

        sb = load_plugin(&spec);
        in = sealed_input("x", &snap);
        p.input_fd = in;
        ck_assert_int_eq(pipe(held), 0); /* inheritable: the child must close them itself */

        ck_assert_int_eq(run_child_new(&c), 0);
        for (int i = 0; i < 200 && n != 1; i++) {
                n = count_fds(run_child_pid(c));
                if (n != 1)
                        usleep(5000);
        }
        ck_assert_int_eq(n, 1);
        ck_assert(run_child_waiting(c));

        ck_assert_int_eq(run_child_new(&dead), 0);
        ck_assert_int_eq(kill(run_child_pid(dead), SIGKILL), 0);
        for (int i = 0; i < 200 && run_child_waiting(dead); i++)
                usleep(5000);
        ck_assert(!run_child_waiting(dead));
        ck_assert_int_eq(run_child_start(dead, sb, &p, &res), 0);
        ck_assert_int_eq(res.outcome, RUN_PLUGIN_ERROR);
        ck_assert_str_eq(run_cause_format(&res, cause, sizeof(cause)), "spawn:scope:32");
        run_child_free(dead);

        ck_assert_int_eq(run_child_start(c, sb, &p, &res), 0);
        ck_assert_msg(res.outcome == RUN_ONE, "outcome %s cause %s", run_outcome_name(res.outcome),
                      run_cause_format(&res, cause, sizeof(cause)));
        ck_assert(!run_child_waiting(c));
        run_child_free(c);
        close(held[0]);
        close(held[1]);
        close(in);
        close(snap);
        sandbox_free(sb);
}
END_TEST

/*
 * An execve that fails comes after the whole filter is loaded, which denies every socket call: the
 * child's report must still reach the parent (write(2)), as spawn:exec:<errno>, not as a plugin
 * that exited 127.
 */
START_TEST(test_exec_failure_reported) {
        Sandbox *sb = NULL;
        SandboxSpec spec = {.protocol = 1,
                            .limits = {.cpu_s = 5, .memory_bytes = 128 * MiB, .timeout_s = 10}};
        RunResult res;
        char cause[64];
        int noexec;

        sb = load_plugin(&spec);
        /* The sealed binary swapped for a memfd of no execute permission: execve says EACCES. */
        noexec = memfd_from_buffer("not a plugin", 12, "noexec");
        ck_assert_int_ge(noexec, 0);
        ck_assert_int_eq(fchmod(noexec, 0444), 0);
        close(sb->binary_fd);
        sb->binary_fd = noexec;
        res = run_once(sb);
        ck_assert_int_eq(res.outcome, RUN_PLUGIN_ERROR);
        ck_assert_str_eq(run_cause_format(&res, cause, sizeof(cause)), "spawn:exec:13");
}
END_TEST

/* The inode behind fd. */
static ino_t inode_of(int fd) {
        struct stat st;

        ck_assert_int_eq(fstat(fd, &st), 0);
        return st.st_ino;
}

/* The fdlayout plugin's bytes in a new memfd: sealed (immutable, executable) when sealed, else
 * left open to writes. */
static int plugin_memfd(bool sealed) {
        int bin = open(getenv("LOCKD_FDLAYOUT_PLUGIN"), O_RDONLY | O_CLOEXEC), mfd;
        char buf[65536];
        ssize_t n;

        ck_assert_int_ge(bin, 0);
        if (sealed)
                mfd = memfd_snapshot(bin, "plugin", 256 * MiB, true);
        else {
                mfd = memfd_create("plugin", MFD_CLOEXEC | MFD_ALLOW_SEALING);
                ck_assert_int_ge(mfd, 0);
                while ((n = read(bin, buf, sizeof(buf))) > 0)
                        ck_assert_int_eq(write(mfd, buf, (size_t)n), n);
        }
        ck_assert_int_ge(mfd, 0);
        close(bin);
        return mfd;
}

/*
 * A memfd sealed against every change and executable by others (the engine's release binary) is
 * run as it is, with no copy: the sandbox's binary is the same inode, and the plugin runs. One
 * that can still be written, or that others may not execute, is copied, and the copy runs.
 */
START_TEST(test_sealed_memfd_not_copied) {
        SandboxSpec spec = {.protocol = 1,
                            .limits = {.cpu_s = 5, .memory_bytes = 128 * MiB, .timeout_s = 10}};
        Sandbox *sb = NULL;
        int sealed = plugin_memfd(true), open_one = plugin_memfd(false), noexec, file;

        ck_assert(memfd_is_sealed(sealed));
        ck_assert_int_eq(sandbox_new(sealed, &spec, &sb), 0);
        ck_assert_uint_eq(inode_of(sb->binary_fd), inode_of(sealed));
        /* Read-only: nothing can be written through the sandbox's own descriptor. */
        ck_assert_int_eq(fcntl(sb->binary_fd, F_GETFL) & O_ACCMODE, O_RDONLY);
        ck_assert_int_eq(run_once(sb).outcome, RUN_ONE);

        ck_assert(!memfd_is_sealed(open_one));
        ck_assert_int_eq(sandbox_new(open_one, &spec, &sb), 0);
        ck_assert_uint_ne(inode_of(sb->binary_fd), inode_of(open_one));
        /* Changed after the load: the run still has the bytes loaded. */
        ck_assert_int_eq(ftruncate(open_one, 0), 0);
        ck_assert_int_eq(run_once(sb).outcome, RUN_ONE);

        noexec = plugin_memfd(false);
        ck_assert_int_eq(fchmod(noexec, 0700), 0);
        ck_assert_int_eq(fcntl(noexec, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK), 0);
        ck_assert(memfd_is_sealed(noexec));
        ck_assert_int_eq(sandbox_new(noexec, &spec, &sb), 0);
        ck_assert_uint_ne(inode_of(sb->binary_fd), inode_of(noexec));
        ck_assert_int_eq(run_once(sb).outcome, RUN_ONE);

        /* A regular file is no sealed memfd. */
        file = open(getenv("LOCKD_FDLAYOUT_PLUGIN"), O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(file, 0);
        ck_assert(!memfd_is_sealed(file));
        close(file);
        close(sealed);
        close(open_one);
        close(noexec);
}
END_TEST

typedef struct Finish {
        RunChild *c;
        Sandbox *sb;
        RunParams *p;
        RunResult res;
        int r;
} Finish;

static void *finish_thread(void *userdata) {
        Finish *f = userdata;

        f->r = run_child_finish(f->c, f->sb, f->p, &f->res);
        return NULL;
}

/* The release sent on one thread, the run waited for on another (as the run pool does when the
 * loop releases a child for a worker); each half once, and in order. */
START_TEST(test_release_and_finish_apart) {
        SandboxSpec spec = {.protocol = 1,
                            .limits = {.cpu_s = 5, .memory_bytes = 128 * MiB, .timeout_s = 10}};
        RunChild *c = NULL, *fresh = NULL;
        RunParams p;
        RunResult res;
        pthread_t t;
        int snap, in;
        Finish f;

        f.sb = load_plugin(&spec);
        in = sealed_input("x", &snap);
        p = params_on(in, 655301);
        ck_assert_int_eq(run_child_new(&c), 0);
        ck_assert_int_eq(run_child_new(&fresh), 0);
        /* Nothing to finish before a release, and no second release. */
        ck_assert_int_eq(run_child_finish(fresh, f.sb, &p, &res), -EINVAL);
        ck_assert_int_eq(run_child_release(c, f.sb, &p), 0);
        ck_assert_int_eq(run_child_release(c, f.sb, &p), -EALREADY);

        f.c = c;
        f.p = &p;
        ck_assert_int_eq(pthread_create(&t, NULL, finish_thread, &f), 0);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        ck_assert_int_eq(f.r, 0);
        ck_assert_int_eq(f.res.outcome, RUN_ONE);
        ck_assert_uint_eq(f.res.uid, geteuid() == 0 ? 655301 : getuid());
        /* Spent: it ran. */
        ck_assert_int_eq(run_child_finish(c, f.sb, &p, &res), -EINVAL);
        run_child_free(c);
        run_child_free(fresh);
        close(in);
        close(snap);
        sandbox_free(f.sb);
}
END_TEST

/*
 * The run's times when the thread that waits for it comes late (a busy machine): the setup ends at
 * the plugin's execve, which the child's own clock reading says, not when our thread read the
 * control socket's EOF; the plugin's wall time runs from there to its reap, so it holds the delay
 * rather than losing the plugin's run. The run is finished 100 ms after the plugin is seen gone,
 * so the bounds hold however slow the machine is: the execve came between the release and that
 * sight. Before, the setup here read the whole time up to the finish and the wall a few µs.
 */
START_TEST(test_times_when_finished_late) {
        SandboxSpec spec = {.protocol = 1,
                            .limits = {.cpu_s = 5, .memory_bytes = 128 * MiB, .timeout_s = 10}};
        RunChild *c = NULL;
        RunResult res = {};
        uint64_t released, gone;
        struct pollfd pfd;
        RunParams p;
        Sandbox *sb;
        int snap, in;

        sb = load_plugin(&spec);
        in = sealed_input("x", &snap);
        p = params_on(in, 655302);
        ck_assert_int_eq(run_child_new(&c), 0);
        released = clock_monotonic_usec();
        ck_assert_int_eq(run_child_release(c, sb, &p), 0);
        /* The plugin runs and ends meanwhile; its pidfd says when it is gone. */
        pfd = (struct pollfd){.fd = run_child_pidfd(c), .events = POLLIN};
        ck_assert_int_eq(poll(&pfd, 1, 30 * 1000), 1);
        gone = clock_monotonic_usec();
        ck_assert_int_eq(usleep(100 * 1000), 0);
        ck_assert_int_eq(run_child_finish(c, sb, &p, &res), 0);
        ck_assert_int_eq(res.outcome, RUN_ONE);
        ck_assert_msg(res.setup_usec <= gone - released,
                      "setup %" PRIu64 " us, gone after %" PRIu64, res.setup_usec, gone - released);
        ck_assert_msg(res.wall_usec >= 100 * 1000, "wall %" PRIu64 " us", res.wall_usec);
        run_child_free(c);
        close(in);
        close(snap);
        sandbox_free(sb);
}
END_TEST

/* A memfd holding a minimal x86-64 ELF header whose one program header, of type type, lies at
 * phoff (the file ends right after it, or at end when that is larger). */
static int elf_with_phdr_at(uint64_t phoff, uint32_t type, size_t end) {
        size_t size = phoff + sizeof(Elf64_Phdr) > end ? phoff + sizeof(Elf64_Phdr) : end;
        uint8_t *buf = calloc(1, size);
        Elf64_Ehdr eh = {.e_type = ET_EXEC,
                         .e_machine = EM_X86_64,
                         .e_version = EV_CURRENT,
                         .e_phoff = phoff,
                         .e_ehsize = sizeof(Elf64_Ehdr),
                         .e_phentsize = sizeof(Elf64_Phdr),
                         .e_phnum = 1};
        Elf64_Phdr ph = {.p_type = type};
        int fd;

        ck_assert_ptr_nonnull(buf);
        memcpy(eh.e_ident, ELFMAG, SELFMAG);
        eh.e_ident[EI_CLASS] = ELFCLASS64;
        eh.e_ident[EI_DATA] = ELFDATA2LSB;
        eh.e_ident[EI_VERSION] = EV_CURRENT;
        memcpy(buf, &eh, sizeof(eh));
        memcpy(buf + phoff, &ph, sizeof(ph));
        fd = memfd_from_buffer(buf, size, "elf");
        ck_assert_int_ge(fd, 0);
        free(buf);
        return fd;
}

/* The static check reads the first page when the program headers lie there, and the whole
 * image when they lie further in: the verdict is the same either way. */
START_TEST(test_elf_check_first_page_and_beyond) {
        struct {
                uint64_t phoff;
                uint32_t type;
                size_t end;
                int want;
        } cases[] = {
                {64, PT_LOAD, 0, 0},
                {64, PT_INTERP, 0, -ELIBEXEC},
                {64, PT_INTERP, 1 << 20, -ELIBEXEC},
                {4096 - sizeof(Elf64_Phdr), PT_INTERP, 0, -ELIBEXEC},
                {4096 - 8, PT_INTERP, 0, -ELIBEXEC}, /* straddles the first page's end */
                {8192, PT_LOAD, 0, 0},
                {8192, PT_INTERP, 0, -ELIBEXEC},
                {300000, PT_INTERP, 400000, -ELIBEXEC},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                int fd = elf_with_phdr_at(cases[i].phoff, cases[i].type, cases[i].end);

                ck_assert_msg(plugin_image_binary_check(fd) == cases[i].want, "case %zu", i);
                close(fd);
        }
        /* A table said to lie past the file's end is no ELF executable. */
        int fd = elf_with_phdr_at(64, PT_LOAD, 0);
        Elf64_Ehdr eh;
        ck_assert_int_eq(pread(fd, &eh, sizeof(eh), 0), (ssize_t)sizeof(eh));
        close(fd);
        eh.e_phoff = 1 << 20;
        fd = memfd_from_buffer(&eh, sizeof(eh), "elf");
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(plugin_image_binary_check(fd), -ENOEXEC);
        close(fd);
}
END_TEST

int main(void) {
        Suite *s = suite_create("fdlayout");
        const CaseOptions each = {.timeout = 30};

        suite_add_case(s, &each, test_layout_protocol1);
        suite_add_case(s, &each, test_layout_protocol2);
        suite_add_case(s, &each, test_ephemeral_uid);
        suite_add_case(s, &each, test_binary_replaced_after_load);
        suite_add_case(s, &each, test_dynamic_refused);
        suite_add_case(s, &each, test_start_hook_fails_closed);
        suite_add_case(s, &each, test_child_made_ahead);
        suite_add_case(s, &each, test_exec_failure_reported);
        suite_add_case(s, &each, test_sealed_memfd_not_copied);
        suite_add_case(s, &each, test_release_and_finish_apart);
        suite_add_case(s, &each, test_times_when_finished_late);
        suite_add_case(s, &each, test_elf_check_first_page_and_beyond);
        return check_run(s);
}
