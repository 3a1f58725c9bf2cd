#!/usr/bin/env python3
"""Faults against a real lockd under a real systemd manager: the audit log in segments, a full
state directory (a small tmpfs), no journald (its socket hidden in a mount namespace of lockd's
own), the bus cut while a scope is being made and while a plugin runs (a proxy in between), the
wall clock moved under a running lockd (libfaketime), and SIGKILL at many points of a busy
lockd. No change goes without its audit record, nothing acknowledged is lost, and the chain
verifies. TAP on stdout. Run through tests/integration/with-systemd. (The manager re-executed
with runs in flight is in test-daemon.py; the clock's unit test in tests/unit/test-clock-jump.c.)"""

import hashlib
import json
import os
import random
import re
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lockdtest import (AGENT_UID, BUS, LOCKCTL, LOCKD, Daemon, Failed, Tap,  # noqa: E402
                       agent_handles, budget_snapshot, call_as, check, grant_revoke,
                       install_unsigned, plugin_processes, policy_text, require_environment,
                       run_units, tempdir, units, wait_for, write_file)


def test_audit_segments(top):
    """the audit log is kept in segments of audit.segment_bytes; past retain_segments the oldest
    goes after a segment_removed record; lockctl audit verify checks every file left, in order"""
    top_d = os.path.join(top, "d-audit")
    os.makedirs(top_d, exist_ok=True)
    d = Daemon(top_d, policy=policy_text(top_d, "audit: {segment_bytes: 64KiB, retain_segments: 2}\n"))
    d.start()
    try:
        grant_revoke(d, write_file(os.path.join(top, "audited.txt"), b"audited"), 420)
        adir = os.path.join(top_d, "state", "audit")
        segs = sorted(f for f in os.listdir(adir) if f.startswith("audit-"))
        check(len(segs) == 2, f"segments: {segs}")
        check(all(os.path.getsize(os.path.join(adir, f)) < 70 * 1024 for f in segs),
              "a segment past segment_bytes")
        text = "".join(open(os.path.join(adir, f)).read() for f in segs + ["audit.jsonl"])
        check('"event":"segment_removed"' in text, "no segment_removed record")
        r = d.lockctl("audit", "verify", "--state-dir", os.path.join(top_d, "state"), check_rc=0)
        check("ok: " in r.stdout and "in 3 file(s)" in r.stdout and
              "continues segments removed" in r.stdout, f"verify: {r.stdout}")
        # A segment changed in the middle breaks the verification, naming the file.
        first = os.path.join(adir, segs[0])
        data = open(first, "rb").read()
        with open(first, "wb") as f:
            f.write(data.replace(b'"event":"revoke"', b'"event":"grant"', 1))
        r = d.lockctl("audit", "verify", "--state-dir", os.path.join(top_d, "state"))
        check(r.returncode == 1 and segs[0] in r.stdout, f"a changed segment: {r.stdout}")
    finally:
        d.stop()


def fill(directory):
    """Fills the file system of directory to the last byte; returns the filler's path."""
    path = os.path.join(directory, "filler")
    with open(path, "wb", buffering=0) as f:
        for size in (1 << 20, 4096, 1):
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError as e:
                check(e.errno in (28, 122), f"filling: {e}")
    return path


