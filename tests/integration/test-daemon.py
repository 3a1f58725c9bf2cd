#!/usr/bin/env python3
"""lockd against a real systemd manager: sockets, roles, every console method, runs in transient
scopes (limits, OOM, timeout), SIGTERM with runs in flight, SIGHUP with a bad policy, many
connections and hostile messages. TAP on stdout. Run through tests/integration/with-systemd."""

import hashlib
import json
import os
import pty
import re
import shlex
import select
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lockdtest import (AGENT2_UID, AGENT_UID, CONSOLE_UID, ISSUER, LOCKCTL, PATTERN, PLUGINS_SRC,  # noqa: E402
                       STRANGER_UID, Daemon, Failed, Tap, Varlink, World, agent_handles, call, call_as,
                       budget_snapshot, check, comm, grant, grant_file, plugin_processes,
                       policy_text, read_audit,
                       require_environment, run_units, systemctl, tempdir, unit_pids,
                       unit_properties, units,
                       wait_for)

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "varlink")
SOAK_AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                          "soak-agent.py")


def test_ready(w):
    """lockd on a policy file tells the manager READY=1 and a STATUS= line"""
    check(any("READY=1" in n for n in w.d.notifications), f"no READY=1 in {w.d.notifications}")
    check(any("STATUS=" in n for n in w.d.notifications), f"no STATUS= in {w.d.notifications}")


def test_getinfo_roles(w):
    """GetInfo lists the console interface to a console and only the agent one to an agent"""
    r = w.d.console_call("org.varlink.service.GetInfo")
    ifaces = r["parameters"]["interfaces"]
    check("io.lockd.Console" in ifaces and "io.lockd.Agent" not in ifaces, f"console sees {ifaces}")
    r = call_as(AGENT_UID, w.d.agent, "org.varlink.service.GetInfo")
    ifaces = r["parameters"]["interfaces"]
    check("io.lockd.Agent" in ifaces and "io.lockd.Console" not in ifaces, f"agent sees {ifaces}")


def test_interface_description(w):
    """GetInterfaceDescription serves the interface texts of docs/varlink byte for byte"""
    for name in ("io.lockd.Console", "io.lockd.Agent"):
        with open(os.path.join(DOCS, name + ".varlink")) as f:
            want = f.read()
        who = (lambda m, p: w.d.console_call(m, p)) if name.endswith("Console") else \
            (lambda m, p: call_as(AGENT_UID, w.d.agent, m, p))
        r = who("org.varlink.service.GetInterfaceDescription", {"interface": name})
        check(r.get("parameters", {}).get("description") == want, f"{name}: {r}")


def test_stranger_dropped(w):
    """a peer in no role is dropped at accept, and the drop is logged"""
    for path in (w.d.agent, w.d.console):
        r = call_as(STRANGER_UID, path, "org.varlink.service.GetInfo")
        check("transport" in r, f"a stranger got an answer on {path}: {r}")
    wait_for(lambda: f"uid {STRANGER_UID}" in w.d.read_log(), what="the refusal in the log")


def test_wrong_socket(w):
    """a console on the agent socket and an agent on the console socket are dropped at accept"""
    r = call_as(CONSOLE_UID, w.d.agent, "org.varlink.service.GetInfo")
    check("transport" in r, f"a console was served on the agent socket: {r}")
    r = call_as(AGENT_UID, w.d.console, "org.varlink.service.GetInfo")
    check("transport" in r, f"an agent was served on the console socket: {r}")


def test_agent_console_method(w):
    """an interface a peer may not use answers like one that does not exist, both ways"""
    r = call_as(AGENT_UID, w.d.agent, "io.lockd.Console.Status")
    check(r.get("error") == "org.varlink.service.InterfaceNotFound" and
          r["parameters"] == {"interface": "io.lockd.Console"}, f"agent → console: {r}")
    r = call_as(AGENT_UID, w.d.agent, "io.lockd.Nothing.Status")
    check(r.get("error") == "org.varlink.service.InterfaceNotFound" and
          r["parameters"] == {"interface": "io.lockd.Nothing"}, f"agent → nothing: {r}")
    r = call_as(AGENT_UID, w.d.agent, "org.varlink.service.GetInterfaceDescription",
                {"interface": "io.lockd.Console"})
    check(r.get("error") == "org.varlink.service.InterfaceNotFound", f"agent → description: {r}")
    r = w.d.console_call("io.lockd.Agent.ListPlugins")
    check(r.get("error") == "org.varlink.service.InterfaceNotFound", f"console → agent: {r}")


def test_console_other_uid(w):
    """a non-root console uid from the policy runs lockctl status"""
    r = w.d.lockctl("status", "--json", uid=CONSOLE_UID, check_rc=0)
    st = json.loads(r.stdout)
    check(st["security_level"] == 2 and st["scope_backend"] == "systemd", f"status: {st}")
    check("cap_setuid" in st["capabilities"] and "cap_sys_admin" not in st["capabilities"],
          f"capabilities: {st['capabilities']}")


def test_overlapping_roles_refused(w):
    """a policy whose agents and consoles overlap keeps lockd from starting"""
    d = os.path.join(w.dir, "overlap")
    os.mkdir(d)
    text = policy_text(d).replace(f"users: [0, {CONSOLE_UID}]", f"users: [0, {AGENT_UID}]")
    dm = Daemon(d, policy=text)
    try:
        dm.start()
        dm.stop()
        raise Failed("lockd started with overlapping roles")
    except Failed as e:
        if "started with" in str(e):
            raise
    check(dm.proc.returncode not in (0, None), f"exit {dm.proc.returncode}")
    check(re.search(r"overlap|both|agents and consoles", dm.read_log(), re.I), dm.read_log())


def test_no_manager_refused(w):
    """with no systemd manager at the policy's bus address lockd refuses to start"""
    d = os.path.join(w.dir, "nomanager")
    os.mkdir(d)
    text = re.sub(r"^  bus: .*$", f'  bus: "unix:path={d}/nothing-here"', policy_text(d), flags=re.M)
    dm = Daemon(d, policy=text)
    try:
        dm.start()
        dm.stop()
        raise Failed("lockd started without a manager")
    except Failed as e:
        if "started without" in str(e):
            raise
    check(dm.proc.returncode not in (0, None), f"exit {dm.proc.returncode}")
    check("no systemd manager" in dm.read_log() and "backend: none" in dm.read_log(),
          dm.read_log())


def test_backend_none(w):
    """scope.backend none is said at start, and a run then goes without a scope (and without a
    peak memory lockd could tell: unknown, never the spawner's size)"""
    d = os.path.join(w.dir, "noscope")
    os.mkdir(d)
    text = re.sub(r"^  backend: systemd$", "  backend: none", policy_text(d), flags=re.M)
    dm = Daemon(d, policy=text)
    dm.start()
    try:
        check("no transient scope" in dm.read_log(), dm.read_log())
        dm.lockctl("marketplace", "add", "local", "--issuer", ISSUER, "--identity", PATTERN,
                   "--trusted-root", w.signer.root, check_rc=0)
        dm.lockctl("plugin", "install", w.release("good-one"), "--marketplace", "local",
                   check_rc=0)
        path = os.path.join(w.dir, "sample.txt")
        with open(path, "w") as f:
            f.write("hello")
        r = dm.lockctl("plugin", "run", "test.good-one", path, "--json", check_rc=0)
        out = json.loads(r.stdout)
        check(out.get("result") == 1 and "unit" not in out, r.stdout)
        # Without a cgroup a trivial plugin's own peak cannot be told (its maxrss is the
        # spawner's size, shared until its execve): absent, and "unknown" to the human; never
        # the spawner's figure.
        check("peak_memory_bytes" not in out, r.stdout)
        r = dm.lockctl("plugin", "run", "test.good-one", path, check_rc=0)
        check("peak memory: unknown" in r.stderr, r.stderr)
    finally:
        dm.stop()


def test_check_config(w):
    """lockd --check-config prints the effective policy, and names line:column of an error"""
    r = subprocess.run([os.environ["LOCKD"], "--check-config", w.d.policy], capture_output=True,
                       text=True, timeout=30)
    check(r.returncode == 0 and "security_level: 2" in r.stdout, r.stdout + r.stderr)
    bad = os.path.join(w.dir, "bad.yaml")
    with open(bad, "w") as f:
        f.write("security_level: 2\nlimits:\n  bogus: 1\n")
    r = subprocess.run([os.environ["LOCKD"], "--check-config", bad], capture_output=True,
                       text=True, timeout=30)
    check(r.returncode == 1 and re.search(r":3:3: E_POLICY_UNKNOWN_KEY", r.stderr), r.stderr)
    # A marketplace of the policy file whose identity the lint warns about (every repository of
    # an owner, match-all): refused at its line:column, by --check-config and at start, unless
    # force: true; then --check-config and every start say why it was warned.
    for pattern, at in (("^https://github\\\\.com/acme/.*", "W_IDENTITY_PREFIX_REPO"),
                        ("^.*$", "W_IDENTITY_PREFIX_REPO"),
                        ("^https://github\\\\.com/acme/x/|.*", "W_IDENTITY_ALTERNATION")):
        top = os.path.join(w.dir, f"d-lint-{len(at)}-{abs(hash(pattern))}")
        os.makedirs(top, exist_ok=True)
        text = policy_text(top, f"""marketplaces:
  - name: loose
    issuer: {ISSUER}
    identity: "{pattern}"
    trusted_root: {w.signer.root}
""")
        d = Daemon(top, policy=text)
        r = subprocess.run([os.environ["LOCKD"], "--check-config", d.policy], capture_output=True,
                           text=True, timeout=30)
        check(r.returncode == 1 and re.search(r":\d+:15: E_POLICY_VALUE: marketplaces\[0\]"
                                              r"\.identity: W_IDENTITY_", r.stderr) and
              "force: true" in r.stderr, f"{pattern}: {r.stderr}")
        try:
            d.start()
            started = True
        except Failed:
            started = False
        finally:
            d.stop()
        check(not started and "E_POLICY_VALUE" in d.read_log(), f"{pattern}: lockd started")
        with open(d.policy, "w") as f:
            f.write(text.replace(f"trusted_root: {w.signer.root}",
                                 f"trusted_root: {w.signer.root}\n    force: true"))
        r = subprocess.run([os.environ["LOCKD"], "--check-config", d.policy], capture_output=True,
                           text=True, timeout=30)
        check(r.returncode == 0 and "warning: marketplace loose" in r.stderr and at in r.stderr,
              f"{pattern} forced: {r.stderr}")
        d.start()
        try:
            check(f"marketplace loose accepted with force: true despite {at}" in d.read_log() or
                  "accepted with force: true despite W_IDENTITY_" in d.read_log(),
                  f"{pattern}: the start did not log the warning")
        finally:
            d.stop()


def test_marketplace_methods(w):
    """AddMarketplace warns and needs --force for a loose pattern; List and Remove work"""
    r = w.d.lockctl("marketplace", "add", "loose", "--issuer", ISSUER, "--identity",
                    "^https://github.com/acme", "--trusted-root", w.signer.root)
    check(r.returncode == 1 and "--force" in r.stderr + r.stdout, r.stdout + r.stderr)
    r = w.d.console_call("io.lockd.Console.ListMarketplaces")
    check(all(m["name"] != "loose" for m in r["parameters"]["marketplaces"]), f"{r}")
    w.d.lockctl("marketplace", "add", "loose", "--issuer", ISSUER, "--identity",
                "^https://github.com/acme", "--trusted-root", w.signer.root, "--force", check_rc=0)
    r = w.d.lockctl("marketplace", "list", "--json", check_rc=0)
    check(any(m["name"] == "loose" for m in json.loads(r.stdout)["marketplaces"]), r.stdout)
    w.d.lockctl("marketplace", "remove", "loose", check_rc=0)
    r = w.d.console_call("io.lockd.Console.RemoveMarketplace", {"name": "loose"})
    check(r.get("error") == "io.lockd.Console.UnknownMarketplace", f"{r}")
    w.ensure_marketplace()


def test_install_list_remove(w):
    """a signed release installs, lists for the console and the agent, and is removed"""
    name = w.install("good-one")
    r = w.d.lockctl("plugin", "list", "--json", check_rc=0)
    plugins = json.loads(r.stdout)["plugins"]
    p = [p for p in plugins if p["name"] == name]
    check(p and p[0]["marketplace"] == "local" and p[0]["signed"] is True, r.stdout)
    r = call_as(AGENT_UID, w.d.agent, "io.lockd.Agent.ListPlugins")
    ap = [p for p in r["parameters"]["plugins"] if p["name"] == name]
    check(ap and "binary_sha256" not in ap[0] and ap[0]["question"], f"agent view: {r}")
    w.d.lockctl("plugin", "remove", name, check_rc=0)
    r = w.d.console_call("io.lockd.Console.ListPlugins")
    check(all(p["name"] != name for p in r["parameters"]["plugins"]), f"{r}")
    r = w.d.console_call("io.lockd.Console.RemovePlugin", {"name": name})
    check(r.get("error") == "io.lockd.Console.UnknownPlugin", f"{r}")


