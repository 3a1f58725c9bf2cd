#!/usr/bin/env python3
"""lockd's two processes against a real systemd manager: a stand-in engine (hostile-engine.py)
sends the spawner malformed, oversized, truncated and out-of-order requests, unsealed or writable
memfds, the wrong fds and limits out of range, and the spawner refuses each, exits and runs
nothing; on a running lockd the engine is user lockd with no capability, the root process holds
no agent or console socket and maps neither libjansson nor libcrypto, and killing either process
ends the other and leaves no run, scope or child. TAP on stdout. Run through with-systemd."""

import errno
import fcntl
import json
import os
import pty
import pwd
import re
import signal
import socket
import subprocess
import sys
import termios
import threading
import time
import tty

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lockdtest import (EPHEMERAL_FIRST, EPHEMERAL_LAST, LOCKD, Daemon, Failed, Tap,  # noqa: E402
                       check, comm, install_unsigned, ours, plugin_processes, policy_text,
                       proc_state, require_environment, run_units, standby_units, tempdir, units,
                       systemctl, unit_pids, unit_properties, wait_for, write_file)

HERE = os.path.dirname(os.path.abspath(__file__))
PLUGINS = os.environ["LOCKD_TEST_PLUGINS"]

# Each malformed case and the refusal the spawner must name in its log.
HOSTILE = {
    "bad-magic": "a message without the magic",
    "bad-version": "a message of another version",
    "oversized": "a truncated message",
    "truncated": "a message of the wrong size",
    "unknown-type": "a message of a type this side does not take",
    "size-field": "a message of the wrong size",
    "reserved-field": "a field out of range",
    "run-before-hello": "a run out of order",
    "hello-twice": "a second HELLO",
    "hello-wrong-pid": "a HELLO from another process",
    "unsealed-binary": "a run whose memfd is not sealed",
    "writable-input": "a run whose memfd is not sealed",
    "fd-count": "the wrong number of file descriptors",
    "too-many-fds": "a truncated message or control data",
    "memory-too-small": "a field out of range",
    "timeout-zero": "a field out of range",
    "cpu-too-large": "a field out of range",
    "protocol-3": "a field out of range",
    "flags-protocol-1": "a field out of range",
    "run-id-zero": "a field out of range",
    "stdout-not-pipe": "a run whose output is not a pipe's write end",
    "duplicate-id": "a run id already in flight",
    "run-after-stop": "a run out of order",
    "confine-no-pidfd": "a confinement check without a pidfd",
    "confine-proc-dir": "a confinement check without a pidfd",
    "notify-bad-state": "a field out of range",
    "warm-memory-too-small": "a field out of range",
    "warm-after-stop": "a WARM out of order",
}


def prepare(top, case):
    """The stand-in's directory for case, its policy and hostile.json (the case, where to write
    what it saw, the plugins): (directory, policy, the path of what it saw)."""
    d = os.path.join(top, case)
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o777)  # the stand-in runs as user lockd and writes what it saw here
    policy = os.path.join(d, "lockd.yaml")
    with open(policy, "w") as f:
        f.write(policy_text(d))
    out = os.path.join(d, "seen.json")
    with open(os.path.join(d, "hostile.json"), "w") as f:
        json.dump({"case": case, "out": out, "plugin": os.path.join(PLUGINS, "good-one"),
                   "slow": os.path.join(PLUGINS, "slow-answer"),
                   "probe": os.environ.get("LOCKD_ENGINE_PROBE", "")}, f)
    return d, policy, out


def lockd_argv(policy):
    return [LOCKD, "--config", policy, "--engine", os.path.join(HERE, "hostile-engine.py")]


def spawner(top, case):
    """lockd with the stand-in engine for case: (exit status, its log, what the stand-in saw,
    seconds from its start to its exit)."""
    d, policy, out = prepare(top, case)
    env = dict(os.environ)
    env.pop("NOTIFY_SOCKET", None)
    t0 = time.monotonic()
    r = subprocess.run(lockd_argv(policy), env=env, capture_output=True, text=True, timeout=60)
    seen = json.load(open(out)) if os.path.exists(out) else {}
    return r.returncode, r.stdout + r.stderr, seen, time.monotonic() - t0


def seen_of(out):
    return json.load(open(out)) if os.path.exists(out) else {}


