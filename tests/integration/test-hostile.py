#!/usr/bin/env python3
"""Hostile peers and faults against a real lockd under a real systemd manager: agents (other
uids) that pipeline without reading, fill the connection slots, sit idle, strangers that connect
in a loop, a file whose reads hang, a full state directory, no journald. lockd's memory stays
bounded, the console always gets in, its log stays short, and no change goes without its audit
record. TAP on stdout. Run through tests/integration/with-systemd."""

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lockdtest import (AGENT_UID, STRANGER_UID, Daemon, Tap, agent_handles, call_as,  # noqa: E402
                       check, policy_text, require_environment, tempdir, wait_for)

# 16 agent uids for the slot-filling test, on top of the usual ones.
MANY = list(range(62100, 62116))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def daemon(top, extra=""):
    os.makedirs(top, exist_ok=True)
    text = policy_text(top, extra).replace(
        "users: [61001, 61004]", "users: [61001, 61004, " + ", ".join(map(str, MANY)) + "]")
    d = Daemon(top, policy=text)
    d.start()
    return d


def write_file(path, content=b"content"):
    with open(path, "wb") as f:
        f.write(content)
    return path


def grant_revoke(d, path, n):
    """Grants path to the agent and revokes it, n times: two audit records each."""
    for _ in range(n):
        h = json.loads(d.lockctl("grant", path, "--agent", str(AGENT_UID), "--json",
                                 check_rc=0).stdout)["handle"]
        d.lockctl("revoke", h, check_rc=0)


def install_unsigned(d, top, case):
    """Installs the test plugin case unsigned (the policy has allow_unsigned); its name."""
    rel = os.path.join(top, "rel-" + case)
    os.makedirs(rel, exist_ok=True)
    src = os.environ["LOCKD_TEST_PLUGINS_SRC"]
    subprocess.run(["cp", os.path.join(src, case, "plugin.toml"), rel], check=True)
    subprocess.run(["cp", os.path.join(os.environ["LOCKD_TEST_PLUGINS"], case),
                    os.path.join(rel, "plugin")], check=True)
    d.lockctl("plugin", "install", rel, check_rc=0)
    return "test." + case


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
    """20 000 calls pipelined behind an open Wait (more) without reading grow lockd's RSS by less
    than 2 MiB: every answer counts until written, and lockd stops reading"""
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
        before = rss_kib(d.proc.pid)
        p = subprocess.Popen(["setpriv", f"--reuid={AGENT_UID}", f"--regid={AGENT_UID}",
                              "--clear-groups", "/usr/bin/python3", "-I", "-c", PIPELINER,
                              d.agent, "20000", ticket, "10", "3"],
                             stdout=subprocess.PIPE, text=True)
        sent = int(p.stdout.readline())
        time.sleep(1)
        after = rss_kib(d.proc.pid)
        p.wait(timeout=30)
        print(f"# pipelined {sent} calls; lockd RSS {before} KiB -> {after} KiB "
              f"(+{after - before} KiB)", flush=True)
        check(after - before < 2048, f"RSS grew {after - before} KiB")
        check(d.proc.poll() is None, "lockd died")
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

def test_no_journald(top):
    """with no journald (lockd told its stderr is the journal, whose socket is missing) every
    change still has its audit record, the chain verifies, and the log lines go to stderr"""
    if os.environ.get("LOCKD_TEST_BUS") == "system":
        check(True, "a host journald runs: nothing to test")
        return
    check(not os.path.exists("/run/systemd/journal/socket"), "a journald socket exists here")
    top_d = os.path.join(top, "d-nojournal")
    os.makedirs(top_d, exist_ok=True)
    d = Daemon(top_d, policy=policy_text(top_d))
    open(d.log_path, "ab").close()
    st = os.stat(d.log_path)
    os.environ["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}"
    try:
        d.start()
    finally:
        del os.environ["JOURNAL_STREAM"]
    try:
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


def main():
    require_environment()
    tap = Tap()
    top = tempdir()
    for t in (test_pipelining_bounded, test_console_always_gets_in, test_refusals_rate_limited,
              test_hung_file, test_audit_segments, test_full_disk, test_no_journald):
        tap.run(t, top)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
