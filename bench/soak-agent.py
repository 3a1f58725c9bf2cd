#!/usr/bin/env python3
"""One agent of bench/soak.py, run as its agent uid (setpriv): a mix of what agents do to lockd,
for a given time, counting every request and checking every bit it can know.

usage: soak-agent.py AGENT_SOCKET SECONDS SEED PROGRESS_FILE PREFLOOD

PREFLOOD 16-step flood tickets go first, back to back (the store filled to this agent's share).

The handles it uses are the ones the console granted it, told apart by their labels: "flood"
(auto; its 16-step tickets are answered from the cache and end at once, the flood of the issue),
"fresh-N" (auto, each asked once: the plugin runs), "manual" (needs the human: a protocol-2 step
with a placeholder and a protocol-1 step). The mix: floods, fresh questions, manual tickets
waited for or cancelled, invalid requests, connections dropped mid-message, listings. It writes
its counters to PROGRESS_FILE every second and prints them as JSON at the end."""

import json
import os
import random
import socket
import sys
import time

ONE, ZERO, INPUTS = "test.good-one", "test.good-zero", "test.good-inputs"
FINAL = ("done", "denied", "cancelled", "expired")


class Conn:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(30)
        self.s.connect(path)
        self.buf = b""

    def call(self, method, params=None):
        m = {"method": method}
        if params is not None:
            m["parameters"] = params
        self.s.sendall(json.dumps(m).encode() + b"\0")
        while b"\0" not in self.buf:
            c = self.s.recv(65536)
            if not c:
                raise ConnectionError("lockd closed the connection")
            self.buf += c
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def close(self):
        self.s.close()