def test_install_refused(w):
    """a release signed for another version's tag is refused with its reason"""
    w.ensure_marketplace()
    src = open(os.path.join(PLUGINS_SRC, "good-zero", "plugin.toml")).read()
    rel = w.signer.release("good-zero", os.path.join(w.dir, "rel", "tampered"), src)
    with open(os.path.join(rel, "plugin"), "ab") as f:
        f.write(b"x")
    r = w.d.lockctl("plugin", "install", rel, "--marketplace", "local")
    check(r.returncode == 1 and "RELEASE_E_BUNDLE" in r.stderr, r.stdout + r.stderr)


def test_update_typed_name(w):
    """an update that changes the question needs the plugin's name typed"""
    w.ensure_marketplace()
    src = open(os.path.join(PLUGINS_SRC, "good-zero", "plugin.toml")).read()
    w.signer.release("good-zero", os.path.join(w.dir, "rel", "z1"), src)
    w.d.lockctl("plugin", "install", os.path.join(w.dir, "rel", "z1"), "--marketplace", "local",
                check_rc=0)
    v2 = re.sub(r'version = ".*"', 'version = "2.0.0"', src)
    v2 = re.sub(r'question = ".*"', 'question = "Is this a new question?"', v2)
    w.signer.release("good-zero", os.path.join(w.dir, "rel", "z2"), v2)
    r = w.d.lockctl("plugin", "install", os.path.join(w.dir, "rel", "z2"), "--marketplace", "local")
    check(r.returncode == 1 and "name" in r.stderr, r.stdout + r.stderr)
    r = w.d.lockctl("plugin", "install", os.path.join(w.dir, "rel", "z2"), "--marketplace", "local",
                    "--accept-name", "wrong.name")
    check(r.returncode == 1, r.stdout + r.stderr)
    w.d.lockctl("plugin", "install", os.path.join(w.dir, "rel", "z2"), "--marketplace", "local",
                "--accept-name", "test.good-zero", check_rc=0)
    r = w.d.console_call("io.lockd.Console.ListPlugins")
    p = [p for p in r["parameters"]["plugins"] if p["name"] == "test.good-zero"]
    check(len(p) == 1 and p[0]["version"] == "2.0.0", f"{p}")


def test_reinstall_after_remove(w):
    """the update rule holds after a remove: the name's highest version and its meaning are
    remembered, so another meaning needs a new major version and the typed name"""
    w.ensure_marketplace()
    src = open(os.path.join(PLUGINS_SRC, "environment", "plugin.toml")).read()

    def rel(tag, text):
        return w.signer.release("environment", os.path.join(w.dir, "rel", "env-" + tag), text)

    def install(path, *extra):
        return w.d.lockctl("plugin", "install", path, "--marketplace", "local", *extra)

    v1 = rel("1.0.0", src)
    check(install(v1).returncode == 0, "install 1.0.0")
    w.d.lockctl("plugin", "remove", "test.environment", check_rc=0)
    other = re.sub(r'question = ".*"', 'question = "Question B?"', src)
    minor = rel("1.1.0", re.sub(r'version = ".*"', 'version = "1.1.0"', other))
    r = install(minor)
    check(r.returncode == 1 and "UPDATE_REFUSED_MEANING" in r.stdout + r.stderr,
          f"another meaning without a major version after a remove: {r.stdout}{r.stderr}")
    major = rel("2.0.0", re.sub(r'version = ".*"', 'version = "2.0.0"', other))
    r = install(major)
    check(r.returncode == 1 and "name" in r.stderr, f"no typed name: {r.stdout}{r.stderr}")
    check(install(major, "--accept-name", "test.environment").returncode == 0, "typed name")
    # The same version and meaning again after a remove is a reinstall, no question asked.
    w.d.lockctl("plugin", "remove", "test.environment", check_rc=0)
    check(install(major).returncode == 0, "reinstall of the remembered version")
    # Going back to the first meaning is refused, removed or not.
    w.d.lockctl("plugin", "remove", "test.environment", check_rc=0)
    r = install(v1)
    check(r.returncode == 1 and "UPDATE_REFUSED" in r.stdout + r.stderr,
          f"back to 1.0.0: {r.stdout}{r.stderr}")
    hist = open(os.path.join(w.d.dir, "state", "plugin-history", "test.environment.toml")).read()
    check('version = "2.0.0"' in hist and "Question B?" in hist, f"history: {hist}")


def test_manager_reexec(w):
    """the manager re-executed (daemon-reexec) drops lockd's bus: lockd connects again, and a
    run after it gets its scope as before"""
    name = w.install("good-one")
    path = os.path.join(w.dir, "reexec.txt")
    with open(path, "w") as f:
        f.write("x")
    r = systemctl("daemon-reexec")
    check(r.returncode == 0, f"daemon-reexec: {r.stderr}")
    wait_for(lambda: "connected to the manager at" in w.d.read_log(), timeout=15,
             what="lockd to connect again")
    check("dropped" in w.d.read_log(), "the drop was not logged")
    out = wait_for(lambda: (lambda r: json.loads(r.stdout) if r.returncode == 0 else None)(
        w.d.lockctl("plugin", "run", name, path, "--json")), timeout=15, what="a run after it")
    check(out.get("result") == 1 and out.get("unit", "").startswith("lockd-run-"), f"{out}")


def test_reexec_runs_in_flight(w):
    """the manager re-executed with runs in flight: no run answers wrongly (each gives its 1 or
    fails closed with an error), no scope or plugin process is left, lockd connects again"""
    name = w.install("slow-answer")
    path = os.path.join(w.dir, "inflight.txt")
    with open(path, "w") as f:
        f.write("x")
    before = w.d.read_log().count("connected to the manager at")
    cmd = [LOCKCTL, "--socket", w.d.console, "plugin", "run", name, path, "--json"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    wait_for(lambda: len(run_units()) >= 2, timeout=15, what="two runs in their scopes")
    # One more started as the manager goes: its scope may be in the making.
    procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    r = systemctl("daemon-reexec")
    check(r.returncode == 0, f"daemon-reexec: {r.stderr}")
    outcomes = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        if p.returncode == 0:
            res = json.loads(out).get("result")
            check(res == 1, f"a run in flight answered {out}")
            outcomes.append("1")
        elif out.strip():
            # A run that failed closed: its report says how, and gives no bit.
            rep = json.loads(out)
            check(rep.get("result") is None and (rep.get("outcome") or rep.get("cause")),
                  f"a failed run's report: {out}")
            outcomes.append(f"{rep.get('outcome')}:{rep.get('cause')}")
        else:
            check(err.strip().startswith("lockctl:"), f"a run failed without a clear error: {err}")
            outcomes.append(err.strip())
    print(f"# runs in flight across daemon-reexec: {outcomes}", flush=True)
    wait_for(lambda: w.d.read_log().count("connected to the manager at") > before, timeout=15,
             what="lockd to connect again")
    wait_for(lambda: not plugin_processes(), timeout=15, what="no plugin process left")
    # A scope given up on is stopped once lockd is back: none may stay loaded. 30 s: the manager,
    # just re-executed, stops them one job at a time, on a machine that may run other suites.
    try:
        wait_for(lambda: not run_units(), timeout=30, what="every run scope gone")
    except Failed:
        left = {u: [(p, comm(p)) for p in unit_pids(u)] for u in run_units()}
        raise Failed(f"run scopes left after 30 s, with their processes: {left}")
    time.sleep(2)
    check(not run_units(), f"run scopes came back: {run_units()}")
    out = wait_for(lambda: (lambda r: json.loads(r.stdout) if r.returncode == 0 else None)(
        w.d.lockctl("plugin", "run", w.install("good-one"), path, "--json")), timeout=15,
        what="a run after it")
    check(out.get("result") == 1, f"{out}")


def test_run_answer(w):
    """TestPlugin runs an installed plugin in its scope and answers 1; the scope is gone after"""
    name = w.install("good-one")
    path = os.path.join(w.dir, "sample.txt")
    with open(path, "w") as f:
        f.write("hello")
    r = w.d.lockctl("plugin", "run", name, path, "--json", check_rc=0)
    out = json.loads(r.stdout)
    check(out.get("result") == 1 and out.get("unit", "").startswith("lockd-run-"), r.stdout)
    wait_for(lambda: out["unit"] not in units(), what=f"{out['unit']} to go away")


def run_async(w, name, path):
    """Starts a TestPlugin call and returns (thread, box) where box gets the answer."""
    box = {}

    def go():
        v = Varlink(w.d.console, timeout=60)
        try:
            with open(path, "rb") as f:
                box["r"] = v.call("io.lockd.Console.TestPlugin", {"name": name, "file_fd": 0},
                                  fds=[f.fileno()])
        except Exception as e:  # noqa: BLE001
            box["e"] = e
        finally:
            v.close()

    t = threading.Thread(target=go)
    t.start()
    return t, box


def test_scope_limits(w):
    """a run shows up as a scope with its limits while it runs and is gone afterwards"""
    name = w.install("slow-answer")
    path = os.path.join(w.dir, "sample.txt")
    t, box = run_async(w, name, path)
    # Active only: a unit an earlier test's manager still lists as a stub is not this run's.
    unit = wait_for(lambda: [u for u in run_units() if u.startswith("lockd-run-") and unit_properties(
        u, "ActiveState").get("ActiveState") == "active"], timeout=10, what="the run's scope")[0]
    props = unit_properties(unit, "MemoryMax", "TasksMax", "RuntimeMaxUSec", "CollectMode",
                            "Slice", "ActiveState")
    check(props.get("ActiveState") == "active", f"{props}")
    check(props.get("MemoryMax") == str(128 * 1024 * 1024 + 40 * 1024 * 1024), f"{props}")
    check(props.get("TasksMax") == "544", f"{props}")
    # The plugin's 10 s timeout and 10 s behind it; for a scope made ahead, its 2 min wait too.
    check(props.get("RuntimeMaxUSec") in ("20s", "2min 20s"), f"{props}")
    check(props.get("CollectMode") == "inactive-or-failed", f"{props}")
    check(props.get("Slice") == "lockd-test.slice", f"{props}")
    t.join(30)
    check(box.get("r", {}).get("parameters", {}).get("result") == 1, f"{box}")
    wait_for(lambda: unit not in units(), what=f"{unit} to go away")


def test_timeout(w):
    """a plugin past its timeout is killed with its unit: plugin_error, cause timeout"""
    name = w.install("sleep-timeout")
    r = w.d.lockctl("plugin", "run", name, os.path.join(w.dir, "sample.txt"), "--json")
    out = json.loads(r.stdout)
    check(r.returncode == 1 and out.get("error") == "plugin_error" and out.get("cause") == "timeout",
          r.stdout + r.stderr)
    wait_for(lambda: not run_units(), what="no lockd-run scope")
    check(not plugin_processes(), f"plugin processes left: {plugin_processes()}")


def test_oom(w):
    """a plugin that fills its scope's memory is OOM-killed: plugin_error, cause oom"""
    name = w.install("pipe-oom")
    r = w.d.lockctl("plugin", "run", name, os.path.join(w.dir, "sample.txt"), "--json")
    out = json.loads(r.stdout)
    check(out.get("error") == "plugin_error" and out.get("cause") == "oom", r.stdout + r.stderr)
    wait_for(lambda: not run_units(), what="no lockd-run scope")


def test_status(w):
    """Status reports plugins, marketplaces and the runs done"""
    r = w.d.console_call("io.lockd.Console.Status")
    p = r["parameters"]
    check(p["plugins"] >= 1 and p["marketplaces"] >= 1 and p["runs_total"] >= 1, f"{p}")
    check(p["landlock_abi"] >= 1 and p["connections"] >= 1, f"{p}")


def test_restart_persists(w):
    """plugins and marketplaces survive a restart"""
    name = w.install("good-one")
    w.d.stop()
    w.d.start()
    r = w.d.console_call("io.lockd.Console.ListPlugins")
    check(any(p["name"] == name for p in r["parameters"]["plugins"]), f"{r}")
    r = w.d.console_call("io.lockd.Console.ListMarketplaces")
    check(any(m["name"] == "local" for m in r["parameters"]["marketplaces"]), f"{r}")


def test_sighup_bad_policy(w):
    """SIGHUP with a bad policy keeps the old one and says why; a good one takes effect"""
    with open(w.d.policy) as f:
        good = f.read()
    with open(w.d.policy, "w") as f:
        f.write(good + "bogus_key: 1\n")
    w.d.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: "E_POLICY_UNKNOWN_KEY" in w.d.read_log(), what="the reload's refusal")
    r = w.d.console_call("io.lockd.Console.Status")
    check(r["parameters"]["security_level"] == 2, f"{r}")
    with open(w.d.policy, "w") as f:
        f.write(good.replace("security_level: 2", "security_level: 3"))
    w.d.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: w.d.console_call("io.lockd.Console.Status")["parameters"]["security_level"] == 3,
             what="the new policy")
    with open(w.d.policy, "w") as f:
        f.write(good)
    w.d.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: w.d.console_call("io.lockd.Console.Status")["parameters"]["security_level"] == 2,
             what="the policy back")


def test_many_connections(w):
    """200 connections at once are all served"""
    conns = [Varlink(w.d.console) for _ in range(200)]
    try:
        for v in conns:
            v.send_raw(json.dumps({"method": "org.varlink.service.GetInfo"}).encode() + b"\0")
        answers = [v.read_message() for v in conns]
        check(all("interfaces" in a.get("parameters", {}) for a in answers), "an answer is missing")
    finally:
        for v in conns:
            v.close()


def closed_after(v):
    try:
        v.read_message()
        return False
    except (ConnectionResetError, OSError):
        return True


