#!/usr/bin/env python3
"""A soak of lockd as hostile and ordinary agents and a busy human use it, for SECONDS (argument,
default 300), against the targets of the console's share of lockd (ARCHITECTURE.md, Listings):

- eight agent uids (bench/soak-agent.py, each as its uid): each first fills its share of the
  ticket store with 16-step --auto tickets answered from the cache (together: the store at its
  cap), then a mix: cached floods, uncached questions (the plugin runs in its sandbox and scope),
  multi-step tickets with a placeholder that wait for the human or are cancelled, invalid
  requests, connections dropped mid-message, listings;
- the console (this script, as root): approves (typing the value, sealed to the ticket) or
  denies every pending ticket, grants and revokes files, runs `lockctl tickets` every 20 s (the
  first page, timed, with the other agents' pending tickets on it) and `lockctl tickets --all`
  (the whole store, a burst), and removes, reinstalls and runs a plugin (the spawner's cache);
- every 10 s a line: the engine's and the spawner's RSS and fds, the store, requests/s.

At the end PASS or MISS per target, then one `N passed, N failed` line; the exit status is 1 when
a target is missed or a bit was wrong, except the latency target, which counts for the status
only with LOCKD_SOAK_STRICT=1 (a shared machine's scheduler decides a p99 more than lockd does;
the figure is printed either way). Run it through tests/integration/with-systemd with the
integration tests' environment, as `meson test -C build soak` does (60 s)."""

import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from lockdtest import (BUS, EPHEMERAL_FIRST, EPHEMERAL_LAST, ISSUER, LOCKCTL, PATTERN,  # noqa: E402
                       Daemon, Signer, Varlink, require_environment, tempdir)

AGENTS = list(range(63001, 63009))
SHARE = 4096 // 8  # TICKETS_KEPT_PER_AGENT
SEAL = os.environ.get("LOCKD_SEAL", "")
PAGE_TARGET_S = 1.0
RSS_TARGET_MIB = 100.0
GROWTH_TARGET_MIB_PER_MIN = 1.0
P99_TARGET_MS = 20.0
BURST_TARGET = 1.10  # the engine's RSS after a burst / before it


def policy(d):
    users = ", ".join(str(u) for u in AGENTS)
    bus = BUS if BUS in ("system", "user") else '"' + BUS + '"'
    return f"""security_level: 3
agents:
  users: [{users}]
  require_confinement: false
consoles:
  users: [0]
sockets:
  agent: {{path: {d}/agent.sock, mode: "0666"}}
  console: {{path: {d}/run/console.sock, mode: "0600"}}
state_directory: {d}/state
runtime_directory: {d}/run
ephemeral_uids: {{first: {EPHEMERAL_FIRST}, last: {EPHEMERAL_LAST}}}
limits:
  concurrent_runs: 4
  connections_per_uid: 256
  connections_total: 1024
  console_connections: 64
  message_bytes: 64KiB
scope:
  backend: systemd
  bus: {bus}
  slice: lockd-soak.slice
"""


def children(pid):
    out = []
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/children") as f:
            out += [int(c) for c in f.read().split()]
    return out


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def nfds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


class Console:
    """The human's side, as root on the console socket: every call timed."""

    def __init__(self, d):
        self.d = d
        self.v = Varlink(d.console)
        self.lat = []
        self.by_method = {}

    def call(self, method, params=None, fds=()):
        t0 = time.perf_counter()
        r = self.v.call("io.lockd.Console." + method, params, fds)
        # A plugin's run is the plugin's time, not the console's.
        if method != "TestPlugin":
            ms = (time.perf_counter() - t0) * 1e3
            self.lat.append(ms)
            self.by_method.setdefault(method, []).append(ms)
        return r

    def grant(self, path, uid, label, auto):
        with open(path, "rb") as f:
            r = self.call("Grant", {"file_fd": 0, "agent": str(uid), "label": label,
                                    "auto": auto}, fds=[f.fileno()])
        if "error" in r or "parameters" not in r:
            raise RuntimeError(f"Grant: {r}")
        return r["parameters"]["handle"]

    def seal(self, ticket, name, key, value):
        r = subprocess.run([SEAL, ticket, name, key], input=value.encode(), capture_output=True,
                           timeout=10)
        if r.returncode != 0:
            raise RuntimeError(f"lockd-seal: {r.stderr}")
        return r.stdout.decode().strip()