def test_full_disk(top):
    """on a full state directory (a small tmpfs) no change is answered without its record:
    Cancel and Revoke answered ok have theirs, the first refused names the cause and changes
    nothing; Grant and Submit are refused; what writes nothing is still served; once space
    returns the same calls succeed and the audit chain verifies"""
    top_d = os.path.join(top, "d-full")
    state = os.path.join(top_d, "state")
    os.makedirs(state, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", state],
                   check=True)
    d = None
    try:
        text = policy_text(top_d, "allow_unsigned: true\n").replace(
            "limits:\n", "limits:\n  pending_tickets_per_agent: 64\n")
        d = Daemon(top_d, policy=text)
        d.start()
        path = write_file(os.path.join(top, "full.txt"))
        handles = [json.loads(d.lockctl("grant", path, "--agent", str(AGENT_UID), "--json",
                                        check_rc=0).stdout)["handle"] for _ in range(24)]
        install_unsigned(d, top_d, "good-one")
        step = {"steps": [{"plugin": "test.good-one", "handle": handles[0]}]}
        tickets = []
        for _ in range(40):
            r = call_as(AGENT_UID, d.agent, "io.lockd.Agent.Submit", step)
            check(r.get("parameters", {}).get("state") == "pending", f"Submit: {r}")
            tickets.append(r["parameters"]["ticket"])

        # The audit file's last page may still hold a few records: each change answered ok
        # must have its record; the first one refused must name the cause.
        filler = fill(state)
        audit = os.path.join(state, "audit", "audit.jsonl")
        full = "the state directory is full (No space left on device)"
        refused_ticket = None
        for t in tickets:
            r = call_as(AGENT_UID, d.agent, "io.lockd.Agent.Cancel", {"ticket": t})
            if "error" in r:
                check(full in json.dumps(r), f"Cancel on a full disk: {r}")
                refused_ticket = t
                break
            check(any(rec.get("event") == "cancel" and rec.get("ticket") == t
                      for rec in map(json.loads, open(audit))), f"Cancel of {t} without record")
        check(refused_ticket, "every Cancel was answered ok on a full disk")
        refused_handle = None
        for h in handles:
            r = d.lockctl("revoke", h)
            if r.returncode != 0:
                check(full in r.stderr, f"revoke on a full disk: {r.stderr}")
                refused_handle = h
                break
            check(any(rec.get("event") == "revoke" and rec.get("handle") == h
                      for rec in map(json.loads, open(audit))), f"Revoke of {h} without record")
        check(refused_handle, "every Revoke was answered ok on a full disk")
        print(f"# full disk: {tickets.index(refused_ticket)} Cancel and "
              f"{handles.index(refused_handle)} Revoke answered ok (records in the audit file's "
              "last page), then refused", flush=True)
        r = d.lockctl("grant", path, "--agent", str(AGENT_UID))
        check(r.returncode != 0 and "the state directory is full" in r.stderr,
              f"grant on a full disk: {r.stderr}")
        r = call_as(AGENT_UID, d.agent, "io.lockd.Agent.Submit", step)
        check("error" in r and "the state directory is full" in json.dumps(r),
              f"Submit on a full disk: {r}")
        # The refused ones changed nothing, and what writes nothing is served.
        check(refused_handle in agent_handles(d), "the handle went although Revoke was refused")
        r = d.console_call("io.lockd.Console.GetTicket", {"ticket": refused_ticket})
        check(r.get("parameters", {}).get("ticket", {}).get("state") == "pending",
              f"the ticket changed: {r}")
        check("version:" in d.lockctl("status", check_rc=0).stdout, "status on a full disk")
        check(d.proc.poll() is None, "lockd died on a full disk")

        # Space returns: the same calls succeed, and the chain verifies.
        os.unlink(filler)
        r = call_as(AGENT_UID, d.agent, "io.lockd.Agent.Cancel", {"ticket": refused_ticket})
        check("error" not in r, f"Cancel after space returned: {r}")
        d.lockctl("revoke", refused_handle, check_rc=0)
        check(refused_handle not in agent_handles(d), "the handle stayed after Revoke")
        d.lockctl("grant", path, "--agent", str(AGENT_UID), check_rc=0)
        d.stop()
        r = d.lockctl("audit", "verify", "--state-dir", state, check_rc=0)
        check(r.stdout.startswith("ok: "), f"verify: {r.stdout}")
    finally:
        if d:
            d.stop()
        subprocess.run(["umount", state], check=False)

# Runs its arguments in a mount namespace of their own where journald's directory, if there is
# one, is an empty tmpfs: no journald socket, whatever the host runs. exec keeps lockd's pid.
HIDE_JOURNAL = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                "if [ -d /run/systemd/journal ]; then "
                "mount -t tmpfs -o size=1m,mode=0755 tmpfs /run/systemd/journal || exit 97; fi; "
                "exec \"$@\"", "hide-journal"]