def test_oversize(w):
    """a message over limits.message_bytes drops the connection; lockd serves on"""
    v = Varlink(w.d.console)
    try:
        v.send_raw(b'{"method":"org.varlink.service.GetInfo","parameters":{"x":"' + b"a" * 70000)
        check(closed_after(v), "the connection stayed open")
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        v.close()
    check("interfaces" in w.d.console_call("org.varlink.service.GetInfo")["parameters"], "dead")


def test_truncated(w):
    """a message cut short by the peer's close costs nothing"""
    v = Varlink(w.d.console)
    v.send_raw(b'{"method":"io.lockd.Console.Sta')
    v.close()
    try:
        r = w.d.console_call("org.varlink.service.GetInfo")
    except OSError as e:
        raise Failed(f"lockd is gone ({e}): {w.d.read_log()[-3000:]}")
    check("interfaces" in r["parameters"], "dead")


def test_non_json(w):
    """a message that is not JSON is answered InvalidParameter and the connection closed"""
    v = Varlink(w.d.console)
    try:
        v.send_raw(b"this is not json\0")
        r = v.read_message()
        check(r.get("error") == "org.varlink.service.InvalidParameter", f"{r}")
        check(closed_after(v), "the connection stayed open")
    finally:
        v.close()


def test_wrong_type(w):
    """a parameter of the wrong type, and an unknown one, are InvalidParameter naming it"""
    r = w.d.console_call("io.lockd.Console.RemovePlugin", {"name": 5})
    check(r.get("error") == "org.varlink.service.InvalidParameter" and
          r["parameters"].get("parameter") == "name", f"{r}")
    r = w.d.console_call("io.lockd.Console.Status", {"verbose": True})
    check(r.get("error") == "org.varlink.service.InvalidParameter" and
          r["parameters"].get("parameter") == "verbose", f"{r}")


def test_unknown_method(w):
    """an unknown method and an unknown interface get the org.varlink.service errors"""
    r = w.d.console_call("io.lockd.Console.Nope")
    check(r.get("error") == "org.varlink.service.MethodNotFound", f"{r}")
    r = w.d.console_call("com.example.Nope.Call")
    check(r.get("error") == "org.varlink.service.InterfaceNotFound", f"{r}")


def test_agent_fds(w):
    """fds an agent sends are closed by lockd and the request refused"""
    prog = ("import json,os,socket,sys,time\n"
            "r,wr=os.pipe()\n"
            "s=socket.socket(socket.AF_UNIX);s.settimeout(10);s.connect(sys.argv[1])\n"
            "m=json.dumps({'method':'io.lockd.Agent.ListPlugins'}).encode()+b'\\0'\n"
            "socket.send_fds(s,[m],[wr]);os.close(wr)\n"
            "b=b''\n"
            "while b'\\0' not in b:\n"
            "  c=s.recv(4096)\n"
            "  if not c: break\n"
            "  b+=c\n"
            "os.set_blocking(r,False)\n"
            "try: eof=os.read(r,1)==b''\n"
            "except BlockingIOError: eof=False\n"
            "print(json.dumps({'reply':b.split(b'\\0')[0].decode(),'eof':eof}))\n")
    r = subprocess.run(["setpriv", f"--reuid={AGENT_UID}", f"--regid={AGENT_UID}",
                        "--clear-groups", sys.executable, "-c", prog, w.d.agent],
                       capture_output=True, text=True, timeout=30)
    out = json.loads(r.stdout)
    reply = json.loads(out["reply"])
    check(reply.get("error") == "io.lockd.Agent.InvalidRequest", f"{reply}")
    check(out["eof"], "lockd kept the agent's fd open")


def test_sigterm_runs_in_flight(w):
    """SIGTERM with runs in flight: lockd exits, no plugin, scope or socket is left"""
    name = w.install("slow-answer")
    path = os.path.join(w.dir, "sample.txt")
    runs = [run_async(w, name, path) for _ in range(3)]
    wait_for(lambda: len(run_units()) >= 3, timeout=15,
             what="three scopes")
    before = units()
    rc = w.d.stop(signal.SIGTERM, timeout=20)
    check(rc == 0, f"lockd exited {rc}")
    try:
        wait_for(lambda: not units(), what="every lockd-run scope gone")
    except Failed:
        raise Failed(f"scopes left: {units()} (before the stop: {before}); "
                     f"{[unit_properties(u, 'ActiveState', 'SubState', 'Result') for u in units()]}")
    for t, box in runs:
        t.join(10)
        check("r" not in box or box["r"].get("error"), f"a killed run answered: {box}")
    wait_for(lambda: not units(), what="every lockd-run scope gone")
    check(not plugin_processes(), f"plugin processes left: {plugin_processes()}")
    check(not os.path.exists(w.d.agent) and not os.path.exists(w.d.console), "sockets left")
    w.d.start()


def test_sigkill_mid_run(w):
    """SIGKILL of lockd mid-run: its plugins die with it, and the restart finds nothing left"""
    name = w.install("slow-answer")
    path = os.path.join(w.dir, "sample.txt")
    runs = [run_async(w, name, path) for _ in range(2)]
    wait_for(lambda: len(run_units()) >= 2 and plugin_processes(), timeout=15, what="two runs")
    w.d.proc.kill()
    w.d.proc.wait(10)
    for t, _ in runs:
        t.join(10)
    # The kernel ends each plugin with lockd (PR_SET_PDEATHSIG), not its scope's RuntimeMaxUSec
    # (20 s): well before that, however busy the machine.
    wait_for(lambda: not plugin_processes(), timeout=10, what="the plugins to die with lockd")
    # A killed lockd leaves its sockets: the restart replaces them (nobody listens there).
    check(os.path.exists(w.d.agent) and os.path.exists(w.d.console), "sockets vanished")
    # What the restart must find: nothing left. A scope whose job was still in the manager's
    # queue when lockd died is the start's to kill (scope_kill_stale()), as the log says.
    w.d.start()
    try:
        wait_for(lambda: not run_units(), what="no run scope after the restart")
    except Failed:
        raise Failed("scopes left after the restart: " + "; ".join(
            f"{u} {unit_properties(u, 'ActiveState', 'SubState', 'Result')}"
            for u in run_units()))
    r = w.d.console_call("io.lockd.Console.Status")
    check(r["parameters"]["runs_active"] == 0, f"{r}")


def test_stale_scope_killed(w):
    """a lockd-run scope left by an earlier lockd is killed when lockd starts"""
    user = [] if os.environ.get("LOCKD_TEST_BUS") == "system" else ["--user"]
    proc = subprocess.Popen(["systemd-run", *user, "--scope", "-q", "--unit",
                             "lockd-run-stale1-0.scope", "sleep", "300"])
    try:
        wait_for(lambda: "lockd-run-stale1-0.scope" in units(), what="the stale scope")
        w.d.stop()
        w.d.start()
        wait_for(lambda: "lockd-run-stale1-0.scope" not in units(), what="the stale scope to go")
        proc.wait(10)
        check("left by an earlier lockd" in w.d.read_log(), "the kill was not logged")
    finally:
        if proc.poll() is None:
            proc.kill()


def test_socket_activate(w):
    """socket activation through systemd-socket-activate with the names agent and console"""
    d = os.path.join(w.dir, "sa")
    os.makedirs(os.path.join(d, "run"))
    dm = Daemon(d)
    proc = subprocess.Popen(["systemd-socket-activate", "-l", dm.agent, "-l", dm.console,
                             "--fdname=agent:console", os.environ["LOCKD"], "--config", dm.policy],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: os.path.exists(dm.console), what="the console socket")
        # systemd-socket-activate has no SocketMode=; the unit test below checks the modes.
        os.chmod(dm.console, 0o666)
        os.chmod(dm.agent, 0o666)
        r = call(dm.console, "io.lockd.Console.Status")
        check(r.get("parameters", {}).get("version"), f"{r}")
        r = call_as(AGENT_UID, dm.agent, "io.lockd.Agent.ListPlugins")
        check("plugins" in r.get("parameters", {}), f"{r}")
    finally:
        for p in proc.pid, *[int(x) for x in subprocess.run(["pgrep", "-P", str(proc.pid)],
                                                            capture_output=True, text=True).stdout.split()]:
            try:
                os.kill(p, signal.SIGTERM)
            except ProcessLookupError:
                pass
        out = proc.communicate(timeout=20)[0].decode(errors="replace")
    check("activated" in out, f"lockd did not say it was activated:\n{out}")


def test_socket_unit(w):
    """lockd.socket and lockd-console.socket loaded into the manager start lockd on demand"""
    units_src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "systemd")
    d = os.path.join(w.dir, "su")
    os.makedirs(os.path.join(d, "run"))
    dm = Daemon(d)
    unit_dir = os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/run"), "systemd", "user") \
        if os.environ.get("LOCKD_TEST_BUS") != "system" else "/run/systemd/system"
    os.makedirs(unit_dir, exist_ok=True)
    for u in ("lockd.socket", "lockd-console.socket", "lockd.service"):
        with open(os.path.join(units_src, u + (".in" if u.endswith(".service") else ""))) as f:
            text = f.read()
        text = text.replace("/run/lockd.sock", dm.agent)
        text = text.replace("/run/lockd/console.sock", dm.console)
        text = re.sub(r"^ExecStart=.*$", f"ExecStart={os.environ['LOCKD']} --config {dm.policy}",
                      text, flags=re.M)
        # The user manager cannot apply the system unit's sandboxing; the unit is otherwise the
        # one shipped.
        text = "\n".join(line for line in text.splitlines()
                         if not re.match(r"^(Protect|Private|Restrict|Lock|Memory|System|NoNew|"
                                         r"Capability|Ambient|StateDirectory|RuntimeDirectory|ReadWritePaths|"
                                         r"DevicePolicy|Remove|UMask|ProcSubset|KeyringMode|"
                                         r"IPAddress|SocketUser|SocketGroup)", line))
        with open(os.path.join(unit_dir, u), "w") as f:
            f.write(text + "\n")
    try:
        check(systemctl("daemon-reload").returncode == 0, "daemon-reload failed")
        r = systemctl("start", "lockd.socket", "lockd-console.socket")
        check(r.returncode == 0, f"cannot start the sockets: {r.stderr}")
        os.chmod(dm.console, 0o666)
        r = call(dm.console, "io.lockd.Console.Status")
        check(r.get("parameters", {}).get("version"), f"{r}")
        state = systemctl("is-active", "lockd.service").stdout.strip()
        if state != "active":
            journal = subprocess.run(["journalctl", "--no-pager", "-n", "30"] +
                                     ([] if os.environ.get("LOCKD_TEST_BUS") == "system"
                                      else ["--user"]), capture_output=True, text=True).stdout
            raise Failed(f"lockd.service is {state}:\n"
                         f"{systemctl('status', '--no-pager', 'lockd.service').stdout}\n{journal}")
    finally:
        systemctl("stop", "lockd.service", "lockd.socket", "lockd-console.socket")
        for u in ("lockd.socket", "lockd-console.socket", "lockd.service"):
            os.unlink(os.path.join(unit_dir, u))
        systemctl("daemon-reload")


# ---------------------------------------------------------------------------------------------
# Handles


def console_handles(d):
    r = d.console_call("io.lockd.Console.ListHandles")
    return {h["handle"]: h for h in r["parameters"]["handles"]}


def test_grant_agent_view(w):
    """a granted file shows in its agent's ListHandles with id, label, budget left and expiry only"""
    content = b"secret report\n"
    g = grant(w.d, grant_file(w, "report.txt", content), "--agent", str(AGENT_UID), "--label",
              "Q3 report", "--budget", "5")
    check(re.fullmatch(r"h-[0-9a-f]{32}", g["handle"]), f"handle id: {g}")
    check(g["sha256"] == hashlib.sha256(content).hexdigest() and g["bytes"] == len(content),
          f"grant reply: {g}")
    check("expires_usec" not in g, f"no ttl, yet an expiry: {g}")
    mine = agent_handles(w.d)
    check(g["handle"] in mine, f"agent does not see {g['handle']}: {mine}")
    h = mine[g["handle"]]
    check(set(h) <= {"handle", "label", "budget_left", "expires_usec"}, f"agent sees too much: {h}")
    check(h["label"] == "Q3 report" and h["budget_left"] == 5, f"agent's view: {h}")
    raw = json.dumps(call_as(AGENT_UID, w.d.agent, "io.lockd.Agent.ListHandles"))
    check(g["sha256"] not in raw and "report.txt" not in raw, f"digest or path leaked: {raw}")
    c = console_handles(w.d)[g["handle"]]
    check(c["agent_uid"] == AGENT_UID and c["sha256"] == g["sha256"] and c["budget"] == 5 and
          c["bytes"] == len(content) and c["auto"] is False, f"console's view: {c}")
    r = w.d.lockctl("handles", check_rc=0)
    check(g["handle"] in r.stdout and "Q3 report" in r.stdout, f"lockctl handles: {r.stdout}")


