/*
 * A test plugin that inspects the process it was given: its open fds and their modes, fd 6's
 * seals, stdin, environment and cwd. It answers 1 only when all of it is exactly the contract's
 * layout for its protocol, and writes what it saw on fd 7 when it has one.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

int main(void) {
        char seen[2048];
        size_t len = 0;
        const char *proto = getenv("LOCKFILE_PLUGIN_PROTOCOL");
        int p2 = proto && strcmp(proto, "2") == 0;
        int ok = 1, n_env = 0;
        char cwd[256], c;
        struct stat st;

        len += (size_t)snprintf(seen + len, sizeof(seen) - len, "fds:");
        for (int fd = 0; fd < 1024; fd++)
                if (fcntl(fd, F_GETFD) >= 0)
                        len += (size_t)snprintf(seen + len, sizeof(seen) - len, " %d", fd);
        len += (size_t)snprintf(seen + len, sizeof(seen) - len, "\n");
        if (strcmp(seen, p2 ? "fds: 0 1 2 3 6 7\n" : "fds: 0 1 2 3\n") != 0)
                ok = 0;

        /* fd 3 and fd 6 read-only, fd 7 a write-only pipe, stdin /dev/null. */
        int fl3 = fcntl(3, F_GETFL), fl6 = fcntl(6, F_GETFL), fl7 = fcntl(7, F_GETFL);
        int seals6 = fcntl(6, F_GET_SEALS);
        len += (size_t)snprintf(seen + len, sizeof(seen) - len,
                                "fd3: %s fd6: %s seals6: 0x%x fd7: %s\n",
                                (fl3 & O_ACCMODE) == O_RDONLY ? "ro" : "rw",
                                fl6 < 0                         ? "none"
                                : (fl6 & O_ACCMODE) == O_RDONLY ? "ro"
                                                                : "rw",
                                seals6 < 0 ? 0 : seals6,
                                fl7 < 0                         ? "none"
                                : (fl7 & O_ACCMODE) == O_WRONLY ? "wo"
                                                                : "other");
        if ((fl3 & O_ACCMODE) != O_RDONLY)
                ok = 0;
        if (p2 && ((fl6 & O_ACCMODE) != O_RDONLY || (fl7 & O_ACCMODE) != O_WRONLY ||
                   (seals6 & 0x0f) != 0x0f))
                ok = 0;
        if (p2 && (fstat(7, &st) < 0 || !S_ISFIFO(st.st_mode)))
                ok = 0;
        if (fstat(0, &st) < 0 || !S_ISCHR(st.st_mode) || read(0, &c, 1) != 0)
                ok = 0;
        if (fstat(1, &st) < 0 || !S_ISFIFO(st.st_mode))
                ok = 0;

        for (char **e = environ; *e; e++) {
                n_env++;
                len += (size_t)snprintf(seen + len, sizeof(seen) - len, "env: %s\n", *e);
        }
        if (n_env != 1 || !proto)
                ok = 0;
        if (!getcwd(cwd, sizeof(cwd)) || strcmp(cwd, "/") != 0)
                ok = 0;
        len += (size_t)snprintf(seen + len, sizeof(seen) - len, "cwd: %s\n", ok ? "/" : cwd);

        if (p2)
                (void)!write(7, seen, len);
        (void)!write(1, ok ? "1\n" : "0\n", 2);
        return 0;
}
