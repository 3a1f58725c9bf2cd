#!/usr/bin/env python3
"""lockd's resident memory: idle, then with N signed plugins installed (default 100), against
the 8 MiB target. Starts a real lockd on a test policy; run it through
tests/integration/with-systemd (bench/run-rss does) with the paths of the built programs in
LOCKD, LOCKCTL, LOCKD_SIGN, LOCKD_TEST_PLUGINS and LOCKD_TEST_PLUGINS_SRC."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
from lockdtest import (ISSUER, PATTERN, PLUGINS_SRC, Daemon, Signer, require_environment,  # noqa: E402
                       tempdir)

TARGET_KIB = 8 * 1024


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        status = f.read()
    if os.environ.get("LOCKD_BENCH_VERBOSE"):
        print(" ".join(line.replace("\t", "").replace(" ", "") for line in status.splitlines()
                       if line.startswith(("VmRSS", "RssAnon", "RssFile", "RssShmem", "Threads"))))
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    require_environment()
    work = tempdir()
    signer = Signer(work)
    os.mkdir(os.path.join(work, "d"))
    d = Daemon(os.path.join(work, "d"))
    d.start()
    try:
        idle = rss_kib(d.proc.pid)
        d.lockctl("marketplace", "add", "local", "--issuer", ISSUER, "--identity", PATTERN,
                  "--trusted-root", signer.root, check_rc=0)
        with open(os.path.join(PLUGINS_SRC, "good-one", "plugin.toml")) as f:
            template = f.read()
        for i in range(n):
            text = template.replace('name = "test.good-one"', f'name = "bench.p{i:03d}"')
            rel = signer.release("good-one", os.path.join(work, "rel", str(i)), text)
            d.lockctl("plugin", "install", rel, "--marketplace", "local", check_rc=0)
        loaded = rss_kib(d.proc.pid)
        d.stop()
        d.start()
        restarted = rss_kib(d.proc.pid)
    finally:
        d.stop()
    print(f"lockd RSS idle:                          {idle / 1024:6.2f} MiB "
          f"({idle / TARGET_KIB:.2f} of the 8 MiB target)")
    print(f"lockd RSS with {n} plugins installed:    {loaded / 1024:6.2f} MiB "
          f"({loaded / TARGET_KIB:.2f} of the target)")
    print(f"lockd RSS after a restart with {n}:       {restarted / 1024:6.2f} MiB "
          f"({restarted / TARGET_KIB:.2f} of the target)")
    return 0 if max(idle, loaded, restarted) <= TARGET_KIB else 1


if __name__ == "__main__":
    sys.exit(main())