def test_grant_snapshot(w):
    """the handle keeps the bytes of the grant: a later change of the file changes nothing"""
    path = grant_file(w, "changing.txt", b"before")
    g = grant(w.d, path, "--agent", str(AGENT_UID), "--auto")
    with open(path, "wb") as f:
        f.write(b"after, and longer")
    c = console_handles(w.d)[g["handle"]]
    check(c["sha256"] == hashlib.sha256(b"before").hexdigest() and c["bytes"] == 6 and
          c["auto"] is True, f"{c}")
    r = w.d.lockctl("grant", path, "--agent", str(AGENT_UID), "--label", "tab\there", check_rc=1)
    check("invalid request: label" in r.stderr, f"a tab in the label: {r.stderr}")
    r = w.d.lockctl("grant", path, "--agent", str(AGENT_UID), check_rc=0)
    lines = r.stdout.splitlines()
    check(len(lines) == 4 and re.fullmatch(r"handle: h-[0-9a-f]{32}", lines[0]) and
          lines[1] == "sha256: " + hashlib.sha256(b"after, and longer").hexdigest() and
          lines[2] == "bytes: 17" and lines[3] == "expires: never", f"lockctl grant: {r.stdout}")


def test_grant_other_agent(w):
    """another agent sees none of an agent's handles, and the agent sees none of the other's"""
    g1 = grant(w.d, grant_file(w, "one.txt", b"1"), "--agent", str(AGENT_UID))
    g2 = grant(w.d, grant_file(w, "two.txt", b"2"), "--agent", str(AGENT2_UID))
    a1, a2 = agent_handles(w.d, AGENT_UID), agent_handles(w.d, AGENT2_UID)
    check(g1["handle"] in a1 and g2["handle"] not in a1, f"agent 1: {a1}")
    check(g2["handle"] in a2 and g1["handle"] not in a2, f"agent 2: {a2}")


def test_revoke(w):
    """revoke takes a handle away at once; a second revoke and a bogus id are UnknownHandle"""
    g = grant(w.d, grant_file(w, "revoked.txt", b"x"), "--agent", str(AGENT_UID))
    check(g["handle"] in agent_handles(w.d), "not granted")
    w.d.lockctl("revoke", g["handle"], check_rc=0)
    check(g["handle"] not in agent_handles(w.d), "still visible after revoke")
    check(g["handle"] not in console_handles(w.d), "still listed after revoke")
    r = w.d.lockctl("revoke", g["handle"], check_rc=1)
    check("no handle" in r.stderr, f"second revoke: {r.stderr}")
    for bogus in ("h-" + "0" * 32, "h-nope", "../../etc/passwd"):
        r = w.d.console_call("io.lockd.Console.Revoke", {"handle": bogus})
        check(r.get("error") == "io.lockd.Console.UnknownHandle", f"Revoke {bogus}: {r}")


def test_grant_ttl(w):
    """a handle granted with --ttl 1s is gone a moment later, removed by lockd's timer"""
    g = grant(w.d, grant_file(w, "brief.txt", b"x"), "--agent", str(AGENT_UID), "--ttl", "1s")
    check(g.get("expires_usec", 0) > time.time() * 1e6, f"expiry: {g}")
    h = agent_handles(w.d).get(g["handle"])
    check(h and h.get("expires_usec") == g["expires_usec"], f"agent's view: {h}")
    # Nobody asks for it: only the timer can write the expire record.
    audit = os.path.join(w.d.dir, "state", "audit", "audit.jsonl")
    wait_for(lambda: any(r["event"] == "expire" and r.get("handle") == g["handle"]
                         for r in read_audit(audit)), timeout=5, what="the expire record")
    check(g["handle"] not in agent_handles(w.d), "still visible after its expiry")
    for ttl in ("0s", "1x", "-5", "1.5h", "367d", ""):
        w.d.lockctl("grant", grant_file(w, "x.txt", b"x"), "--agent", str(AGENT_UID),
                    "--ttl", ttl, check_rc=2)


def test_grant_not_agent(w):
    """a grant to a console, a stranger, root or an unknown user is NotAnAgent"""
    path = grant_file(w, "nope.txt", b"x")
    for who in (str(CONSOLE_UID), str(STRANGER_UID), "root", "0", "no-such-user-lockd", "061001"):
        r = w.d.lockctl("grant", path, "--agent", who, check_rc=1)
        check("is not an agent" in r.stderr, f"--agent {who}: {r.stderr}")
    with open(path, "rb") as f:
        r = w.d.console_call("io.lockd.Console.Grant", {"file_fd": 0, "agent": "root"},
                             fds=[f.fileno()])
    check(r.get("error") == "io.lockd.Console.NotAnAgent", f"{r}")


def test_grant_refused(w):
    """bad labels, budgets and files are refused, and nothing is granted"""
    before = set(console_handles(w.d))
    path = grant_file(w, "refused.txt", b"x")
    for label in ("a\nb", "\u202eexe.txt", "x" * 65, "\x1b[31m"):
        with open(path, "rb") as f:
            r = w.d.console_call("io.lockd.Console.Grant",
                                 {"file_fd": 0, "agent": str(AGENT_UID), "label": label},
                                 fds=[f.fileno()])
        check(r.get("error") in ("io.lockd.Console.InvalidRequest",
                                 "org.varlink.service.InvalidParameter"), f"label {label!r}: {r}")
    r = w.d.lockctl("grant", os.path.join(w.dir), "--agent", str(AGENT_UID), check_rc=2)
    check("not a regular file" in r.stderr, f"a directory: {r.stderr}")
    fifo = os.path.join(w.dir, "fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    w.d.lockctl("grant", fifo, "--agent", str(AGENT_UID), check_rc=2)
    r = w.d.console_call("io.lockd.Console.Grant", {"file_fd": 0, "agent": str(AGENT_UID)})
    check(r.get("error") == "io.lockd.Console.InvalidRequest", f"no fd: {r}")
    r = call_as(AGENT_UID, w.d.agent, "io.lockd.Console.Grant", {"file_fd": 0, "agent": "x"})
    check(r.get("error") == "org.varlink.service.InterfaceNotFound", f"agent → Grant: {r}")
    check(set(console_handles(w.d)) == before, "a refused grant left a handle")


def test_grant_limits(w):
    """max_handle_bytes bounds a grant; the budget defaults to and is capped by the policy"""
    d = tempdir()
    text = policy_text(d).replace("limits:\n", "limits:\n  max_handle_bytes: 1KiB\n"
                                               "  max_plugins_per_handle: 3\n")
    daemon = Daemon(d, policy=text).start()
    try:
        small = grant_file(w, "small.txt", b"x" * 1024)
        big = grant_file(w, "big.txt", b"x" * 1025)
        g = grant(daemon, small, "--agent", str(AGENT_UID))
        check(console_handles(daemon)[g["handle"]]["budget"] == 3, "budget default")
        r = grant(daemon, big, "--agent", str(AGENT_UID), check_rc=1)
        check("max_handle_bytes" in r.stderr, f"big file: {r.stderr}")
        r = grant(daemon, small, "--agent", str(AGENT_UID), "--budget", "4", check_rc=1)
        check("max_plugins_per_handle" in r.stderr, f"budget 4: {r.stderr}")
        check(len(console_handles(daemon)) == 1, "a refused grant left a handle")
        # Handles are kept in the state directory: a restart, or a SIGKILL, keeps them, with
        # their budget, expiry and bytes; a revoked one stays gone.
        g2 = grant(daemon, small, "--agent", str(AGENT_UID), "--budget", "2", "--ttl", "1h",
                   "--label", "kept")
        g3 = grant(daemon, small, "--agent", str(AGENT_UID))
        daemon.lockctl("revoke", g3["handle"], check_rc=0)
        before = console_handles(daemon)
        daemon.stop()
        daemon.start()
        check(console_handles(daemon) == before and g3["handle"] not in before,
              f"after a restart: {console_handles(daemon)} != {before}")
        daemon.stop(signal.SIGKILL)
        daemon.start()
        check(console_handles(daemon) == before, "after a SIGKILL")
        mine = agent_handles(daemon)
        check(mine[g2["handle"]]["budget_left"] == 2 and mine[g2["handle"]]["label"] == "kept",
              f"the agent's view after a restart: {mine}")
        hdir = os.path.join(d, "state", "handles")
        modes = {f: oct(os.stat(os.path.join(hdir, f)).st_mode & 0o777) for f in os.listdir(hdir)}
        check(len(modes) == 4 and set(modes.values()) == {"0o600"}, f"stored files: {modes}")
    finally:
        daemon.stop()


def test_handles_audit(w):
    """grant and revoke leave audit records without path or content, and the chain verifies"""
    content = b"audited content"
    path = grant_file(w, "audited-secret-name.txt", content)
    g = grant(w.d, path, "--agent", str(AGENT_UID), "--label", "audited", "--ttl", "2h")
    w.d.lockctl("revoke", g["handle"], check_rc=0)
    audit = os.path.join(w.d.dir, "state", "audit", "audit.jsonl")
    recs = [r for r in read_audit(audit) if r.get("handle") == g["handle"]]
    check([r["event"] for r in recs] == ["grant", "revoke"], f"records: {recs}")
    for r in recs:
        for k, v in (("agent_uid", AGENT_UID), ("handle_sha256", g["sha256"]),
                     ("label", "audited"), ("auto", False), ("peer_uid", 0),
                     ("expires_usec", g["expires_usec"])):
            check(r.get(k) == v, f"{r['event']}: {k} is {r.get(k)!r}, want {v!r}")
        check(isinstance(r.get("budget"), int), f"budget: {r}")
    with open(audit) as f:
        text = f.read()
    check("audited-secret-name" not in text and "audited content" not in text,
          "the path or the content reached the audit log")
    r = w.d.lockctl("audit", "verify", "--state-dir", os.path.join(w.d.dir, "state"), check_rc=0)
    check(r.stdout.startswith("ok: "), f"audit verify: {r.stdout}{r.stderr}")


def test_grant_symlink_and_cap(w):
    """a symlink is granted as its target; an agent's 257th handle is TooManyHandles"""
    target = grant_file(w, "target.txt", b"through a link")
    link = os.path.join(w.dir, "link.txt")
    if not os.path.lexists(link):
        os.symlink(target, link)
    g = grant(w.d, link, "--agent", str(AGENT2_UID))
    check(g["sha256"] == hashlib.sha256(b"through a link").hexdigest(), f"{g}")
    w.d.lockctl("revoke", g["handle"], check_rc=0)
    ids = []
    try:
        with open(target, "rb") as f:
            for i in range(len(agent_handles(w.d, AGENT2_UID)), 257):
                r = w.d.console_call("io.lockd.Console.Grant",
                                     {"file_fd": 0, "agent": str(AGENT2_UID)}, fds=[f.fileno()])
                if i < 256:
                    check("parameters" in r and "handle" in r["parameters"], f"grant {i}: {r}")
                    ids.append(r["parameters"]["handle"])
                else:
                    check(r.get("error") == "io.lockd.Console.TooManyHandles" and
                          r["parameters"]["limit"] == 256, f"grant 257: {r}")
        r = w.d.lockctl("grant", target, "--agent", str(AGENT2_UID), check_rc=1)
        check("too many handles" in r.stderr, f"lockctl: {r.stderr}")
        # Another agent's grants are not held back by this one's cap.
        g = grant(w.d, target, "--agent", str(AGENT_UID))
        ids.append(g["handle"])
    finally:
        for h in ids:
            w.d.console_call("io.lockd.Console.Revoke", {"handle": h})
    check(agent_handles(w.d, AGENT2_UID) == {} or
          not set(agent_handles(w.d, AGENT2_UID)) & set(ids), "revoked handles remain")


# ---------------------------------------------------------------------------------------------
# Tickets


def submit(d, steps, uid=AGENT_UID):
    return call_as(uid, d.agent, "io.lockd.Agent.Submit", {"steps": steps})


def stream_as(uid, path, method, params):
    """A call with "more" from another uid: a process printing one JSON line per answer until
    one without continues. Its stdout is read with next_reply()."""
    prog = ("import json,socket,sys\n"
            "s=socket.socket(socket.AF_UNIX);s.settimeout(30);s.connect(sys.argv[1])\n"
            "s.sendall(json.dumps({'method':sys.argv[2],'parameters':json.loads(sys.argv[3]),"
            "'more':True}).encode()+b'\\0')\n"
            "b=b''\n"
            "while True:\n"
            "  while b'\\0' not in b:\n"
            "    c=s.recv(65536)\n"
            "    if not c: sys.exit(0)\n"
            "    b+=c\n"
            "  m,b=b.split(b'\\0',1)\n"
            "  print(m.decode(),flush=True)\n"
            "  if not json.loads(m).get('continues'): sys.exit(0)\n")
    return subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                             sys.executable, "-c", prog, path, method, json.dumps(params)],
                            stdout=subprocess.PIPE, text=True)


def next_reply(proc):
    line = proc.stdout.readline()
    check(line, "the stream ended early")
    return json.loads(line)


def ticket_world(w):
    """Both test plugins installed, a handle for each agent."""
    one, inputs = w.install("good-one"), w.install("good-inputs")
    h1 = grant(w.d, grant_file(w, "asked.txt", b"ask me"), "--agent", str(AGENT_UID),
               "--label", "asked file")["handle"]
    h2 = grant(w.d, grant_file(w, "others.txt", b"not yours"), "--agent",
               str(AGENT2_UID))["handle"]
    return one, inputs, h1, h2