def lockctl(d, *args):
    t0 = time.perf_counter()
    r = subprocess.run([LOCKCTL, "--socket", d.console, *args], capture_output=True, text=True,
                       timeout=120)
    return r, time.perf_counter() - t0


def main():
    seconds = float(os.environ.get("LOCKD_SOAK_SECONDS") or (sys.argv[1] if len(sys.argv) > 1 else 300))
    require_environment()
    work = tempdir()
    signer = Signer(work)
    top = os.path.join(work, "d")
    os.mkdir(top)
    d = Daemon(top, policy=policy(top))
    d.start()
    spawner = d.proc.pid
    engine = next(c for c in children(spawner)
                  if open(f"/proc/{c}/comm").read().strip() == "lockd-engine")
    results = []  # (name, ok, text)
    samples = []  # (t, engine rss, engine fds, spawner rss, spawner fds, requests)
    agents, progress = [], {}
    stop = threading.Event()
    try:
        d.lockctl("marketplace", "add", "local", "--issuer", ISSUER, "--identity", PATTERN,
                  "--trusted-root", signer.root, check_rc=0)
        rels = {}
        for case in ("good-one", "good-zero", "good-inputs"):
            rels[case] = signer.release(case, os.path.join(work, "rel", case))
            d.lockctl("plugin", "install", rels[case], "--marketplace", "local", check_rc=0)
        con = Console(d)
        files = os.path.join(work, "files")
        os.mkdir(files)
        n_file = [0]

        def new_file(text):
            n_file[0] += 1
            p = os.path.join(files, f"f{n_file[0]:06d}.txt")
            with open(p, "w") as f:
                f.write(text)
            return p

        fresh = {u: [] for u in AGENTS}
        for u in AGENTS:
            con.grant(new_file(f"the flood's content for {u}\n"), u, "flood", True)
            con.grant(new_file(f"a manual file of {u}: it holds needle-a\n"), u, "manual", False)
            for _ in range(8):
                fresh[u].append(con.grant(new_file(f"fresh {n_file[0]} {u}\n"), u,
                                          f"fresh-{n_file[0]}", True))

        # The agents, each as its uid; each fills its share first.
        rss0 = rss_mib(engine)
        t_start = time.monotonic()
        for i, u in enumerate(AGENTS):
            pdir = os.path.join(work, f"agent-{u}")
            os.mkdir(pdir)
            os.chown(pdir, u, u)
            pf = os.path.join(pdir, "progress.json")
            progress[u] = pf
            # The agents are Python: at nice 10, so that on a small machine the harness's own
            # CPU does not starve lockd, whose share the soak measures.
            agents.append(subprocess.Popen(
                ["nice", "-n", "10", "setpriv", f"--reuid={u}", f"--regid={u}", "--clear-groups",
                 sys.executable,
                 os.path.join(HERE, "soak-agent.py"), d.agent, str(seconds), str(i), pf,
                 str(SHARE + 8)],
                stdout=subprocess.PIPE, text=True))

        def requests():
            n = 0
            for pf in progress.values():
                try:
                    with open(pf) as f:
                        n += json.load(f)["requests"]
                except (OSError, ValueError):
                    pass
            return n

        def sampler():
            last_n, last_t = 0, time.monotonic()
            while not stop.wait(10):
                now, n = time.monotonic(), requests()
                s = (now - t_start, rss_mib(engine), nfds(engine), rss_mib(spawner),
                     nfds(spawner), n)
                samples.append(s)
                print(f"soak: t={s[0]:5.0f}s engine {s[1]:6.1f} MiB {s[2]:4d} fds  spawner "
                      f"{s[3]:5.1f} MiB {s[4]:3d} fds  {(n - last_n) / (now - last_t):6.0f} req/s",
                      flush=True)
                last_n, last_t = n, now

        th = threading.Thread(target=sampler, daemon=True)
        th.start()

        rnd = random.Random(7)
        decided = set()
        pages, page_ok, bursts, spawner_fds = [], [], [], []
        next_grant = next_list = next_cycle = time.monotonic()
        next_list += 20
        next_cycle += 15
        while any(a.poll() is None for a in agents):
            now = time.monotonic()
            # Decide what waits: approve with the value the file holds, or deny.
            r = con.call("ListTickets", {"state": "pending", "limit": 64})
            for t in r.get("parameters", {}).get("tickets", []):
                if t["ticket"] in decided:
                    continue
                decided.add(t["ticket"])
                if rnd.random() < 0.7:
                    values = {}
                    if t.get("seal_key"):
                        values = {"word": con.seal(t["ticket"], "word", t["seal_key"],
                                                   "needle-a")}
                    con.call("Approve", {"ticket": t["ticket"], "values": values})
                else:
                    con.call("Deny", {"ticket": t["ticket"]})
            if now >= next_grant:
                u = rnd.choice(AGENTS)
                fresh[u].append(con.grant(new_file(f"fresh {n_file[0]} {u}\n"), u,
                                          f"fresh-{n_file[0]}", True))
                if len(fresh[u]) > 24:
                    con.call("Revoke", {"handle": fresh[u].pop(0)})
                next_grant = now + 0.25
            if now >= next_list:
                # What the human types: the first page, timed, with what waits on it.
                pend = con.call("ListTickets", {"state": "pending", "limit": 256})
                want = {t["ticket"] for t in pend.get("parameters", {}).get("tickets", [])}
                res, took = lockctl(d, "tickets", "--json")
                ok = res.returncode == 0
                got = {}
                if ok:
                    got = json.loads(res.stdout)
                    states = [t["state"] for t in got["tickets"]]
                    n_pend = states.count("pending")
                    # Every ticket pending when the page was read is on it, before the rest.
                    ok = (n_pend == min(got.get("pending", -1), len(states)) and
                          states[:n_pend] == ["pending"] * n_pend)
                pages.append(took)
                page_ok.append((ok, got.get("total", len(got.get("tickets", []))), len(want),
                                res.stderr.strip()[:200]))
                # A burst: the whole store, every page; the engine's memory after it.
                before = rss_mib(engine)
                res, took_all = lockctl(d, "tickets", "--all", "--json")
                time.sleep(3)
                bursts.append((before, rss_mib(engine), took_all, res.returncode))
                next_list = time.monotonic() + 20
            if now >= next_cycle:
                # The spawner's cache: a plugin removed, installed again and run.
                d.lockctl("plugin", "remove", "test.good-zero", check_rc=0)
                d.lockctl("plugin", "install", rels["good-zero"], "--marketplace", "local",
                          check_rc=0)
                p = new_file("a plugin run by the console\n")
                with open(p, "rb") as f:
                    con.call("TestPlugin", {"name": "test.good-zero", "file_fd": 0},
                             fds=[f.fileno()])
                time.sleep(1.5)
                spawner_fds.append(nfds(spawner))
                next_cycle = time.monotonic() + 15
            time.sleep(0.2)
        stop.set()
        outs = []
        for a in agents:
            out, _ = a.communicate(timeout=60)
            outs.append(json.loads(out.strip().splitlines()[-1]) if out.strip() else
                        {"wrong": 1, "problems": [f"agent exit {a.returncode}"]})
        r = con.call("ListTickets", {"limit": 1})
        if "error" in r or "parameters" not in r:  # a lockd whose ListTickets does not page
            r = con.call("ListTickets")
        p = r.get("parameters", {})
        total = {"total": p.get("total", len(p.get("tickets", []))),
                 "pending": p.get("pending", sum(1 for t in p.get("tickets", [])
                                                if t["state"] == "pending"))}
        con.v.close()
    finally:
        stop.set()
        for a in agents:
            if a.poll() is None:
                a.kill()
        d.stop()

    # The figures.
    wall = max(seconds, 1)
    reqs = sum(o.get("requests", 0) for o in outs)
    wrong = sum(o.get("wrong", 0) for o in outs)
    print(f"soak: {len(AGENTS)} agents {seconds:.0f} s: {reqs} requests ({reqs / wall:.0f}/s), "
          f"{sum(o.get('answers', 0) for o in outs)} answers, "
          f"{sum(o.get('runs', 0) for o in outs)} uncached runs, "
          f"{sum(o.get('approved', 0) for o in outs)} approved, "
          f"{sum(o.get('denied', 0) for o in outs)} denied, "
          f"{sum(o.get('cancelled', 0) for o in outs)} cancelled, "
          f"{sum(o.get('dropped', 0) for o in outs)} dropped connections, "
          f"{sum(o.get('errors_expected', 0) for o in outs)} invalid requests refused; "
          f"store {total['total']} tickets, {total['pending']} pending")
    for o in outs:
        for p in o.get("problems", []):
            print(f"soak: problem: {p}")
    results.append(("every bit right, every request answered", wrong == 0, f"{wrong} wrong"))
    if pages:
        worst = max(pages)
        full = [x for x in page_ok if x[1] >= 4000]
        results.append(("lockctl tickets: the first page, store full, in under "
                        f"{PAGE_TARGET_S:.0f} s with every pending ticket on it",
                        worst < PAGE_TARGET_S and all(x[0] for x in page_ok) and bool(full),
                        f"worst {worst * 1e3:.0f} ms over {len(pages)}; store "
                        f"{[x[1] for x in page_ok]}; pending {[x[2] for x in page_ok]}; "
                        f"{[x[3] for x in page_ok if not x[0]]}"))
    if samples:
        peak = max(s[1] for s in samples)
        # What a kept ticket costs: the engine before the flood against the set full (the first
        # sample, taken after each agent filled its share), over the 16-step tickets kept.
        print(f"soak: the engine {rss0:.1f} MiB before the flood, {samples[0][1]:.1f} MiB with "
              f"{total['total']} tickets kept: {(samples[0][1] - rss0) * 1024 / max(total['total'], 1):.1f} "
              f"KiB per 16-step ticket")
        results.append((f"the engine's RSS at most {RSS_TARGET_MIB:.0f} MiB", peak <= RSS_TARGET_MIB,
                        f"peak {peak:.1f} MiB"))
        # Growth after the first minute (after the first third in a shorter run).
        t0 = min(60.0, seconds / 3)
        later = [s for s in samples if s[0] >= t0]
        if len(later) >= 2:
            mins = (later[-1][0] - later[0][0]) / 60
            growth = (later[-1][1] - later[0][1]) / mins if mins > 0 else 0
            results.append((f"the engine grows at most {GROWTH_TARGET_MIB_PER_MIN} MiB a minute "
                            f"after t={t0:.0f}s", growth <= GROWTH_TARGET_MIB_PER_MIN,
                            f"{growth:+.2f} MiB/min ({later[0][1]:.1f} -> {later[-1][1]:.1f})"))
    if bursts:
        ratio = max(b[1] / b[0] for b in bursts)
        results.append(("memory comes back: the engine's RSS 3 s after `lockctl tickets --all` "
                        f"within {int((BURST_TARGET - 1) * 100)} % of before",
                        ratio <= BURST_TARGET and all(b[3] == 0 for b in bursts),
                        "; ".join(f"{b[0]:.1f} -> {b[1]:.1f} MiB ({b[2] * 1e3:.0f} ms, exit {b[3]})"
                                  for b in bursts)))
    if len(spawner_fds) >= 2:
        results.append(("the spawner's fds flat across remove/install cycles",
                        spawner_fds[-1] <= spawner_fds[0] + 2, f"{spawner_fds}"))
    # The console's latency is what the human waits on while deciding: the listings, a ticket,
    # an approval (its audit record made durable first) and a denial. Grants and revokes copy a
    # file in a child and write the handle store and the log durably: shown, not held to it.
    decide = [ms for m in ("ListTickets", "GetTicket", "Approve", "Deny")
              for ms in con.by_method.get(m, [])]
    lat = sorted(decide)
    if lat:
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        each = ", ".join(
            f"{m} {statistics.median(v):.1f}/{sorted(v)[min(len(v) - 1, int(len(v) * 0.99))]:.1f}"
            for m, v in sorted(con.by_method.items()))
        results.append((f"the console's p99 latency (listings and decisions) at most "
                        f"{P99_TARGET_MS:.0f} ms", p99 <= P99_TARGET_MS or "latency",
                        f"p50 {statistics.median(lat):.2f} ms, p99 {p99:.2f} ms over "
                        f"{len(lat)} calls (p50/p99 ms per method: {each})"))
    strict = os.environ.get("LOCKD_SOAK_STRICT") == "1"
    passed = sum(1 for r in results if r[1] is True)
    for name, ok, text in results:
        print(f"soak: {'PASS' if ok is True else 'MISS'} {name}: {text}")
    print(f"{passed} passed, {len(results) - passed} failed")
    hard = [r for r in results if r[1] is not True and (strict or r[1] != "latency")]
    return 1 if hard else 0


if __name__ == "__main__":
    sys.exit(main())
