"""What the integration tests share: a real lockd on a test policy, Varlink clients as any uid,
signed releases from tests/tools/lockd-sign, and TAP output.

Run under tests/integration/with-systemd, which provides LOCKD_TEST_BUS (a real systemd manager).
Paths of the built programs arrive in the environment (LOCKD, LOCKCTL, LOCKD_SIGN,
LOCKD_TEST_PLUGINS, LOCKD_TEST_PLUGINS_SRC, LOCKD_VARLINK_TOOL)."""

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

LOCKD = os.environ.get("LOCKD", "")
LOCKCTL = os.environ.get("LOCKCTL", "")
LOCKD_SIGN = os.environ.get("LOCKD_SIGN", "")
PLUGINS = os.environ.get("LOCKD_TEST_PLUGINS", "")
PLUGINS_SRC = os.environ.get("LOCKD_TEST_PLUGINS_SRC", "")
BUS = os.environ.get("LOCKD_TEST_BUS", "")
HERE = os.path.dirname(os.path.abspath(__file__))

# Test identities: numeric uids with no passwd entry, outside the ephemeral range.
AGENT_UID = 61001
STRANGER_UID = 61002
CONSOLE_UID = 61003
AGENT2_UID = 61004  # a second agent: handles of one are invisible to the other
# The test daemons' ephemeral uids: a range of their own, so plugins of other runs are not ours.
# Each suite has its own (LOCKD_TEST_EPHEMERAL_FIRST, tests/integration/meson.build): suites run
# side by side, and two plugins of one uid would share RLIMIT_NPROC and could signal each other.
EPHEMERAL_FIRST = int(os.environ.get("LOCKD_TEST_EPHEMERAL_FIRST") or 810000)
EPHEMERAL_LAST = EPHEMERAL_FIRST + 999
ISSUER = "https://token.actions.githubusercontent.com"
WORKFLOW = "https://github.com/acme/lockfile-plugins/.github/workflows/release.yml@"
PATTERN = r"^https://github\.com/acme/lockfile-plugins/\.github/workflows/release\.yml@refs/tags/.*"


class Failed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failed(what)


class Tap:
    """Runs test functions and prints TAP; a failing or raising test is `not ok` with its reason."""

    def __init__(self):
        self.n = 0
        self.failed = 0

    def run(self, fn, *args):
        # LOCKD_TEST_ONLY=part runs only the tests whose function name holds it (by hand).
        only = os.environ.get("LOCKD_TEST_ONLY")
        if only and only not in fn.__name__:
            return
        self.n += 1
        desc = (fn.__doc__ or fn.__name__).strip().splitlines()[0]
        try:
            fn(*args)
            print(f"ok {self.n} - {desc}", flush=True)
        except Exception as e:  # noqa: BLE001 - every failure is reported, none is fatal
            self.failed += 1
            print(f"not ok {self.n} - {desc}", flush=True)
            for line in (traceback.format_exc() if not isinstance(e, Failed) else str(e)).splitlines():
                print(f"# {line}", flush=True)

    def done(self):
        print(f"1..{self.n}", flush=True)
        if self.failed:
            keep_tempdirs()
        return 1 if self.failed else 0


def require_environment():
    """Missing prerequisites are failures, not skips."""
    missing = [n for n, v in [("LOCKD", LOCKD), ("LOCKCTL", LOCKCTL), ("LOCKD_SIGN", LOCKD_SIGN),
                              ("LOCKD_TEST_PLUGINS", PLUGINS), ("LOCKD_TEST_BUS", BUS)] if not v]
    if missing:
        print("Bail out! missing " + ", ".join(missing) + " (run through tests/integration/with-systemd)")
        sys.exit(1)
    if os.geteuid() != 0:
        print("Bail out! the integration tests run as root (lockd gives each run its own uid)")
        sys.exit(1)
    for tool in ("setpriv", "systemctl", "systemd-socket-activate"):
        if not shutil.which(tool):
            print(f"Bail out! {tool} is not installed")
            sys.exit(1)


def systemctl(*args):
    """systemctl against the test manager (the system one, or the private user one)."""
    cmd = ["systemctl"]
    if BUS != "system":
        cmd.append("--user")
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=30)


def units(pattern="lockd-run-*"):
    out = systemctl("list-units", "--all", "--plain", "--no-legend", pattern).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def unit_pids(unit):
    """The pids in unit's cgroup (any hierarchy that has it), or [] when it has none."""
    cg = unit_properties(unit, "ControlGroup").get("ControlGroup", "")
    if not cg:
        return []
    for top in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd", "/sys/fs/cgroup"):
        try:
            with open(f"{top}{cg}/cgroup.procs") as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            continue
    return []


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def standby_units():
    """Scopes made ahead: units holding only a child that waits for its run (lockd-standby)."""
    out = []
    for u in units():
        pids = unit_pids(u)
        if pids and all(comm(p) == "lockd-standby" for p in pids):
            out.append(u)
    return out