def wait_phase(d, name, proc, timeout=60):
    """Waits for the stand-in's phase file (it then waits for go_on())."""
    wait_for(lambda: os.path.exists(os.path.join(d, "phase-" + name)) or proc.poll() is not None,
             timeout=timeout, what=f"the stand-in's phase {name}")
    check(proc.poll() is None, f"lockd ended before the stand-in's phase {name}")


def go_on(d, name):
    open(os.path.join(d, "go-" + name), "w").close()


def test_good_standin(top):
    """the stand-in's well-formed run answers 1 through the spawner (so the refusals below are
    the spawner's checks, not a stand-in that cannot speak the protocol), and its STOP and hang-up
    end lockd with status 0"""
    rc, log, seen, _ = spawner(top, "ok")
    check(rc == 0, f"lockd exited {rc}:\n{log}\n{seen}")
    check(seen.get("stdout") == "1\n", f"the plugin's stdout: {seen}")
    x = seen.get("exited", {})
    check(x.get("error") == 0 and x.get("flags", 0) & 2 and x.get("exit_status") == 0,
          f"EXITED: {x}")
    check(EPHEMERAL_FIRST <= x.get("uid", 0) <= EPHEMERAL_LAST, f"the run's uid: {x}")
    check(seen.get("type") == "0x82", f"the first answer to a RUN is not its EXITED: {seen}")
    check(re.fullmatch(r"lockd-run-[0-9]+\.scope", seen.get("unit", "")), f"EXITED's unit: {seen}")
    check(x.get("flags", 0) & 1, f"EXITED says the run was not in its scope: {x}")
    check(seen.get("hello", [0, 0, 0])[2] > 0, f"HELLO's answer: {seen}")


def hostile_case(case, reason):
    def t(top):
        rc, log, seen, took = spawner(top, case)
        check(rc == 1, f"lockd exited {rc} on {case}:\n{log}")
        # Its way out serves the manager until every run scope's start is answered and stopped
        # (5 s at most); it used to leave a worker waiting out a start nobody read (10 s).
        check(took < 8, f"lockd took {took:.1f} s to end after {case}")
        check("the engine sent " + reason in log, f"the refusal of {case}:\n{log}")
        check(seen.get("after") in ("eof", "error 104"), f"the stand-in saw: {seen}")
        check(not plugin_processes(), f"a plugin runs after {case}: {plugin_processes()}")
        wait_for(lambda: not units(), timeout=10, what=f"no run scope after {case}")
    t.__doc__ = (f"{case}: the spawner refuses ({reason}), exits 1 within seconds, no process "
                 "runs and no run scope stays")
    t.__name__ = "test_hostile_" + case.replace("-", "_")
    return t


def children(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(x) for x in f.read().split()]


def status_fields(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            fields[k] = v.strip()
    return fields


def engine_of(d):
    kids = [p for p in children(d.proc.pid)
            if open(f"/proc/{p}/comm").read().strip().startswith("lockd-engine")]
    check(len(kids) == 1, f"the spawner's engine children: {kids}")
    return kids[0]


def socket_inodes(pid):
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link)
    return inodes