def test_submit_plan_errors(w):
    """every refusal of a plan reaches the agent through lockd, with its step and input only"""
    one, inputs, h1, h2 = ticket_world(w)
    good = {"plugin": inputs, "handle": h1, "inputs": {"needle": "${email}"}}
    cases = [
        ([{"plugin": one, "handle": h2}], "UnknownHandle", {"step": 0}),
        ([{"plugin": one, "handle": h1}, {"plugin": one, "handle": "h-" + "0" * 32}],
         "UnknownHandle", {"step": 1}),
        # The handle guard comes before the plugin guard, over every step.
        ([{"plugin": "test.absent", "handle": h1}, {"plugin": one, "handle": h2}],
         "UnknownHandle", {"step": 1}),
        ([{"plugin": "test.absent", "handle": h1}], "UnknownPlugin", {"step": 0}),
        ([{"plugin": inputs, "handle": h1, "inputs": {"needle": "sekrit-guess"}}],
         "LiteralInput", {"step": 0, "input": "needle"}),
        ([{"plugin": inputs, "handle": h1, "inputs": {"needle": "${Email}"}}],
         "BadPlaceholder", {"step": 0, "input": "needle"}),
        ([{"plugin": inputs, "handle": h1, "inputs": {"needle": "${a} "}}],
         "BadPlaceholder", {"step": 0, "input": "needle"}),
        ([{"plugin": one, "handle": h1, "inputs": {"needle": "${a}"}}],
         "UnknownInput", {"step": 0, "input": "needle"}),
        ([good, {"plugin": inputs, "handle": h1, "inputs": {"needle": "${a}", "other": "${b}"}}],
         "UnknownInput", {"step": 1, "input": "other"}),
        ([{"plugin": inputs, "handle": h1}], "MissingInput", {"step": 0, "input": "needle"}),
        ([], "InvalidRequest", None),
        ([{"plugin": one, "handle": h1, "extra": 1}], "InvalidRequest", None),
    ]
    for steps, error, params in cases:
        r = submit(w.d, steps)
        check(r.get("error") == "io.lockd.Agent." + error, f"{steps}: {r}")
        if params is not None:
            check(r.get("parameters") == params, f"{steps}: {r}")
        check("sekrit-guess" not in json.dumps(r), f"a literal was sent back: {r}")
    r = submit(w.d, [good, {"plugin": one, "handle": h1}])
    check(re.fullmatch(r"t-[0-9a-f]{32}", r.get("parameters", {}).get("ticket", "")) and
          r["parameters"]["state"] == "pending", f"a good plan: {r}")
    w.d.console_call("io.lockd.Console.Deny", {"ticket": r["parameters"]["ticket"]})
    # A budget of one answer: the same question twice costs one, a second question is refused.
    h3 = grant(w.d, grant_file(w, "budget-one.txt", b"one answer only"), "--agent",
               str(AGENT_UID), "--budget", "1")["handle"]
    r = submit(w.d, [{"plugin": one, "handle": h3}, good | {"handle": h3}])
    check(r.get("error") == "io.lockd.Agent.BudgetExhausted" and r["parameters"] == {"step": 1},
          f"two questions on a budget of one: {r}")
    r = submit(w.d, [{"plugin": one, "handle": h3}, {"plugin": one, "handle": h3}])
    check(r.get("parameters", {}).get("state") == "pending", f"one question twice: {r}")
    g = w.d.console_call("io.lockd.Console.GetTicket", {"ticket": r["parameters"]["ticket"]})
    check([x["charged"] for x in g["parameters"]["ticket"]["steps"]] == [True, False],
          f"charged steps: {g}")
    w.d.console_call("io.lockd.Console.Deny", {"ticket": r["parameters"]["ticket"]})


