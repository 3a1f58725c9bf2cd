#!/usr/bin/env python3
"""An agent's question answered through lockd, against what a user would run instead, all in one
run of this script on one machine: Submit -> final outcome for --auto protocol-1 questions that
miss the cache (a new content every time: the plugin runs in its sandbox and scope), back to
back and spaced 100 ms and 1 s apart (sporadic use: after a quiet spell the kernel makes the
first move into a cgroup wait for an RCU grace period); two agents asking at once; cache hits
(1-step and 16-step tickets, pipelined over one connection); and the same plugin on the same
files by bare fork+exec and by `systemd-run --scope PLUGIN` (the plugin itself, no shell), with
the same gaps. Medians; each ratio against its target, PASS or MISS. These phases, and lockd's
CPU per question in them, run with no tracer attached: perf's probes run on the traced
process's CPU and add to its time (the engine's CPU per question back to back about doubles under
the recording below). The three phases of uncached questions then run again, for a second agent,
under `perf record`: lockd's fsyncs (engine and spawner: between the plugin's exit and the answer,
and in all), counted on the syscall tracepoints; from the same recording each question's steps
(engine, spawner, the child's entry, the plugin against the same binary bare, run under the same
recording, the durable run record), whom the plugin wakes while it runs, and the engine's CPU
profile of the back-to-back phase.

The agents are bench/ask-agent (C, as the agent uids through setpriv: a client that is not the
bottleneck); the alternatives are ask-agent's fork+exec+wait, run as root. lockd runs at
security level 3 (no release schedule: levels 1 and 2 hold each outcome to its release time on
purpose, which is what an agent waits then, not lockd's cost). Run it through
tests/integration/with-systemd (a real manager) with LOCKD, LOCKCTL, LOCKD_SIGN,
LOCKD_TEST_PLUGINS, LOCKD_TEST_PLUGINS_SRC and LOCKD_ASK_AGENT set, as
`meson test -C build --benchmark ask` does."""

import bisect
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