def test_no_journald(top):
    """with no journald (lockd told its stderr is the journal, whose socket is missing: hidden in
    a mount namespace of lockd's own, so the case is real on a host that runs journald too) every
    change still has its audit record, the chain verifies, and the log lines go to stderr"""
    top_d = os.path.join(top, "d-nojournal")
    os.makedirs(top_d, exist_ok=True)
    d = Daemon(top_d, policy=policy_text(top_d))
    open(d.log_path, "ab").close()
    st = os.stat(d.log_path)
    os.environ["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}"
    try:
        d.start(wrapper=HIDE_JOURNAL)
    finally:
        del os.environ["JOURNAL_STREAM"]
    try:
        ns = os.readlink(f"/proc/{d.proc.pid}/ns/mnt")
        check(ns != os.readlink("/proc/self/ns/mnt"), "lockd is in the test's mount namespace")
        check(not os.path.exists(f"/proc/{d.proc.pid}/root/run/systemd/journal/socket"),
              "lockd sees a journald socket")
        grant_revoke(d, write_file(os.path.join(top, "nojournal.txt")), 5)
    finally:
        d.stop()
    state = os.path.join(top_d, "state")
    events = [json.loads(line)["event"]
              for line in open(os.path.join(state, "audit", "audit.jsonl"))]
    check(events.count("grant") == 5 and events.count("revoke") == 5, f"audit: {events}")
    r = d.lockctl("audit", "verify", "--state-dir", state, check_rc=0)
    check(r.stdout.startswith("ok: "), f"verify: {r.stdout}")
    check(d.read_log().count("(revoke)") == 5, "the audit lines did not reach stderr")


class BusProxy:
    """A D-Bus connection between lockd and the manager's private socket, forwarded byte for
    byte, that cuts both ends once told to: right after the first client message naming
    `needle` reached the manager (and `settle` returned true, or 5 s passed)."""

    def __init__(self, directory):
        upstream = "/run/systemd/private" if BUS == "system" else BUS[len("unix:path="):]
        check(os.path.exists(upstream), f"no manager socket at {upstream}")
        self.upstream = upstream
        # lockd connects directly (no broker, no Hello) to an address that ends like this.
        os.makedirs(os.path.join(directory, "systemd"), exist_ok=True)
        self.path = os.path.join(directory, "systemd", "private")
        self.address = "unix:path=" + self.path
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(8)
        self.needle, self.settle = None, None
        self.cuts = 0
        self.connections = 0
        self.lock = threading.Lock()
        self.pairs = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def arm(self, needle, settle=None):
        with self.lock:
            self.needle, self.settle = needle, settle

    def _accept(self):
        while True:
            try:
                c, _ = self.listener.accept()
            except OSError:
                return
            u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            u.connect(self.upstream)
            with self.lock:
                self.connections += 1
                self.pairs.append((c, u))
            threading.Thread(target=self._forward, args=(c, u), daemon=True).start()

    def _forward(self, c, u):
        sel = selectors.DefaultSelector()
        sel.register(c, selectors.EVENT_READ, u)
        sel.register(u, selectors.EVENT_READ, c)
        try:
            while True:
                for key, _ in sel.select():
                    data = key.fileobj.recv(65536)
                    if not data:
                        return
                    key.data.sendall(data)
                    with self.lock:
                        needle, settle = self.needle, self.settle
                    if key.fileobj is c and needle and needle in data:
                        with self.lock:
                            self.needle = None
                        deadline = time.monotonic() + 5
                        while settle and not settle() and time.monotonic() < deadline:
                            time.sleep(0.01)
                        with self.lock:
                            self.cuts += 1
                        return
        except OSError:
            return
        finally:
            for s in (c, u):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self):
        self.listener.close()
        os.unlink(self.path)


def run_json(d, name, path):
    """lockctl plugin run NAME PATH --json: (exit status, its report or None, stderr)."""
    r = d.lockctl("plugin", "run", name, path, "--json")
    try:
        rep = json.loads(r.stdout) if r.stdout.strip() else None
    except ValueError:
        rep = None
    return r.returncode, rep, r.stderr


def no_run_left(what):
    wait_for(lambda: not plugin_processes(), timeout=15, what=f"no plugin process left ({what})")
    wait_for(lambda: not run_units(), timeout=15, what=f"every run scope gone ({what})")
    time.sleep(1)
    check(not run_units(), f"run scopes came back ({what}): {run_units()}")