def test_processes(top):
    """on a running lockd the engine is user lockd with CapEff and CapPrm 0, NoNewPrivs 1 and a
    seccomp filter; the root process holds neither listening socket and maps neither libjansson
    nor libcrypto, nor an NSS module"""
    os.makedirs(os.path.join(top, "procs"), exist_ok=True)
    d = Daemon(os.path.join(top, "procs"))
    d.start()
    try:
        engine = engine_of(d)
        st = status_fields(engine)
        lockd_uid = pwd.getpwnam("lockd").pw_uid
        check(st["Uid"].split() == [str(lockd_uid)] * 4, f"engine Uid: {st['Uid']}")
        check(int(st["CapEff"], 16) == 0 and int(st["CapPrm"], 16) == 0 and
              int(st["CapBnd"], 16) == 0, f"engine caps: {st['CapEff']} {st['CapPrm']}")
        check(st["NoNewPrivs"] == "1" and st["Seccomp"] == "2", f"engine: {st}")
        # Nothing of root's: fds 0-2 on /dev/null, the sockets, the channel and the log (the
        # spawner's stderr here, a file), a session of its own, the environment the spawner built.
        fds = {int(n): os.readlink(f"/proc/{engine}/fd/{n}") for n in os.listdir(f"/proc/{engine}/fd")}
        check([fds.get(i) for i in range(3)] == ["/dev/null"] * 3, f"engine fds 0-2: {fds}")
        check(os.getsid(engine) == engine, f"the engine's session: {os.getsid(engine)}")
        env = open(f"/proc/{engine}/environ", "rb").read().split(b"\0")
        names = sorted(x.split(b"=", 1)[0].decode() for x in env if x)
        check(set(names) <= ENGINE_ENV, f"the engine's environment: {names}")
        sp = status_fields(d.proc.pid)
        check(sp["Uid"].split()[0] == "0", f"spawner Uid: {sp['Uid']}")
        check(int(sp["CapEff"], 16) == (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8),
              f"spawner CapEff: {sp['CapEff']}")
        # The listening sockets are the engine's fds 3 and 4; the spawner has neither.
        listening = {os.readlink(f"/proc/{engine}/fd/{n}") for n in (3, 4)}
        check(all(x.startswith("socket:[") for x in listening), f"engine fds: {listening}")
        held = socket_inodes(d.proc.pid) & listening
        check(not held, f"the spawner holds a listening socket: {held}")
        maps = open(f"/proc/{d.proc.pid}/maps").read()
        check("libjansson" not in maps and "libcrypto" not in maps,
              "the spawner maps libjansson or libcrypto")
        # Its user and group lookups ran in a child: no NSS module (libnss_systemd pulls in libm too).
        check("libnss_" not in maps,
              f"the spawner maps an NSS module: {[x for x in maps.split() if 'libnss_' in x]}")
        check("libjansson" in open(f"/proc/{engine}/maps").read(), "the engine's maps")
    finally:
        d.stop()


