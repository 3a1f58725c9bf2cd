#!/usr/bin/env python3
"""lockd's resident memory: idle, then with N signed plugins installed (default 100): the engine
against 8 MiB, the spawner against 4 MiB. Starts a real lockd on a test policy; run it through
tests/integration/with-systemd (bench/run-rss does) with the paths of the built programs in
LOCKD, LOCKCTL, LOCKD_SIGN, LOCKD_TEST_PLUGINS and LOCKD_TEST_PLUGINS_SRC."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
from lockdtest import (ISSUER, PATTERN, PLUGINS_SRC, Daemon, Signer, require_environment,  # noqa: E402
                       tempdir)

TARGET_KIB = 8 * 1024          # the engine, which holds the state
SPAWNER_TARGET_KIB = 4 * 1024  # the spawner, which holds a pool of runs and little else


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


def lockd_kib(pid):
    """lockd's two processes: (spawner, engine) RSS in KiB."""
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        kids = [int(x) for x in f.read().split()]
    engines = [k for k in kids if open(f"/proc/{k}/comm").read().startswith("lockd-engine")]
    if len(engines) != 1:
        raise RuntimeError(f"the spawner's engine: {engines}")
    return rss_kib(pid), rss_kib(engines[0])


def say(what, both):
    spawner, engine = both
    print(f"lockd RSS {what:<30} engine {engine / 1024:5.2f} MiB ({engine / TARGET_KIB:.2f} of 8 "
          f"MiB) {'PASS' if engine <= TARGET_KIB else 'MISS'}, spawner {spawner / 1024:5.2f} MiB "
          f"({spawner / SPAWNER_TARGET_KIB:.2f} of 4 MiB) "
          f"{'PASS' if spawner <= SPAWNER_TARGET_KIB else 'MISS'}; both {sum(both) / 1024:.2f} MiB")


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    require_environment()
    work = tempdir()
    signer = Signer(work)
    os.mkdir(os.path.join(work, "d"))
    d = Daemon(os.path.join(work, "d"))
    d.start()
    try:
        idle = lockd_kib(d.proc.pid)
        d.lockctl("marketplace", "add", "local", "--issuer", ISSUER, "--identity", PATTERN,
                  "--trusted-root", signer.root, check_rc=0)
        with open(os.path.join(PLUGINS_SRC, "good-one", "plugin.toml")) as f:
            template = f.read()
        for i in range(n):
            text = template.replace('name = "test.good-one"', f'name = "bench.p{i:03d}"')
            rel = signer.release("good-one", os.path.join(work, "rel", str(i)), text)
            d.lockctl("plugin", "install", rel, "--marketplace", "local", check_rc=0)
        loaded = lockd_kib(d.proc.pid)
        d.stop()
        d.start()
        restarted = lockd_kib(d.proc.pid)
    finally:
        d.stop()
    # Each process against its own target; their sum counts shared library pages twice.
    say("idle:", idle)
    say(f"with {n} plugins installed:", loaded)
    say(f"after a restart with {n}:", restarted)
    return 0 if all(e <= TARGET_KIB and s <= SPAWNER_TARGET_KIB
                    for s, e in (idle, loaded, restarted)) else 1


if __name__ == "__main__":
    sys.exit(main())
