#!/usr/bin/env python3
"""Hostile peers against a real lockd under a real systemd manager: agents (other uids) that
pipeline without reading, fill the connection slots, sit idle, strangers that connect in a loop,
and a file whose reads hang. The engine's memory stays bounded, the console always gets in, its log
stays short, and nothing blocks its loop. TAP on stdout. Run through
tests/integration/with-systemd; test-faults.py has the faults."""

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lockdtest import (AGENT_UID, STRANGER_UID, Daemon, Tap, call_as, check,  # noqa: E402
                       install_unsigned, policy_text, require_environment, reset_peak_rss,
                       status_kib, tempdir, wait_for, write_file)

# 16 agent uids for the slot-filling test, on top of the usual ones.
MANY = list(range(62100, 62116))


def daemon(top, extra=""):
    os.makedirs(top, exist_ok=True)
    text = policy_text(top, extra).replace(
        "users: [61001, 61004]", "users: [61001, 61004, " + ", ".join(map(str, MANY)) + "]")
    d = Daemon(top, policy=text)
    d.start()
    return d


# As an agent uid: opens a Wait with "more" on its pending ticket (an open call that streams),
# then pipelines N calls behind it without reading a byte, for at most T seconds; prints how many
# whole calls the socket took, and keeps the connection S seconds more.
PIPELINER = ("import json,socket,sys,time\n"
             "s=socket.socket(socket.AF_UNIX);s.connect(sys.argv[1])\n"
             "s.sendall(json.dumps({'method':'io.lockd.Agent.Wait','more':True,"
             "'parameters':{'ticket':sys.argv[3]}}).encode()+b'\\0')\n"
             "s.setblocking(False)\n"
             "msg=json.dumps({'method':'org.varlink.service.GetInterfaceDescription',"
             "'parameters':{'interface':'io.lockd.Agent'}}).encode()+b'\\0'\n"
             "data=msg*int(sys.argv[2]);off=0\n"
             "end=time.monotonic()+float(sys.argv[4])\n"
             "while off<len(data) and time.monotonic()<end:\n"
             "  try: off+=s.send(data[off:off+65536])\n"
             "  except BlockingIOError: time.sleep(0.01)\n"
             "print(off//len(msg),flush=True)\n"
             "time.sleep(float(sys.argv[5]))\n")


def test_pipelining_bounded(top):
    """20 000 calls pipelined behind an open Wait (more) without reading grow the engine's RSS by
    less than 2 MiB, at its peak and after: every answer counts until written, and the engine
    stops reading"""
    d = daemon(os.path.join(top, "d-pipe"), "allow_unsigned: true\n")
    try:
        # A pending ticket of the agent's own: a plan on a granted handle, never approved.
        path = write_file(os.path.join(top, "pipe.txt"))
        h = json.loads(d.lockctl("grant", path, "--agent", str(AGENT_UID), "--json",
                                 check_rc=0).stdout)["handle"]
        # An unsigned test plugin (allow_unsigned) to ask about; the ticket stays pending.
        install_unsigned(d, os.path.join(top, "d-pipe"), "good-one")
        r = call_as(AGENT_UID, d.agent, "io.lockd.Agent.Submit",
                    {"steps": [{"plugin": "test.good-one", "handle": h}]})
        check(r.get("parameters", {}).get("state") == "pending", f"Submit: {r}")
        ticket = r["parameters"]["ticket"]
        time.sleep(0.5)
        # The engine (lockd-engine, user lockd) reads and answers the calls; the spawner (d.proc)
        # never sees them. Its peak is reset so that VmHWM is the highest RSS of the flood.
        engine = d.engine_pid()
        reset_peak_rss(engine)
        before = status_kib(engine, "VmRSS")
        p = subprocess.Popen(["setpriv", f"--reuid={AGENT_UID}", f"--regid={AGENT_UID}",
                              "--clear-groups", "/usr/bin/python3", "-I", "-c", PIPELINER,
                              d.agent, "20000", ticket, "10", "3"],
                             stdout=subprocess.PIPE, text=True)
        sent = int(p.stdout.readline())
        time.sleep(1)
        after = status_kib(engine, "VmRSS")
        peak = status_kib(engine, "VmHWM")
        p.wait(timeout=30)
        print(f"# pipelined {sent} calls; the engine (pid {engine}) RSS {before} KiB -> "
              f"{after} KiB (+{after - before} KiB), peak {peak} KiB (+{peak - before} KiB)",
              flush=True)
        check(after - before < 2048, f"the engine's RSS grew {after - before} KiB")
        check(peak - before < 2048, f"the engine's peak RSS grew {peak - before} KiB")
        check(d.proc.poll() is None, "lockd died")
        check(d.engine_pid() == engine, "the engine was replaced")
        check("version:" in d.lockctl("status", check_rc=0).stdout, "the console is served")
    finally:
        d.stop()