# Every variable the spawner may give the engine (ARCHITECTURE.md, two processes); a sanitized
# build adds the sanitizers' options.
ENGINE_ENV = {"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "LOCKD_SPAWNER_FD", "LOCKD_LOG_FD",
              "LOCKD_LOG_LEVEL", "JOURNAL_STREAM", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"}


def slow_run(d, path):
    box = {}

    def go():
        box["r"] = d.lockctl("plugin", "run", "test.slow-answer", path, "--json")
    t = threading.Thread(target=go)
    t.start()
    wait_for(lambda: run_units() and plugin_processes(), timeout=15, what="the slow plugin running")
    return t, box


def test_kill_engine(top):
    """SIGKILL of the engine mid-run: the spawner exits (status 1, so systemd restarts lockd),
    says the engine was killed by SIGKILL, kills the run; no plugin process, scope or child is
    left"""
    os.makedirs(os.path.join(top, "kill-engine"), exist_ok=True)
    d = Daemon(os.path.join(top, "kill-engine"), extra_policy="allow_unsigned: true\n")
    d.start()
    install_unsigned(d, d.dir, "slow-answer")
    t, box = slow_run(d, write_file(os.path.join(d.dir, "f.txt")))
    os.kill(engine_of(d), signal.SIGKILL)
    rc = d.proc.wait(15)
    t.join(30)
    check(rc == 1, f"the spawner exited {rc}")
    # How the engine ended, by its signal's name: from the pidfd's watch, or at the reap when
    # the channel's EOF came first and nothing was left to drain.
    log = d.read_log()
    check(re.search(r"the engine( \(pid [0-9]+\))? was killed by signal 9 \(SIGKILL\)", log),
          f"the spawner did not say why:\n{log}")
    wait_for(lambda: not plugin_processes(), timeout=5, what="no plugin left")
    wait_for(lambda: not units(), timeout=15, what="no run scope left")


def test_kill_spawner(top):
    """SIGKILL of the spawner mid-run: the engine ends (its parent-death signal, then its channel
    closed), the plugin dies with the spawner, and no scope is left"""
    os.makedirs(os.path.join(top, "kill-spawner"), exist_ok=True)
    d = Daemon(os.path.join(top, "kill-spawner"), extra_policy="allow_unsigned: true\n")
    d.start()
    install_unsigned(d, d.dir, "slow-answer")
    t, box = slow_run(d, write_file(os.path.join(d.dir, "f.txt")))
    engine = engine_of(d)
    d.proc.kill()
    d.proc.wait(10)
    wait_for(lambda: proc_state(f"/proc/{engine}/stat") in ("", "Z"), timeout=10,
             what="the engine to end")
    t.join(30)
    wait_for(lambda: not plugin_processes(), timeout=5, what="no plugin left")
    wait_for(lambda: not units(), timeout=15, what="no run scope left")
    # What the next start finds: nothing stale, and it serves.
    d.start()
    d.stop()


def run_json(d, name, path):
    r = d.lockctl("plugin", "run", name, path, "--json")
    check(r.returncode == 0, f"plugin run: {r.stdout}{r.stderr}")
    return json.loads(r.stdout)


def ready_ahead(d):
    """The scopes made ahead (standby_units()) that the spawner has on its ready list: lockd at
    debug level logs each once a run would take it. The manager lists a scope, its child in it,
    before the spawner has the answer to its start; a run asked for then waits for that child (its
    scope_wait_usec not 0), and under load that wait is long enough to be seen."""
    said = set(re.findall(r"a child made ahead waits in (\S+)", d.read_log()))
    return [u for u in standby_units() if u in said]


def test_standby(top):
    """scopes made ahead: once a plugin is installed a child waits in a scope of its own for its
    limit class (root, lockd-standby, only its control socket open, the spawner's child,
    RuntimeMaxUSec the timeout + 10 s + 2 min); the first run of that plugin runs in exactly that
    scope and waited for none; a waiting child killed with its scope is never used (that run
    makes its scope on demand); nothing of it outlives lockd"""
    os.makedirs(os.path.join(top, "standby"), exist_ok=True)
    d = Daemon(os.path.join(top, "standby"), extra_policy="allow_unsigned: true\n")
    # At debug level the spawner says when a child is on its ready list (ready_ahead()).
    d.start(env_extra={"LOCKD_LOG_LEVEL": "debug"})
    try:
        check(not standby_units(), f"children made ahead with no plugin: {standby_units()}")
        name = install_unsigned(d, d.dir, "good-one")
        path = write_file(os.path.join(d.dir, "f.txt"))
        ready = wait_for(lambda: ready_ahead(d), timeout=60,
                         what="a scope made ahead for the plugin")
        check(len(ready) == 1 and standby_units() == ready,
              f"one child ahead for one class: {ready}, {standby_units()}")
        pids = unit_pids(ready[0])
        check(len(pids) == 1, f"{ready[0]} holds {pids}")
        st = status_fields(pids[0])
        check(st["Uid"].split()[0] == "0" and st["PPid"] == str(d.proc.pid),
              f"the waiting child: {st['Uid']} ppid {st['PPid']}")
        fds = os.listdir(f"/proc/{pids[0]}/fd")
        check(len(fds) == 1 and os.readlink(f"/proc/{pids[0]}/fd/{fds[0]}").startswith("socket:"),
              f"the waiting child's fds: {fds}")
        props = unit_properties(ready[0], "RuntimeMaxUSec", "MemoryMax", "TasksMax")
        check(props == {"RuntimeMaxUSec": "2min 13s", "MemoryMax": str(168 * 1024 * 1024),
                        "TasksMax": "544"}, f"{ready[0]}: {props}")

        first = run_json(d, name, path)
        check(first.get("result") == 1 and first.get("unit") == ready[0] and
              first.get("scope_wait_usec") == 0 and first.get("setup_usec", -1) >= 0,
              f"the first run, in the scope made ahead: {first}")

        # A waiting child whose scope is killed is discarded, never handed a run. It is killed
        # once the spawner has it ready: killed while its scope is being made, it would be
        # dropped then, and a child made in its place could serve the run below.
        ready = wait_for(lambda: ready_ahead(d), timeout=60, what="the next scope made ahead")
        systemctl("kill", "--signal=SIGKILL", ready[0])
        wait_for(lambda: ready[0] not in standby_units(), timeout=30, what="the killed child")
        second = run_json(d, name, path)
        check(second.get("result") == 1 and second.get("unit") != ready[0] and
              second.get("scope_wait_usec", 0) > 0,
              f"a run after its waiting child died makes its scope on demand: {second}")
    finally:
        d.stop()
    wait_for(lambda: not units(), timeout=15, what="no scope after the stop")

    def waiting():
        # A killed child that whoever adopted it has not reaped yet (a zombie) runs nothing.
        return [p for p in os.listdir("/proc") if p.isdigit() and comm(p) == "lockd-standby" and
                proc_state(f"/proc/{p}/stat") not in ("Z", "") and ours(p)]
    wait_for(lambda: not waiting(), timeout=10, what="no waiting child after lockd")


def test_attack_terminal(top):
    """root's terminal: lockd started by hand from a terminal (a pseudo-terminal, its controlling
    one) and a marker in its environment; the engine is in a session of its own, its fds 0-2 are
    /dev/null and nothing else is open but its sockets and the channel, /dev/tty cannot be opened,
    TIOCSTI pushes nothing into the terminal, and no variable of root's reached it"""
    d, policy, out = prepare(top, "terminal")
    master, slave = pty.openpty()
    tty.setraw(slave)  # anything pushed is readable at once, without a newline
    env = dict(os.environ, LOCKD_TEST_ROOTS_SECRET="do-not-pass")
    env.pop("NOTIFY_SOCKET", None)

    def controlling():
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    proc = subprocess.Popen(lockd_argv(policy), env=env, stdin=slave, stdout=slave, stderr=slave,
                            start_new_session=True, preexec_fn=controlling)
    said = []
    reader = threading.Thread(target=lambda: drain(master, said), daemon=True)
    reader.start()
    try:
        rc = proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    os.set_blocking(slave, False)
    try:
        pushed = os.read(slave, 4096)
    except BlockingIOError:
        pushed = b""
    os.close(slave)
    seen = seen_of(out)
    check(rc == 0, f"lockd exited {rc}: {b''.join(said)!r} {seen}")
    check(seen.get("sid") == seen.get("pid"), f"the engine's session: {seen}")
    check(seen.get("isatty") == [False] * 3, f"the engine's fds 0-2 are a terminal: {seen}")
    fds = seen.get("fds", {})
    check(all(fds.get(str(i)) == "/dev/null" for i in range(3)), f"the engine's fds: {fds}")
    # 3-5 its sockets and the channel, 6 its log (none here: lockd's stderr is a terminal); the
    # stand-in's own listing of /proc/self/fd is the one more it may see.
    extra = {n: x for n, x in fds.items() if int(n) > 5 and not x.startswith("/proc/")}
    check(not extra, f"the engine holds more: {fds}")
    check(seen.get("dev_tty") != "opened", f"the engine opened /dev/tty: {seen}")
    check("pushed" not in seen.get("tiocsti", []), f"TIOCSTI: {seen.get('tiocsti')}")
    check(b"pwned" not in pushed, f"the terminal received {pushed!r}")
    check("LOCKD_TEST_ROOTS_SECRET" not in seen.get("environ", []) and
          set(seen.get("environ", [])) <= ENGINE_ENV, f"the engine's environment: {seen}")


def drain(fd, into):
    while True:
        try:
            b = os.read(fd, 4096)
        except OSError:
            return
        if not b:
            return
        into.append(b)


def test_attack_namespaces(top):
    """namespaces and sockets past the engine's own filter (loaded by engine_confine(), in the
    stand-in's child, as user lockd): clone with each namespace flag fails with EPERM, clone3
    with ENOSYS, unshare with EPERM, sockets of AF_INET, AF_INET6, AF_NETLINK, AF_PACKET and
    AF_VSOCK with EAFNOSUPPORT"""
    rc, log, seen, _ = spawner(top, "namespaces")
    p = seen.get("probe", {})
    check(rc == 0, f"lockd exited {rc}:\n{log}\n{seen}")
    check(p.get("confine") == 0, f"engine_confine(): {p}")
    check(p.get("clone") and all(v == errno.EPERM for v in p["clone"].values()),
          f"clone with a namespace flag: {p.get('clone')}")
    check(p.get("clone3") == errno.ENOSYS and p.get("unshare") == errno.EPERM,
          f"clone3, unshare: {p}")
    check(p.get("socket") and all(v == errno.EAFNOSUPPORT for v in p["socket"].values()),
          f"sockets: {p.get('socket')}")


def test_attack_engine_dies(top):
    """the engine exits while a child of its keeps the channel: the spawner ends at once (the
    engine's pidfd, not the channel's EOF), says how the engine ended, and the child's RUN is
    never served"""
    d, policy, out = prepare(top, "engine-dies")
    env = dict(os.environ)
    env.pop("NOTIFY_SOCKET", None)
    t0 = time.monotonic()
    r = subprocess.run(lockd_argv(policy), env=env, capture_output=True, text=True, timeout=60)
    took = time.monotonic() - t0
    log = r.stdout + r.stderr
    check(r.returncode == 1, f"lockd exited {r.returncode}:\n{log}")
    check(re.search(r"the engine \(pid [0-9]+\) exited with status 0", log), f"why:\n{log}")
    child = wait_for(lambda: seen_of(out + ".child"), timeout=20, what="the engine's child")
    check(child.get("reply") != "0x82",
          f"the spawner served the engine's child after the engine died: {child}")
    check(took < 5, f"lockd took {took:.1f} s to end after its engine")
    check(not plugin_processes(), f"a plugin runs: {plugin_processes()}")


def spawner_fds(pid):
    links = []
    for n in os.listdir(f"/proc/{pid}/fd"):
        try:
            links.append(os.readlink(f"/proc/{pid}/fd/{n}"))
        except OSError:
            pass
    return links


def test_attack_nofile_burst(top):
    """lockd started at a soft fd limit of 1024 (systemd's default), its engine queues every run
    it may have in flight (runs_max, 264 at the default limits), each with the most fds a run
    has: the spawner takes them all (it raised its own limit to what runs_max needs) and
    answers every one"""
    d, policy, out = prepare(top, "nofile-burst")
    env = dict(os.environ)
    env.pop("NOTIFY_SOCKET", None)
    hard = resource_hard()
    log = open(os.path.join(d, "lockd.log"), "w")
    proc = subprocess.Popen(["prlimit", f"--nofile=1024:{hard}", "--"] + lockd_argv(policy),
                            env=env, stdout=log, stderr=log)
    try:
        wait_phase(d, "queued", proc, timeout=120)
        # The stand-in's sends return once the runs are in the spawner's socket queue, before
        # the spawner took them (and their fds) from it: the height is read until it is past the
        # default limit, or for at most 30 s (CI once read 1024 at once under load).
        fds, deadline = 0, time.monotonic() + 30
        while fds <= 1024 and time.monotonic() < deadline:
            fds = max(fds, len(spawner_fds(proc.pid)))
            time.sleep(0.05)
        limit = [x for x in open(f"/proc/{proc.pid}/limits") if x.startswith("Max open files")]
        go_on(d, "queued")
        rc = proc.wait(300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    seen = seen_of(out)
    text = open(os.path.join(d, "lockd.log")).read()
    check(rc == 0, f"lockd exited {rc}: {seen}\n{text[-3000:]}")
    check(seen.get("sent") == seen.get("hello", [0, 0, 0])[2] == 264 and
          "send_error" not in seen, f"the burst: {seen}")
    check(seen.get("exited") == 264 and seen.get("errors") == [0], f"the answers: {seen}")
    check(fds > 1024, f"the spawner held {fds} fds at the burst's height ({limit})")
    print(f"# the burst's height: the spawner held {fds} fds; {limit[0].split()[3:5]}", flush=True)


def resource_hard():
    import resource
    return resource.getrlimit(resource.RLIMIT_NOFILE)[1]


def memfd_bytes(pid):
    """What the process holds in memfds: (count, bytes)."""
    n = total = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/memfd:"):
                n += 1
                total += os.stat(f"/proc/{pid}/fd/{fd}").st_size
        except OSError:
            pass
    return n, total


def rss(pid):
    return int(status_fields(pid)["VmRSS"].split()[0]) * 1024


def test_attack_cache(top):
    """eight 64 MiB binaries, each run once and closed by the engine: within a second the spawner
    holds none of them (nor a copy), its memfds and RSS back where they were before the first"""
    d, policy, out = prepare(top, "cache")
    env = dict(os.environ)
    env.pop("NOTIFY_SOCKET", None)
    log = open(os.path.join(d, "lockd.log"), "w")
    proc = subprocess.Popen(lockd_argv(policy), env=env, stdout=log, stderr=log)
    try:
        wait_phase(d, "idle", proc)
        idle_memfds, idle_rss = memfd_bytes(proc.pid), rss(proc.pid)
        go_on(d, "idle")
        wait_phase(d, "released", proc, timeout=300)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 1.0 and memfd_bytes(proc.pid)[1] > idle_memfds[1]:
            time.sleep(0.05)
        held, now_rss = memfd_bytes(proc.pid), rss(proc.pid)
        go_on(d, "released")
        rc = proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    seen = seen_of(out)
    check(rc == 0 and seen.get("errors") == [0] * 8, f"lockd exited {rc}: {seen}")
    check(held[1] <= idle_memfds[1],
          f"a second after the engine let go the spawner holds {held[0]} memfd(s), "
          f"{held[1] >> 20} MiB (idle: {idle_memfds[0]}, {idle_memfds[1] >> 20} MiB)")
    check(now_rss <= idle_rss + (8 << 20),
          f"the spawner's RSS {now_rss >> 20} MiB, idle {idle_rss >> 20} MiB")
    print(f"# a second after the release: {held[0]} memfd(s) of {held[1]} bytes (idle "
          f"{idle_memfds[0]}), RSS {now_rss >> 10} KiB (idle {idle_rss >> 10})", flush=True)


def test_attack_dead_pidfd(top):
    """CONFINE with a dead pidfd that names a live pid: the check answers that the peer is gone,
    without asking the manager about a pid that may be another process by now"""
    rc, log, seen, _ = spawner(top, "dead-pidfd")
    c = seen.get("confined", {})
    check(rc == 0, f"lockd exited {rc}:\n{log}\n{seen}")
    check(c.get("type") == "0x83" and c.get("check_id") == 1 and c.get("ok") == 0 and
          c.get("reason") == 8 and c.get("unit") == "" and c.get("error") == 0,
          f"CONFINED for a dead pidfd: {c}")


def test_attack_notify_flood(top):
    """2000 NOTIFYs with a notify socket nobody reads: the loop keeps serving (a run right after
    them answers within seconds) and systemd gets a few datagrams, not 2000"""
    d, policy, out = prepare(top, "notify-flood")
    sock_path = os.path.join(d, "notify.sock")
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    ns.bind(sock_path)
    env = dict(os.environ, NOTIFY_SOCKET=sock_path)
    try:
        r = subprocess.run(lockd_argv(policy), env=env, capture_output=True, text=True,
                           timeout=200)
        ns.setblocking(False)
        got = 0
        try:
            while True:
                ns.recv(4096)
                got += 1
        except BlockingIOError:
            pass
    finally:
        ns.close()
    seen = seen_of(out)
    check(r.returncode == 0, f"lockd exited {r.returncode}:\n{r.stdout}{r.stderr}\n{seen}")
    check(seen.get("run_error") == 0 and seen.get("stdout") == "1\n", f"the run: {seen}")
    check(seen.get("run_s", 99) < 5, f"the run after 2000 NOTIFYs took {seen.get('run_s')} s")
    check(got <= 20, f"{got} datagrams reached the notify socket")


def test_cache_remove_install(top):
    """a plugin removed, installed again and run, eight times over on a running lockd: the
    spawner's fds and memfds are where they were after the first cycle (it kept the engine's
    memfd, its copy and its ruleset of every old binary: 3 fds a cycle)"""
    os.makedirs(os.path.join(top, "remove-install"), exist_ok=True)
    d = Daemon(os.path.join(top, "remove-install"), extra_policy="allow_unsigned: true\n")
    d.start()
    try:
        path = write_file(os.path.join(d.dir, "f.txt"))
        counts = []
        for _ in range(8):
            name = install_unsigned(d, d.dir, "good-one")
            check(run_json(d, name, path).get("result") == 1, "a run of the plugin")
            d.lockctl("plugin", "remove", name, check_rc=0)
            time.sleep(1.0)  # an entry lingers 500 ms after its last run
            counts.append((len(spawner_fds(d.proc.pid)), memfd_bytes(d.proc.pid)[0]))
        check(counts[-1][0] <= counts[0][0] and counts[-1][1] <= counts[0][1],
              f"the spawner's fds and memfds after each cycle: {counts}")
        print(f"# the spawner's (fds, memfds) after each cycle: {counts}", flush=True)
    finally:
        d.stop()


def main():
    require_environment()
    tap = Tap()
    top = tempdir()
    os.chmod(top, 0o755)
    tests = [test_good_standin] + [hostile_case(c, r) for c, r in HOSTILE.items()] + \
        [test_attack_terminal, test_attack_namespaces, test_attack_engine_dies, test_attack_nofile_burst,
         test_attack_cache, test_attack_dead_pidfd, test_attack_notify_flood,
         test_cache_remove_install] + \
        [test_processes, test_kill_engine, test_kill_spawner, test_standby]
    for t in tests:
        tap.run(t, top)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
