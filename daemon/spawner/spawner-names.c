/* The spawner's passwd and group lookups, made in a child process that exits. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "nss-util.h"
#include "sockets.h"
#include "spawner-names.h"
#include "uidpool.h"

/* The lookups themselves, in the child. */
static void lookup(const Policy *p, const char *engine_user, SpawnerNames *n) {
        _cleanup_free_ char *buf = NULL;
        struct passwd pw;
        size_t len = 0;

        *n = (SpawnerNames){};
        n->engine_error = nss_get(&pw, NULL, engine_user, 0, false, &buf, &len);
        if (n->engine_error == 0 && (pw.pw_uid == 0 || pw.pw_gid == 0))
                n->engine_error = -EPERM;
        if (n->engine_error == 0) {
                n->engine_uid = pw.pw_uid;
                n->engine_gid = pw.pw_gid;
        }
        n->range_error = uid_pool_check_range(p->ephemeral_uid_first, p->ephemeral_uid_last,
                                              n->range_why, sizeof(n->range_why));
        n->socket_gid[0] = socket_policy_gid(&p->agent_socket);
        n->socket_gid[1] = socket_policy_gid(&p->console_socket);
}

int spawner_names_lookup(const Policy *p, const char *engine_user, SpawnerNames *ret) {
        _cleanup_close_ int rd = -1, wr = -1;
        SpawnerNames n;
        int pipefd[2], status = 0;
        ssize_t k;
        pid_t pid;

        if (!p || !engine_user || !ret)
                return -EINVAL;
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return negative_errno();
        rd = pipefd[0];
        wr = pipefd[1];
        pid = fork();
        if (pid < 0)
                return negative_errno();
        if (pid == 0) {
                rd = safe_close(rd);
                lookup(p, engine_user, &n);
                _exit(loop_write(wr, &n, sizeof(n)) < 0 ? 1 : 0);
        }
        wr = safe_close(wr);
        k = loop_read(rd, &n, sizeof(n));
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return negative_errno();
        /* Exactly one whole answer from a child that ended well, or nothing is believed. */
        if (k != (ssize_t)sizeof(n) || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return -EIO;
        n.range_why[sizeof(n.range_why) - 1] = 0;
        *ret = n;
        return 0;
}
