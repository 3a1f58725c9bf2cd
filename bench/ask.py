#!/usr/bin/env python3
"""An agent's question answered through lockd, in one run of this script: Submit -> final outcome
for an --auto protocol-1 question that misses the cache (a new content every time: plugin run in
its sandbox and scope), the same for a cache hit, cache-hit throughput over one connection
(16-step tickets, pipelined calls), and what a user would script instead (`systemd-run --scope` +
the same plugin reading the file), against the targets: miss <= 0.3x the alternative, hits >=
20 000 answers/s. Run it through tests/integration/with-systemd (a real manager) with LOCKD,
LOCKCTL, LOCKD_SIGN, LOCKD_TEST_PLUGINS and LOCKD_TEST_PLUGINS_SRC set, as
`meson test -C build --benchmark ask` does. It runs at security level 3 (no release schedule).

The agent is one long-lived client process running as an agent uid (setpriv), so no process
startup is in lockd's times; it is this script again, with --agent SOCKET, taking its work as one
JSON line on stdin and printing its timings as one JSON line on stdout."""

import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections import deque

MISS_TARGET = 0.3  # lockd's miss / the alternative
HITS_TARGET = 20000  # answers per second over one connection
STEPS_MAX = 16  # PLAN_STEPS_MAX: steps per Submit
PIPELINE = 16  # VARLINK_DEFAULT_PENDING_PER_CONN: calls in flight per connection
WARMUP = 10
FINAL = ("done", "denied", "cancelled", "expired")


# ---------------------------------------------------------------------------------------------
# The agent side (runs as the agent uid; nothing but the standard library)


class Conn:
    """A Varlink connection with batched writes and replies read in call order."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.sock.settimeout(60)
        self.buf = b""
        self.out = []

    def queue(self, method, params, more=False):
        m = {"method": method, "parameters": params}
        if more:
            m["more"] = True
        self.out.append(json.dumps(m).encode() + b"\0")

    def flush(self):
        if self.out:
            self.sock.sendall(b"".join(self.out))
            self.out = []

    def read(self):
        while True:
            i = self.buf.find(b"\0")
            if i >= 0:
                msg, self.buf = self.buf[:i], self.buf[i + 1:]
                return json.loads(msg)
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionResetError("lockd closed the connection")
            self.buf += chunk


def reply(m, what):
    if "parameters" not in m or "error" in m:
        raise RuntimeError(f"{what}: {m}")
    return m["parameters"]


def ask_once(c, plugin, handle):
    """One question, the agent's way: Submit, then Wait with more until a final state.
    Returns the outcome's result."""
    c.queue("io.lockd.Agent.Submit", {"steps": [{"plugin": plugin, "handle": handle}]})
    c.flush()
    s = reply(c.read(), "Submit")
    c.queue("io.lockd.Agent.Wait", {"ticket": s["ticket"]}, more=True)
    c.flush()
    while True:
        m = c.read()
        w = reply(m, "Wait")
        if not m.get("continues"):
            break
    if w["state"] != "done":
        raise RuntimeError(f"ticket {s['ticket']} ended {w}")
    return w["outcomes"][0]["result"]


def timed_questions(c, plugin, handles):
    times = []
    for h in handles:
        t0 = time.perf_counter()
        r = ask_once(c, plugin, h)
        times.append(time.perf_counter() - t0)
        if r != 1:
            raise RuntimeError(f"answer {r} on {h}")
    return times


def throughput(c, plugin, handles, seconds):
    """Cache hits as fast as one connection takes them: tickets of len(handles) steps, calls
    pipelined PIPELINE deep; a Submit's reply is followed by a Wait for its ticket. Returns
    (tickets, answers, seconds): an answer is a step outcome with result 0 or 1 received in a
    Wait reply of a done ticket."""
    steps = {"steps": [{"plugin": plugin, "handle": h} for h in handles]}
    inflight = deque()  # None for a Submit, the ticket for a Wait, in call order
    tickets = answers = 0
    t0 = time.perf_counter()
    deadline = t0 + seconds
    submitting = True
    for _ in range(PIPELINE):
        c.queue("io.lockd.Agent.Submit", steps)
        inflight.append(None)
    c.flush()
    while inflight:
        m = c.read()
        kind = inflight.popleft()
        if kind is None:
            s = reply(m, "Submit")
            if s["state"] != "done":
                raise RuntimeError(f"a cache hit is {s['state']}, not done")
            c.queue("io.lockd.Agent.Wait", {"ticket": s["ticket"]})
            inflight.append(s["ticket"])
        else:
            w = reply(m, "Wait")
            if w["state"] != "done":
                raise RuntimeError(f"ticket {kind}: {w}")
            tickets += 1
            answers += sum(1 for o in w["outcomes"] if o["result"] in (0, 1))
            if submitting and time.perf_counter() >= deadline:
                submitting = False
            if submitting:
                c.queue("io.lockd.Agent.Submit", steps)
                inflight.append(None)
        if not c.buf or b"\0" not in c.buf:
            c.flush()
    return tickets, answers, time.perf_counter() - t0


