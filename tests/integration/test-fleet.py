#!/usr/bin/env python3
"""Fleets against a real lockd on a real systemd manager: lockd's audit records reach journald
(lockd's stderr is a journal stream, as under lockd.service), systemd-journal-upload sends them
over HTTPS on 127.0.0.1 to systemd-journal-remote (a CA, server and client certificates made
with openssl; journal-remote verifies the client's), and `lockctl audit verify --journal` on the
collector's files says ok with the host's head equal to the local one. Then copies of the
collector's journal with a record removed (gap), a record changed (rewrite), a restarted lockd
(a new start, not a fork) and two hosts in one directory. Drop-ins: a duplicate key across
files refused by --check-config naming both, an invalid drop-in refused on reload with lockd
still serving. plugin sync from a file:// marketplace: from empty, no change, a version bumped,
one removed, a pin the index does not offer. TAP on stdout. Run through
tests/integration/with-systemd."""

import hashlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lockdtest import (ISSUER, LOCKCTL, LOCKD, LOCKD_SIGN, PATTERN, PLUGINS_SRC,  # noqa: E402
                       WORKFLOW, Daemon, Failed, Signer, Tap, check, grant_revoke,
                       require_environment, run, tempdir, wait_for, write_file)

JOURNALD = "/lib/systemd/systemd-journald"
REMOTE = "/lib/systemd/systemd-journal-remote"
UPLOAD = "/lib/systemd/systemd-journal-upload"
# lockd here runs by hand, in no unit: lockctl's default (_COMM=lockd-engine, one _UID per host)
# finds its engine's entries; the tests pass the match explicitly only where they say so.
MATCH = "_COMM=lockd-engine"