def test_bus_dropped(top):
    """the bus cut while a scope is being made (the manager has the request, lockd never gets
    the answer): the run fails closed with spawn:scope; cut while a plugin runs: the run answers
    its 1 or fails closed, never another bit; either way no scope or child is left and lockd
    connects again and runs the next plugin"""
    top_d = os.path.join(top, "d-bus")
    os.makedirs(top_d, exist_ok=True)
    proxy = BusProxy(os.path.join(top_d, "proxy"))
    text = policy_text(top_d, "allow_unsigned: true\n")
    # No scope made ahead (scope.ahead 0): every run asks for its own, so the cut below meets a
    # run's StartTransientUnit, never a refill's.
    text = "\n".join(f"  bus: \"{proxy.address}\"\n  ahead: 0" if line.startswith("  bus: ")
                     else line for line in text.splitlines()) + "\n"
    d = Daemon(top_d, policy=text)
    d.start()
    try:
        good = install_unsigned(d, top_d, "good-one")
        slow = install_unsigned(d, top_d, "slow-answer")
        path = write_file(os.path.join(top_d, "bus.txt"))
        rc, rep, err = run_json(d, good, path)
        check(rc == 0 and rep and rep.get("result") == 1, f"a run through the proxy: {rep} {err}")

        # 1. Cut once the manager has made the scope, before lockd reads the answer.
        connects = d.read_log().count("connected to the manager at")
        proxy.arm(b"StartTransientUnit", settle=lambda: bool(units()))
        rc, rep, err = run_json(d, good, path)
        check(proxy.cuts == 1, "the proxy did not cut the bus")
        check(not (rep and rep.get("result") is not None),
              f"a run whose scope was cut off answered: {rep}")
        # ECONNRESET (104): the drop, not a timeout, is the cause.
        check(rep and rep.get("cause") == "spawn:scope:104",
              f"a run whose scope was cut off: exit {rc}, {rep}, {err}")
        print(f"# cut mid-scope: {rep.get('outcome')}:{rep.get('cause')}", flush=True)
        wait_for(lambda: d.read_log().count("connected to the manager at") > connects,
                 timeout=15, what="lockd to connect again")
        no_run_left("cut mid-scope")

        # 2. Cut while the plugin runs in its scope.
        connects = d.read_log().count("connected to the manager at")
        box = {}
        t = threading.Thread(target=lambda: box.update(r=run_json(d, slow, path)))
        t.start()
        try:
            wait_for(lambda: run_units() and plugin_processes(), timeout=15,
                     what="the slow plugin")
        except Failed as e:
            raise Failed(f"{e}: {d.read_log()[-2500:]}")
        proxy.arm(b"\0", settle=None)  # the next message lockd sends cuts the bus
        # Nudge lockd into sending one: another run asks for a scope.
        rc2, rep2, err2 = run_json(d, good, path)
        t.join(60)
        rc, rep, err = box["r"]
        check(proxy.cuts == 2, "the proxy did not cut the bus the second time")
        for rep_, what in ((rep, "the running plugin"), (rep2, "the run that asked meanwhile")):
            res = rep_.get("result") if rep_ else None
            check(res in (None, 1), f"{what} answered {rep_}")
            check(res == 1 or (rep_ and rep_.get("cause")), f"{what} failed without a cause")
        print(f"# cut mid-run: {rep and (rep.get('result'), rep.get('cause'))}, "
              f"meanwhile {rep2 and (rep2.get('result'), rep2.get('cause'))}", flush=True)
        wait_for(lambda: d.read_log().count("connected to the manager at") > connects,
                 timeout=15, what="lockd to connect again")
        no_run_left("cut mid-run")
        rc, rep, err = run_json(d, good, path)
        check(rc == 0 and rep.get("result") == 1 and rep.get("unit", "").startswith("lockd-run-"),
              f"a run after the cuts: {rep} {err}")
    finally:
        d.stop()
        proxy.close()


FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def test_wall_clock_jump(top):
    """the wall clock moved under a running lockd (libfaketime, only lockd's clock): an hour
    forward expires no 10-minute grant and no pending ticket; an hour back keeps a 3-second grant
    from living longer; a plugin's timeout is not shortened by a jump either"""
    check(os.path.exists(FAKETIME_LIB), f"no {FAKETIME_LIB}: install libfaketime")
    top_d = os.path.join(top, "d-clock")
    os.makedirs(top_d, exist_ok=True)
    offset = os.path.join(top_d, "faketime")
    with open(offset, "w") as f:
        f.write("+0\n")
    os.chmod(offset, 0o644)
    shim = os.environ.get("LOCKD_FAKETIME_TIMERFD", "")
    check(os.path.exists(shim), f"no faketime-timerfd module: {shim!r}")
    # The shim first: libfaketime would move the monotonic timerfds too, and the first jump
    # would end both processes' event loops (timerfd_settime: EINVAL), not test lockd's clock.
    faked = {"LD_PRELOAD": shim + ":" + FAKETIME_LIB, "FAKETIME_TIMESTAMP_FILE": offset,
             "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
             "FAKETIME_FORCE_MONOTONIC_FIX": "0"}
    # The spawner builds the engine's environment (nothing of its own reaches it): the faked
    # clock goes into the engine on purpose, through an engine that is a wrapper setting it.
    wrapper = os.path.join(top_d, "faked-engine")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\n" + "".join(f"export {k}='{v}'\n" for k, v in faked.items()) +
                f"exec '{os.path.join(os.path.dirname(LOCKD), 'lockd-engine')}' \"$@\"\n")
    os.chmod(wrapper, 0o755)
    d = Daemon(top_d, policy=policy_text(top_d, "allow_unsigned: true\n"))
    d.start(argv_extra=("--engine", wrapper), env_extra=faked)
    try:
        engines = [p for p in open(f"/proc/{d.proc.pid}/task/{d.proc.pid}/children").read().split()
                   if "libfaketime" in open(f"/proc/{p}/maps").read()]
        check(len(engines) == 1, "the faked clock did not reach the engine")
        good = install_unsigned(d, top_d, "good-one")
        slow = install_unsigned(d, top_d, "slow-answer")
        path = write_file(os.path.join(top_d, "clock.txt"))

        def grant(ttl):
            return json.loads(d.lockctl("grant", path, "--agent", str(AGENT_UID), "--ttl", ttl,
                                        "--json", check_rc=0).stdout)["handle"]

        long_h = grant("10m")
        r = call_as(AGENT_UID, d.agent, "io.lockd.Agent.Submit",
                    {"steps": [{"plugin": good, "handle": long_h}]})
        ticket = r["parameters"]["ticket"]
        # lockd's wall clock jumps an hour ahead; the test's does not.
        with open(offset, "w") as f:
            f.write("+1h\n")
        box = {}
        t = threading.Thread(target=lambda: box.update(r=run_json(d, slow, path)))
        t.start()
        time.sleep(1.5)
        check(long_h in agent_handles(d), "an hour's jump expired a 10-minute grant")
        r = d.console_call("io.lockd.Console.GetTicket", {"ticket": ticket})
        check(r["parameters"]["ticket"]["state"] == "pending", f"the ticket after the jump: {r}")
        t.join(60)
        rc, rep, err = box["r"]
        check(rep and rep.get("result") == 1, f"a slow plugin across the jump: {rep} {err}")
        # And an hour back: a grant of 3 s still ends after 3 s.
        with open(offset, "w") as f:
            f.write("-1h\n")
        short_h = grant("3s")
        check(short_h in agent_handles(d), "a fresh 3-second grant is missing")
        wait_for(lambda: short_h not in agent_handles(d), timeout=8,
                 what="a 3-second grant to expire after the clock went back an hour")
        check(long_h in agent_handles(d), "the 10-minute grant went")
        check(d.proc.poll() is None, "lockd died")
    finally:
        d.stop()
    r = d.lockctl("audit", "verify", "--state-dir", os.path.join(top_d, "state"), check_rc=0)
    check(r.stdout.startswith("ok: "), f"verify: {r.stdout}")


def test_engine_exit_in_library(top):
    """an engine that a library ends with exit() (a preload that calls exit(3) from the event
    loop's epoll_wait once told to): the engine's log says it exits with status 3 and names the
    caller, and the spawner says how the engine ended and exits 1"""
    lib = os.environ.get("LOCKD_EXIT_IN_LIBRARY", "")
    check(os.path.exists(lib), f"no exit-in-library module: {lib!r}")
    top_d = os.path.join(top, "d-exit")
    os.makedirs(top_d, exist_ok=True)
    trigger = os.path.join(top_d, "exit-now")
    wrapper = os.path.join(top_d, "exiting-engine")
    with open(wrapper, "w") as f:
        f.write(f"#!/bin/sh\nexport LD_PRELOAD='{lib}' LOCKD_TEST_EXIT_TRIGGER='{trigger}'\n"
                f"exec '{os.path.join(os.path.dirname(LOCKD), 'lockd-engine')}' \"$@\"\n")
    os.chmod(wrapper, 0o755)
    d = Daemon(top_d)
    d.start(argv_extra=("--engine", wrapper))
    try:
        open(trigger, "w").close()
        rc = d.proc.wait(30)
    finally:
        d.stop()
    log = d.read_log()
    check(rc == 1, f"lockd exited {rc}:\n{log}")
    check(re.search(r"the engine exits with status 3 from outside its main loop \(exit\(\) "
                    r"called by: .*exit-in-library", log), f"the engine's word:\n{log}")
    check(re.search(r"the engine \(pid [0-9]+\) exited with status 3|the engine ended with "
                    r"status 3", log), f"the spawner's word:\n{log}")