# An uncached question / systemd-run --scope PLUGIN: back to back, and with 1 s gaps.
SCOPE_TARGET_B2B = 0.2
SCOPE_TARGET_GAPS = 0.25
EXEC_TARGET = 2.5  # an uncached question / bare fork+exec of the plugin, with gaps
SANDBOX_TARGET = 1.2  # the plugin's execve -> exit inside the sandbox / the same binary bare
SPAWNER_STEP_TARGET_MS = 0.1  # the spawner's RUN -> release and exit -> EXITED, 1 s apart
ENGINE_CPU_TARGET_MS = 0.5  # the engine's CPU per uncached question, back to back
SYNCS_AFTER_PLUGIN = 1  # fsyncs between the plugin's exit and its answer (one group commit)
SYNCS_IN_ALL = 2  # fsyncs per uncached question in all
# Scoped runs per second, two agents through Submit: 20 % above the 212-333 the runs had when
# the target was set (issue 31, main at 2a4ca3a on this machine).
RUNS_TARGET = 400
HITS_TARGET = 10000  # 1-step cache-hit answers per second over one connection
STEPS_MAX = 16  # PLAN_STEPS_MAX: steps per Submit
PIPELINE = 16  # VARLINK_DEFAULT_PENDING_PER_CONN: calls in flight per connection
WARMUP = 10
GAP100_N = 30
GAP1S_N = 8
TWO_N = 60  # questions per agent, two agents at once
# A quiet spell after each set of phases, counted with it: what the set started off the
# answers' path (a checkpoint, should one fall due) is its cost too.
QUIET_S = 6.0
# Sporadic use, counted under perf for the fsyncs, each question with the gap after it: questions
# 7 s apart, and questions asked alone, further apart than the wait of a record nothing waits
# for (COMMIT_LATER_USEC in daemon/commit.c, 30 s), which then pays a commit of its own.
SPARSE = (("7 s apart", "sporadic", 4, 7000), ("35 s apart", "alone", 2, 35000))
SPORADIC_N = sum(k for _, _, k, _ in SPARSE)


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
    Without perf it counts nothing and says so.

    The same recording holds the events that bound each step of an uncached question (segments()):
    sendmsg/recvmsg on the engine's and the spawner's SOCK_SEQPACKET channel (the engine's RUN is a
    sendmsg() on ENGINE_CHANNEL_FD, the spawner's EXITED a send() on its end: sendto), the release
    of the standby child (the spawner's 1-byte sendmsg() with the fds on the child's control
    socket, send_release() in daemon/sandbox/runner.c), the plugin's execve and exit (sched), the
    run record's write() to the audit log (audit.c: one write() per record, on the fds audit_fds)
    and the engine's replies (varlink-conn.c: send(), so sendto, on the agent's connection). The
    scheduler's sched_waking (in the waker, on its CPU) and sched_wakeup (with the CPU the wakee
    was put on) split a plugin's exit -> its reap: the exit until it wakes its reaper, and that
    wakeup until the reaper's waitid() (or a bare parent's wait4() returns)."""

    EVENTS = ("syscalls:sys_enter_fsync", "syscalls:sys_enter_fdatasync",
              "syscalls:sys_enter_sync_file_range", "sched:sched_process_exit",
              "sched:sched_process_exec",
              "syscalls:sys_enter_sendmsg", "syscalls:sys_exit_sendmsg",
              "syscalls:sys_enter_recvmsg", "syscalls:sys_exit_recvmsg",
              "syscalls:sys_enter_sendto", "syscalls:sys_enter_waitid",
              "syscalls:sys_exit_wait4", "sched:sched_waking", "sched:sched_wakeup")
    SYNCS = ("sys_enter_fsync", "sys_enter_fdatasync", "sys_enter_sync_file_range")
    # perf script's "  PID/TID [CPU] SECONDS.NSEC: EVENT: TRACE" (a tid of -1 happens)
    LINE = re.compile(r"\s*(-?\d+)/(-?\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+)(?:\s+(.*))?$")
    ENGINE_CHANNEL_FD = 5  # daemon/proto/engine-fds.h
    SANDBOX_EXEC = "/proc/self/fd/"  # the sandboxed child's execve path (sandbox.c exec_path)

    def __init__(self, work, audit_fds=(), name="perf.data"):
        self.path = os.path.join(work, name)
        self.proc = None
        self.events = []
        self.trace = []
        # (time, waker tid, waker's CPU, wakee tid, the wakee's CPU or None, the wakee's comm)
        self.wakes = []
        perf = shutil.which("perf")
        if not perf:
            self.why = "perf is not installed (linux-perf)"
            return
        cmd = [perf, "record", "-q", "-a", "--clockid", "mono", "-o", self.path]
        for e in self.EVENTS:
            cmd += ["-e", e]
        if audit_fds:
            # Only the audit log's fds: every write() of the machine would be far too many.
            cmd += ["-e", "syscalls:sys_enter_write",
                    "--filter", " || ".join(f"fd == {fd}" for fd in sorted(audit_fds))]
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
        out = subprocess.run(["perf", "script", "-i", self.path, "--ns",
                              "-F", "pid,tid,cpu,time,event,trace"],
                             capture_output=True, text=True).stdout
        entered = {}  # (tid, syscall): (time, fd) of the enter not yet paired with its exit
        wakeups = {}  # wakee tid: [(time, its CPU)] from sched_wakeup
        for line in out.splitlines():
            m = self.LINE.match(line)
            if not m:
                continue
            pid, tid, cpu = int(m.group(1)), int(m.group(2)), int(m.group(3))
            t = float(m.group(4)) * 1e3
            event = m.group(5).rstrip(":").split(":")[-1]
            trace = m.group(6) or ""
            if event in ("sched_waking", "sched_wakeup"):
                w = re.search(r"\bpid=(\d+) .*target_cpu=(\d+)", trace)
                if not w:
                    continue
                if event == "sched_waking":
                    c = re.search(r"\bcomm=(.*?) pid=", trace)
                    self.wakes.append((t, tid, cpu, int(w.group(1)), None, c.group(1) if c else ""))
                else:
                    wakeups.setdefault(int(w.group(1)), []).append((t, int(w.group(2))))
                continue
            if event == "sched_process_exit":
                self.events.append((t, pid, "exit"))
                m = re.search(r"\bpid=(\d+)", trace)
                self.trace.append((t, "exit", int(m.group(1)) if m else tid, None, None))
            elif event in self.SYNCS:
                self.events.append((t, pid, "sync"))
            elif event == "sched_process_exec":
                m = re.search(r"filename=(\S*) pid=(\d+)", trace)
                if m:
                    self.trace.append((t, "exec", int(m.group(2)), None, m.group(1)))
            elif event.startswith("sys_enter_"):
                m = re.search(r"\bfd: (0x[0-9a-f]+)", trace)
                fd = int(m.group(1), 16) if m else None
                call = event[len("sys_enter_"):]
                if call in ("sendto", "write"):
                    self.trace.append((t, call, pid, fd, None))
                elif call == "waitid":
                    self.trace.append((t, call, pid, None, tid))
                else:
                    entered[tid, call] = (t, fd)
            elif event == "sys_exit_wait4":
                # A bare run's parent has reaped it (bench/ask-agent's waitpid()).
                self.trace.append((t, "reaped", pid, None, tid))
            elif event.startswith("sys_exit_"):
                call = event[len("sys_exit_"):]
                start = entered.pop((tid, call), None)
                if not start:
                    continue
                try:
                    ret = int(trace.split()[0], 16)
                except (ValueError, IndexError):
                    continue
                if ret >= 1 << 63:
                    ret -= 1 << 64
                # A send is placed where it begins, a receive where the message is in hand.
                self.trace.append((start[0] if call == "sendmsg" else t, call, pid, start[1], ret))
        self.events.sort()
        self.trace.sort(key=lambda e: e[0])
        self.times = [e[0] for e in self.trace]
        # Each waking with the CPU its wakee was put on: the wakee's first sched_wakeup after it.
        for tid in wakeups:
            wakeups[tid].sort()
        for i, (t, waker, cpu, wakee, _, comm) in enumerate(self.wakes):
            after = wakeups.get(wakee, [])
            j = bisect.bisect_left(after, (t, -1))
            if j < len(after) and after[j][0] - t < 1.0:
                self.wakes[i] = (t, waker, cpu, wakee, after[j][1], comm)
        self.wakes.sort()
        self.wake_times = [w[0] for w in self.wakes]

    def _wakes_between(self, t0, t1):
        """The wakeups between t0 and t1 (ms), each with whether its wakee was put on the waker's
        CPU (None when that is unknown)."""
        for w in self.wakes[bisect.bisect_left(self.wake_times, t0):
                            bisect.bisect_right(self.wake_times, t1)]:
            yield w, (None if w[4] is None else w[4] == w[2])

    def woke(self, waker, wakee, t0, t1):
        """The first wakeup of wakee by waker between t0 and t1 (ms): (time, whether the wakee was
        put on the waker's CPU, or None when that is unknown), or None."""
        for w, here in self._wakes_between(t0, t1):
            if w[1] == waker and w[3] == wakee:
                return w[0], here
        return None

    # Who a plugin wakes while it runs, by the wakee's comm: lockd's engine (its output pipe's
    # reader), the spawner (the control socket that execve closes, at the return to user space),
    # the kernel's threads (the seccomp filter freed by a workqueue at the exit), and anyone else
    # (a bare run's parent). The first row that matches counts.
    WAKEE_CLASSES = (("lockd-engine", lambda c: c == "lockd-engine"),
                     ("the spawner", lambda c: c == "lockd"),
                     ("kernel threads",
                      lambda c: c.startswith(("kworker/", "ksoftirqd/", "rcu_", "migration/"))),
                     ("anyone else", lambda c: True))

    def plugin_wakes(self, pid, t0, t1):
        """The wakeups the process pid made between t0 and t1 (ms): per WAKEE_CLASSES' row, how
        many, and how many of them put the wakee on pid's own CPU (where it competes with pid);
        every wakee falls in one row."""
        out = [[0, 0] for _ in self.WAKEE_CLASSES]
        for w, here in self._wakes_between(t0, t1):
            if w[1] != pid:
                continue
            for k, (_, match) in enumerate(self.WAKEE_CLASSES):
                if match(w[5]):
                    out[k][0] += 1
                    out[k][1] += here is True
                    break
        return out

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

    def syncs_between(self, t0, t1, pids):
        """How many syncs pids made between t0 and t1 (ms, CLOCK_MONOTONIC)."""
        return sum(1 for e in self.events if e[2] == "sync" and e[1] in pids and t0 <= e[0] <= t1)

    def _between(self, t0, t1):
        return self.trace[bisect.bisect_left(self.times, t0):bisect.bisect_right(self.times, t1)]

    SEGMENTS = ("engine: Submit -> RUN sent", "spawner: RUN -> child released",
                "child: sandbox entry + execve", "plugin: execve -> exit",
                "spawner: exit -> EXITED sent", "run record written -> final reply")

    # After SEGMENTS, the rest and the whole question: exit -> EXITED in its two parts, the first
    # split at the plugin's wakeup of the spawner's worker.
    EXIT_PARTS = ("  of it, the plugin's exit -> its reap (kernel)",
                  "  of it, the reap -> EXITED sent (spawner)",
                  "    the exit -> the worker woken",
                  "    the wakeup -> the worker's waitid()")

    def segments(self, spans, engine, spawner):
        """Each question's segments in ms, SEGMENTS' order, then the rest of its span (the wakeups
        between the processes, the engine's Submit reply, EXITED -> run record, the agent), the
        whole question, EXIT_PARTS (the spawner's waitid() after the plugin's exit splits it, and
        the plugin's wakeup of that thread splits the first part: nan when it was not recorded),
        whether the worker was put on the CPU the plugin exited on (None when unknown), and the
        plugin's plugin_wakes() from its execve to its exit: a list of lists, and how many
        questions were skipped for an event missing. None without perf."""
        if not self.trace:
            return None
        engine_chan = self.ENGINE_CHANNEL_FD
        # The spawner's end of the channel: its send()s go there alone (send_datagram()).
        sends = [e[3] for e in self.trace if e[1] == "sendto" and e[2] == spawner]
        chan = max(set(sends), key=sends.count) if sends else None

        def first(ev, pred):
            return next((e for e in ev if pred(e)), None)

        def last(ev, pred):
            return next((e for e in reversed(ev) if pred(e)), None)

        out, skipped = [], 0
        for t0, t1 in spans:
            ev = self._between(t0, t1)
            sub = first(ev, lambda e: e[1] == "recvmsg" and e[2] == engine and
                        e[3] != engine_chan and e[4] > 0)
            rel = sub and first(ev, lambda e: e[1] == "sendmsg" and e[2] == spawner and
                                e[4] == 1 and e[0] > sub[0])
            run = rel and last(ev, lambda e: e[1] == "sendmsg" and e[2] == engine and
                               e[3] == engine_chan and sub[0] <= e[0] <= rel[0])
            got = run and last(ev, lambda e: e[1] == "recvmsg" and e[2] == spawner and
                               e[3] == chan and e[4] > 0 and run[0] <= e[0] <= rel[0])
            exe = got and first(ev, lambda e: e[1] == "exec" and e[0] >= rel[0] and
                                e[4].startswith(self.SANDBOX_EXEC))
            end = exe and first(ev, lambda e: e[1] == "exit" and e[2] == exe[2] and
                                e[0] >= exe[0])
            # The worker thread sends EXITED after the reap: its first send after the release.
            told = [e for e in ev if e[1] == "sendto" and e[2] == spawner and e[3] == chan and
                    rel and e[0] >= rel[0]]
            told = end and told and told[0][0] >= end[0] and told[0]
            reap = told and first(ev, lambda e: e[1] == "waitid" and e[2] == spawner and
                                  end[0] <= e[0] <= told[0])
            rec = reap and first(ev, lambda e: e[1] == "write" and e[2] == engine and
                                 e[0] >= told[0])
            reply = rec and last(ev, lambda e: e[1] == "sendto" and e[2] == engine and
                                 e[3] == sub[3] and e[0] >= rec[0])
            if not reply:
                skipped += 1
                continue
            seg = [run[0] - sub[0], rel[0] - got[0], exe[0] - rel[0], end[0] - exe[0],
                   told[0] - end[0], reply[0] - rec[0]]
            wake = self.woke(exe[2], reap[4], end[0], reap[0])
            nan = float("nan")
            out.append(seg + [(t1 - t0) - sum(seg), t1 - t0, reap[0] - end[0],
                              told[0] - reap[0], wake[0] - end[0] if wake else nan,
                              reap[0] - wake[0] if wake else nan, wake[1] if wake else None,
                              self.plugin_wakes(exe[2], exe[0], end[0])])
        return out, skipped

    def plugin_runs(self, t0, t1, filename):
        """execve -> exit (ms) of every process that executed filename between t0 and t1; exit ->
        reaped (its parent's wait4() returned) of those whose reap was recorded; and of those,
        exit -> the parent woken and whether the parent was put on the CPU the child exited on,
        where that wakeup was recorded; and each run's plugin_wakes()."""
        ev = self._between(t0, t1 + 1000)
        out, reaped, woken, wakes = [], [], [], []
        for e in ev:
            if e[1] == "exec" and e[4] == filename and e[0] <= t1:
                end = next((x for x in ev if x[1] == "exit" and x[2] == e[2] and x[0] >= e[0]),
                           None)
                if end:
                    out.append(end[0] - e[0])
                    wakes.append(self.plugin_wakes(e[2], e[0], end[0]))
                    reap = next((x for x in ev if x[1] == "reaped" and x[0] >= end[0]), None)
                    if reap:
                        reaped.append(reap[0] - end[0])
                        wake = self.woke(e[2], reap[4], end[0], reap[0])
                        if wake:
                            woken.append((wake[0] - end[0], wake[1]))
        return out, reaped, woken, wakes


def engine_profile(path):
    """The top of an engine's `perf record -g` profile by library and function (self samples),
    and the full report written beside it; lines to print."""
    r = subprocess.run(["perf", "report", "-i", path, "--stdio", "--no-children", "-g", "none",
                        "--sort", "dso,sym", "--percent-limit", "0"],
                       capture_output=True, text=True)
    with open(path + ".txt", "w") as f:
        f.write(r.stdout)
    samples = next((ln.lstrip("# ") for ln in r.stdout.splitlines() if ln.startswith("# Samples")),
                   "")
    rows = [ln for ln in r.stdout.splitlines() if ln.strip() and not ln.startswith("#")]
    by_dso = subprocess.run(["perf", "report", "-i", path, "--stdio", "--no-children", "-g",
                             "none", "--sort", "dso"], capture_output=True, text=True).stdout
    dso = [" ".join(ln.split()) for ln in by_dso.splitlines()
           if ln.strip() and not ln.startswith("#")]
    return [samples, *rows[:15], "by library: " + ", ".join(dso[:8])]


def audit_fds(pid):
    """pid's fds on the audit log's files (daemon/state/audit.c writes each record with one
    write() there)."""
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if "/audit/" in link and link.endswith(".jsonl"):
            out.append(int(fd))
    return out


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
    per_agent = WARMUP + n + GAP100_N + GAP1S_N + SPORADIC_N + TWO_N
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
            for uid, count in ((AGENT_UID, per_agent), (AGENT2_UID, per_agent)):
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

        # Each agent's handles: a warmup, the three phases of uncached questions, and its part of
        # the two agents' phase. The first agent's phases run with no tracer attached (their
        # times, lockd's CPU and the ratios); the second agent's run the same phases again under
        # perf (the fsyncs, the segments and the profile), whose probes cost lockd CPU and time
        # of their own.
        h, h2 = handles[AGENT_UID], handles[AGENT2_UID]
        cuts = [WARMUP, WARMUP + n, WARMUP + n + GAP100_N, WARMUP + n + GAP100_N + GAP1S_N,
                WARMUP + n + GAP100_N + GAP1S_N + SPORADIC_N, per_agent]
        b2b, g100, g1s, two1 = (h[cuts[0]:cuts[1]], h[cuts[1]:cuts[2]], h[cuts[2]:cuts[3]],
                                h[cuts[4]:cuts[5]])
        two2 = h2[cuts[4]:cuts[5]]
        spawner = d.proc.pid
        engine = next((c for c in children(spawner)
                       if open(f"/proc/{c}/comm").read().strip() == "lockd-engine"), None)
        lockd_pids = {pid for pid in (spawner, engine) if pid}

        def cpu_ms():
            return {k: cpu_seconds(v) for k, v in (("engine", engine), ("spawner", spawner)) if v}

        def questions(phase, hs, gap):
            return {"name": phase, "kind": "questions", "handles": hs, "gap_ms": gap}

        def per_question(c0, c1, count):
            return {k: (c1[k] - c0[k]) * 1e3 / count for k in c0
                    if c0[k] is not None and c1.get(k) is not None}

        one = finish(agent(AGENT_UID, d.agent, {"plugin": name, "phases": [
            questions("warmup", h[:WARMUP], 0)]}))
        traced = finish(agent(AGENT2_UID, d.agent, {"plugin": name, "phases": [
            questions("warmup", h2[:WARMUP], 0)]}))
        # Quiet before the phases begin, and after each set of them (QUIET_S).
        time.sleep(QUIET_S)
        n_phases = n + GAP100_N + GAP1S_N
        # The uncached questions alone, each phase in a run of its own so that lockd's CPU is
        # counted per phase: first with nothing attached to lockd, ...
        cpu = {}
        a0 = cpu_ms()
        for phase, hs, gap in (("b2b", b2b, 0), ("g100", g100, 100), ("g1s", g1s, 1000)):
            c0 = cpu_ms()
            one.update(finish(agent(AGENT_UID, d.agent, {"plugin": name, "phases": [
                questions(phase, hs, gap)]})))
            cpu[phase] = per_question(c0, cpu_ms(), len(hs))
        time.sleep(QUIET_S)
        cpu_all = per_question(a0, cpu_ms(), n_phases)
        # ... then again, the second agent's, under perf: its fsyncs and its segments.
        syncs = Syncs(work, audit_fds(engine) if engine else ())
        rec_t0 = time.clock_gettime(time.CLOCK_MONOTONIC) * 1e3
        cpu_rec = {}
        profile = None
        for phase, cut, gap in (("b2b", cuts[0:2], 0), ("g100", cuts[1:3], 100),
                                ("g1s", cuts[2:4], 1000)):
            hs = h2[cut[0]:cut[1]]
            if phase == "b2b" and syncs.proc and engine:
                # The engine's CPU profile of the back-to-back phase (call graphs kept in the file).
                profile = subprocess.Popen(
                    ["perf", "record", "-q", "-g", "-F", "4999", "-p", str(engine), "-o",
                     os.path.join(work, "engine-profile.data")],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(0.5)
            c0 = cpu_ms()
            traced.update(finish(agent(AGENT2_UID, d.agent, {"plugin": name, "phases": [
                questions(phase, hs, gap)]})))
            c1 = cpu_ms()
            if profile and phase == "b2b":
                profile.send_signal(2)
                profile.wait(60)
            cpu_rec[phase] = per_question(c0, c1, len(hs))
        time.sleep(QUIET_S)
        rec_t1 = time.clock_gettime(time.CLOCK_MONOTONIC) * 1e3
        # Sporadic use: the fsyncs each question costs in all, whatever it set off after it.
        sparse, at = {}, cuts[3]
        for _, phase, k, gap in SPARSE:
            c0 = cpu_ms()
            traced.update(finish(agent(AGENT2_UID, d.agent, {"plugin": name, "phases": [
                questions(phase, h2[at:at + k], gap)]})))
            time.sleep(gap / 1e3)
            sparse[phase] = (time.clock_gettime(time.CLOCK_MONOTONIC) * 1e3,
                             per_question(c0, cpu_ms(), k))
            at += k
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
        who = {"systemd (the manager)": os.environ.get("LOCKD_TEST_MANAGER_PID"),
               "lockd (the spawner)": spawner, "lockd-engine": engine}
        cpu0 = {k: cpu_seconds(v) for k, v in who.items() if v}
        t0 = time.perf_counter()
        pa = agent(AGENT_UID, d.agent, {"plugin": name, "phases": [
            {"name": "two", "kind": "questions", "handles": two1, "gap_ms": 0}]})
        pb = agent(AGENT2_UID, d.agent, {"plugin": name, "phases": [
            {"name": "two", "kind": "questions", "handles": two2, "gap_ms": 0}]})
        ra, rb = finish(pa), finish(pb)
        two_wall = time.perf_counter() - t0
        cpu1 = {k: cpu_seconds(v) for k, v in who.items() if v}
        two_busy = max(sum(ra["two"]), sum(rb["two"])) / 1e3

        # The alternatives, from the same manager lockd uses, on the same files, the same gaps,
        # with nothing attached; then bare fork+exec again under perf, on the files of lockd's
        # recorded phases: the plugin's own execve -> exit under the same tracing as inside
        # lockd's sandbox.
        p = paths[AGENT_UID]
        scope = [shutil.which("systemd-run"), *([] if BUS == "system" else ["--user"]),
                 "--scope", "-q", "--", plugin]
        alt = {}
        bare, bare_at = None, {}
        for what, argv, files in (("exec", [plugin], p), ("scope", scope, p),
                                  ("exec@perf", [plugin], paths[AGENT2_UID])):
            if what == "exec@perf":
                if not syncs.proc:
                    break
                bare = Syncs(work, name="perf-bare.data")
            alternative(0, files[:WARMUP], argv)
            for phase, gap, cut in (("b2b", 0, (cuts[0], cuts[1])),
                                    ("g100", 100, (cuts[1], cuts[2])),
                                    ("g1s", 1000, (cuts[2], cuts[3]))):
                t0 = time.clock_gettime(time.CLOCK_MONOTONIC) * 1e3
                alt[what, phase] = alternative(gap, files[cut[0]:cut[1]], argv)
                if what == "exec@perf":
                    bare_at[phase] = (t0, time.clock_gettime(time.CLOCK_MONOTONIC) * 1e3)
        if bare:
            bare.stop()
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
            ("systemd-run --scope PLUGIN, 1 s apart", alt["scope", "g1s"]),
            ("under perf: lockd, cache miss, back to back", traced["b2b"]),
            ("under perf: lockd, cache miss, 100 ms apart", traced["g100"]),
            ("under perf: lockd, cache miss, 1 s apart", traced["g1s"]),
            *((f"under perf: bare fork+exec, {label}", alt["exec@perf", phase])
              for label, phase in (("back to back", "b2b"), ("100 ms apart", "g100"),
                                   ("1 s apart", "g1s")) if ("exec@perf", phase) in alt))
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
    print("lockd's CPU per question, ms (the scheduler's count of its threads), with nothing")
    print("attached and, in brackets, in the phases recorded by perf (its probes run on lockd's")
    print("CPU); and from those, lockd's fsyncs per uncached question (engine and spawner;")
    print("counted by perf on the syscall tracepoints): between the plugin's exit and the answer,")
    print("and in all (to the next question)")
    sync_med = {}
    for label, phase in (("back to back", "b2b"), ("100 ms apart", "g100"),
                         ("1 s apart", "g1s")):
        c, cr = cpu.get(phase, {}), cpu_rec.get(phase, {})
        print(f"  {label:14} CPU engine {c.get('engine', float('nan')):5.2f} "
              f"({cr.get('engine', float('nan')):4.2f}) spawner "
              f"{c.get('spawner', float('nan')):5.2f} ({cr.get('spawner', float('nan')):4.2f})")
    for label, phase in (("back to back", "b2b"), ("100 ms apart", "g100"),
                         ("1 s apart", "g1s")):
        counted = syncs.per_question(traced[phase + "@spans"], lockd_pids)
        if counted is None:
            line = f"not counted: {getattr(syncs, 'why', 'no events')}"
        else:
            crit, total = counted
            sync_med[phase] = (med(crit) if crit else float("nan"),
                               med(total) if total else float("nan"))
            line = (f"after the plugin {med(crit) if crit else float('nan'):4.1f} (max "
                    f"{max(crit) if crit else 0}), in all {med(total) if total else float('nan'):4.1f}"
                    f" (max {max(total) if total else 0}; {len(crit)} questions)")
        print(f"  {label:14} fsyncs {line}")
    syncs_all = (syncs.syncs_between(rec_t0, rec_t1, lockd_pids) / n_phases if syncs.events
                 else float("nan"))
    print(f"  the three phases together with {QUIET_S:.0f} s after them, per question: CPU engine "
          f"{cpu_all.get('engine', float('nan')):.2f} spawner "
          f"{cpu_all.get('spawner', float('nan')):.2f}; fsyncs {syncs_all:.2f}")
    syncs_sparse = {}
    for label, phase, k, gap in SPARSE:
        spans, (t_end, c) = traced[phase + "@spans"], sparse[phase]
        syncs_sparse[phase] = (syncs.syncs_between(spans[0][0], t_end, lockd_pids) / k
                               if syncs.events and spans else float("nan"))
        print(f"  {label} ({k} questions under perf, each with the {gap / 1e3:.0f} s after it), "
              f"per question: {med(traced[phase]):.2f} ms; CPU engine "
              f"{c.get('engine', float('nan')):.2f} spawner {c.get('spawner', float('nan')):.2f}; "
              f"fsyncs {syncs_sparse[phase]:.2f}")
    print("  (a budget checkpoint, two fsyncs, comes every 1024 changes or as many as there are")
    print("  budgets, three changes per uncached question: none may fall in these windows)")
    print()
    print("where an uncached question's time goes, step by step (medians, ms; perf on the syscall")
    print("and sched tracepoints in the same recording: a send where it begins, a receive where")
    print("the message is in hand, the execve where the new image runs); the plugin bare is")
    print("bench/ask-agent exec's fork+exec of the same binary under the same recording (the")
    print("recorded phases: the tracing makes each step slower than the untraced questions above)")
    phases = (("back to back", "b2b"), ("100 ms apart", "g100"), ("1 s apart", "g1s"))
    seg_med, sandbox_ratio = {}, {}
    seg = {ph: syncs.segments(traced[ph + "@spans"], engine, spawner) for _, ph in phases}
    if any(v is None for v in seg.values()):
        print(f"  not measured: {getattr(syncs, 'why', 'no events')}")
    else:
        print(f"  {'segment':50}" + "".join(f"{label:>14}" for label, _ in phases))
        n_seg = len(Syncs.SEGMENTS)
        rows = [*Syncs.SEGMENTS[:5], Syncs.EXIT_PARTS[0], *Syncs.EXIT_PARTS[2:4],
                Syncs.EXIT_PARTS[1], Syncs.SEGMENTS[5],
                "the rest (wakeups, EXITED -> record, agent)", "the question"]
        index = [0, 1, 2, 3, 4, n_seg + 2, n_seg + 4, n_seg + 5, n_seg + 3, 5, n_seg, n_seg + 1]
        for label, i in zip(rows, index):
            vals = []
            for _, ph in phases:
                got = [s[i] for s in seg[ph][0] if s[i] == s[i]]
                vals.append(med(got) if got else float("nan"))
                seg_med[ph, label] = vals[-1]
            print(f"  {label:50}" + "".join(f"{v:14.3f}" for v in vals))
        bare_runs = {ph: bare.plugin_runs(*bare_at[ph], plugin) if bare and ph in bare_at
                     else ([], [], [], []) for _, ph in phases}
        plugin_bare = {ph: bare_runs[ph][0] for _, ph in phases}
        print(f"  {'plugin bare: execve -> exit':50}" + "".join(
            f"{med(plugin_bare[ph]) if plugin_bare[ph] else float('nan'):14.3f}"
            for _, ph in phases))
        print(f"  {'plugin bare: exit -> reaped by its parent':50}" + "".join(
            f"{med(bare_runs[ph][1]) if bare_runs[ph][1] else float('nan'):14.3f}"
            for _, ph in phases))
        print(f"  {'  the exit -> the parent woken':50}" + "".join(
            f"{med([w[0] for w in bare_runs[ph][2]]) if bare_runs[ph][2] else float('nan'):14.3f}"
            for _, ph in phases))

        def same_cpu(flags):
            known = [f for f in flags if f is not None]
            return f"{sum(known)}/{len(known)}" if known else "-"

        # A wakeup on the CPU that the exiting process leaves costs a few microseconds; one on
        # another (idle) CPU costs an interprocessor interrupt, which traps to the hypervisor in
        # a VM (ARCHITECTURE.md, The sandbox).
        print(f"  {'reaper put on the CPU the plugin exited on':50}" + "".join(
            f"{same_cpu([s[n_seg + 6] for s in seg[ph][0]]):>14}" for _, ph in phases))
        print(f"  {'  bare: its parent':50}" + "".join(
            f"{same_cpu([w[1] for w in bare_runs[ph][2]]):>14}" for _, ph in phases))

        def wakes(runs, rows):
            """The rows of plugin_wakes() over runs: per run, and on the plugin's CPU/in all."""
            if not runs:
                return f"{'-':>14}"
            n = sum(r[k][0] for r in runs for k in rows)
            here = sum(r[k][1] for r in runs for k in rows)
            return f"{f'{n / len(runs):.2f} {here}/{n}':>14}"

        # Each wakeup on another vCPU costs the plugin the interprocessor interrupt (about 10 us
        # here), and one on its own CPU may preempt it (ARCHITECTURE.md, The sandbox).
        print("  the plugin's wakeups while it ran: per run, and how many were put on its own")
        print("  CPU of all (from its execve to its exit's tracepoint, after its files closed)")
        classes = range(len(Syncs.WAKEE_CLASSES))
        for k, (who, _) in enumerate(Syncs.WAKEE_CLASSES):
            print(f"  {'  ' + who:50}" + "".join(
                wakes([s[n_seg + 7] for s in seg[ph][0]], [k]) for _, ph in phases))
        print(f"  {'  bare, all of them':50}" + "".join(
            wakes(bare_runs[ph][3], classes) for _, ph in phases))
        for _, ph in phases:
            if seg[ph][0] and plugin_bare[ph]:
                sandbox_ratio[ph] = med([s[3] for s in seg[ph][0]]) / med(plugin_bare[ph])
        # bench/spawn measures each part of the sandbox alone on the plugin's own run.
        print(f"  {'plugin inside the sandbox / bare':50}" + "".join(
            f"{sandbox_ratio.get(ph, float('nan')):14.2f}" for _, ph in phases))
        print(f"  {'questions measured (skipped: an event missing)':50}" + "".join(
            f"{f'{len(seg[ph][0])} ({seg[ph][1]})':>14}" for _, ph in phases))
        print(f"  {'bare runs measured':50}" + "".join(
            f"{len(plugin_bare[ph]):14d}" for _, ph in phases))
    print()
    print("the engine's CPU profile over the back-to-back phase (perf record -g -p ENGINE; self")
    print("samples by library and function, the top 15):")
    profile_data = os.path.join(work, "engine-profile.data")
    if profile and os.path.exists(profile_data):
        lines = engine_profile(profile_data)
        for ln in lines:
            print(f"  {ln}")
        print(f"  (the whole report: {profile_data}.txt"
              + (")" if os.environ.get("LOCKD_BENCH_KEEP") == "1"
                 else ", removed at the end: LOCKD_BENCH_KEEP=1 keeps it)"))
    else:
        print(f"  not measured: {getattr(syncs, 'why', 'no profile')}")
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
    nan = float("nan")
    checks = [
        ("fsyncs after the plugin, back to back", sync_med.get("b2b", (nan, nan))[0], "<=",
         SYNCS_AFTER_PLUGIN),
        ("fsyncs per question in all, back to back", sync_med.get("b2b", (nan, nan))[1], "<=",
         SYNCS_IN_ALL),
        ("fsyncs per question, three phases and after", syncs_all, "<=", SYNCS_IN_ALL),
        *((f"fsyncs per question, {label}", syncs_sparse[phase], "<=", SYNCS_IN_ALL)
          for label, phase, _, _ in SPARSE),
        ("engine CPU per question, back to back, ms", cpu.get("b2b", {}).get("engine", nan),
         "<=", ENGINE_CPU_TARGET_MS),
        ("spawner RUN -> release, 1 s apart, ms",
         seg_med.get(("g1s", Syncs.SEGMENTS[1]), nan), "<=", SPAWNER_STEP_TARGET_MS),
        ("spawner exit -> EXITED, 1 s apart, ms",
         seg_med.get(("g1s", Syncs.SEGMENTS[4]), nan), "<=", SPAWNER_STEP_TARGET_MS),
        ("plugin in the sandbox / bare, back to back", sandbox_ratio.get("b2b", nan), "<=",
         SANDBOX_TARGET),
        ("plugin in the sandbox / bare, 1 s apart", sandbox_ratio.get("g1s", nan), "<=",
         SANDBOX_TARGET),
        ("miss / systemd-run --scope, back to back", med(one["b2b"]) / med(alt["scope", "b2b"]),
         "<=", SCOPE_TARGET_B2B),
        ("miss / systemd-run --scope, 1 s apart", med(one["g1s"]) / med(alt["scope", "g1s"]),
         "<=", SCOPE_TARGET_GAPS),
        ("miss / bare fork+exec, 100 ms apart", med(one["g100"]) / med(alt["exec", "g100"]),
         "<=", EXEC_TARGET),
        ("miss / bare fork+exec, 1 s apart", med(one["g1s"]) / med(alt["exec", "g1s"]),
         "<=", EXEC_TARGET),
        ("scoped runs/s, two agents", runs_per_s, ">=", RUNS_TARGET),
        ("1-step cache-hit answers/s", t1_answers / t1_s, ">=", HITS_TARGET),
    ]
    for label, value, op, target in checks:
        ok = value == value and (value <= target if op == "<=" else value >= target)
        print(f"{label:46} {value:10.3f}  target {op} {target:<7} {verdict(ok)}")
    print()
    print("(ratios of medians; 'miss / bare fork+exec, back to back': "
          f"{med(one['b2b']) / med(alt['exec', 'b2b']):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
