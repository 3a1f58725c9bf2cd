#!/usr/bin/env python3
"""Faults against a real lockd under a real systemd manager: the audit log in segments, a full
state directory (a small tmpfs), no journald. No change goes without its audit record, and the
chain verifies across segments and after recovery. TAP on stdout. Run through
tests/integration/with-systemd. (The manager re-executed with runs in flight is in
test-daemon.py; a wall-clock jump in tests/unit/test-clock-jump.c.)"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lockdtest import (AGENT_UID, Daemon, Tap, agent_handles, call_as, check,  # noqa: E402
                       grant_revoke, install_unsigned, policy_text, require_environment, tempdir,
                       write_file)


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
    for t in (test_audit_segments, test_full_disk, test_no_journald):
        tap.run(t, top)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