def test_ticket_wait_deny(w):
    """Wait streams pending then denied with every step's outcome; the console sees the plan"""
    one, inputs, h1, _ = ticket_world(w)
    r = submit(w.d, [{"plugin": inputs, "handle": h1, "inputs": {"test.good-inputs.needle":
                                                                  "${email}"}},
                     {"plugin": one, "handle": h1}])
    t = r["parameters"]["ticket"]
    g = w.d.console_call("io.lockd.Console.GetTicket", {"ticket": t})["parameters"]["ticket"]
    check(g["agent_uid"] == AGENT_UID and g["state"] == "pending" and
          g["placeholders"] == ["email"] and len(g["steps"]) == 2, f"GetTicket: {g}")
    s0 = g["steps"][0]
    check(s0["plugin"] == inputs and s0["label"] == "asked file" and s0["handle"] == h1 and
          s0["inputs"] == {"needle": "email"} and s0["question"].startswith("Does the file") and
          s0["one"] and s0["zero"] and g["steps"][1]["inputs"] == {}, f"steps: {g['steps']}")
    other = call_as(AGENT2_UID, w.d.agent, "io.lockd.Agent.Wait", {"ticket": t})
    check(other.get("error") == "io.lockd.Agent.UnknownTicket", f"another agent's Wait: {other}")
    p = stream_as(AGENT_UID, w.d.agent, "io.lockd.Agent.Wait", {"ticket": t})
    try:
        first = next_reply(p)
        check(first.get("continues") is True and first["parameters"] ==
              {"state": "pending", "outcomes": []}, f"first answer: {first}")
        r = w.d.lockctl("deny", t, check_rc=0)
        last = next_reply(p)
        check(not last.get("continues") and last["parameters"]["state"] == "denied" and
              last["parameters"]["outcomes"] ==
              [{"step": 0, "result": None, "error": "denied"},
               {"step": 1, "result": None, "error": "denied"}], f"last answer: {last}")
        p.wait(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    r = w.d.lockctl("deny", t, check_rc=1)
    check("not pending" in r.stderr, f"a second deny: {r.stderr}")
    r = w.d.lockctl("deny", "t-" + "0" * 32, check_rc=1)
    check("no ticket" in r.stderr, f"deny of a missing ticket: {r.stderr}")
    audit = os.path.join(w.d.dir, "state", "audit", "audit.jsonl")
    recs = [x for x in read_audit(audit) if x.get("ticket") == t]
    check([x["event"] for x in recs] == ["submit", "deny"] and recs[0]["steps"] == 2 and
          recs[0]["agent_uid"] == AGENT_UID and recs[0]["peer_pid"] > 0 and
          recs[1]["peer_uid"] == 0, f"audit: {recs}")


def test_ticket_cancel(w):
    """an agent cancels its own pending ticket, not another's; a final ticket stays final"""
    one, _, h1, _ = ticket_world(w)
    t = submit(w.d, [{"plugin": one, "handle": h1}])["parameters"]["ticket"]
    r = call_as(AGENT2_UID, w.d.agent, "io.lockd.Agent.Cancel", {"ticket": t})
    check(r.get("error") == "io.lockd.Agent.UnknownTicket", f"another agent's Cancel: {r}")
    r = call_as(AGENT_UID, w.d.agent, "io.lockd.Agent.Cancel", {"ticket": t})
    check("error" not in r, f"Cancel: {r}")
    r = call_as(AGENT_UID, w.d.agent, "io.lockd.Agent.Wait", {"ticket": t})
    check(r["parameters"] == {"state": "cancelled", "outcomes": [
        {"step": 0, "result": None, "error": "cancelled"}]}, f"Wait after Cancel: {r}")
    r = call_as(AGENT_UID, w.d.agent, "io.lockd.Agent.Cancel", {"ticket": t})
    check(r.get("error") == "io.lockd.Agent.TicketNotPending" and
          r["parameters"]["state"] == "cancelled", f"second Cancel: {r}")
    r = w.d.console_call("io.lockd.Console.Deny", {"ticket": t})
    check(r.get("error") == "io.lockd.Console.TicketNotPending", f"Deny after Cancel: {r}")


def test_watch_tickets(w):
    """WatchTickets answers at once, then with each new ticket as the agent submits it"""
    one, _, h1, _ = ticket_world(w)
    v = Varlink(w.d.console)
    try:
        first = v.call("io.lockd.Console.WatchTickets", {}, more=True)
        check(first.get("continues") is True and first.get("parameters", {}) == {},
              f"first answer: {first}")
        t = submit(w.d, [{"plugin": one, "handle": h1}])["parameters"]["ticket"]
        m = v.read_message()
        check(m.get("continues") is True and m["parameters"]["ticket"]["ticket"] == t and
              m["parameters"]["ticket"]["state"] == "pending", f"the new ticket: {m}")
        w.d.console_call("io.lockd.Console.Deny", {"ticket": t})
        m = v.read_message()
        check(m["parameters"]["ticket"]["state"] == "denied", f"the denial: {m}")
    finally:
        v.close()
    r = w.d.lockctl("tickets", "--json", check_rc=0)
    listed = {x["ticket"]: x for x in json.loads(r.stdout)["tickets"]}
    check(listed.get(t, {}).get("state") == "denied", f"lockctl tickets --json: {r.stdout}")
    r = w.d.lockctl("tickets", check_rc=0)
    check(t in r.stdout and "denied" in r.stdout and one in r.stdout, f"lockctl tickets: {r.stdout}")


def test_ticket_followers_gone(w):
    """a Wait and a WatchTickets whose peers went away are dropped; later changes reach the rest"""
    one, _, h1, _ = ticket_world(w)
    t = submit(w.d, [{"plugin": one, "handle": h1}])["parameters"]["ticket"]
    p = stream_as(AGENT_UID, w.d.agent, "io.lockd.Agent.Wait", {"ticket": t})
    gone, kept = Varlink(w.d.console), Varlink(w.d.console)
    try:
        check(next_reply(p)["parameters"]["state"] == "pending", "Wait's first answer")
        for v in (gone, kept):
            check(v.call("io.lockd.Console.WatchTickets", {}, more=True).get("continues"),
                  "WatchTickets' first answer")
        p.kill()
        p.wait()
        gone.close()
        time.sleep(0.2)
        r = w.d.console_call("io.lockd.Console.Deny", {"ticket": t})
        check("error" not in r, f"Deny: {r}")
        m = kept.read_message()
        check(m["parameters"]["ticket"]["ticket"] == t and
              m["parameters"]["ticket"]["state"] == "denied", f"the watch left: {m}")
        r = w.d.console_call("io.lockd.Console.Status")
        check("parameters" in r, f"lockd after its followers left: {r}")
    finally:
        kept.close()
        if p.poll() is None:
            p.kill()
            p.wait()


def test_tickets_cap_and_expiry(w):
    """a lockd with two pending tickets per agent and a 2 s timeout: TooManyTickets, then the
    timer expires the tickets, streams that to Wait, records it, and frees the slots"""
    policy = policy_text(os.path.join(w.dir, "d-tickets")).replace(
        "limits:\n", "limits:\n  pending_tickets_per_agent: 2\n  ticket_timeout: 2s\n")
    os.makedirs(os.path.join(w.dir, "d-tickets"), exist_ok=True)
    d = Daemon(os.path.join(w.dir, "d-tickets"), policy=policy)
    d.start()
    try:
        d.lockctl("marketplace", "add", "local", "--issuer", ISSUER, "--identity", PATTERN,
                  "--trusted-root", w.signer.root, check_rc=0)
        d.lockctl("plugin", "install", w.release("good-one"), "--marketplace", "local",
                  check_rc=0)
        h = grant(d, grant_file(w, "capped.txt", b"c"), "--agent", str(AGENT_UID))["handle"]
        steps = [{"plugin": "test.good-one", "handle": h}]
        ids = [submit(d, steps)["parameters"]["ticket"] for _ in range(2)]
        p = stream_as(AGENT_UID, d.agent, "io.lockd.Agent.Wait", {"ticket": ids[0]})
        try:
            check(next_reply(p)["parameters"]["state"] == "pending", "first answer")
            r = submit(d, steps)
            check(r.get("error") == "io.lockd.Agent.TooManyTickets" and
                  r["parameters"] == {"limit": 2}, f"third pending ticket: {r}")
            # Nobody asks: only the timer can expire it.
            last = next_reply(p)
            check(not last.get("continues") and last["parameters"] == {
                "state": "expired", "outcomes": [{"step": 0, "result": None,
                                                  "error": "expired"}]}, f"expiry: {last}")
            p.wait(timeout=10)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        audit = os.path.join(d.dir, "state", "audit", "audit.jsonl")
        wait_for(lambda: {x.get("ticket") for x in read_audit(audit)
                          if x["event"] == "expire"} >= set(ids), timeout=5,
                 what="the expire records")
        r = submit(d, steps)
        check(r.get("parameters", {}).get("state") == "pending", f"after the expiry: {r}")
    finally:
        d.stop()


def test_tickets_paged_fair_share(w):
    """one agent floods the ticket store with cached 16-step --auto tickets: it keeps at most its
    share, another agent's pending tickets lead the first page, ListTickets pages (cursor, limit,
    filters, refusals) and lockctl tickets shows the first page and pages on demand"""
    top = os.path.join(w.dir, "d-paged")
    os.makedirs(top, exist_ok=True)
    # At security level 3 no outcome is held back to a release time: the 600 tickets end as
    # fast as lockd answers them (at level 2 each waited out its 250 ms quantum: 150 s).
    d = Daemon(top, policy=policy_text(top).replace("security_level: 2", "security_level: 3"))
    d.start()
    try:
        d.lockctl("marketplace", "add", "local", "--issuer", ISSUER, "--identity", PATTERN,
                  "--trusted-root", w.signer.root, check_rc=0)
        d.lockctl("plugin", "install", w.release("good-one"), "--marketplace", "local",
                  check_rc=0)
        grant(d, grant_file(w, "flood.txt", b"flooded"), "--agent", str(AGENT_UID), "--auto",
              "--label", "flood")
        h2 = grant(d, grant_file(w, "waits.txt", b"waits"), "--agent", str(AGENT2_UID))["handle"]
        waiting = [submit(d, [{"plugin": "test.good-one", "handle": h2}], uid=AGENT2_UID)
                   ["parameters"]["ticket"] for _ in range(2)]
        # The flood, as the issue's hostile agent: 600 tickets, more than its share of 512.
        flood = os.path.join(top, "flood")
        os.mkdir(flood)
        os.chown(flood, AGENT_UID, AGENT_UID)
        r = subprocess.run(["setpriv", f"--reuid={AGENT_UID}", f"--regid={AGENT_UID}",
                            "--clear-groups", sys.executable, SOAK_AGENT, d.agent, "0", "1",
                            os.path.join(flood, "progress.json"), "600"],
                           capture_output=True, text=True, timeout=600)
        check(r.returncode == 0, f"the flood: {r.stderr}")
        st = json.loads(r.stdout.strip().splitlines()[-1])
        check(st["floods"] == 600 and st["wrong"] == 0, f"the flood: {st}")

        def page(**params):
            r = d.console_call("io.lockd.Console.ListTickets", params or None)
            check("parameters" in r, f"ListTickets {params}: {r}")
            return r["parameters"]

        first = page()
        check(first["total"] == 512 + 2 and first["pending"] == 2,
              f"the flooder keeps its share, the other agent's stay: {first['total']}, "
              f"{first['pending']}")
        check([t["ticket"] for t in first["tickets"][:2]] == waiting[::-1] and
              all(t["state"] == "pending" for t in first["tickets"][:2]),
              "the other agent's pending tickets lead the first page, newest first")
        check(len(first["tickets"]) == 64 and first["next"], f"a page of 64: {first['next']}")
        seen, cursor, pages = [], None, 0
        while True:
            p = page(limit=100, cursor=cursor) if cursor else page(limit=100)
            pages += 1
            seen += [t["ticket"] for t in p["tickets"]]
            cursor = p["next"]
            if not cursor:
                break
        check(pages == 6 and len(seen) == len(set(seen)) == 514, f"{pages} pages, {len(seen)}")
        created = [t["created_usec"] for t in page(limit=256)["tickets"][2:]]
        check(created == sorted(created, reverse=True), "the rest newest first")
        check([t["ticket"] for t in page(state="pending")["tickets"]] == waiting[::-1],
              "state filter")
        check(len(page(agent_uid=AGENT2_UID)["tickets"]) == 2, "agent filter")
        check(page(state="done", agent_uid=AGENT2_UID)["tickets"] == [], "both filters")
        for params, err in (({"cursor": "p.01"}, "io.lockd.Console.InvalidRequest"),
                            ({"cursor": "x"}, "io.lockd.Console.InvalidRequest"),
                            ({"state": "finished"}, "io.lockd.Console.InvalidRequest"),
                            ({"limit": 0}, "org.varlink.service.InvalidParameter"),
                            ({"limit": 257}, "org.varlink.service.InvalidParameter")):
            r = d.console_call("io.lockd.Console.ListTickets", params)
            check(r.get("error") == err, f"{params}: {r}")
        # The human's view: the first page, the waiting tickets first, and how to go on.
        r = d.lockctl("tickets", check_rc=0)
        check(r.stdout.split("\n")[0].startswith(waiting[1]), f"lockctl tickets: {r.stdout[:300]}")
        check("--cursor " in r.stderr and "514 kept, 2 pending" in r.stderr,
              f"lockctl tickets' next page: {r.stderr}")
        r = d.lockctl("tickets", "--all", "--json", check_rc=0)
        check(len(json.loads(r.stdout)["tickets"]) == 514, "lockctl tickets --all")
        r = d.lockctl("tickets", "--state", "pending", "--agent", str(AGENT2_UID), "--json",
                      check_rc=0)
        check([t["ticket"] for t in json.loads(r.stdout)["tickets"]] == waiting[::-1],
              "lockctl tickets --state --agent")
        r = d.lockctl("tickets", "--limit", "0", check_rc=2)
    finally:
        d.stop()


# ---------------------------------------------------------------------------------------------
# Budgets


def write_budget(state, content, answers):
    """Seeds budgets/<sha256>.json in a stopped lockd's state directory, in the exact form lockd
    writes, so a restart loads it: answers are (plugin, version, [(input, placeholder)], outcome,
    time_usec)."""
    digest = hashlib.sha256(content).hexdigest()
    d = os.path.join(state, "budgets")
    os.makedirs(d, mode=0o700, exist_ok=True)
    doc = {"answers": [{"inputs": [list(x) for x in pairs], "outcome": outcome, "plugin": plugin,
                        "time": t, "version": version}
                       for plugin, version, pairs, outcome, t in answers],
           "digest": digest, "format": 1}
    path = os.path.join(d, digest + ".json")
    with open(path, "w") as f:
        f.write(json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n")
    os.chmod(path, 0o600)
    return digest


def list_budgets(d, **params):
    r = d.console_call("io.lockd.Console.ListBudgets", params or None)
    check("parameters" in r, f"ListBudgets {params}: {r}")
    return r["parameters"]["budgets"]


def reset_budget(d, **params):
    return d.console_call("io.lockd.Console.ResetBudget", params)


def lockctl_no_tty(d, *args):
    """lockctl in a session of its own: no controlling terminal, so /dev/tty cannot be opened."""
    return subprocess.run([os.environ["LOCKCTL"], "--socket", d.console, *args],
                          capture_output=True, text=True, timeout=60, start_new_session=True,
                          stdin=subprocess.DEVNULL)


def lockctl_pty(d, args, answer):
    """lockctl on a terminal of its own (a pseudo-terminal as its controlling tty): answers the
    first prompt ending in "[y/N] " with answer; returns (exit status, everything it wrote)."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execv(os.environ["LOCKCTL"], [os.environ["LOCKCTL"], "--socket", d.console, *args])
        finally:
            os._exit(127)
    out, answered = b"", False
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if not answered and out.endswith(b"[y/N] "):
                os.write(fd, answer)
                answered = True
            ready, _, _ = select.select([fd], [], [], 1)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the child closed its side
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(fd)
        _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


def budget_daemon(w, name):
    """A lockd of its own, so its budgets are exactly what the test made them."""
    top = os.path.join(w.dir, name)
    os.makedirs(top, exist_ok=True)
    return Daemon(top)


def test_budgets_fresh_and_errors(w):
    """a fresh lockd has no budgets, a TestPlugin run charges none, and ResetBudget refuses
    every malformed or unknown target by name"""
    d = budget_daemon(w, "d-budget-fresh")
    d.start()
    try:
        check(list_budgets(d) == [], "a fresh state has budgets")
        r = d.lockctl("budget", "show", check_rc=0)
        check(r.stdout == "no budgets\n", f"lockctl budget show: {r.stdout!r}")
        d.lockctl("marketplace", "add", "local", "--issuer", ISSUER, "--identity", PATTERN,
                  "--trusted-root", w.signer.root, check_rc=0)
        d.lockctl("plugin", "install", w.release("good-one"), "--marketplace", "local",
                  check_rc=0)
        path = grant_file(w, "budget-fresh.txt", b"never charged")
        g = grant(d, path, "--agent", str(AGENT_UID))
        out = json.loads(d.lockctl("plugin", "run", "test.good-one", path, "--json",
                                   check_rc=0).stdout)
        check(out.get("result") == 1, f"TestPlugin: {out}")
        check(list_budgets(d) == [], "a console test run charged a budget")
        one = {"sha256": g["sha256"], "used": 0, "handles": [g["handle"]], "answers": []}
        check(list_budgets(d, handle=g["handle"]) == [one], "ListBudgets by handle")
        check(list_budgets(d, sha256=g["sha256"]) == [one], "ListBudgets by sha256")
        r = d.lockctl("budget", "show", g["handle"], check_rc=0)
        check(r.stdout == g["sha256"][:12] + "  used 0  handles: " + g["handle"] +
              "\n  no answers\n", f"lockctl budget show HANDLE: {r.stdout!r}")

        bad = "io.lockd.Console.InvalidRequest"
        for params, error in [
                ({}, bad),
                ({"handle": g["handle"], "sha256": g["sha256"]}, bad),
                ({"sha256": g["sha256"].upper()}, bad),
                ({"sha256": g["sha256"][:-1]}, bad),
                ({"sha256": g["sha256"] + "0"}, bad),
                ({"sha256": " " + g["sha256"][1:]}, bad),
                ({"handle": "h-" + "0" * 32}, "io.lockd.Console.UnknownHandle"),
                ({"handle": "not a handle"}, "io.lockd.Console.UnknownHandle"),
                ({"sha256": "0" * 64}, "io.lockd.Console.UnknownBudget"),
                ({"handle": g["handle"]}, "io.lockd.Console.UnknownBudget")]:
            r = reset_budget(d, **params)
            check(r.get("error") == error, f"ResetBudget {params}: {r}")
            if error.endswith("UnknownHandle"):
                check(r["parameters"] == {"handle": params["handle"]}, f"{r}")
            if error.endswith("UnknownBudget"):
                want = params.get("sha256", g["sha256"])
                check(r["parameters"] == {"sha256": want}, f"{r}")
        r = d.console_call("io.lockd.Console.ListBudgets", {"handle": "h-" + "1" * 32,
                                                            "sha256": g["sha256"]})
        check(r.get("error") == bad, f"ListBudgets with both: {r}")
        r = d.console_call("io.lockd.Console.ListBudgets", {"sha256": "x" * 64})
        check(r.get("error") == bad, f"ListBudgets with a bad digest: {r}")

        r = d.lockctl("budget", "reset", "--yes", g["handle"], check_rc=1)
        check(r.stderr.count("\n") == 1 and "budget reset refused: the content " +
              g["sha256"] + " has no budget" in r.stderr, f"reset of no budget: {r.stderr!r}")
        r = d.lockctl("budget", "reset", "h-" + "0" * 32, "--yes", check_rc=1)
        check(r.stderr.count("\n") == 1 and "no handle h-" + "0" * 32 in r.stderr,
              f"reset of an unknown handle: {r.stderr!r}")
        r = d.lockctl("budget", "reset", check_rc=2)
        check("usage:" in r.stderr, f"reset without a target: {r.stderr!r}")
        r = d.lockctl("budget", "show", "a", "b", check_rc=2)
        check("unknown argument 'b'" in r.stderr, f"show with two targets: {r.stderr!r}")
        audit = os.path.join(d.dir, "state", "audit", "audit.jsonl")
        check(not [x for x in read_audit(audit) if x["event"] == "budget_reset"],
              "a refused reset was audited")
    finally:
        d.stop()


def test_budget_show_and_reset(w):
    """a budget on disk survives a restart, is listed with its answers and live handles (names of
    placeholders only), and a reset drops it: audited, file removed, free again"""
    d = budget_daemon(w, "d-budget-reset")
    content = b"budgeted content"
    t0 = 1780000000000000
    digest = write_budget(os.path.join(d.dir, "state"), content, [
        ("test.good-one", "1.0.0", [], "1", t0),
        ("test.good-inputs", "1.2.0", [("needle", "email"), ("other", "secret_word")],
         "plugin_error", t0 + 1),
        ("test.good-inputs", "1.2.0", [("needle", "name")], "0", t0 + 2)])
    other = write_budget(os.path.join(d.dir, "state"), b"another file", [
        ("test.good-one", "1.0.0", [], "reserved", t0)])
    d.start()
    try:
        g1 = grant(d, grant_file(w, "budgeted-a.txt", content), "--agent", str(AGENT_UID))
        g2 = grant(d, grant_file(w, "budgeted-b.txt", content), "--agent", str(AGENT2_UID))
        check(g1["sha256"] == digest, "the digest of the seeded content")
        budgets = list_budgets(d)
        check([b["sha256"] for b in budgets] == sorted([digest, other]), f"{budgets}")
        b = next(x for x in budgets if x["sha256"] == digest)
        check(b["used"] == 3 and b["handles"] == [g1["handle"], g2["handle"]], f"{b}")
        # At security level 2 no stored outcome is shown ("answered"); answers bound to values
        # are never on disk at all (an older file's bits for them are read as "answered").
        check(b["answers"] == [
            {"plugin": "test.good-inputs", "version": "1.2.0",
             "inputs": {"needle": "email", "other": "secret_word"}, "outcome": "answered",
             "time_usec": t0 + 1, "in_flight": 0},
            {"plugin": "test.good-inputs", "version": "1.2.0", "inputs": {"needle": "name"},
             "outcome": "answered", "time_usec": t0 + 2, "in_flight": 0},
            {"plugin": "test.good-one", "version": "1.0.0", "inputs": {}, "outcome": "answered",
             "time_usec": t0, "in_flight": 0}], f"answers: {b['answers']}")
        o = next(x for x in budgets if x["sha256"] == other)
        check(o["used"] == 1 and o["handles"] == [] and o["answers"][0]["outcome"] == "reserved",
              f"a budget without handles: {o}")
        check(list_budgets(d, handle=g2["handle"]) == [b], "ListBudgets by handle")
        # The agent's view of the same content: its grant's budget less the answers kept.
        limit = console_handles(d)[g1["handle"]]["budget"]
        mine = agent_handles(d)
        check(mine[g1["handle"]]["budget_left"] == limit - 3, f"agent's budget_left: {mine}")

        r = d.lockctl("budget", "show", digest, check_rc=0)
        lines = r.stdout.splitlines()
        check(lines[0] == f"{digest[:12]}  used 3  handles: {g1['handle']} {g2['handle']}",
              f"header: {r.stdout}")
        check(re.fullmatch(r"  PLUGIN +VERSION +INPUTS +OUTCOME +TIME", lines[1]), r.stdout)
        check(re.match(r"  test\.good-inputs +1\.2\.0 +needle=\$\{email\} "
                       r"other=\$\{secret_word\} +answered +\d{4}-\d\d-\d\d ", lines[2]),
              f"an answer with two placeholders: {lines[2]!r}")
        check(re.match(r"  test\.good-inputs +1\.2\.0 +needle=\$\{name\} +answered ", lines[3]) and
              re.match(r"  test\.good-one +1\.0\.0 +- +answered ", lines[4]) and len(lines) == 5,
              f"lockctl budget show: {r.stdout}")
        r = d.lockctl("budget", "show", "--json", check_rc=0)
        check(json.loads(r.stdout)["budgets"] == budgets, "lockctl budget show --json")
        r = d.lockctl("budget", "show", check_rc=0)
        check(r.stdout.count("used ") == 2 and "handles: none" in r.stdout, r.stdout)

        # Without a terminal the human cannot confirm: nothing changes.
        r = lockctl_no_tty(d, "budget", "reset", g1["handle"])
        check(r.returncode == 1 and r.stderr.count("\n") == 1 and "--yes" in r.stderr,
              f"reset without a terminal: {r.returncode} {r.stderr!r}")
        check(list_budgets(d, sha256=digest)[0]["used"] == 3, "reset without confirmation")

        # On a terminal the human is asked, and anything but y or yes keeps the budget.
        rc, out = lockctl_pty(d, ["budget", "reset", g1["handle"]], b"n\n")
        check(rc == 1 and f"The content {digest} holds 3 answer(s)" in out and
              "budget reset cancelled" in out, f"reset answered n: {rc} {out!r}")
        check(list_budgets(d, sha256=digest)[0]["used"] == 3, "reset answered n")

        r = d.lockctl("budget", "reset", g1["handle"], "--yes", check_rc=0)
        check(r.stdout == "budget reset: 3 answer(s) dropped\n", f"reset: {r.stdout!r}")
        check(list_budgets(d, sha256=digest) == [
            {"sha256": digest, "used": 0, "handles": [g1["handle"], g2["handle"]],
             "answers": []}], "after the reset")
        check([x["sha256"] for x in list_budgets(d)] == [other], "the other budget stays")
        check(digest not in budget_snapshot(os.path.join(d.dir, "state"))[0],
              "the budget is still in the snapshot")
        check(agent_handles(d)[g1["handle"]]["budget_left"] == limit, "budget_left after reset")
        r = reset_budget(d, sha256=digest)
        check(r.get("error") == "io.lockd.Console.UnknownBudget", f"a second reset: {r}")
        rc, out = lockctl_pty(d, ["budget", "reset", other], b"y\n")
        check(rc == 0 and out.endswith("budget reset: 1 answer(s) dropped\r\n"),
              f"reset by sha256 answered y: {rc} {out!r}")
        r = reset_budget(d, sha256=other)
        check(r.get("error") == "io.lockd.Console.UnknownBudget", f"reset of {other}: {r}")
        check(list_budgets(d) == [], "every budget reset")

        audit = os.path.join(d.dir, "state", "audit", "audit.jsonl")
        recs = [x for x in read_audit(audit) if x["event"] == "budget_reset"]
        check(len(recs) == 2, f"reset records: {recs}")
        check(recs[0]["handle"] == g1["handle"] and recs[0]["handle_sha256"] == digest and
              recs[0]["answers"] == 3 and recs[0]["in_flight"] == 0 and
              recs[0]["peer_uid"] == 0 and recs[0]["peer_pid"] > 0, f"record: {recs[0]}")
        check(recs[1]["handle"] is None and recs[1]["handle_sha256"] == other and
              recs[1]["answers"] == 1, f"record: {recs[1]}")
        r = d.lockctl("audit", "verify", "--state-dir", os.path.join(d.dir, "state"), check_rc=0)
        check(r.stdout.startswith("ok: "), f"audit verify: {r.stdout}{r.stderr}")
    finally:
        d.stop()


def test_budget_charged_by_runs(w):
    """an --auto protocol-1 question run through lockd is charged once, listed, reset, charged
    anew; a reset keeps the slot of a run in flight, whose outcome lands in it afterwards"""
    d = budget_daemon(w, "d-budget-runs")
    d.start()
    try:
        d.lockctl("marketplace", "add", "local", "--issuer", ISSUER, "--identity", PATTERN,
                  "--trusted-root", w.signer.root, check_rc=0)
        d.lockctl("plugin", "install", w.release("good-one"), "--marketplace", "local",
                  check_rc=0)
        g = grant(d, grant_file(w, "budget-runs.txt", b"answered once"), "--agent",
                  str(AGENT_UID), "--auto")
        limit = console_handles(d)[g["handle"]]["budget"]
        steps = [{"plugin": "test.good-one", "handle": g["handle"]}]

        def ask():
            r = submit(d, steps)
            check(r.get("parameters", {}).get("state") in ("running", "done"), f"Submit: {r}")
            t = r["parameters"]["ticket"]
            return wait_for(lambda: (lambda x: x["parameters"] if x.get("parameters", {}).get(
                "state") == "done" else None)(call_as(AGENT_UID, d.agent, "io.lockd.Agent.Wait",
                                                     {"ticket": t})),
                timeout=30, what="the ticket to be done")

        check(ask()["outcomes"] == [{"step": 0, "result": 1, "error": None}], "first answer")
        b = list_budgets(d)
        check(len(b) == 1 and b[0]["sha256"] == g["sha256"] and b[0]["used"] == 1 and
              b[0]["handles"] == [g["handle"]], f"ListBudgets: {b}")
        a = b[0]["answers"]
        check(len(a) == 1 and a[0]["plugin"] == "test.good-one" and a[0]["version"] == "1.0.0" and
              a[0]["inputs"] == {} and a[0]["outcome"] == "answered" and a[0]["in_flight"] == 0 and
              a[0]["time_usec"] > 0, f"answers: {a}")
        check(agent_handles(d)[g["handle"]]["budget_left"] == limit - 1, "budget_left")
        check(ask()["outcomes"] == [{"step": 0, "result": 1, "error": None}], "cache hit")
        check(list_budgets(d) == b, "a cache hit changed the budget")
        r = d.lockctl("budget", "show", g["handle"], check_rc=0)
        check(re.search(r"\n  test\.good-one +1\.0\.0 +- +answered +\d{4}-", r.stdout), r.stdout)

        r = d.lockctl("budget", "reset", g["sha256"], "--yes", check_rc=0)
        check(r.stdout == "budget reset: 1 answer(s) dropped\n", f"reset: {r.stdout!r}")
        check(list_budgets(d) == [], "the budget after its reset")
        check(agent_handles(d)[g["handle"]]["budget_left"] == limit, "budget_left after reset")
        check(ask()["outcomes"] == [{"step": 0, "result": 1, "error": None}], "after the reset")
        b2 = list_budgets(d)
        check(len(b2) == 1 and b2[0]["used"] == 1 and
              b2[0]["answers"][0]["time_usec"] >= a[0]["time_usec"], f"charged anew: {b2}")

        # A reset while a run holds its slot: the slot stays charged (reserved), the run's
        # outcome lands in it afterwards, and the record says what was kept.
        d.lockctl("plugin", "install", w.release("slow-answer"), "--marketplace", "local",
                  check_rc=0)
        g2 = grant(d, grant_file(w, "budget-slow.txt", b"slow to answer"), "--agent",
                   str(AGENT_UID), "--auto")
        r = submit(d, [{"plugin": "test.slow-answer", "handle": g2["handle"]}])
        t = r["parameters"]["ticket"]
        wait_for(lambda: list_budgets(d, sha256=g2["sha256"])[0]["answers"], timeout=10,
                 what="the run's reservation")
        a = list_budgets(d, sha256=g2["sha256"])[0]["answers"]
        check(len(a) == 1 and a[0]["outcome"] == "reserved" and a[0]["in_flight"] == 1,
              f"a run in flight: {a}")
        r = d.lockctl("budget", "show", g2["handle"], check_rc=0)
        check("reserved" in r.stdout and "(1 run in flight)" in r.stdout, r.stdout)
        r = reset_budget(d, handle=g2["handle"])
        check(r.get("parameters") == {"answers": 0}, f"reset with a run in flight: {r}")
        check(list_budgets(d, sha256=g2["sha256"])[0]["used"] == 1, "the reservation was dropped")
        wait_for(lambda: call_as(AGENT_UID, d.agent, "io.lockd.Agent.Wait", {"ticket": t}).get(
            "parameters", {}).get("state") == "done", timeout=30, what="the slow run")
        a = list_budgets(d, sha256=g2["sha256"])[0]["answers"]
        check(len(a) == 1 and a[0]["outcome"] == "answered" and a[0]["in_flight"] == 0,
              f"after the run: {a}")
        recs = [x for x in read_audit(os.path.join(d.dir, "state", "audit", "audit.jsonl"))
                if x["event"] == "budget_reset"]
        check([(x["handle_sha256"], x["answers"], x["in_flight"]) for x in recs] ==
              [(g["sha256"], 1, 0), (g2["sha256"], 0, 1)], f"reset records: {recs}")
    finally:
        d.stop()


# ---------------------------------------------------------------------------------------------
# The human's side: lockctl approve, results, session end and console, on a terminal (tmux)


class Pane:
    """lockctl on a terminal of its own: a tmux session (120x40) on a private tmux server, driven
    with send-keys and read with capture-pane as a human would type and see. When lockctl ends,
    the pane shows its exit status and then whether the terminal's echo is on again (a line
    TTY-echo or TTY--echo: wait for "TTY-" before reading both)."""

    def __init__(self, w, d, name, *args):
        self.sock = os.path.join(w.dir, "tmux.sock")
        self.name = name
        inner = " ".join(shlex.quote(a) for a in [os.environ["LOCKCTL"], "--socket", d.console,
                                                  *args])
        # The shell outlives a ^C that ends lockctl (a trapped signal is default again in lockctl).
        script = (f"trap : INT; {inner}; echo EXIT=$?; stty -a | tr ' ;' '\\n\\n' | grep -x -- '-\\?echo' "
                  "| sed 's/^/TTY-/'; sleep 600")
        # A server starting while an old one exits can die at once ("server exited
        # unexpectedly"); the session is asked for again then, once.
        r = self.run_tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "40", "sh", "-c",
                          script)
        if r.returncode != 0 and "server exited unexpectedly" in r.stderr:
            time.sleep(0.5)
            r = self.run_tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "40", "sh",
                              "-c", script)
        check(r.returncode == 0, f"tmux new-session: {r.stderr}")

    def run_tmux(self, *args):
        # No user configuration, and a terminal type tmux knows whatever CI's environment says.
        env = dict(os.environ, TERM="xterm-256color")
        return subprocess.run(["tmux", "-f", "/dev/null", "-S", self.sock, *args],
                              capture_output=True, text=True, timeout=20, env=env)

    def tmux(self, *args):
        r = self.run_tmux(*args)
        check(r.returncode == 0, f"tmux {args[0]}: {r.stderr}")
        return r.stdout

    def text(self):
        """The screen and its scrollback."""
        return self.tmux("capture-pane", "-p", "-J", "-S", "-1000", "-t", self.name)

    def screen(self):
        """What the screen shows now (the console's alternate screen while it runs)."""
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def wait(self, s, timeout=20, screen=False):
        try:
            return wait_for(lambda: s in (self.screen() if screen else self.text()),
                            timeout=timeout, what=repr(s))
        except Failed:
            raise Failed(f"no {s!r} on the pane:\n{self.text()}")

    def type(self, text, enter=True):
        self.tmux("send-keys", "-t", self.name, "-l", text)
        if enter:
            self.tmux("send-keys", "-t", self.name, "Enter")

    def key(self, *keys):
        self.tmux("send-keys", "-t", self.name, *keys)

    def close(self):
        subprocess.run(["tmux", "-S", self.sock, "kill-session", "-t", self.name],
                       capture_output=True, timeout=20)


def ticket_state(d, t):
    return d.console_call("io.lockd.Console.GetTicket", {"ticket": t})["parameters"]["ticket"]


def wait_done(d, t, agent=None, level=2):
    """The agent's view of ticket t once done. The console's view below security level 3 says
    which steps are final and never a bit (nor plugin_error); at level 3 it is the agent's."""
    agent = AGENT_UID if agent is None else agent
    done = wait_for(lambda: (lambda x: x["parameters"] if x.get("parameters", {}).get(
        "state") == "done" else None)(call_as(agent, d.agent, "io.lockd.Agent.Wait",
                                             {"ticket": t})),
        timeout=30, what=f"{t} done")
    seen = ticket_state(d, t)
    if level >= 3:
        check(seen["outcomes"] == done["outcomes"], f"the console's view at level 3: {seen}")
        return done
    check(seen["state"] == "done" and [o["step"] for o in seen["outcomes"]] ==
          [o["step"] for o in done["outcomes"]] and
          all(o["result"] is None and o["error"] in (None, "denied", "cancelled", "expired",
                                                     "input_invalid", "budget_exhausted")
              for o in seen["outcomes"]), f"the console's view at level 2: {seen}")
    return done


def needle_ticket(w, d, content, placeholder="email", name=None):
    """A ticket asking test.good-inputs whether a newly granted file holds ${placeholder}."""
    path = grant_file(w, name or f"needle-{time.monotonic_ns()}.txt", content)
    h = grant(d, path, "--agent", str(AGENT_UID), "--label", "the needle file")["handle"]
    r = submit(d, [{"plugin": "test.good-inputs", "handle": h,
                    "inputs": {"needle": "${" + placeholder + "}"}}])
    check(r.get("parameters", {}).get("state") == "pending", f"submit: {r}")
    return r["parameters"]["ticket"]


# A value the human types: it must never show on the terminal, in lockd's log or its audit.
TYPED = "Zq7-typed-at-the-prompt"


def test_approve_typed_value(w):
    """lockctl approve shows each step, asks y/N, reads ${email} with echo off and approves; the
    input session replays it on a second file without a prompt; session end wipes it"""
    w.install("good-inputs")
    w.d.lockctl("session", "end", check_rc=0)
    t1 = needle_ticket(w, w.d, f"to: {TYPED}\n".encode())
    p = Pane(w, w.d, "approve1", "approve", t1)
    try:
        p.wait("Approve this ticket? [y/N]")
        text = p.text()
        for s in ("step 0: test.good-inputs version 1.0.0", "question: Does the file contain",
                  "1 means:", "0 means:", "file:     the needle file (h-",
                  'needle, the value the agent calls "${email}" (the agent\'s wording)',
                  "costs one answer of the file's budget",
                  'needle (text, at most 64 bytes), the agent\'s "${email}": typed now'):
            check(s in text, f"{s!r} not shown:\n{text}")
        p.type("y")
        p.wait("value of needle (text, at most 64 bytes): ")
        p.type(TYPED)
        p.wait("TTY-")
        text = p.text()
        check("EXIT=0" in text and (f"ticket {t1}: running" in text or
                                    f"ticket {t1}: done" in text), f"approve:\n{text}")
        check(TYPED not in text, f"the typed value was echoed:\n{text}")
        check("TTY-echo" in text, f"echo is not back on:\n{text}")
    finally:
        p.close()
    check(wait_done(w.d, t1)["outcomes"] == [{"step": 0, "result": 1, "error": None}],
          f"{t1}: the typed value did not reach the plugin")

    # The same placeholder on another file: replayed, no prompt; the answer is the file's.
    t2 = needle_ticket(w, w.d, b"nothing to see\n")
    p = Pane(w, w.d, "approve2", "approve", t2)
    try:
        p.wait("Approve this ticket? [y/N]")
        check('the agent\'s "${email}": from this input session' in p.text(),
              f"holds:\n{p.text()}")
        p.type("y")
        p.wait("EXIT=")
        check("value of" not in p.text() and "EXIT=0" in p.text(), f"replay:\n{p.text()}")
    finally:
        p.close()
    check(wait_done(w.d, t2)["outcomes"] == [{"step": 0, "result": 0, "error": None}],
          f"{t2}: the replayed value")

    r = w.d.lockctl("session", "end", check_rc=0)
    check(re.fullmatch(r"input session ended: [1-9][0-9]* values? wiped\n", r.stdout),
          f"session end: {r.stdout}")
    r = w.d.lockctl("session", "end", check_rc=0)
    check(r.stdout == "input session ended: 0 values wiped\n", f"second session end: {r.stdout}")

    # Wiped: the next ticket prompts again; ^C at the prompt leaves echo on and sends nothing.
    t3 = needle_ticket(w, w.d, b"third\n")
    p = Pane(w, w.d, "approve3", "approve", t3)
    try:
        p.wait("Approve this ticket? [y/N]")
        check('the agent\'s "${email}": typed now' in p.text(), f"after session end:\n{p.text()}")
        p.type("y")
        p.wait("value of needle (text, at most 64 bytes): ")
        p.type("half-typed", enter=False)
        p.key("C-c")
        p.wait("TTY-")
        check("EXIT=130" in p.text() and "TTY-echo" in p.text() and "half-typed" not in p.text(),
              f"^C at the prompt:\n{p.text()}")
    finally:
        p.close()
    check(ticket_state(w.d, t3)["state"] == "pending", "an interrupted approve approved")

    # Refusals: a value over 1024 bytes, an empty one, no terminal; each sends nothing.
    for typed, want in (("x" * 1100, "longer than 1024 bytes: refused, nothing was sent"),
                        ("", 'an empty value for "${email}" is refused, nothing was sent')):
        p = Pane(w, w.d, "approve4", "approve", t3, "--yes")
        try:
            p.wait("value of needle (text, at most 64 bytes): ")
            p.type(typed)
            p.wait("EXIT=")
            check("EXIT=1" in p.text() and want in p.text(), f"{want}:\n{p.text()}")
        finally:
            p.close()
    r = lockctl_no_tty(w.d, "approve", t3, "--yes")
    check(r.returncode == 1 and 'approve needs a terminal to read values for "${email}"' in r.stderr,
          f"no terminal: {r.returncode} {r.stderr}")
    r = lockctl_no_tty(w.d, "approve", t3)
    check(r.returncode == 1, f"no terminal, no --yes: {r.returncode} {r.stderr}")
    check(ticket_state(w.d, t3)["state"] == "pending", "a refused approve approved")
    w.d.lockctl("deny", t3, check_rc=0)

    r = w.d.lockctl("approve", t3, "--yes", check_rc=1)
    check(f"ticket {t3} is not pending (denied)" in r.stderr, f"approve after deny: {r.stderr}")
    r = w.d.lockctl("approve", "t-" + "0" * 32, "--yes", check_rc=1)
    check("no ticket t-" in r.stderr, f"approve of a missing ticket: {r.stderr}")
    with open(os.path.join(w.d.dir, "state", "audit", "audit.jsonl")) as f:
        audit = f.read()
    check(TYPED not in w.d.read_log() and TYPED not in audit,
          "the typed value reached lockd's log or audit")


def test_approve_without_values(w):
    """a ticket with no placeholder is approved with --yes and no terminal"""
    one = w.install("good-one")
    h = grant(w.d, grant_file(w, "plain.txt", b"plain\n"), "--agent", str(AGENT_UID))["handle"]
    t = submit(w.d, [{"plugin": one, "handle": h}])["parameters"]["ticket"]
    r = lockctl_no_tty(w.d, "approve", t, "--yes")
    check(r.returncode == 0 and re.search(f"ticket {t}: (running|done)", r.stdout),
          f"approve --yes: {r.returncode} {r.stdout} {r.stderr}")
    check(wait_done(w.d, t)["outcomes"][0]["result"] in (0, 1), "no outcome")


def test_results_refused_level2(w):
    """lockctl results at security level 2 says why it shows nothing"""
    one = w.install("good-one")
    h = grant(w.d, grant_file(w, "results2.txt", b"r\n"), "--agent", str(AGENT_UID))["handle"]
    t = submit(w.d, [{"plugin": one, "handle": h}])["parameters"]["ticket"]
    r = w.d.lockctl("results", t, check_rc=1)
    check(r.stderr.strip() == "lockctl: results refused: results are shown only at security "
          "level 3; this lockd runs at level 2 (security_level in lockd.yaml)", f"{r.stderr}")
    w.d.lockctl("deny", t, check_rc=0)


def test_results_level3(w):
    """at security level 3 lockctl results shows each outcome, its cause, the run's unit and
    measures, and the plugin's detail under "shown here only"; --json as lockd sent it"""
    top = os.path.join(w.dir, "d-level3")
    os.makedirs(top, exist_ok=True)
    d = Daemon(top, policy=policy_text(top).replace("security_level: 2", "security_level: 3"))
    d.start()
    try:
        d.lockctl("marketplace", "add", "local", "--issuer", ISSUER, "--identity", PATTERN,
                  "--trusted-root", w.signer.root, check_rc=0)
        d.lockctl("plugin", "install", w.release("good-inputs"), "--marketplace", "local",
                  check_rc=0)
        t = needle_ticket(w, d, f"xx {TYPED}\n".encode(), name="level3.txt")
        p = Pane(w, d, "results3", "approve", t, "--yes")
        try:
            p.wait("value of needle (text, at most 64 bytes): ")
            p.type(TYPED)
            p.wait("EXIT=0")
        finally:
            p.close()
        wait_done(d, t, level=3)
        r = d.lockctl("results", t, check_rc=0)
        for s in (f"ticket {t}: done", "step 0: test.good-inputs 1.0.0", "outcome: 1",
                  "cause:   answer", "unit:    lockd-run-", "wall ", "peak memory",
                  "detail, shown here only"):
            check(s in r.stdout, f"{s!r} not in results:\n{r.stdout}")
        check(TYPED not in r.stdout and "cached:  no" in r.stdout, f"results:\n{r.stdout}")
        j = json.loads(d.lockctl("results", t, "--json", check_rc=0).stdout)
        check(j["ticket"] == t and j["steps"][0]["result"] == 1 and "detail" in j["steps"][0],
              f"results --json: {j}")
        # The same bytes under another grant, the value from the session: no terminal needed,
        # and the answer comes from the cache.
        t2 = needle_ticket(w, d, f"xx {TYPED}\n".encode(), name="level3-again.txt")
        r = lockctl_no_tty(d, "approve", t2, "--yes")
        check(r.returncode == 0 and 'the agent\'s "${email}": from this input session' in r.stdout,
              f"replayed approve: {r.returncode} {r.stdout} {r.stderr}")
        wait_done(d, t2, level=3)
        r = d.lockctl("results", t2, check_rc=0)
        check("outcome: 1" in r.stdout and "cached:  yes" in r.stdout, f"cached:\n{r.stdout}")
    finally:
        d.stop()


def test_console_live(w):
    """lockctl console lists a new ticket as it comes, denies it with d, approves another with a
    (the same prompts as lockctl approve), and gives the terminal back on q"""
    w.install("good-inputs")
    p = Pane(w, w.d, "console", "console")
    try:
        p.wait("lockd console:", screen=True)
        t1 = needle_ticket(w, w.d, b"deny me\n", placeholder="console_a")
        p.wait(t1[:12], screen=True)
        p.type("j" * 200, enter=False)  # the newest ticket is the last line
        p.key("d")
        p.wait(f"denied {t1[:12]}", screen=True)
        line = [x for x in p.screen().splitlines() if x.startswith(t1[:12])]
        check(line and "denied" in line[0] and "test.good-inputs" in line[0] and
              f"uid {AGENT_UID}" in line[0], f"the denied line: {line}")
        check(ticket_state(w.d, t1)["state"] == "denied", "d did not deny")

        t2 = needle_ticket(w, w.d, b"the console value\n", placeholder="console_b")
        p.wait(t2[:12], screen=True)
        p.type("j" * 200, enter=False)
        p.key("a")
        p.wait("Approve this ticket? [y/N]")
        check(f"ticket {t2}" in p.text(), f"approve from the console:\n{p.text()}")
        p.type("y")
        p.wait("value of needle (text, at most 64 bytes): ")
        p.type("console value")
        # Approved: the console comes back at once, and shows the outcome when the ticket ends.
        p.wait("lockd console:", screen=True)
        check("console value" not in p.text(), f"echoed:\n{p.text()}")
        wait_done(w.d, t2)
        p.wait(f"{t2[:12]} ended: done", screen=True)
        p.key("q")
        p.wait("TTY-")
        check("TTY-echo" in p.text(), f"the terminal after q:\n{p.text()}")
    finally:
        p.close()


def main():
    require_environment()
    tap = Tap()
    w = World()
    try:
        for t in (test_ready, test_getinfo_roles, test_interface_description, test_stranger_dropped,
                  test_wrong_socket, test_agent_console_method, test_console_other_uid, test_overlapping_roles_refused,
                  test_no_manager_refused, test_backend_none, test_check_config, test_marketplace_methods, test_install_list_remove,
                  test_install_refused, test_update_typed_name, test_reinstall_after_remove,
                  test_run_answer, test_manager_reexec, test_scope_limits,
                  test_timeout, test_oom, test_status, test_restart_persists,
                  test_sighup_bad_policy, test_many_connections, test_oversize, test_truncated,
                  test_non_json, test_wrong_type, test_unknown_method, test_agent_fds,
                  test_sigterm_runs_in_flight, test_sigkill_mid_run, test_stale_scope_killed,
                  test_socket_activate, test_socket_unit, test_grant_agent_view,
                  test_grant_snapshot, test_grant_other_agent, test_revoke, test_grant_ttl,
                  test_grant_not_agent, test_grant_refused, test_grant_limits, test_handles_audit,
                  test_grant_symlink_and_cap, test_submit_plan_errors, test_ticket_wait_deny,
                  test_ticket_cancel, test_watch_tickets, test_ticket_followers_gone,
                  test_approve_typed_value, test_approve_without_values,
                  test_results_refused_level2, test_results_level3, test_console_live,
                  test_tickets_cap_and_expiry, test_tickets_paged_fair_share,
                  test_budgets_fresh_and_errors,
                  test_budget_show_and_reset, test_budget_charged_by_runs,
                  # Last: after a daemon-reexec that races scope creation, systemd 252's user
                  # manager has been seen to leave new scopes out of list-units for a while.
                  test_reexec_runs_in_flight):
            tap.run(t, w)
    finally:
        w.d.stop()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
