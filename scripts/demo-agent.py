#!/usr/bin/env python3
"""The demo's agent: an untrusted program under its own uid that speaks Varlink (JSON messages,
each ended by a NUL byte) on lockd's agent socket. It lists its handles and the plugins, submits
a two-step plan about its one handle, then follows the ticket with Wait and "more", printing each
answer as it streams in. It never sees the file, and it never sees the value the human types: its
plan names only the placeholder ${word}.

Usage: demo-agent.py AGENT_SOCKET"""

import json
import os
import socket
import sys


class Varlink:
    """One connection to lockd's agent socket."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(120)
        self.sock.connect(path)
        self.buf = b""

    def send(self, method, parameters=None, more=False):
        message = {"method": method}
        if parameters is not None:
            message["parameters"] = parameters
        if more:
            message["more"] = True
        self.sock.sendall(json.dumps(message).encode() + b"\0")

    def receive(self):
        while b"\0" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise SystemExit("agent: lockd closed the connection")
            self.buf += chunk
        message, self.buf = self.buf.split(b"\0", 1)
        reply = json.loads(message)
        if "error" in reply:
            raise SystemExit(f"agent: lockd answered {reply['error']} {reply.get('parameters')}")
        return reply

    def call(self, method, parameters=None):
        self.send(method, parameters)
        return self.receive()["parameters"]


def say(text=""):
    print(text, flush=True)


def outcome_text(outcome):
    if outcome["result"] is not None:
        return str(outcome["result"])
    return outcome["error"]


def main():
    lockd = Varlink(sys.argv[1])
    say(f"agent: uid {os.getuid()}, connected to the agent socket")

    handles = lockd.call("io.lockd.Agent.ListHandles")["handles"]
    say("agent: ListHandles (no path, no size, no digest: that is all it may know)")
    for h in handles:
        expires = "never" if h.get("expires_usec") is None else f"{h['expires_usec']} usec"
        say(f"  {h['handle']}  label={h.get('label')!r}  budget_left={h['budget_left']}"
            f"  expires={expires}")
    if len(handles) != 1:
        raise SystemExit(f"agent: expected one handle, got {len(handles)}")
    handle = handles[0]["handle"]

    plugins = {p["name"]: p for p in lockd.call("io.lockd.Agent.ListPlugins")["plugins"]}
    say("agent: ListPlugins")
    for p in plugins.values():
        inputs = ", ".join(f"{i['name']} ({i['kind']}, at most {i['max_bytes']} bytes)"
                           for i in p["inputs"]) or "none"
        say(f"  {p['name']} {p['version']}, protocol {p['protocol']}: {p['question']}")
        say(f"      1 = {p['one']}")
        say(f"      0 = {p['zero']}")
        say(f"      inputs: {inputs}")

    steps = [
        {"plugin": "text.is-utf8", "handle": handle},
        {"plugin": "text.contains", "handle": handle, "inputs": {"needle": "${word}"}},
    ]
    say("agent: Submit")
    for i, s in enumerate(steps):
        bound = "".join(f", {k} bound to {v}" for k, v in s.get("inputs", {}).items())
        say(f"  step {i}: {s['plugin']} about {s['handle']}{bound}")
    submitted = lockd.call("io.lockd.Agent.Submit", {"steps": steps})
    ticket = submitted["ticket"]
    say(f"  ticket {ticket}, state {submitted['state']}")

    say("agent: Wait with more (one answer now, one per change)")
    lockd.send("io.lockd.Agent.Wait", {"ticket": ticket}, more=True)
    while True:
        reply = lockd.receive()
        p = reply["parameters"]
        known = ", ".join(f"step {o['step']} = {outcome_text(o)}" for o in p["outcomes"])
        say(f"  state {p['state']}: {known or 'no outcome yet'}")
        if not reply.get("continues"):
            break
    bits = " ".join(outcome_text(o) for o in sorted(p["outcomes"], key=lambda o: o["step"]))
    say(f"agent: the bits received: {bits}")
    return 0 if p["state"] == "done" else 1


if __name__ == "__main__":
    sys.exit(main())