# Execs its arguments (same pid) with stdout and stderr on a journal stream, and $JOURNAL_STREAM
# naming it, as systemd does for a service: lockd then logs to the journal.
STREAM_WRAPPER = r"""
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect("/run/systemd/journal/stdout")
s.sendall(b"lockd\n\n6\n1\n0\n0\n0\n")
fd = s.detach()
os.dup2(fd, 1)
os.dup2(fd, 2)
st = os.fstat(2)
os.environ["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}"
os.execv(sys.argv[1], sys.argv[1:])
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def make_pki(d):
    """A CA, a server certificate for 127.0.0.1 and a client certificate per host."""
    ca_key, ca = os.path.join(d, "ca.key"), os.path.join(d, "ca.pem")
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=fleet test CA",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"])

    def leaf(name, cn, ext):
        key, csr, crt = (os.path.join(d, name + x) for x in (".key", ".csr", ".pem"))
        extf = os.path.join(d, name + ".cnf")
        with open(extf, "w") as f:
            f.write(ext)
        run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-nodes", "-keyout", key, "-out", csr, "-subj", f"/CN={cn}"])
        run(["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key,
             "-CAcreateserial", "-out", crt, "-days", "2", "-extfile", extf])
        return crt, key

    server = leaf("server", "127.0.0.1", "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                  "extendedKeyUsage=serverAuth\n")
    client = leaf("client", "host-a", "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")
    return ca, server, client


def parse_export(data):
    """Journal export format into a list of entries, each a list of (name, bytes)."""
    entries, cur, i = [], [], 0
    while i < len(data):
        nl = data.index(b"\n", i)
        line = data[i:nl]
        if line == b"":
            if cur:
                entries.append(cur)
            cur, i = [], nl + 1
            continue
        if b"=" in line:
            k, v = line.split(b"=", 1)
            cur.append((k.decode(), v))
            i = nl + 1
        else:  # binary: name, newline, 64-bit LE size, data, newline
            size = struct.unpack("<Q", data[nl + 1:nl + 9])[0]
            cur.append((line.decode(), data[nl + 9:nl + 9 + size]))
            i = nl + 9 + size + 1
    if cur:
        entries.append(cur)
    return entries


def write_export(entries):
    out = bytearray()
    for e in entries:
        for k, v in e:
            if any(c < 0x20 for c in v):
                out += k.encode() + b"\n" + struct.pack("<Q", len(v)) + v + b"\n"
            else:
                out += k.encode() + b"=" + v + b"\n"
        out += b"\n"
    return bytes(out)


def field(e, name):
    for k, v in e:
        if k == name:
            return v
    return None


class Fleet:
    """journald (our own in with-systemd's namespace), journal-remote on 127.0.0.1, one lockd."""

    def __init__(self):
        self.dir = tempdir()
        self.procs = []
        self.d = None

    def setup(self):
        self.own_journald = not os.path.exists("/run/systemd/journal/socket")
        if self.own_journald:
            # with-systemd's private mount namespace: /run is a tmpfs of its own; the persistent
            # journal directory gets one too, so nothing reaches the host's.
            if os.path.isdir("/var/log/journal"):
                run(["mount", "-t", "tmpfs", "tmpfs", "/var/log/journal"])
            os.makedirs("/run/systemd/journal", exist_ok=True)
            self.journald = self.spawn([JOURNALD], "journald.log")
            wait_for(lambda: os.path.exists("/run/systemd/journal/stdout"), 10, "journald")
        self.ca, self.server, self.client = make_pki(self.dir)
        self.out = os.path.join(self.dir, "remote")
        os.mkdir(self.out)
        self.port = free_port()
        # Debian 12's journal-remote is built without GnuTLS: it refuses --trust ("not
        # available") and verifies no client certificate (docs/fleet.md says what to put in
        # front). journal-upload verifies the server's against the CA and presents its own.
        self.remote = self.spawn([REMOTE, f"--listen-https=127.0.0.1:{self.port}",
                                  f"--key={self.server[1]}", f"--cert={self.server[0]}",
                                  f"--output={self.out}/", "--split-mode=host"], "remote.log")
        wait_for(self.listening, 10, "journal-remote listening")
        self.state = os.path.join(self.dir, "upload.state")
        d = os.path.join(self.dir, "host-a")
        os.mkdir(d)
        self.d = Daemon(d)
        self.d.start(wrapper=[sys.executable, "-c", STREAM_WRAPPER])

    def start(self):
        try:
            self.setup()
        except BaseException:
            self.close()
            raise
        return self

    def spawn(self, argv, log):
        p = subprocess.Popen(argv, stdout=open(os.path.join(self.dir, log), "ab"),
                             stderr=subprocess.STDOUT)
        self.procs.append(p)
        return p

    def listening(self):
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def upload(self, cert=None):
        """One systemd-journal-upload pass: what is new since its cursor file, then exit."""
        crt, key = cert or self.client
        return subprocess.run([UPLOAD, f"--url=https://127.0.0.1:{self.port}", f"--key={key}",
                               f"--cert={crt}", f"--trust={self.ca}", "--follow=no",
                               f"--save-state={self.state}"],
                              capture_output=True, text=True, timeout=120)

    def local_head(self):
        r = self.d.lockctl("audit", "verify", "--state-dir", os.path.join(self.d.dir, "state"),
                           check_rc=0)
        return r.stdout.split("head ")[1].split()[0]

    def verify(self, *paths, rc, state=True):
        args = [LOCKCTL, "audit", "verify", "--journal", *paths, "--json"]
        if state:
            args += ["--state-dir", os.path.join(self.d.dir, "state")]
        r = subprocess.run(args, capture_output=True, text=True, timeout=120)
        check(r.returncode == rc, f"verify exit {r.returncode}, want {rc}:\n{r.stdout}{r.stderr}")
        return json.loads(r.stdout)

    def sync_collector(self):
        """Uploads until the collector holds the local head (journald takes a moment)."""
        head = self.local_head()
        for _ in range(40):
            r = self.upload()
            check(r.returncode == 0, f"journal-upload: {r.returncode}\n{r.stderr}")
            v = subprocess.run([LOCKCTL, "audit", "verify", "--journal", self.out, "--match",
                                MATCH, "--json"], capture_output=True, text=True, timeout=120)
            if v.stdout.strip():
                hosts = json.loads(v.stdout).get("hosts", [])
                if hosts and hosts[0]["head"] == head:
                    return head
            time.sleep(0.25)
        raise Failed(f"the collector never reached the local head {head}")

    def collector_files(self):
        return [os.path.join(self.out, f) for f in os.listdir(self.out) if f.endswith(".journal")]

    def export(self):
        r = subprocess.run(["journalctl", "-o", "export", "--no-pager",
                            *[f"--file={f}" for f in self.collector_files()]],
                           capture_output=True, timeout=120)
        check(r.returncode == 0, f"journalctl export: {r.stderr}")
        return parse_export(r.stdout)

    def import_copy(self, entries, name):
        """A journal file written by systemd-journal-remote from entries (export format)."""
        d = os.path.join(self.dir, name)
        os.makedirs(d, exist_ok=True)
        r = subprocess.run([REMOTE, f"--output={d}/{name}.journal", "-"],
                           input=write_export(entries), capture_output=True, timeout=120)
        check(r.returncode == 0, f"journal-remote import: {r.stderr}")
        return d

    def close(self):
        if self.d:
            self.d.stop()
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if self.own_journald and os.path.ismount("/var/log/journal"):
            subprocess.run(["umount", "/var/log/journal"])


def records(entries):
    return [e for e in entries if field(e, "LOCKD_AUDIT_RECORD") is not None and
            field(e, "_COMM") == b"lockd-engine"]


def test_collector_agrees(f):
    """records go journald -> journal-upload -> HTTPS -> journal-remote; verify --journal says
    ok, and the host's head is the local log's (--state-dir)"""
    grant_revoke(f.d, write_file(os.path.join(f.dir, "granted")), 6)
    head = f.sync_collector()
    v = f.verify(f.out, rc=0)
    check(v["ok"] and len(v["hosts"]) == 1, f"{v}")
    h = v["hosts"][0]
    check(h["head"] == head and h["breaks"] == [] and h["local"]["agrees"], f"{h}")
    check(h["records"] >= 12 and h["first_seq"] == 1, f"{h}")
    # Every entry holds its record's exact line: the local file's lines, one for one.
    lines = []
    for name in sorted(os.listdir(os.path.join(f.d.dir, "state", "audit"))):
        with open(os.path.join(f.d.dir, "state", "audit", name), "rb") as fh:
            lines += fh.read().splitlines()
    got = [field(e, "LOCKD_AUDIT_RECORD") for e in records(f.export())]
    check(got == lines[:len(got)] and len(got) == h["records"], "the entries are not the lines")


def test_server_certificate_checked(f):
    """journal-upload refuses a collector whose certificate the CA it trusts did not sign"""
    d = os.path.join(f.dir, "rogue")
    os.makedirs(d, exist_ok=True)
    ca = os.path.join(d, "other-ca.pem")
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-keyout", os.path.join(d, "k.pem"), "-out", ca, "-days", "2", "-subj",
         "/CN=another CA"])
    crt, key = f.client
    r = subprocess.run([UPLOAD, f"--url=https://127.0.0.1:{f.port}", f"--key={key}",
                        f"--cert={crt}", f"--trust={ca}", "--follow=no",
                        f"--save-state={os.path.join(d, 'state')}"],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode != 0, f"an upload to an unknown collector succeeded: {r.stderr}")