def test_sigkill_anywhere(top):
    """SIGKILL at many points of a busy lockd (grants, revokes, submits, cancels, installs,
    budget-charging runs), then a restart, 24 times: lockd starts, every grant it acknowledged
    and did not revoke is there, every revoke it acknowledged stays revoked, the plugin it
    acknowledged is installed, and the audit chain verifies"""
    top_d = os.path.join(top, "d-kill")
    os.makedirs(top_d, exist_ok=True)
    text = policy_text(top_d, "allow_unsigned: true\n").replace(
        "limits:\n", "limits:\n  pending_tickets_per_agent: 64\n")
    d = Daemon(top_d, policy=text)
    d.start()
    rng = random.Random(int(os.environ.get("LOCKD_TEST_SEED", "11")))
    path = write_file(os.path.join(top_d, "kill.txt"), b"kill me softly")
    granted, revoked, unanswered = set(), set(), set()
    installed = set()
    kills = []
    try:
        for i in range(24):
            stop = threading.Event()
            acked = {"grant": [], "revoke": [], "install": [], "revoke_sent": []}

            def work():
                while not stop.is_set():
                    op = rng.choice(["grant", "grant", "revoke", "submit", "install", "run"])
                    try:
                        if op == "grant":
                            r = d.lockctl("grant", path, "--agent", str(AGENT_UID), "--json",
                                          "--auto")
                            if r.returncode == 0:
                                acked["grant"].append(json.loads(r.stdout)["handle"])
                        elif op == "revoke" and (granted or acked["grant"]):
                            h = rng.choice(sorted(granted | set(acked["grant"])))
                            acked["revoke_sent"].append(h)
                            if d.lockctl("revoke", h).returncode == 0:
                                acked["revoke"].append(h)
                        elif op == "install" and not installed:
                            install_unsigned(d, top_d, "good-one")
                            acked["install"].append("test.good-one")
                        elif op == "submit" and installed:
                            live = sorted(granted - revoked)
                            if live:
                                r = call_as(AGENT_UID, d.agent, "io.lockd.Agent.Submit",
                                            {"steps": [{"plugin": "test.good-one",
                                                        "handle": rng.choice(live)}]})
                                t = r.get("parameters", {}).get("ticket")
                                if t and rng.random() < 0.5:
                                    call_as(AGENT_UID, d.agent, "io.lockd.Agent.Cancel",
                                            {"ticket": t})
                        elif op == "run" and installed:
                            d.lockctl("plugin", "run", "test.good-one", path)
                    except (Failed, OSError, ValueError, KeyError):
                        pass  # lockd went mid-call: not acknowledged

            t = threading.Thread(target=work)
            t.start()
            delay = rng.uniform(0.02, 0.6)
            time.sleep(delay)
            d.proc.kill()
            d.proc.wait(10)
            stop.set()
            t.join(60)
            kills.append(round(delay, 2))
            granted |= set(acked["grant"])
            revoked |= set(acked["revoke"])
            # A revoke the kill cut off may have been done or not: its handle may be gone.
            unanswered |= set(acked["revoke_sent"]) - set(acked["revoke"])
            installed |= set(acked["install"])
            wait_for(lambda: not plugin_processes(), timeout=5, what="the plugins to die with lockd")
            try:
                d.start()
            except Failed as e:
                raise Failed(f"no restart after the kill at {delay:.2f} s (round {i}): {e}")
            held = set(agent_handles(d))
            lost = granted - revoked - unanswered - held
            check(not lost, f"round {i}: acknowledged grants lost after the kill: {lost}")
            back = revoked & held
            check(not back, f"round {i}: revoked handles came back: {back}")
            if installed:
                r = d.lockctl("plugin", "list", "--json", check_rc=0)
                check("test.good-one" in r.stdout, f"round {i}: the installed plugin is gone")
        print(f"# {len(kills)} kills at {kills} s; {len(granted)} grants, {len(revoked)} revokes "
              "acknowledged", flush=True)
        wait_for(lambda: not run_units(), timeout=15, what="no run scope left")
    finally:
        d.stop()
    r = d.lockctl("audit", "verify", "--state-dir", os.path.join(top_d, "state"), check_rc=0)
    check(r.stdout.startswith("ok: "), f"verify: {r.stdout}")

