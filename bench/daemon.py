#!/usr/bin/env python3
"""A plugin run through the whole of lockd, in one run of this script: a console's TestPlugin
call (file passed as an fd, snapshot, sandbox, transient scope, answer) against what a user would
script instead (`systemd-run --scope` + the plugin reading the file) and a bare fork+exec, and the
sustained throughput of 2 clients at once. Run it through tests/integration/with-systemd (a real
manager) with LOCKD, LOCKCTL, LOCKD_SIGN, LOCKD_TEST_PLUGINS and LOCKD_TEST_PLUGINS_SRC set, as
`meson test -C build --benchmark daemon` does."""

import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
from lockdtest import (BUS, ISSUER, PATTERN, PLUGINS, Daemon, Signer, Varlink,  # noqa: E402
                       require_environment, tempdir)


def lockd_runs(d, name, path, n):
    """n sequential TestPlugin calls over one connection; returns seconds per run."""
    v = Varlink(d.console)
    try:
        t0 = time.perf_counter()
        for _ in range(n):
            with open(path, "rb") as f:
                r = v.call("io.lockd.Console.TestPlugin", {"name": name, "file_fd": 0},
                           fds=[f.fileno()])
            if r.get("parameters", {}).get("result") != 1:
                raise RuntimeError(f"unexpected answer {r}")
        return (time.perf_counter() - t0) / n
    finally:
        v.close()


def command_runs(cmd, path, n):
    t0 = time.perf_counter()
    for _ in range(n):
        with open(path, "rb") as f:
            r = subprocess.run(cmd, stdin=f, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               pass_fds=(), check=False)
        if r.stdout.strip() != b"1":
            raise RuntimeError(f"{cmd[0]} answered {r.stdout!r}")
    return (time.perf_counter() - t0) / n


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    require_environment()
    work = tempdir()
    signer = Signer(work)
    os.mkdir(os.path.join(work, "d"))
    d = Daemon(os.path.join(work, "d"))
    d.start()
    path = os.path.join(work, "sample.txt")
    with open(path, "w") as f:
        f.write("hello")
    # The plugin the alternatives run reads the file from stdin instead of fd 3: a shell
    # redirect is what a user would script, so give it fd 3 the same way.
    plugin = os.path.join(PLUGINS, "good-one")
    try:
        d.lockctl("marketplace", "add", "local", "--issuer", ISSUER, "--identity", PATTERN,
                  "--trusted-root", signer.root, check_rc=0)
        rel = signer.release("good-one", os.path.join(work, "rel"))
        d.lockctl("plugin", "install", rel, "--marketplace", "local", check_rc=0)
        name = "test.good-one"

        lockd_runs(d, name, path, 20)  # warm up
        per_lockd = lockd_runs(d, name, path, n)
        user = [] if BUS == "system" else ["--user"]
        scope_cmd = ["systemd-run", *user, "--scope", "-q", "--", "sh", "-c",
                     f"exec {plugin} 3<&0"]
        per_scope = command_runs(scope_cmd, path, max(20, n // 4))
        per_bare = command_runs(["sh", "-c", f"exec {plugin} 3<&0"], path, n)

        results = []

        def client():
            results.append(lockd_runs(d, name, path, n))

        threads = [threading.Thread(target=client) for _ in range(2)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
        throughput = 2 * n / elapsed
    finally:
        d.stop()

    print(f"lockd TestPlugin (sandbox + scope), 1 client:   {per_lockd * 1e3:7.2f} ms per run")
    print(f"systemd-run --scope + plugin:                   {per_scope * 1e3:7.2f} ms per run")
    print(f"bare fork+exec (sh + plugin):                   {per_bare * 1e3:7.2f} ms per run")
    print(f"lockd / systemd-run --scope:                    {per_lockd / per_scope:7.3f} "
          f"(target <= 0.25)")
    print(f"2 clients at once, {n} runs each:              {throughput:7.1f} runs/s "
          f"(target >= 300)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