# As an agent uid: opens N connections and keeps them, reading nothing, for S seconds; prints
# how many it got served an answer to GetInfo (1) or refused with what (the error's limit).
HOLDER = ("import json,socket,sys,time\n"
          "n=int(sys.argv[2]);socks=[];res=[]\n"
          "for i in range(n):\n"
          "  s=socket.socket(socket.AF_UNIX);s.settimeout(5);s.connect(sys.argv[1]);socks.append(s)\n"
          "time.sleep(0.3)\n"
          "for s in socks:\n"
          "  try:\n"
          "    s.sendall(b'{\"method\":\"org.varlink.service.GetInfo\"}\\0');b=s.recv(65536)\n"
          "    m=json.loads(b.split(b'\\0')[0]) if b else {}\n"
          "    res.append(m.get('parameters',{}).get('limit','served') if 'error' in m else "
          "('served' if m else 'closed'))\n"
          "  except OSError: res.append('closed')\n"
          "print(json.dumps(res),flush=True)\n"
          "time.sleep(float(sys.argv[3]))\n"
          "alive=0\n"
          "for s in socks:\n"
          "  try:\n"
          "    s.settimeout(0.2);b=s.recv(1);alive+= 0 if b==b'' else 1\n"
          "  except socket.timeout: alive+=1\n"
          "  except OSError: pass\n"
          "print(alive,flush=True)\n")