def budget_files(state):
    """The digests the budget checkpoint holds (a snapshot: the log holds every change after it)."""
    return set(budget_snapshot(state)[0])


def audit_budget_changes(state, digest):
    """The "budget" records of digest in the current audit file, oldest first."""
    out = []
    for line in open(os.path.join(state, "audit", "audit.jsonl")):
        r = json.loads(line)
        if r["event"] == "budget" and r["handle_sha256"] == digest:
            out.append(r["change"])
    return out


def test_budget_wal_kills(top):
    """the audit log is the budgets' write-ahead log: SIGKILL with a run in flight (its
    reservation durable, no answer yet), SIGKILL right after an answer (no checkpoint written
    since), and SIGKILL at random points of a flood of questions on many contents (checkpoints
    in between): after each restart every slot an answer used is charged, the budgets are
    rebuilt from the checkpoint and the log, and the chain verifies"""
    top_d = os.path.join(top, "d-wal")
    state = os.path.join(top_d, "state")
    os.makedirs(top_d, exist_ok=True)
    text = policy_text(top_d, "allow_unsigned: true\n").replace(
        "security_level: 2", "security_level: 3").replace(
        "limits:\n", "limits:\n  pending_tickets_per_agent: 64\n")
    d = Daemon(top_d, policy=text)
    d.start()

    def ask(plugin, h):
        r = call_as(AGENT_UID, d.agent, "io.lockd.Agent.Submit",
                    {"steps": [{"plugin": plugin, "handle": h}]})
        return r["parameters"]["ticket"]

    def final(t, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = call_as(AGENT_UID, d.agent, "io.lockd.Agent.Wait", {"ticket": t})
            p = r.get("parameters", {})
            if p.get("state") in ("done", "expired", "cancelled", "denied"):
                return p
            time.sleep(0.02)
        raise Failed(f"ticket {t} not final")

    def grant_new(name, content):
        path = write_file(os.path.join(top_d, name), content)
        r = d.lockctl("grant", path, "--agent", str(AGENT_UID), "--json", "--auto", "--budget",
                      "2", check_rc=0)
        return json.loads(r.stdout)["handle"], hashlib.sha256(content).hexdigest()

    def kill():
        # The engine first: killed with the spawner alone, it could see its channel close and
        # begin its way out (which checkpoints) before the kernel's SIGKILL for it arrives.
        os.kill(d.engine_pid(), signal.SIGKILL)
        d.proc.kill()
        d.proc.wait(10)

    def kill_restart():
        kill()
        wait_for(lambda: not plugin_processes(), timeout=10, what="the plugins to die with lockd")
        d.start()

    try:
        slow = install_unsigned(d, top_d, "slow-answer")
        good = install_unsigned(d, top_d, "good-one")

        # 1. Killed while the plugin runs: the reservation is durable (the commit beside the
        # plugin), no checkpoint holds it, no answer left. The restart charges it from the log.
        h1, d1 = grant_new("wal-1.txt", b"in flight when killed")
        ask(slow, h1)
        wait_for(lambda: audit_budget_changes(state, d1) == ["reserve"], timeout=5,
                 what="the reservation's record")
        time.sleep(0.5)
        check(d1 not in budget_files(state), "a checkpoint was written on the run's path")
        kill_restart()
        check(agent_handles(d)[h1]["budget_left"] == 1, "the reserved slot was given back")
        check(d1 in budget_files(state), "the start's checkpoint did not write the replayed slot")
        check("replayed from the audit log" in d.read_log(), "no replay said")

        # 2. Killed right after an answer: its reservation and run record are durable, the
        # outcome's record rides a later commit, no checkpoint has been written.
        h2, d2 = grant_new("wal-2.txt", b"answered then killed")
        t = ask(good, h2)
        p = final(t)
        check([o["result"] for o in p["outcomes"]] == [1], f"answer: {p}")
        check(d2 not in budget_files(state), "a checkpoint was written on the answer's path")
        kill_restart()
        check(agent_handles(d)[h2]["budget_left"] == 1, "an answered slot was given back")
        p = final(ask(good, h2))
        check([o["result"] for o in p["outcomes"]] == [1] and
              agent_handles(d)[h2]["budget_left"] == 1, f"asked again: {p}")

        # 3. Killed anywhere in a flood of questions on many contents (each answer charges its
        # content's only slot), across checkpoints: no answered slot comes back. Each round
        # starts with the human's resets (each a checkpoint), so that every round charges anew;
        # half the rounds reset a spare content in the middle of the flood, a checkpoint of
        # everything the round has answered so far (checkpoints come by count, not by time).
        rng = random.Random(int(os.environ.get("LOCKD_TEST_SEED", "31")))
        spare, _ = grant_new("flood-spare.txt", b"flood spare")
        handles = {}
        for i in range(24):
            content = f"flood {i}".encode()
            path = write_file(os.path.join(top_d, f"flood-{i}.txt"), content)
            r = d.lockctl("grant", path, "--agent", str(AGENT_UID), "--json", "--auto",
                          "--budget", "1", check_rc=0)
            handles[json.loads(r.stdout)["handle"]] = hashlib.sha256(content).hexdigest()
        answers, kills, checkpointed = 0, [], 0
        marker = os.path.join(state, "budgets", "checkpoint")
        for i in range(8):
            stop = threading.Event()
            got = []
            for h in handles:
                d.lockctl("budget", "reset", h, "--yes")  # refused for a budget never charged
            d.lockctl("budget", "reset", spare, "--yes")
            final(ask(good, spare))  # charged, so that its reset below is a checkpoint
            since = os.stat(marker).st_mtime_ns

            def flood():
                while not stop.is_set():
                    left = sorted(set(handles) - set(got))
                    if not left:
                        time.sleep(0.05)
                        continue
                    h = rng.choice(left)
                    try:
                        p = final(ask(good, h), timeout=5)
                        if [o["result"] for o in p["outcomes"]] == [1]:
                            got.append(h)
                    except (Failed, OSError, ValueError, KeyError):
                        pass  # lockd went mid-call: no answer

            th = threading.Thread(target=flood)
            start = time.monotonic()
            th.start()
            # Half the kills with no checkpoint in the round, a quarter while the spare's reset
            # may be writing one, and a quarter once it has been written.
            if i % 2:
                time.sleep(rng.uniform(0.2, 3.0))
            else:
                time.sleep(rng.uniform(0.5, 2.0))
                reset = subprocess.Popen([LOCKCTL, "--socket", d.console, "budget",
                                          "reset", spare, "--yes"], stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
                if i % 4 == 0:
                    time.sleep(rng.uniform(0.0, 0.05))
                else:
                    reset.wait(30)
                    time.sleep(rng.uniform(0.0, 1.0))
            delay = time.monotonic() - start
            kill()
            checkpointed += os.stat(marker).st_mtime_ns != since
            if i % 2 == 0:
                reset.wait(30)
            stop.set()
            th.join(60)
            kills.append(round(delay, 2))
            answers += len(got)
            wait_for(lambda: not plugin_processes(), timeout=10, what="the plugins to die")
            d.start()
            held = agent_handles(d)
            back = {h for h in got if held[h]["budget_left"] != 0}
            check(not back, f"round {i}: answered slots given back after the kill: {back}")
        print(f"# {len(kills)} kills at {kills} s, {checkpointed} after a checkpoint in the round; "
              f"{answers} answers, each charged after every restart", flush=True)
        check(checkpointed > 0, "no kill came after a checkpoint")
    finally:
        d.stop()
    r = d.lockctl("audit", "verify", "--state-dir", state, check_rc=0)
    check(r.stdout.startswith("ok: "), f"verify: {r.stdout}")


def main():
    require_environment()
    tap = Tap()
    top = tempdir()
    for t in (test_audit_segments, test_full_disk, test_no_journald, test_bus_dropped,
              test_wall_clock_jump, test_engine_exit_in_library, test_sigkill_anywhere,
              test_budget_wal_kills):
        tap.run(t, top)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