def main():
    path, seconds, seed, progress = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    preflood = int(sys.argv[5])
    rnd = random.Random(seed)
    c = Conn(path)
    st = {"requests": 0, "errors_expected": 0, "wrong": 0, "answers": 0, "runs": 0,
          "cancelled": 0, "denied": 0, "approved": 0, "expired": 0, "dropped": 0, "floods": 0,
          "problems": []}

    def call(method, params=None):
        st["requests"] += 1
        return c.call("io.lockd.Agent." + method, params)

    def problem(what):
        st["wrong"] += 1
        if len(st["problems"]) < 10:
            st["problems"].append(what)

    def handles():
        r = call("ListHandles")
        return r["parameters"]["handles"] if "error" not in r and "parameters" in r else []

    def wait_final(t, deadline):
        while True:
            r = call("Wait", {"ticket": t})
            if "error" in r or "parameters" not in r:
                return r
            if r["parameters"]["state"] in FINAL or time.monotonic() > deadline:
                return r
            time.sleep(0.05)

    def flood_once(h):
        r = call("Submit", {"steps": [{"plugin": ONE, "handle": h}] * 16})
        if "error" in r or "parameters" not in r:
            if r.get("error") != "io.lockd.Agent.TooManyTickets":
                problem(f"flood Submit: {r}")
            return
        st["floods"] += 1
        w = wait_final(r["parameters"]["ticket"], time.monotonic() + 10)
        o = w.get("parameters", {}).get("outcomes", [])
        if w.get("parameters", {}).get("state") == "done":
            st["answers"] += len(o)
            if any(e["result"] != 1 for e in o):
                problem(f"flood outcomes {o}")

    used = set()
    end = time.monotonic() + seconds
    last_write = last_handles = 0
    hs = handles()
    flood = next((h["handle"] for h in hs if h.get("label") == "flood"), None)
    for _ in range(preflood if flood else 0):
        flood_once(flood)
    while time.monotonic() < end:
        now = time.monotonic()
        if now - last_write >= 1:
            with open(progress + ".tmp", "w") as f:
                json.dump(st, f)
            os.replace(progress + ".tmp", progress)
            last_write = now
        if now - last_handles >= 1:
            hs = handles()
            last_handles = now
        flood = next((h["handle"] for h in hs if h.get("label") == "flood"), None)
        manual = next((h["handle"] for h in hs if h.get("label") == "manual"), None)
        fresh = [h["handle"] for h in hs
                 if (h.get("label") or "").startswith("fresh") and h["handle"] not in used]
        x = rnd.random()
        try:
            if x < 0.40 and flood:
                # The flood: 16 cached steps, ended at once.
                flood_once(flood)
            elif x < 0.55 and fresh:
                h = rnd.choice(fresh)
                used.add(h)
                plugin, want = rnd.choice(((ONE, 1), (ZERO, 0)))
                r = call("Submit", {"steps": [{"plugin": plugin, "handle": h}]})
                if "error" in r or "parameters" not in r:
                    # A handle the console revoked meanwhile is gone, and a plugin it is
                    # reinstalling is away for a moment: neither is a fault.
                    if r.get("error") not in ("io.lockd.Agent.UnknownHandle",
                                              "io.lockd.Agent.UnknownPlugin",
                                              "io.lockd.Agent.TooManyTickets"):
                        problem(f"fresh Submit: {r}")
                    continue
                w = wait_final(r["parameters"]["ticket"], time.monotonic() + 20)
                p = w.get("parameters", {})
                if p.get("state") == "done":
                    o = p["outcomes"][0]
                    st["runs"] += 1
                    st["answers"] += 1
                    if o["result"] != want and o["error"] != "denied":
                        problem(f"fresh {plugin}: {o}")
            elif x < 0.70 and manual:
                r = call("Submit", {"steps": [
                    {"plugin": INPUTS, "handle": manual, "inputs": {"needle": "${word}"}},
                    {"plugin": ONE, "handle": manual}]})
                if "error" in r or "parameters" not in r:
                    if r.get("error") != "io.lockd.Agent.TooManyTickets":
                        problem(f"manual Submit: {r}")
                    continue
                t = r["parameters"]["ticket"]
                if rnd.random() < 0.2:
                    r = call("Cancel", {"ticket": t})
                    if "error" not in r:
                        st["cancelled"] += 1
                    elif r.get("error") != "io.lockd.Agent.TicketNotPending":
                        problem(f"Cancel: {r}")
                    continue
                w = wait_final(t, time.monotonic() + 5)
                p = w.get("parameters", {})
                if p.get("state") == "done":
                    st["approved"] += 1
                    st["answers"] += 2
                    # The console types the needle the file holds: both answers are 1.
                    if [o["result"] for o in p["outcomes"]] != [1, 1]:
                        problem(f"manual outcomes {p['outcomes']}")
                elif p.get("state") == "denied":
                    st["denied"] += 1
                elif p.get("state") == "pending":
                    call("Cancel", {"ticket": t})
                    st["cancelled"] += 1
                elif p.get("state") == "expired":
                    st["expired"] += 1
            elif x < 0.80:
                bad = rnd.choice((
                    ("Submit", {"steps": [{"plugin": ONE, "handle": "h-nope"}]}),
                    ("Submit", {"steps": []}),
                    ("Wait", {"ticket": "t-" + "0" * 32}),
                    ("Cancel", {"ticket": "bogus"}),
                    ("Submit", {"steps": [{"plugin": "no.such-plugin", "handle": flood or "x"}]}),
                ))
                r = call(*bad)
                if "error" in r:
                    st["errors_expected"] += 1
                else:
                    problem(f"invalid request answered: {bad} -> {r}")
            elif x < 0.85:
                # A connection dropped in the middle of a message.
                s = socket.socket(socket.AF_UNIX)
                s.connect(path)
                s.sendall(b'{"method":"io.lockd.Agent.Submit","parameters":{"steps":[')
                s.close()
                st["dropped"] += 1
                st["requests"] += 1
            else:
                r = call("ListPlugins")
                if "error" in r or "parameters" not in r:
                    problem(f"ListPlugins: {r}")
        except (ConnectionError, OSError) as e:
            problem(f"transport: {e}")
            c.close()
            c = Conn(path)
    c.close()
    with open(progress + ".tmp", "w") as f:
        json.dump(st, f)
    os.replace(progress + ".tmp", progress)
    print(json.dumps(st))
    return 0


if __name__ == "__main__":
    sys.exit(main())