def test_console_always_gets_in(top):
    """16 agent uids x 16 idle connections fill the agent slots; the console still gets in; one
    more agent is told TooManyConnections; idle agents are closed after agent_idle_timeout"""
    top_d = os.path.join(top, "d-slots")
    os.makedirs(top_d, exist_ok=True)
    text = policy_text(top_d).replace(
        "users: [61001, 61004]", "users: [61001, 61004, " + ", ".join(map(str, MANY)) + "]")
    text = text.replace("  connections_per_uid: 256\n  connections_total: 512\n"
                        "  console_connections: 256\n",
                        "  connections_per_uid: 16\n  connections_total: 256\n"
                        "  console_connections: 16\n  agent_idle_timeout: 3s\n")
    check("agent_idle_timeout: 3s" in text, "the test policy's limits moved")
    d = Daemon(top_d, policy=text)
    d.start()
    procs = []
    try:
        for uid in MANY:
            procs.append(subprocess.Popen(
                ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                 "/usr/bin/python3", "-I", "-c", HOLDER, d.agent, "16", "5"],
                stdout=subprocess.PIPE, text=True))
        served = [json.loads(p.stdout.readline()) for p in procs]
        check(sum(x.count("served") for x in served) == 256, f"served: {served[:2]}")
        # Every agent slot is taken: the console still gets in, through its own reserve.
        r = d.lockctl("status", check_rc=0)
        check("version:" in r.stdout, r.stdout)
        # Another agent uid is told why, before it even sends a call.
        r = subprocess.run(["setpriv", f"--reuid={AGENT_UID}", f"--regid={AGENT_UID}",
                            "--clear-groups", "/usr/bin/python3", "-I", "-c", FIRST_WORD, d.agent],
                           capture_output=True, text=True, timeout=30)
        got = json.loads(r.stdout or "{}")
        check(got.get("error") == "io.lockd.Agent.TooManyConnections" and
              got.get("parameters") == {"limit": "socket"}, f"over the cap: {r.stdout} {r.stderr}")
        # Idle for 3 s: closed, the slots come back.
        alive = [int(p.stdout.readline()) for p in procs]
        check(sum(alive) == 0, f"idle connections still open: {alive}")
        r = call_as(AGENT_UID, d.agent, "org.varlink.service.GetInfo")
        check("parameters" in r and "error" not in r, f"after the idle timeout: {r}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        d.stop()


# Connects and reads what lockd says first, without calling anything.
FIRST_WORD = ("import socket,sys\n"
              "s=socket.socket(socket.AF_UNIX);s.settimeout(5);s.connect(sys.argv[1])\n"
              "b=b''\n"
              "while not b.endswith(b'\\0'):\n"
              "  c=s.recv(4096)\n"
              "  if not c: break\n"
              "  b+=c\n"
              "print(b.rstrip(b'\\0').decode())\n")


STRANGER_LOOP = ("import socket,sys\n"
                 "for i in range(int(sys.argv[2])):\n"
                 "  s=socket.socket(socket.AF_UNIX)\n"
                 "  try: s.connect(sys.argv[1])\n"
                 "  except OSError: pass\n"
                 "  s.close()\n")


def test_refusals_rate_limited(top):
    """500 connects of a uid in no role write a burst of log lines, then nothing; the next
    interval's line counts the suppressed ones"""
    d = daemon(os.path.join(top, "d-strangers"))
    try:
        r = subprocess.run(["setpriv", f"--reuid={STRANGER_UID}", f"--regid={STRANGER_UID}",
                            "--clear-groups", "/usr/bin/python3", "-I", "-c", STRANGER_LOOP,
                            d.agent, "500"], capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, r.stderr)
        time.sleep(0.5)
        lines = [x for x in d.read_log().splitlines()
                 if f"refused a peer with no role on the agent socket: uid {STRANGER_UID}" in x]
        check(1 <= len(lines) <= 5, f"{len(lines)} lines for 500 refusals")
    finally:
        d.stop()


HANG_FS = os.environ.get("LOCKD_HANG_FS", "")


def test_hung_file(top):
    """a granted file whose reads never answer (FUSE) freezes nothing: both sockets are served
    meanwhile, the grant is refused at limits.file_read_timeout, and SIGTERM stops lockd within
    2 s while such a read hangs"""
    check(os.access(HANG_FS, os.X_OK), "LOCKD_HANG_FS names no program")
    check(os.path.exists("/dev/fuse"), "/dev/fuse is missing (a prerequisite of this test)")
    mnt = os.path.join(top, "hung")
    os.makedirs(mnt, exist_ok=True)
    fs = subprocess.Popen([HANG_FS, mnt], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    d = None
    try:
        wait_for(lambda: os.path.exists(os.path.join(mnt, "hang")), timeout=10,
                 what="the FUSE mount")
        top_d = os.path.join(top, "d-hung")
        os.makedirs(top_d, exist_ok=True)
        text = policy_text(top_d).replace("limits:\n", "limits:\n  file_read_timeout: 3s\n")
        d = Daemon(top_d, policy=text)
        d.start()
        t0 = time.monotonic()
        g = subprocess.Popen([os.environ["LOCKCTL"], "--socket", d.console, "grant",
                              os.path.join(mnt, "hang"), "--agent", str(AGENT_UID)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        # Meanwhile both sockets answer at once.
        t1 = time.monotonic()
        r = d.lockctl("status", check_rc=0)
        a = call_as(AGENT_UID, d.agent, "io.lockd.Agent.ListHandles")
        served = time.monotonic() - t1
        check("version:" in r.stdout and "parameters" in a, f"not served: {r.stdout} {a}")
        check(served < 1.5, f"the loop was held {served:.2f} s")
        out, err = g.communicate(timeout=30)
        took = time.monotonic() - t0
        print(f"# grant of a hung file refused after {took:.2f} s; status and an agent call "
              f"served in {served * 1000:.0f} ms meanwhile", flush=True)
        check(g.returncode == 1 and "file_read_timeout" in err, f"grant: {g.returncode} {err}")
        check(2.5 <= took <= 6, f"refused after {took:.2f} s")
        # SIGTERM while a read hangs: lockd is gone within 2 s, and no copy child is left.
        g = subprocess.Popen([os.environ["LOCKCTL"], "--socket", d.console, "grant",
                              os.path.join(mnt, "hang"), "--agent", str(AGENT_UID)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        children = subprocess.run(["pgrep", "-P", str(d.proc.pid)], capture_output=True,
                                  text=True).stdout.split()
        t2 = time.monotonic()
        d.stop(timeout=10)
        stopped = time.monotonic() - t2
        print(f"# SIGTERM with a read hanging: lockd gone after {stopped:.2f} s", flush=True)
        check(stopped < 2, f"lockd took {stopped:.2f} s to stop")
        g.communicate(timeout=10)
        # The copy child waits in the kernel until the file system answers (FUSE reads a server
        # took are uninterruptible): it ends with the mount, lockd never waited for it.
        fs.kill()  # its read handlers never return: only the end of /dev/fuse aborts them
        fs.wait(timeout=10)
        subprocess.run(["umount", "-l", mnt], capture_output=True)

        def alive(p):
            try:
                return open(f"/proc/{p}/stat").read().split()[2] != "Z"
            except OSError:
                return False
        wait_for(lambda: not any(alive(p) for p in children), timeout=10,
                 what="the copy child to end with the mount")
    finally:
        if d:
            d.stop()
        if fs.poll() is None:
            fs.kill()
            fs.wait(timeout=10)
        subprocess.run(["umount", "-l", mnt], capture_output=True)


def main():
    require_environment()
    tap = Tap()
    top = tempdir()
    for t in (test_pipelining_bounded, test_console_always_gets_in, test_refusals_rate_limited,
              test_hung_file):
        tap.run(t, top)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