def cpu_seconds(pids):
    """The CPU time of the main threads of lockd's processes (the spawner's, the engine's: each
    runs on one), from /proc/PID/schedstat."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/schedstat") as f:
            total += int(f.read().split()[0]) / 1e9
    return total


def phase(cpu, pid, fn, *args):
    """fn(*args), with the CPU seconds lockd and this agent spent in it added to cpu."""
    l0, a0 = cpu_seconds(pid), time.process_time()
    r = fn(*args)
    cpu.append((cpu_seconds(pid) - l0, time.process_time() - a0))
    return r


def agent(path):
    work = json.loads(sys.stdin.readline())
    plugin, pid = work["plugin"], work["lockd_pid"]
    c = Conn(path)
    timed_questions(c, plugin, work["warmup"])
    cpu = []
    miss = phase(cpu, pid, timed_questions, c, plugin, work["miss"])
    hit = phase(cpu, pid, timed_questions, c, plugin, work["miss"])  # the same questions again
    hot = work["miss"][:STEPS_MAX]
    throughput(c, plugin, hot, 0.5)  # warm up
    t1 = phase(cpu, pid, throughput, c, plugin, hot[:1], work["seconds"])
    t16 = phase(cpu, pid, throughput, c, plugin, hot, work["seconds"])
    c.sock.close()
    print(json.dumps({"miss": miss, "hit": hit, "t1": t1, "t16": t16, "cpu": cpu}), flush=True)
    return 0


# ---------------------------------------------------------------------------------------------
# The driver (root): a lockd, the plugin, the grants, the alternative


def lockd_pids(d):
    """The spawner's pid and its engine's."""
    with open(f"/proc/{d.proc.pid}/task/{d.proc.pid}/children") as f:
        return [d.proc.pid] + [int(x) for x in f.read().split()
                               if open(f"/proc/{x}/comm").read().startswith("lockd-engine")]


def command_runs(cmd, paths):
    times = []
    for p in paths:
        t0 = time.perf_counter()
        with open(p, "rb") as f:
            r = subprocess.run(cmd, stdin=f, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               check=False)
        times.append(time.perf_counter() - t0)
        if r.stdout.strip() != b"1":
            raise RuntimeError(f"{cmd[0]} answered {r.stdout!r}")
    return times


def ms(ts):
    return f"{statistics.median(ts) * 1e3:8.2f} {statistics.fmean(ts) * 1e3:8.2f}"


def verdict(ok):
    return "PASS" if ok else "MISS"


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--agent":
        return agent(sys.argv[2])

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                    "integration"))
    from lockdtest import (AGENT_UID, BUS, ISSUER, PATTERN, PLUGINS, Daemon, Signer, Varlink, policy_text,
                           require_environment, tempdir)

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    seconds = float(os.environ.get("LOCKD_BENCH_SECONDS", "3"))
    # Handles per agent are capped (HANDLES_PER_AGENT_MAX, 256): every miss is a handle.
    if not STEPS_MAX <= n <= 240:
        print(f"ask: N must be {STEPS_MAX}..240", file=sys.stderr)
        return 2
    require_environment()
    work = tempdir()
    signer = Signer(work)
    os.mkdir(os.path.join(work, "d"))
    # Security level 3: outcomes are released as the runs end. Levels 1 and 2 hold each outcome
    # to its release time on purpose (a cached answer as long as the run that made it), which is
    # what an agent waits then, not lockd's cost.
    top = os.path.join(work, "d")
    d = Daemon(top, policy=policy_text(top).replace("security_level: 2", "security_level: 3"))
    d.start()
    plugin = os.path.join(PLUGINS, "good-one")
    try:
        d.lockctl("marketplace", "add", "local", "--issuer", ISSUER, "--identity", PATTERN,
                  "--trusted-root", signer.root, check_rc=0)
        rel = signer.release("good-one", os.path.join(work, "rel"))
        d.lockctl("plugin", "install", rel, "--marketplace", "local", check_rc=0)
        name = "test.good-one"

        # Every miss a new content, granted with auto to the agent.
        paths, handles = [], []
        v = Varlink(d.console)
        try:
            for i in range(WARMUP + n):
                p = os.path.join(work, f"q{i:04d}.txt")
                with open(p, "w") as f:
                    f.write(f"question {i} of the ask benchmark\n")
                with open(p, "rb") as f:
                    r = v.call("io.lockd.Console.Grant",
                               {"file_fd": 0, "agent": str(AGENT_UID), "auto": True},
                               fds=[f.fileno()])
                if "parameters" not in r:
                    raise RuntimeError(f"Grant: {r}")
                paths.append(p)
                handles.append(r["parameters"]["handle"])
        finally:
            v.close()

        proc = subprocess.Popen(["setpriv", f"--reuid={AGENT_UID}", f"--regid={AGENT_UID}",
                                 "--clear-groups", sys.executable, os.path.abspath(__file__),
                                 "--agent", d.agent],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        out, _ = proc.communicate(json.dumps({"plugin": name, "warmup": handles[:WARMUP],
                                              "miss": handles[WARMUP:],
                                              "seconds": seconds,
                                              "lockd_pid": lockd_pids(d)}) + "\n", timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"the agent failed ({proc.returncode})")
        res = json.loads(out)

        # The alternative, from the same manager lockd uses, reading the same files; the
        # plugin reads fd 3, which a shell redirect gives it.
        user = [] if BUS == "system" else ["--user"]
        alt_cmd = ["systemd-run", *user, "--scope", "-q", "--", "sh", "-c",
                   f"exec {plugin} 3<&0"]
        command_runs(alt_cmd, paths[:WARMUP])
        alt = command_runs(alt_cmd, paths[WARMUP:WARMUP + max(20, n // 2)])
    finally:
        d.stop()

    miss, hit = res["miss"], res["hit"]
    t1_tickets, t1_answers, t1_s = res["t1"]
    t16_tickets, t16_answers, t16_s = res["t16"]
    cpu = res["cpu"]
    ratio = statistics.median(miss) / statistics.median(alt)
    hits_per_s = t16_answers / t16_s
    print("Machine: a shared 2-core VM (other builds and tests may run at the same time); the")
    print("numbers are of this run only. Agent: one client process as uid "
          f"{AGENT_UID}, one connection.")
    print()
    print(f"{'per question (Submit -> final outcome)':44} {'median':>8} {'mean':>8}  (ms)   n"
          "   lockd CPU  agent CPU (ms, mean)")
    print(f"{'lockd --auto, cache miss (new content)':44} {ms(miss)}  {len(miss):7d} "
          f"{cpu[0][0] / len(miss) * 1e3:9.3f} {cpu[0][1] / len(miss) * 1e3:9.3f}")
    print(f"{'lockd --auto, cache hit (same question)':44} {ms(hit)}  {len(hit):7d} "
          f"{cpu[1][0] / len(hit) * 1e3:9.3f} {cpu[1][1] / len(hit) * 1e3:9.3f}")
    print(f"{'systemd-run --user --scope + plugin (fd 3)':44} {ms(alt)}  {len(alt):7d}")
    print("(lockd CPU is its main thread's; a miss's sandboxed child and the manager are not in "
          "it)")
    print()
    print(f"cache-hit throughput, one connection, {PIPELINE} calls in flight, a Submit and then a "
          "Wait per ticket;")
    print("an answer is a step outcome with result 0 or 1 in the Wait reply of a done ticket:")
    print(f"  1 step per ticket:   {t1_tickets / t1_s:9.0f} tickets/s {t1_answers / t1_s:9.0f} "
          f"answers/s  ({t1_tickets} tickets in {t1_s:.2f} s; CPU lockd {cpu[2][0] / t1_s:.0%}, "
          f"agent {cpu[2][1] / t1_s:.0%})")
    print(f"  {STEPS_MAX} steps per ticket:  {t16_tickets / t16_s:9.0f} tickets/s "
          f"{hits_per_s:9.0f} answers/s  ({t16_tickets} tickets in {t16_s:.2f} s; CPU lockd "
          f"{cpu[3][0] / t16_s:.0%}, agent {cpu[3][1] / t16_s:.0%})")
    print()
    print(f"miss / alternative (medians):  {ratio:7.3f}  target <= {MISS_TARGET}    "
          f"{verdict(ratio <= MISS_TARGET)}")
    print(f"cache hits, answers/s:         {hits_per_s:7.0f}  target >= {HITS_TARGET}  "
          f"{verdict(hits_per_s >= HITS_TARGET)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
