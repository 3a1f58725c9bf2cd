/*
 * What a compromised engine can reach under the engine's own filter: engine_confine() as
 * lockd-engine calls it, then clone with each namespace flag (each with CLONE_NEWUSER, which an
 * unprivileged process may otherwise create), clone3, unshare, and sockets of five families.
 * Prints one JSON object: per attempt the errno it failed with, or "made" when it succeeded.
 * Run by the stand-in engine (tests/integration/hostile-engine.py) as user lockd, as the engine.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine-seccomp.h"
#include "macro.h"

/* The errno of a failed call, or -1 when it succeeded (a child it made leaves at once). */
static int clone_errno(unsigned long flags) {
        long r = syscall(SYS_clone, flags | SIGCHLD, 0, NULL, NULL, 0);

        if (r == 0)
                _exit(0);
        if (r > 0) {
                (void)waitpid((pid_t)r, NULL, 0);
                return -1;
        }
        return errno;
}

static void field(const char *name, int e, bool first) {
        if (e < 0)
                printf("%s\"%s\": \"made\"", first ? "" : ", ", name);
        else
                printf("%s\"%s\": %d", first ? "" : ", ", name, e);
}

int main(void) {
        static const struct {
                const char *name;
                unsigned long flag;
        } ns[] = {
                {"CLONE_NEWUSER", CLONE_NEWUSER},     {"CLONE_NEWNS", CLONE_NEWNS},
                {"CLONE_NEWCGROUP", CLONE_NEWCGROUP}, {"CLONE_NEWUTS", CLONE_NEWUTS},
                {"CLONE_NEWIPC", CLONE_NEWIPC},       {"CLONE_NEWPID", CLONE_NEWPID},
                {"CLONE_NEWNET", CLONE_NEWNET},
        };
        static const struct {
                const char *name;
                int family;
        } families[] = {
                {"AF_INET", AF_INET},     {"AF_INET6", AF_INET6}, {"AF_NETLINK", AF_NETLINK},
                {"AF_PACKET", AF_PACKET}, {"AF_VSOCK", AF_VSOCK},
        };
        struct {
                uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
        } ca = {.flags = CLONE_NEWUSER, .exit_signal = SIGCHLD};
        int r = engine_confine(), fd;

        printf("{\"confine\": %d, \"clone\": {", r);
        for (size_t i = 0; i < ELEMENTSOF(ns); i++)
                field(ns[i].name, clone_errno(CLONE_NEWUSER | ns[i].flag), i == 0);
        r = (int)syscall(SYS_clone3, &ca, sizeof(ca));
        if (r == 0)
                _exit(0);
        if (r > 0)
                (void)waitpid(r, NULL, 0);
        printf("}, ");
        field("clone3", r >= 0 ? -1 : errno, true);
        field("unshare", unshare(CLONE_NEWUSER) == 0 ? -1 : errno, false);
        printf(", \"socket\": {");
        for (size_t i = 0; i < ELEMENTSOF(families); i++) {
                fd = socket(families[i].family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                field(families[i].name, fd >= 0 ? -1 : errno, i == 0);
                if (fd >= 0)
                        close(fd);
        }
        printf("}}\n");
        return 0;
}