def run_units():
    """Scopes of runs: every lockd-run unit but the ones made ahead that still wait."""
    ready = set(standby_units())
    return [u for u in units() if u not in ready]


def unit_properties(unit, *props):
    out = systemctl("show", unit, *[f"--property={p}" for p in props]).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def add_user(name, uid):
    """Adds user name (uid, no home, nologin), an agent that lockctl agent run --user can name,
    replacing an earlier one. In a private /etc: with-systemd runs its command under
    tests/tools/private-etc (LOCKD_PRIVATE_ETC=1), so the host's /etc/passwd is never edited. On a
    host whose PID 1 is systemd (LOCKD_TEST_BUS=system) the host's manager has to see the user:
    there it goes to the host's /etc, and remove_user() takes it away again."""
    check(os.environ.get("LOCKD_PRIVATE_ETC") == "1" or BUS == "system",
          "no private /etc to add a user to: run through tests/integration/with-systemd")
    remove_user(name)
    subprocess.run(["useradd", "-M", "-N", "-u", str(uid), "-d", "/", "-s", "/usr/sbin/nologin",
                    name], check=True, capture_output=True)


def remove_user(name):
    """Removes user name if it exists. -f: a process of the user may still be ending (the agent
    of the test before, whose unit the manager is still stopping), and userdel refuses such a
    user without it, which left the next add_user() to fail with "already in use"."""
    subprocess.run(["userdel", "-f", name], capture_output=True)


# ---------------------------------------------------------------------------------------------
# Varlink


class Varlink:
    """A blocking Varlink client over a Unix socket; runs as the caller's uid."""

    def __init__(self, path, timeout=30):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)  # blocking, as a client would: a full backlog waits
        self.sock.settimeout(timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def send_raw(self, data, fds=()):
        if fds:
            socket.send_fds(self.sock, [data], list(fds))
        else:
            self.sock.sendall(data)

    def read_message(self):
        while b"\0" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionResetError("lockd closed the connection")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, fds=(), more=False, oneway=False):
        m = {"method": method}
        if params is not None:
            m["parameters"] = params
        if more:
            m["more"] = True
        if oneway:
            m["oneway"] = True
        self.send_raw(json.dumps(m).encode() + b"\0", fds)
        if oneway:
            return None
        return self.read_message()


def call(path, method, params=None, fds=()):
    v = Varlink(path)
    try:
        return v.call(method, params, fds)
    finally:
        v.close()


def call_as(uid, path, method, params=None, gid=None):
    """A call from another uid, through setpriv, so the kernel's SO_PEERCRED is that uid's."""
    gid = uid if gid is None else gid
    prog = ("import json,socket,sys\n"
            "s=socket.socket(socket.AF_UNIX);s.settimeout(20);s.connect(sys.argv[1])\n"
            "m={'method':sys.argv[2]}\n"
            "p=json.loads(sys.argv[3])\n"
            "m.update({'parameters':p} if p is not None else {})\n"
            "b=b''\n"
            "try:\n"
            "  s.sendall(json.dumps(m).encode()+b'\\0')\n"
            "  while b'\\0' not in b:\n"
            "    c=s.recv(65536)\n"
            "    if not c: break\n"
            "    b+=c\n"
            "except OSError as e: print(json.dumps({'transport':str(e)}));sys.exit(0)\n"
            "print(b.split(b'\\0')[0].decode() if b else json.dumps({'transport':'closed'}))\n")
    r = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                        sys.executable, "-c", prog, path, method, json.dumps(params)],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise Failed(f"client as uid {uid} failed: {r.stderr}")
    return json.loads(r.stdout)


# ---------------------------------------------------------------------------------------------
# Signed releases


class Signer:
    """A private trusted root and releases signed the way a marketplace's workflow would."""

    def __init__(self, workdir):
        self.dir = os.path.join(workdir, "signer")
        run([LOCKD_SIGN, "init", self.dir])
        self.root = os.path.join(self.dir, "trusted_root.json")

    def release(self, case, dest, manifest_text=None):
        """A release directory for tests/plugins/<case>, signed for its own tag."""
        os.makedirs(dest, exist_ok=True)
        text = manifest_text
        if text is None:
            with open(os.path.join(PLUGINS_SRC, case, "plugin.toml")) as f:
                text = f.read()
        with open(os.path.join(dest, "plugin.toml"), "w") as f:
            f.write(text)
        shutil.copy(os.path.join(PLUGINS, case), os.path.join(dest, "plugin"))
        name = manifest_value(text, "name")
        version = manifest_value(text, "version")
        ref = f"refs/tags/{name}/v{version}"
        run([LOCKD_SIGN, "sign", self.dir, "--identity", WORKFLOW + ref, "--issuer", ISSUER,
             "--ref", ref, os.path.join(dest, "plugin.toml"), os.path.join(dest, "plugin")])
        return dest