def test_debian_remote_verifies_no_client(f):
    """Debian 12's journal-remote verifies no client certificate (docs/fleet.md says so and what
    to put in front): an upload with a self-signed one gets in, and it logs that checking is
    disabled; this fails, and the docs must change, the day it does verify"""
    d = os.path.join(f.dir, "self-signed")
    os.makedirs(d, exist_ok=True)
    key, crt = os.path.join(d, "k.pem"), os.path.join(d, "c.pem")
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-keyout", key, "-out", crt, "-days", "2", "-subj", "/CN=nobody"])
    src = os.path.join(d, "src.journal")
    now = int(time.time() * 1e6)
    r = subprocess.run([REMOTE, f"--output={src}", "-"],
                       input=f"__REALTIME_TIMESTAMP={now}\nMESSAGE=from nobody\n"
                       "_MACHINE_ID=00000000000000000000000000000001\n_HOSTNAME=nobody\n\n"
                       .encode(), capture_output=True, timeout=60)
    check(r.returncode == 0, r.stderr.decode())
    r = subprocess.run([UPLOAD, f"--url=https://127.0.0.1:{f.port}", f"--key={key}",
                        f"--cert={crt}", f"--trust={f.ca}", "--follow=no", f"--file={src}",
                        f"--save-state={os.path.join(d, 'state')}"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"the self-signed client was refused: {r.stderr}")
    with open(os.path.join(f.dir, "remote.log")) as fh:
        check("Certificate checking disabled." in fh.read(), "journal-remote did not say so")


def test_gap(f):
    """a record removed from a copy of the collector's journal is reported as a gap"""
    entries = f.export()
    recs = records(entries)
    victim = recs[3]
    seq = int(field(victim, "LOCKD_AUDIT_SEQ"))
    d = f.import_copy([e for e in entries if e is not victim], "gap")
    v = f.verify(d, rc=1, state=False)
    b = v["hosts"][0]["breaks"]
    check(len(b) == 1 and b[0]["kind"] == "gap" and b[0]["seq"] == seq and
          b[0]["seq_last"] == seq, f"{b}")


def test_rewrite(f):
    """a record changed in a copy of the collector's journal is reported as a rewrite"""
    entries = f.export()
    recs = records(entries)
    victim = recs[4]
    seq = int(field(victim, "LOCKD_AUDIT_SEQ"))
    line = field(victim, "LOCKD_AUDIT_RECORD")
    check(b'"peer_uid":0' in line, f"no peer_uid in {line}")
    changed = line.replace(b'"peer_uid":0', b'"peer_uid":1')
    victim[:] = [(k, changed if k == "LOCKD_AUDIT_RECORD" else v) for k, v in victim]
    d = f.import_copy(entries, "rewrite")
    v = f.verify(d, rc=1, state=False)
    kinds = {(b["kind"], b["seq"]) for b in v["hosts"][0]["breaks"]}
    check(("rewrite", seq) in kinds and all(k == "rewrite" for k, _ in kinds), f"{kinds}")
    # The text form says so too, and exits 1.
    r = subprocess.run([LOCKCTL, "audit", "verify", "--journal", d, "--match", MATCH],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 1 and "BROKEN" in r.stdout and "rewrite:" in r.stdout, r.stdout)


def test_fork(f):
    """two different records continuing the same one are reported as a fork"""
    entries = f.export()
    recs = records(entries)
    victim = recs[5]
    seq = int(field(victim, "LOCKD_AUDIT_SEQ"))
    # A second history: a copy of the record with another field, at the same place.
    line = field(victim, "LOCKD_AUDIT_RECORD").replace(b'"peer_uid":0', b'"peer_uid":7')
    twin = [(k, line if k == "LOCKD_AUDIT_RECORD" else v) for k, v in victim
            if k not in ("LOCKD_AUDIT_HASH", "LOCKD_PEER_UID", "__CURSOR")]
    i = entries.index(victim)
    d = f.import_copy(entries[:i + 1] + [twin] + entries[i + 1:], "fork")
    v = f.verify(d, rc=1, state=False)
    kinds = {(b["kind"], b["seq"]) for b in v["hosts"][0]["breaks"]}
    check(("fork", seq) in kinds, f"{kinds}")


def test_hostile_entries(f):
    """entries are hostile input: another sender's record is not read at all; one sent as
    another uid, or with a 20 KiB record, a NUL, or a line that is not a record is a rewrite"""
    entries = f.export()
    recs = records(entries)
    last = recs[-1]

    def variant(**fields):
        e = [(k, v) for k, v in last if k not in fields and k != "__CURSOR"]
        return e + [(k, v) for k, v in fields.items()]
    forged = variant(_COMM=b"python3", LOCKD_AUDIT_RECORD=b'{"event":"grant"}')
    d = f.import_copy(entries + [forged], "forged")
    v = f.verify(d, rc=0, state=False)
    check(v["ok"] and v["hosts"][0]["records"] == len(recs), f"{v}")
    hostile = [variant(_UID=b"4242"),
               variant(LOCKD_AUDIT_RECORD=b"x" * 20000),
               variant(LOCKD_AUDIT_RECORD=b'{"seq":1}\x00{"seq":2}'),
               variant(LOCKD_AUDIT_RECORD=b'{"event":"grant","prev":"00","seq":99,"time":1}')]
    d = f.import_copy(entries + hostile, "hostile")
    v = f.verify(d, rc=1, state=False)
    b = v["hosts"][0]["breaks"]
    check(len(b) == 4 and all(x["kind"] == "rewrite" for x in b) and "uid 4242" in b[0]["what"],
          f"{b}")


def test_restart(f):
    """a restarted lockd continues its chain: a new start, not a fork (an entry journal-upload
    sends again at its cursor is a duplicate, not a break)"""
    f.d.stop()
    f.d.start(wrapper=[sys.executable, "-c", STREAM_WRAPPER])
    grant_revoke(f.d, write_file(os.path.join(f.dir, "granted")), 2)
    head = f.sync_collector()
    v = f.verify(f.out, rc=0)
    h = v["hosts"][0]
    check(h["head"] == head and h["breaks"] == [] and len(h["starts"]) == 2 and
          h["chains"] == 1 and h["local"]["agrees"], f"{h}")
    check(h["starts"][1]["first_seq"] == h["starts"][0]["last_seq"] + 1, f"{h['starts']}")


def test_two_hosts(f):
    """two hosts in one directory are reported each on its own"""
    entries = f.export()
    other = []
    for e in entries:
        e2 = []
        for k, v in e:
            if k == "_MACHINE_ID":
                v = b"0123456789abcdef0123456789abcdef"
            elif k == "_HOSTNAME":
                v = b"host-b"
            elif k == "__CURSOR":
                continue
            e2.append((k, v))
        other.append(e2)
    d = os.path.join(f.dir, "both")
    os.makedirs(d, exist_ok=True)
    for p in f.collector_files():
        shutil.copy(p, d)
    f.import_copy(other, "both")
    v = f.verify(d, rc=0)
    hosts = {h["hostname"]: h for h in v["hosts"]}
    check(len(v["hosts"]) == 2 and "host-b" in hosts, f"{v}")
    a = [h for h in v["hosts"] if h["hostname"] != "host-b"][0]
    check(a["ok"] and hosts["host-b"]["ok"] and a["head"] == hosts["host-b"]["head"] and
          "local" in a and "local" not in hosts["host-b"], f"{v}")


def test_dropins(f):
    """drop-ins: a key given twice across files is refused by --check-config naming both files;
    an invalid drop-in is refused on reload and lockd keeps serving on its policy"""
    d = f.d
    dropins = d.policy + ".d"
    os.makedirs(dropins, exist_ok=True)
    with open(os.path.join(dropins, "10-limits.yaml"), "w") as fh:
        fh.write("audit:\n  retain_segments: 4\n")
    r = subprocess.run([LOCKD, "--check-config", d.policy], capture_output=True, text=True)
    check(r.returncode == 0 and "retain_segments: 4" in r.stdout, r.stdout + r.stderr)
    with open(os.path.join(dropins, "20-again.yaml"), "w") as fh:
        fh.write("audit:\n  retain_segments: 5\n")
    r = subprocess.run([LOCKD, "--check-config", d.policy], capture_output=True, text=True)
    check(r.returncode == 1 and "20-again.yaml:2:20: E_POLICY_DUPLICATE_KEY" in r.stderr and
          "10-limits.yaml:2:20" in r.stderr, r.stderr)
    # lockd running: SIGHUP with that on disk keeps the running policy and serves on.
    os.kill(d.proc.pid, signal.SIGHUP)
    wait_for(lambda: "20-again.yaml" in journal_text(), 10, "the refused reload in the journal")
    d.lockctl("status", check_rc=0)
    check(d.proc.poll() is None, "lockd ended")
    os.unlink(os.path.join(dropins, "20-again.yaml"))
    os.unlink(os.path.join(dropins, "10-limits.yaml"))


def publish(f, case, version):
    """Publishes tests/plugins/<case> at version in the file:// marketplace, index re-signed;
    returns its pin."""
    with open(os.path.join(PLUGINS_SRC, case, "plugin.toml")) as fh:
        text = fh.read()
    name = [ln.split('"')[1] for ln in text.splitlines() if ln.startswith("name = ")][0]
    text = text.replace('version = "1.0.0"', f'version = "{version}"')
    dest = f.signer.release(case, os.path.join(f.market, "releases", name, version), text)
    ref = "refs/tags/index"
    run([LOCKD_SIGN, "index", f.market, "--name", "fleet", "--signer", f.signer.dir,
         "--identity", WORKFLOW + ref, "--issuer", ISSUER, "--ref", ref])

    def sha(p):
        return hashlib.sha256(open(os.path.join(dest, p), "rb").read()).hexdigest()
    return {"name": name, "version": version, "marketplace": "fleet",
            "manifest_sha256": sha("plugin.toml"), "binary_sha256": sha("plugin")}


def sync(f, pins, rc):
    path = os.path.join(f.dir, "plugins.json")
    with open(path, "w") as fh:
        json.dump({"plugins": pins}, fh)
    r = f.d.lockctl("plugin", "sync", path)
    check(r.returncode == rc, f"plugin sync: exit {r.returncode}, want {rc}:\n{r.stdout}{r.stderr}")
    return r


def installed(f):
    r = f.d.console_call("io.lockd.Console.ListPlugins")
    return {p["name"]: p["version"] for p in r["parameters"]["plugins"]}


def test_plugin_sync(f):
    """plugin sync: from empty, then no change, then one version bumped, then one removed, each
    with its exit code; a pin whose digest the index does not offer is refused, nothing changed"""
    f.signer = Signer(f.dir)
    f.market = os.path.join(f.dir, "market")
    os.makedirs(os.path.join(f.market, "releases"))
    one, zero = publish(f, "good-one", "1.0.0"), publish(f, "good-zero", "1.0.0")
    f.d.lockctl("marketplace", "add", "fleet", "--url", "file://" + f.market, "--issuer", ISSUER,
                "--identity", PATTERN, "--trusted-root", f.signer.root, check_rc=0)
    r = sync(f, [one, zero], 0)
    check("installed test.good-one 1.0.0" in r.stdout and
          "installed test.good-zero 1.0.0" in r.stdout, r.stdout)
    check(installed(f) == {"test.good-one": "1.0.0", "test.good-zero": "1.0.0"}, f"{installed(f)}")
    r = sync(f, [one, zero], 0)
    check(r.stdout == "no change\n", r.stdout)
    # The same list as a bare JSON array, and as text lines: no change either.
    for text in (json.dumps([one, zero]),
                 "# name version marketplace manifest binary\n" + "".join(
                     f"{p['name']} {p['version']} {p['marketplace']} {p['manifest_sha256']} "
                     f"{p['binary_sha256']}\n" for p in (one, zero))):
        path = os.path.join(f.dir, "plugins.list")
        with open(path, "w") as fh:
            fh.write(text)
        r = f.d.lockctl("plugin", "sync", path, check_rc=0)
        check(r.stdout == "no change\n", r.stdout)
    one2 = publish(f, "good-one", "1.0.1")
    r = sync(f, [one2, zero], 0)
    check(r.stdout == "updated test.good-one 1.0.0 -> 1.0.1 (marketplace fleet)\n", r.stdout)
    r = sync(f, [one2], 0)
    check(r.stdout == "removed test.good-zero 1.0.0\n", r.stdout)
    check(installed(f) == {"test.good-one": "1.0.1"}, f"{installed(f)}")
    bad = dict(zero, binary_sha256="0" * 64)
    r = sync(f, [one2, bad], 1)
    check("is not the pinned release (its binary SHA-256 differs)" in r.stderr, r.stderr)
    check(installed(f) == {"test.good-one": "1.0.1"}, f"{installed(f)}")
    r = sync(f, [one2, dict(zero, extra=1)], 2)
    r = sync(f, [], 0)
    check(r.stdout == "removed test.good-one 1.0.1\n" and installed(f) == {}, r.stdout)


def journal_text():
    r = subprocess.run(["journalctl", "--no-pager", "-o", "cat", "SYSLOG_IDENTIFIER=lockd"],
                       capture_output=True, text=True, timeout=60)
    return r.stdout


def main():
    require_environment()
    for tool in ("openssl", "journalctl", JOURNALD, REMOTE, UPLOAD):
        if not shutil.which(tool) and not os.access(tool, os.X_OK):
            print(f"Bail out! {tool} is not installed (scripts/deps --test)")
            return 1
    tap = Tap()
    f = Fleet().start()
    try:
        for t in (test_collector_agrees, test_server_certificate_checked,
                  test_debian_remote_verifies_no_client, test_gap,
                  test_rewrite, test_fork, test_hostile_entries, test_restart, test_two_hosts,
                  test_dropins,
                  test_plugin_sync):
            tap.run(t, f)
    finally:
        f.close()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
