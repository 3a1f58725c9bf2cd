#!/usr/bin/env python3
"""An agent's question answered through lockd, against what a user would run instead, all in one
run of this script on one machine: Submit -> final outcome for --auto protocol-1 questions that
miss the cache (a new content every time: the plugin runs in its sandbox and scope), back to
back and spaced 100 ms and 1 s apart (sporadic use: after a quiet spell the kernel makes the
first move into a cgroup wait for an RCU grace period); two agents asking at once; cache hits
(1-step and 16-step tickets, pipelined over one connection); and the same plugin on the same
files by bare fork+exec and by `systemd-run --scope PLUGIN` (the plugin itself, no shell), with
the same gaps. Medians; each ratio against its target, PASS or MISS. For the uncached questions
also lockd's fsyncs (engine and spawner: between the plugin's exit and the answer, and in all),
counted with `perf record` on the syscall tracepoints, and lockd's CPU per question.

The agents are bench/ask-agent (C, as the agent uids through setpriv: a client that is not the
bottleneck); the alternatives are ask-agent's fork+exec+wait, run as root. lockd runs at
security level 3 (no release schedule: levels 1 and 2 hold each outcome to its release time on
purpose, which is what an agent waits then, not lockd's cost). Run it through
tests/integration/with-systemd (a real manager) with LOCKD, LOCKCTL, LOCKD_SIGN,
LOCKD_TEST_PLUGINS, LOCKD_TEST_PLUGINS_SRC and LOCKD_ASK_AGENT set, as
`meson test -C build --benchmark ask` does."""

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

SCOPE_TARGET = 0.15  # an uncached question / systemd-run --scope PLUGIN (back to back, 1 s gaps)
EXEC_TARGET = 2.5  # an uncached question / bare fork+exec of the plugin, with gaps
RUNS_TARGET = 400  # scoped runs per second, two agents through Submit
HITS_TARGET = 10000  # 1-step cache-hit answers per second over one connection
STEPS_MAX = 16  # PLAN_STEPS_MAX: steps per Submit
PIPELINE = 16  # VARLINK_DEFAULT_PENDING_PER_CONN: calls in flight per connection
WARMUP = 10
GAP100_N = 30
GAP1S_N = 8
TWO_N = 60  # questions per agent, two agents at once


def ms(ts):
    return f"{statistics.median(ts):8.2f} {statistics.fmean(ts):8.2f}"


def verdict(ok):
    return "PASS" if ok else "MISS"


def agent(uid, socket, work):
    """bench/ask-agent started as uid with its work (it starts at once); finish() reads it."""
    cmd = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
           os.environ["LOCKD_ASK_AGENT"], "agent", socket]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    proc.stdin.write(json.dumps(work) + "\n")
    proc.stdin.close()
    return proc


def finish(proc, timeout=1200):
    """The agent's JSON answer, once it ended."""
    out = proc.stdout.read()
    proc.wait(timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"ask-agent failed ({proc.returncode})")
    return json.loads(out)