def manifest_value(text, key):
    for line in text.splitlines():
        if line.startswith(key + " = "):
            return line.split("=", 1)[1].strip().strip('"')
    raise Failed(f"no {key} in manifest")


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=kw.pop("timeout", 120), **kw)
    if r.returncode != 0:
        raise Failed(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


# ---------------------------------------------------------------------------------------------
# The daemon


def policy_text(d, extra="", confinement=False):
    """A test policy. Agents started plainly (setpriv) can watch runs, so most tests turn the
    confinement check off; the tests of the check itself turn it on."""
    bus = BUS
    return f"""security_level: 2
agents:
  users: [{AGENT_UID}, {AGENT2_UID}]
  require_confinement: {"true" if confinement else "false"}
consoles:
  users: [0, {CONSOLE_UID}]
sockets:
  agent: {{path: {d}/agent.sock, mode: "0666"}}
  console: {{path: {d}/run/console.sock, mode: "0666"}}
state_directory: {d}/state
runtime_directory: {d}/run
ephemeral_uids: {{first: {EPHEMERAL_FIRST}, last: {EPHEMERAL_LAST}}}
limits:
  concurrent_runs: 4
  connections_per_uid: 256
  connections_total: 512
  console_connections: 256
  message_bytes: 64KiB
scope:
  backend: systemd
  bus: {bus if bus in ("system", "user") else '"' + bus + '"'}
  slice: lockd-test.slice
{extra}"""


class Daemon:
    """lockd started by hand on a test policy in a private directory; waits for READY=1."""

    def __init__(self, workdir, extra_policy="", policy=None):
        self.dir = workdir
        os.chmod(self.dir, 0o755)
        self.policy = os.path.join(self.dir, "lockd.yaml")
        with open(self.policy, "w") as f:
            f.write(policy if policy is not None else policy_text(self.dir, extra_policy))
        self.agent = os.path.join(self.dir, "agent.sock")
        self.console = os.path.join(self.dir, "run", "console.sock")
        self.log_path = os.path.join(self.dir, "lockd.log")
        self.proc = None

    def start(self, argv_extra=(), timeout=60, wrapper=(), env_extra=None):
        """Starts lockd, under wrapper (a command that execs its arguments: same pid) and with
        env_extra added to its environment, and waits for READY=1. A lockd that exits is seen
        at once; the timeout is for a CI machine that runs eight of these suites at once beside
        the sanitizer build (systemd's own default for a start is 90 s)."""
        # An engine of this lockd's last start may still be ending (the spawner was killed: the
        # engine's parent-death signal is on its way): it holds the audit log's lock until it is
        # gone, and a new engine would find the log held. Under systemd the unit's stop waits for
        # every process of its cgroup; here the test waits.
        old_engine = getattr(self, "_engine", None)
        if old_engine:
            wait_for(lambda: not _is_engine(old_engine), timeout=15,
                     what=f"the last engine (pid {old_engine}) to end")
            self._engine = None
        notify = os.path.join(self.dir, "notify.sock")
        if os.path.exists(notify):
            os.unlink(notify)
        ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        ns.bind(notify)
        # Short waits, so that a lockd that exits without READY=1 is seen at once (a refused
        # start is an exit, not the whole timeout waited out).
        ns.settimeout(0.05)
        env = dict(os.environ, NOTIFY_SOCKET=notify, **(env_extra or {}))
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([*wrapper, LOCKD, "--config", self.policy, *argv_extra],
                                     env=env,
                                     stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + timeout
        self.notifications = []
        try:
            while time.monotonic() < deadline:
                try:
                    msg = ns.recv(4096).decode()
                except socket.timeout:
                    if self.proc.poll() is not None:
                        break
                    continue
                self.notifications.append(msg)
                if "READY=1" in msg.split("\n"):
                    self._engine = self._find_engine()
                    return self
                if self.proc.poll() is not None:
                    break
        finally:
            ns.close()
        # The log's end says why: CI shows a failure's first lines only, so the tail comes first
        # and the log's earlier part (the lockd of an earlier start, in a restart) is left out.
        waited = time.monotonic() - (deadline - timeout)
        tail = self.read_log().splitlines()[-30:]
        raise Failed(f"lockd did not become ready after {waited:.1f} s; exit {self.proc.poll()}; "
                     f"notifications {self.notifications}; the log's last lines:\n" +
                     "\n".join(line[:400] for line in tail))

    def read_log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise Failed("lockd did not stop within %d s" % timeout)
        return self.proc.returncode

    def lockctl(self, *args, uid=None, input=None, check_rc=None):
        cmd = [LOCKCTL, "--socket", self.console, *args]
        if uid is not None:
            cmd = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *cmd]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, input=input)
        if check_rc is not None and r.returncode != check_rc:
            raise Failed(f"lockctl {' '.join(args)}: exit {r.returncode}, want {check_rc}:\n"
                         f"{r.stdout}{r.stderr}")
        return r

    def console_call(self, method, params=None, fds=()):
        return call(self.console, method, params, fds)

    def _find_engine(self):
        """The engine's pid (engine_pid()), or None when this lockd runs none (a stand-in)."""
        try:
            return self.engine_pid()
        except Failed:
            return None

    def engine_pid(self):
        """The engine's pid: the one child of the spawner (self.proc, the root lockd) whose
        executable is lockd-engine, the process that serves both sockets."""
        found = []
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                with open(f"/proc/{p}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                exe = os.readlink(f"/proc/{p}/exe")
            except (OSError, IndexError, ValueError):
                continue
            if ppid == self.proc.pid and \
                    os.path.basename(exe.removesuffix(" (deleted)")) == "lockd-engine":
                found.append(int(p))
        check(len(found) == 1, f"the spawner's lockd-engine children: {found}")
        return found[0]


# The work directories of this process (tempdir()): removed when it exits, unless something
# failed (keep_tempdirs(), an uncaught exception) or LOCKD_TEST_KEEP=1 / LOCKD_BENCH_KEEP=1 asks
# to keep them. Each run left one of up to 157 MiB (du) in /tmp before.
_tempdirs = []
_keep = os.environ.get("LOCKD_TEST_KEEP") == "1" or os.environ.get("LOCKD_BENCH_KEEP") == "1"
_failed = False
_owner = os.getpid()  # a forked child that exits normally must not remove its parent's


def tempdir():
    d = tempfile.mkdtemp(prefix="lockd-it-")
    os.chmod(d, 0o755)
    _tempdirs.append(d)
    return d


def keep_tempdirs():
    """Something failed: the work directories stay for a look, and their paths are printed (as
    TAP comments) when the process exits."""
    global _failed
    _failed = True


def _mount_under(d):
    """Whether a mount point is at or below d (a test that failed may leave its tmpfs mounted);
    True when mountinfo cannot be read, as nothing then says there is none."""
    try:
        with open("/proc/self/mountinfo") as f:
            return any(m == d or m.startswith(d + "/") for m in (line.split()[4] for line in f))
    except OSError:
        return True


def _tempdirs_at_exit():
    if os.getpid() != _owner or not _tempdirs:
        return
    if _failed or _keep:
        for d in _tempdirs:
            print(f"# kept: {d}", flush=True)
        return
    for d in _tempdirs:
        # Never through a mount: its files are not ours to remove.
        if _mount_under(d):
            print(f"# kept (a mount is still under it): {d}", flush=True)
            continue
        shutil.rmtree(d, ignore_errors=True)


def _note_uncaught(kind, value, tb, _hook=sys.excepthook):
    keep_tempdirs()
    _hook(kind, value, tb)


sys.excepthook = _note_uncaught
atexit.register(_tempdirs_at_exit)


def wait_for(pred, timeout=10, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise Failed(f"timed out waiting for {what}")


def _own_cgroup():
    """The cgroup with-systemd made for this test (lockd-test-<pid>-<n>): (the hierarchy's key in
    /proc/self/cgroup, its path), or None (the host's manager: no cgroup of our own)."""
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, key, path = line.rstrip("\n").split(":", 2)
                parts = path.split("/")
                for i, part in enumerate(parts):
                    if part.startswith("lockd-test-"):
                        return key, "/".join(parts[:i + 1])
    except (OSError, ValueError):
        pass
    return None


OWN_CGROUP = _own_cgroup()


def ours(pid):
    """Whether pid runs in this test's cgroup: everything it started does, the plugins in its
    manager's scopes included, and nothing of another suite running beside it."""
    if OWN_CGROUP is None:
        return True
    key, prefix = OWN_CGROUP
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            for line in f:
                _, k, path = line.rstrip("\n").split(":", 2)
                if k == key:
                    return path == prefix or path.startswith(prefix + "/")
    except (OSError, ValueError):
        pass
    return False


def plugin_processes(first=EPHEMERAL_FIRST, last=EPHEMERAL_LAST):
    """Pids of this test running (not zombies) as an ephemeral uid: a plugin that outlived its
    run."""
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            st = os.stat(f"/proc/{p}")
        except FileNotFoundError:
            continue
        if not first <= st.st_uid <= last:
            continue
        # A zombie runs nothing: a plugin killed after lockd died waits there for whoever adopted
        # it to reap it, which is no plugin left running.
        if proc_state(f"/proc/{p}/stat") not in ("", "Z") and ours(p):
            pids.append(int(p))
    return pids


# ---------------------------------------------------------------------------------------------
# A daemon with signed releases, and grants (test-daemon.py and test-ask.py)


class World:
    """One daemon with a marketplace and signed releases, shared by most tests."""

    def __init__(self):
        self.dir = tempdir()
        self.signer = Signer(self.dir)
        os.mkdir(os.path.join(self.dir, "d1"))
        self.d = Daemon(os.path.join(self.dir, "d1"))
        self.d.start()
        self.releases = {}

    def release(self, case):
        if case not in self.releases:
            self.releases[case] = self.signer.release(case, os.path.join(self.dir, "rel", case))
        return self.releases[case]

    def ensure_marketplace(self):
        r = self.d.console_call("io.lockd.Console.ListMarketplaces")
        if any(m["name"] == "local" for m in r["parameters"]["marketplaces"]):
            return
        self.d.lockctl("marketplace", "add", "local", "--issuer", ISSUER, "--identity", PATTERN,
                       "--trusted-root", self.signer.root, check_rc=0)

    def install(self, case):
        self.ensure_marketplace()
        name = "test." + case
        r = self.d.console_call("io.lockd.Console.ListPlugins")
        if any(p["name"] == name for p in r["parameters"]["plugins"]):
            return name
        self.d.lockctl("plugin", "install", self.release(case), "--marketplace", "local",
                       check_rc=0)
        return name


def grant_file(w, name, content):
    path = os.path.join(w.dir, name)
    with open(path, "wb") as f:
        f.write(content)
    return path


def grant(d, path, *args, check_rc=0):
    r = d.lockctl("grant", path, *args, "--json", check_rc=check_rc)
    return json.loads(r.stdout) if check_rc == 0 else r


def agent_handles(d, uid=AGENT_UID):
    r = call_as(uid, d.agent, "io.lockd.Agent.ListHandles")
    check("parameters" in r, f"agent ListHandles: {r}")
    return {h["handle"]: h for h in r["parameters"]["handles"]}


def read_audit(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def budget_snapshot(state):
    """The budgets state/budgets/checkpoint holds, by digest (a snapshot: its header line, then a
    budget per line; ARCHITECTURE.md, budgets), and its header. ({}, None) when there is none."""
    try:
        with open(os.path.join(state, "budgets", "checkpoint")) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return {}, None
    header = json.loads(lines[0])
    if header.get("format") != 2 or header.get("budgets") != len(lines) - 1:
        raise ValueError(f"not a budget snapshot: {header}")
    budgets = [json.loads(line) for line in lines[1:]]
    return {b["digest"]: b for b in budgets}, header


# ---------------------------------------------------------------------------------------------
# Small helpers of test-hostile.py and test-faults.py


def _is_engine(pid):
    """Whether pid is still a lockd-engine with a thread that has not ended. A killed engine's
    main thread ends first and its exe stops reading, while a writer thread can still be inside
    an fsync (a busy disk): that thread holds the process's files, the audit log's lock with
    them, until it ends too. So every thread's state is read, not the exe: the threads of a
    process that has fully ended are all zombies (Z, X) or gone."""
    if comm(pid) != "lockd-engine":
        return False
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    return any(proc_state(f"/proc/{pid}/task/{tid}/stat") not in ("", "Z", "X") for tid in tasks)


def proc_state(path):
    """The state letter (R, S, D, Z...) in a /proc stat file, of a process or of one of its
    threads; "" when it no longer reads (the process or thread is gone)."""
    try:
        with open(path) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def status_kib(pid, field):
    """A size from /proc/PID/status in KiB: VmRSS (resident now), VmHWM (the peak since the
    start or since reset_peak_rss())."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise Failed(f"no {field} in /proc/{pid}/status")


def reset_peak_rss(pid):
    """Sets pid's VmHWM back to its VmRSS ("5" to clear_refs): a later VmHWM is the peak since."""
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


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