def alternative(gap_ms, paths, argv):
    """ask-agent exec: argv with fd 3 each file, gap_ms apart; the times in ms."""
    r = subprocess.run([os.environ["LOCKD_ASK_AGENT"], "exec", str(gap_ms), *paths, "--", *argv],
                       capture_output=True, text=True, timeout=1200)
    if r.returncode != 0:
        raise RuntimeError(f"ask-agent exec {argv[0]}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def cpu_seconds(pid):
    """CPU time of pid's threads so far, in seconds: the scheduler's own count in nanoseconds
    (/proc/PID/task/*/schedstat) where the kernel keeps it, else user + system time in clock
    ticks (/proc/PID/stat, which also counts threads that ended)."""
    try:
        total = 0
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, ValueError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Syncs:
    """Every fsync and fdatasync of the machine, and every process exit, while it records
    (`perf record` on the syscall tracepoints, CLOCK_MONOTONIC timestamps): counted, not assumed.
    Without perf it counts nothing and says so."""

    EVENTS = ("syscalls:sys_enter_fsync", "syscalls:sys_enter_fdatasync",
              "syscalls:sys_enter_sync_file_range", "sched:sched_process_exit")

    def __init__(self, work):
        self.path = os.path.join(work, "perf.data")
        self.proc = None
        self.events = []
        perf = shutil.which("perf")
        if not perf:
            self.why = "perf is not installed (linux-perf)"
            return
        cmd = [perf, "record", "-q", "-a", "--clockid", "mono", "-o", self.path]
        for e in self.EVENTS:
            cmd += ["-e", e]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(1.0)  # perf opens its events before the first question
        if self.proc.poll() is not None:
            self.why = f"perf record: {self.proc.stderr.read().decode().strip()[:200]}"
            self.proc = None

    def stop(self):
        if not self.proc:
            return
        self.proc.send_signal(2)
        self.proc.wait(60)
        out = subprocess.run(["perf", "script", "-i", self.path, "-F", "pid,tid,time,event"],
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            # "  PID/TID  SECONDS.USEC: EVENT:"
            parts = line.split()
            if len(parts) < 3:
                continue
            try:
                pid = int(parts[0].split("/")[0])
                t = float(parts[1].rstrip(":")) * 1e3
            except ValueError:
                continue
            self.events.append((t, pid, "exit" if "process_exit" in parts[2] else "sync"))
        self.events.sort()

    def per_question(self, spans, pids):
        """For each question [asked, answered]: the syncs of pids between the plugin's exit (the
        last process to exit in the span) and the answer, and all their syncs from the question
        to the next one (the writes after the answer included). None without perf."""
        if not self.events:
            return None
        critical, total = [], []
        for i, (t0, t1) in enumerate(spans):
            end = spans[i + 1][0] if i + 1 < len(spans) else t1 + 1000
            inside = [e for e in self.events if t0 <= e[0] <= end]
            exits = [e[0] for e in inside if e[2] == "exit" and e[0] <= t1 and e[1] not in pids]
            if not exits:
                continue
            plugin_end = exits[-1]
            critical.append(sum(1 for e in inside
                                if e[2] == "sync" and e[1] in pids and plugin_end <= e[0] <= t1))
            total.append(sum(1 for e in inside if e[2] == "sync" and e[1] in pids))
        return critical, total


def children(pid):
    """The direct children of pid."""
    out = []
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/children") as f:
            out += [int(c) for c in f.read().split()]
    return out


def main():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                    "integration"))
    from lockdtest import (AGENT2_UID, AGENT_UID, BUS, ISSUER, PATTERN, PLUGINS, Daemon, Signer,
                           Varlink, policy_text, read_audit, require_environment, tempdir)

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    seconds = float(os.environ.get("LOCKD_BENCH_SECONDS", "3"))
    # Handles per agent are capped (HANDLES_PER_AGENT_MAX, 256): every miss is a handle.
    per_agent = WARMUP + n + GAP100_N + GAP1S_N + TWO_N
    if not STEPS_MAX <= n or per_agent > 240:
        print(f"ask: N must be {STEPS_MAX}..{240 - per_agent + n}", file=sys.stderr)
        return 2
    require_environment()
    work = tempdir()
    os.chmod(work, 0o755)
    signer = Signer(work)
    os.mkdir(os.path.join(work, "d"))
    top = os.path.join(work, "d")
    d = Daemon(top, policy=policy_text(top).replace("security_level: 2", "security_level: 3"))
    d.start()
    plugin = os.path.join(PLUGINS, "good-one")
    name = "test.good-one"
    try:
        d.lockctl("marketplace", "add", "local", "--issuer", ISSUER, "--identity", PATTERN,
                  "--trusted-root", signer.root, check_rc=0)
        rel = signer.release("good-one", os.path.join(work, "rel"))
        d.lockctl("plugin", "install", rel, "--marketplace", "local", check_rc=0)

        # Every miss a new content, granted with auto to its agent.
        paths, handles = {AGENT_UID: [], AGENT2_UID: []}, {AGENT_UID: [], AGENT2_UID: []}
        v = Varlink(d.console)
        try:
            for uid, count in ((AGENT_UID, per_agent), (AGENT2_UID, WARMUP + TWO_N)):
                for i in range(count):
                    p = os.path.join(work, f"q{uid}-{i:04d}.txt")
                    with open(p, "w") as f:
                        f.write(f"question {i} of agent {uid} in the ask benchmark\n")
                    with open(p, "rb") as f:
                        r = v.call("io.lockd.Console.Grant",
                                   {"file_fd": 0, "agent": str(uid), "auto": True},
                                   fds=[f.fileno()])
                    if "parameters" not in r:
                        raise RuntimeError(f"Grant: {r}")
                    paths[uid].append(p)
                    handles[uid].append(r["parameters"]["handle"])
        finally:
            v.close()

        h = handles[AGENT_UID]
        cuts = [WARMUP, WARMUP + n, WARMUP + n + GAP100_N, WARMUP + n + GAP100_N + GAP1S_N,
                per_agent]
        b2b, g100, g1s, two1 = (h[cuts[0]:cuts[1]], h[cuts[1]:cuts[2]], h[cuts[2]:cuts[3]],
                                h[cuts[3]:cuts[4]])
        spawner = d.proc.pid
        engine = next((c for c in children(spawner)
                       if open(f"/proc/{c}/comm").read().strip() == "lockd-engine"), None)
        lockd_pids = {pid for pid in (spawner, engine) if pid}

        def cpu_ms():
            return {k: cpu_seconds(v) for k, v in (("engine", engine), ("spawner", spawner)) if v}

        def questions(phase, hs, gap):
            return {"name": phase, "kind": "questions", "handles": hs, "gap_ms": gap}

        one = finish(agent(AGENT_UID, d.agent, {"plugin": name, "phases": [
            questions("warmup", h[:WARMUP], 0)]}))
        # The uncached questions alone, each phase in a run of its own so that lockd's CPU and
        # its fsyncs are counted per phase.
        syncs = Syncs(work)
        cpu = {}
        for phase, hs, gap in (("b2b", b2b, 0), ("g100", g100, 100), ("g1s", g1s, 1000)):
            c0 = cpu_ms()
            one.update(finish(agent(AGENT_UID, d.agent, {"plugin": name, "phases": [
                questions(phase, hs, gap)]})))
            c1 = cpu_ms()
            cpu[phase] = {k: (c1[k] - c0[k]) * 1e3 / len(hs) for k in c0
                          if c0[k] is not None and c1.get(k) is not None}
        syncs.stop()
        one.update(finish(agent(AGENT_UID, d.agent, {"plugin": name, "phases": [
            questions("hit", b2b, 0),
            {"name": "warm", "kind": "throughput", "handles": b2b[:1], "seconds": 0.5,
             "pipeline": PIPELINE},
            {"name": "t1", "kind": "throughput", "handles": b2b[:1], "seconds": seconds,
             "pipeline": PIPELINE},
            {"name": "t16", "kind": "throughput", "handles": b2b[:STEPS_MAX],
             "seconds": seconds, "pipeline": PIPELINE},
        ]})))
        # Two agents at once, each asking back to back: runs per second of the two together.
        h2 = handles[AGENT2_UID]
        finish(agent(AGENT2_UID, d.agent, {"plugin": name, "phases": [
            {"name": "warmup", "kind": "questions", "handles": h2[:WARMUP], "gap_ms": 0}]}))
        who = {"systemd (the manager)": os.environ.get("LOCKD_TEST_MANAGER_PID"),
               "lockd (the spawner)": spawner, "lockd-engine": engine}
        cpu0 = {k: cpu_seconds(v) for k, v in who.items() if v}
        t0 = time.perf_counter()
        pa = agent(AGENT_UID, d.agent, {"plugin": name, "phases": [
            {"name": "two", "kind": "questions", "handles": two1, "gap_ms": 0}]})
        pb = agent(AGENT2_UID, d.agent, {"plugin": name, "phases": [
            {"name": "two", "kind": "questions", "handles": h2[WARMUP:], "gap_ms": 0}]})
        ra, rb = finish(pa), finish(pb)
        two_wall = time.perf_counter() - t0
        cpu1 = {k: cpu_seconds(v) for k, v in who.items() if v}
        two_busy = max(sum(ra["two"]), sum(rb["two"])) / 1e3

        # The alternatives, from the same manager lockd uses, on the same files, the same gaps.
        p = paths[AGENT_UID]
        scope = [shutil.which("systemd-run"), *([] if BUS == "system" else ["--user"]),
                 "--scope", "-q", "--", plugin]
        alt = {}
        for what, argv in (("exec", [plugin]), ("scope", scope)):
            alternative(0, p[:WARMUP], argv)
            alt[what, "b2b"] = alternative(0, p[cuts[0]:cuts[1]], argv)
            alt[what, "g100"] = alternative(100, p[cuts[1]:cuts[2]], argv)
            alt[what, "g1s"] = alternative(1000, p[cuts[2]:cuts[3]], argv)
    finally:
        d.stop()
    runs = read_audit(os.path.join(top, "state", "audit", "audit.jsonl"))
    runs = {x["handle_sha256"]: x for x in runs if x["event"] == "run"}

    def records(phase_paths):
        out = []
        for q in phase_paths:
            with open(q, "rb") as f:
                out.append(runs.get(hashlib.sha256(f.read()).hexdigest()))
        return [x for x in out if x]

    med = statistics.median
    t1_tickets, t1_answers, t1_s = one["t1"]
    t16_tickets, t16_answers, t16_s = one["t16"]
    print("Machine: a shared 2-core VM (other builds and tests may run at the same time); the")
    print("numbers are of this run only. lockd at security level 3 (no release schedule).")
    print("Agents: bench/ask-agent (C), one connection each.")
    print()
    print(f"{'per question, ms':46} {'median':>8} {'mean':>8}       n")
    rows = (("lockd --auto, cache miss, back to back", one["b2b"]),
            ("lockd --auto, cache miss, 100 ms apart", one["g100"]),
            ("lockd --auto, cache miss, 1 s apart", one["g1s"]),
            ("lockd --auto, cache hit (same question)", one["hit"]),
            ("bare fork+exec of the plugin, back to back", alt["exec", "b2b"]),
            ("bare fork+exec, 100 ms apart", alt["exec", "g100"]),
            ("bare fork+exec, 1 s apart", alt["exec", "g1s"]),
            ("systemd-run --scope PLUGIN, back to back", alt["scope", "b2b"]),
            ("systemd-run --scope PLUGIN, 100 ms apart", alt["scope", "g100"]),
            ("systemd-run --scope PLUGIN, 1 s apart", alt["scope", "g1s"]))
    for label, ts in rows:
        print(f"{label:46} {ms(ts)} {len(ts):7d}")
    runs_per_s = (len(ra["two"]) + len(rb["two"])) / two_busy
    print()
    print("where an uncached question's time goes (medians of the run records, ms): lockd before")
    print("the execve (the standby's release, the sandbox's entry), the plugin from its execve,")
    print("and the rest (Varlink, the engine, the spawner link, the durable records); peak memory")
    print("is the run's memory cgroup peak (KiB; unknown: its cgroup was gone before it was read)")
    for label, phase, cut in (("back to back", "b2b", (cuts[0], cuts[1])),
                              ("100 ms apart", "g100", (cuts[1], cuts[2])),
                              ("1 s apart", "g1s", (cuts[2], cuts[3]))):
        rec = records(p[cut[0]:cut[1]])
        setup = med([x["setup_usec"] for x in rec]) / 1e3
        wall = med([x["wall_usec"] for x in rec]) / 1e3
        # null when lockd could not tell the plugin's own peak (its cgroup was gone first).
        peak = [x["peak_memory_bytes"] / 1024 for x in rec if x["peak_memory_bytes"] is not None]
        unknown = len(rec) - len(peak)
        print(f"  {label:14} before execve {setup:5.2f}  plugin {wall:5.2f}  rest "
              f"{med(one[phase]) - setup - wall:5.2f}  peak memory "
              f"{med(peak) if peak else 0:6.0f} (max {max(peak) if peak else 0:.0f}, "
              f"{len(rec)} runs, {unknown} unknown)")
    print()
    print("lockd's fsyncs per uncached question (engine and spawner; counted by perf on the")
    print("syscall tracepoints): between the plugin's exit and the answer, and in all (to the next")
    print("question); and lockd's CPU per question, ms (the scheduler's count of its threads)")
    for label, phase in (("back to back", "b2b"), ("100 ms apart", "g100"),
                         ("1 s apart", "g1s")):
        counted = syncs.per_question(one[phase + "@spans"], lockd_pids)
        if counted is None:
            line = f"not counted: {getattr(syncs, 'why', 'no events')}"
        else:
            crit, total = counted
            line = (f"after the plugin {med(crit) if crit else float('nan'):4.1f} (max "
                    f"{max(crit) if crit else 0}), in all {med(total) if total else float('nan'):4.1f}"
                    f" (max {max(total) if total else 0}; {len(crit)} questions)")
        c = cpu.get(phase, {})
        print(f"  {label:14} {line}  CPU engine {c.get('engine', float('nan')):5.2f} spawner "
              f"{c.get('spawner', float('nan')):5.2f}")
    print()
    print(f"two agents at once, cache misses back to back: {len(ra['two']) + len(rb['two'])} runs, "
          f"{runs_per_s:.0f} runs/s (the slower agent's busy time; {two_wall:.2f} s with the "
          "agents' start)")
    n_two = len(ra["two"]) + len(rb["two"])
    print("  CPU per run during it, ms: " + ", ".join(
        f"{k} {(cpu1[k] - cpu0[k]) * 1e3 / n_two:.2f}" for k in cpu0
        if cpu0[k] is not None and cpu1.get(k) is not None) +
        f" (of {2 * two_wall * 1e3 / n_two:.2f} ms of both cores' time per run)")
    print(f"cache hits over one connection, {PIPELINE} calls in flight, a Submit and a Wait per "
          "ticket:")
    print(f"  1 step per ticket:   {t1_answers / t1_s:9.0f} answers/s ({t1_tickets} tickets in "
          f"{t1_s:.2f} s)")
    print(f"  {STEPS_MAX} steps per ticket:  {t16_answers / t16_s:9.0f} answers/s ({t16_tickets} "
          f"tickets in {t16_s:.2f} s)")
    print()
    checks = [
        ("miss / systemd-run --scope, back to back", med(one["b2b"]) / med(alt["scope", "b2b"]),
         "<=", SCOPE_TARGET),
        ("miss / systemd-run --scope, 1 s apart", med(one["g1s"]) / med(alt["scope", "g1s"]),
         "<=", SCOPE_TARGET),
        ("miss / bare fork+exec, 100 ms apart", med(one["g100"]) / med(alt["exec", "g100"]),
         "<=", EXEC_TARGET),
        ("miss / bare fork+exec, 1 s apart", med(one["g1s"]) / med(alt["exec", "g1s"]),
         "<=", EXEC_TARGET),
        ("scoped runs/s, two agents", runs_per_s, ">=", RUNS_TARGET),
        ("1-step cache-hit answers/s", t1_answers / t1_s, ">=", HITS_TARGET),
    ]
    for label, value, op, target in checks:
        ok = value <= target if op == "<=" else value >= target
        print(f"{label:46} {value:10.3f}  target {op} {target:<7} {verdict(ok)}")
    print()
    print("(ratios of medians; 'miss / bare fork+exec, back to back': "
          f"{med(one['b2b']) / med(alt['exec', 'b2b']):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
