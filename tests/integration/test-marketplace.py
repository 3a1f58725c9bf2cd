#!/usr/bin/env python3
"""Marketplaces with a URL against a real lockd on a real systemd manager: a marketplace published
with lockd-sign index, served over HTTPS from 127.0.0.1 with a private CA (and from file://);
add, search, install by name, install again, update, remove a version; and the attacks, each
refused with its named error and nothing installed or changed: a binary swapped after signing,
an index listing other digests, an older index (rollback, also after a restart), an expired one
(freeze), a 2 GiB index, a stalled body, a redirect to file://, a certificate the CA did not sign,
a release path with '..'. TAP on stdout. Run through tests/integration/with-systemd."""

import http.server
import json
import os
import re
import shlex
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lockdtest import (ISSUER, LOCKCTL, LOCKD, LOCKD_SIGN, PATTERN, PLUGINS, PLUGINS_SRC,  # noqa: E402
                       WORKFLOW, Daemon, Failed, Signer, Tap, check, require_environment, run,
                       tempdir)

NAME = "test.good-one"
# lockctl reaches the test's servers directly, whatever proxy the environment names.
for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
    os.environ.pop(var, None)
os.environ["NO_PROXY"] = "*"


# ---------------------------------------------------------------------------------------------
# A private CA, and an HTTPS server on 127.0.0.1 with hostile paths


def make_ca(d, name):
    """A CA and a server certificate for 127.0.0.1 that it signs, made with openssl."""
    ca_key, ca = os.path.join(d, name + "-ca.key"), os.path.join(d, name + "-ca.pem")
    key, csr, crt = (os.path.join(d, name + x) for x in ("-server.key", "-server.csr", "-server.pem"))
    ext = os.path.join(d, name + "-ext.cnf")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n")
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", f"/CN={name} test CA",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"])
    run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1"])
    run(["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
         "-out", crt, "-days", "2", "-extfile", ext])
    return ca, crt, key


class Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the publish directory, except under a few hostile prefixes."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = self.path
        if path.startswith("/huge/"):
            # 2 GiB announced by nothing: a close-delimited body that only the client's cap ends.
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            chunk = b" " * 65536
            try:
                for _ in range(2 * 1024 * 1024 * 1024 // len(chunk)):
                    self.wfile.write(chunk)
            except OSError:
                pass
            self.close_connection = True
            return
        if path.startswith("/stall/"):
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            try:
                self.wfile.write(b'{"name": ')
                self.wfile.flush()
                self.server.stall_event.wait(120)
            except OSError:
                pass
            self.close_connection = True
            return
        if path.startswith("/redirect/"):
            self.send_response(302)
            self.send_header("Location", "file://" + self.server.file_target + path[len("/redirect"):])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        return super().do_GET()


def serve(directory, cert, key, file_target):
    """An HTTPS server on 127.0.0.1 (a free port) in a thread; its base URL and the server."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)

    def handler(*a, **kw):
        return Handler(*a, directory=directory, **kw)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.stall_event = threading.Event()
    srv.file_target = file_target
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return f"https://127.0.0.1:{srv.server_address[1]}", srv


# ---------------------------------------------------------------------------------------------
# Publishing


class Market:
    """A marketplace's directory, published the way a publisher would with lockd-sign."""

    def __init__(self, top, signer, name):
        self.dir = os.path.join(top, name)
        self.signer = signer
        self.name = name
        os.makedirs(os.path.join(self.dir, "releases"), exist_ok=True)

    def release(self, version, question=None, one=None):
        with open(os.path.join(PLUGINS_SRC, "good-one", "plugin.toml")) as f:
            text = f.read()
        text = re.sub(r'version = ".*"', f'version = "{version}"', text)
        if question:
            text = re.sub(r'question = ".*"', f'question = "{question}"', text)
        if one:
            text = re.sub(r'one = ".*"', f'one = "{one}"', text)
        return self.signer.release("good-one",
                                   os.path.join(self.dir, "releases", NAME, version), text)

    def index(self, *extra):
        ref = "refs/tags/index"
        return run([LOCKD_SIGN, "index", self.dir, "--name", self.name, "--signer",
                    self.signer.dir, "--identity", WORKFLOW + ref, "--issuer", ISSUER,
                    "--ref", ref, *extra]).stdout

    def sign_index_as_is(self):
        """Signs index.json as it stands (edited by a test) with the marketplace's identity."""
        ref = "refs/tags/index"
        run([LOCKD_SIGN, "sign", self.signer.dir, "--identity", WORKFLOW + ref, "--issuer", ISSUER,
             "--ref", ref, os.path.join(self.dir, "index.json")])

    def save_index(self, tag):
        for f in ("index.json", "index.json.sigstore.json"):
            shutil.copy(os.path.join(self.dir, f), os.path.join(self.dir, f + "." + tag))

    def restore_index(self, tag):
        for f in ("index.json", "index.json.sigstore.json"):
            shutil.copy(os.path.join(self.dir, f + "." + tag), os.path.join(self.dir, f))


class World:
    def __init__(self):
        self.dir = tempdir()
        self.signer = Signer(self.dir)
        self.pub = os.path.join(self.dir, "pub")
        os.makedirs(self.pub)
        self.ca, crt, key = make_ca(self.dir, "good")
        self.rogue_ca, rogue_crt, rogue_key = make_ca(self.dir, "rogue")
        os.mkdir(os.path.join(self.dir, "d1"))
        self.d = Daemon(os.path.join(self.dir, "d1"))
        self.d.start()
        self.url, self.srv = serve(self.pub, crt, key, self.pub)
        # The same files behind a certificate no CA the tests trust has signed.
        self.rogue_url, self.rogue_srv = serve(self.pub, rogue_crt, rogue_key, self.pub)

    def market(self, name):
        return Market(self.pub, self.signer, name)

    def add(self, name, url):
        return self.d.lockctl("marketplace", "add", name, "--url", url, "--issuer", ISSUER,
                              "--identity", PATTERN, "--trusted-root", self.signer.root,
                              check_rc=0)

    def lockctl(self, *args, **kw):
        return self.d.lockctl(*args, **kw)

    def plugins(self):
        r = self.d.console_call("io.lockd.Console.ListPlugins")
        return {p["name"]: p for p in r["parameters"]["plugins"]}

    def unchanged(self, before, what):
        after = self.plugins()
        check(after == before, f"{what}: the installed plugins changed: {before} -> {after}")


# ---------------------------------------------------------------------------------------------
# The flow


def test_only_lockctl_fetches(w):
    """lockctl links libcurl; lockd, its engine and its verification helper do not"""
    daemon_dir = os.path.dirname(LOCKD)
    for prog in (LOCKD, os.path.join(daemon_dir, "lockd-engine"),
                 os.path.join(daemon_dir, "lockd-verify")):
        out = run(["ldd", prog]).stdout
        check("libcurl" not in out, f"{prog} links libcurl:\n{out}")
    check("libcurl" in run(["ldd", LOCKCTL]).stdout, "lockctl does not link libcurl")


def test_add_and_list(w):
    """marketplace add --url keeps the URL; marketplace list shows it and a pattern to copy"""
    w.official = w.market("official")
    w.official.release("1.0.0")
    out = w.official.index()
    check("version 1," in out and "1 release" in out, f"lockd-sign index said: {out}")
    w.add("official", w.url + "/official")
    r = w.lockctl("marketplace", "list", check_rc=0)
    check(f"url: {w.url}/official" in r.stdout, r.stdout)
    # The identity as typed: one backslash before each dot, so copying it gives the same pattern.
    check(f"identity: {PATTERN}\n" in r.stdout, r.stdout)
    r = json.loads(w.lockctl("marketplace", "list", "--json", check_rc=0).stdout)
    m = [m for m in r["marketplaces"] if m["name"] == "official"][0]
    check(m["url"] == w.url + "/official" and "index_version" not in m, f"{m}")


def test_search(w):
    """plugin search lists name, version, question and marketplace from the verified index"""
    r = w.lockctl("plugin", "search", "--cacert", w.ca, check_rc=0)
    check(re.search(rf"^{re.escape(NAME)} 1\.0\.0 official$", r.stdout, re.M), r.stdout + r.stderr)
    check("Does the file hold at least one byte?" in r.stdout, r.stdout)
    r = json.loads(w.lockctl("plugin", "search", "BYTE", "--json", "--cacert", w.ca,
                             check_rc=0).stdout)
    check([(p["name"], p["version"], p["marketplace"]) for p in r["plugins"]] ==
          [(NAME, "1.0.0", "official")], f"{r}")
    check("question" in r["plugins"][0], f"{r}")
    r = json.loads(w.lockctl("plugin", "search", "no-such-word", "--json", "--cacert", w.ca,
                             check_rc=0).stdout)
    check(r["plugins"] == [], f"{r}")
    m = json.loads(w.lockctl("marketplace", "list", "--json", check_rc=0).stdout)["marketplaces"]
    check([x.get("index_version") for x in m if x["name"] == "official"] == [1], f"{m}")


def test_progress_on_a_terminal(w):
    """a download shows progress on a terminal, and none without one"""
    r = w.lockctl("plugin", "search", "--cacert", w.ca, check_rc=0)
    check("KiB" not in r.stderr, f"progress without a terminal: {r.stderr}")
    cmd = " ".join(shlex.quote(x) for x in [LOCKCTL, "--socket", w.d.console, "plugin", "search",
                                             "--cacert", w.ca])
    r = subprocess.run(["script", "-q", "-e", "-c", cmd, "/dev/null"], capture_output=True,
                       text=True, timeout=120)
    check(r.returncode == 0 and re.search(r"index\.json: [\d.]+ of [\d.]+ KiB", r.stdout),
          f"exit {r.returncode}: {r.stdout}{r.stderr}")


def test_install_by_name(w):
    """plugin install NAME downloads the release over HTTPS and lockd installs it"""
    r = w.lockctl("plugin", "install", NAME, "--cacert", w.ca, check_rc=0)
    check(f"installed {NAME} 1.0.0 from marketplace official" in r.stdout, r.stdout)
    p = w.plugins()
    check(p[NAME]["version"] == "1.0.0" and p[NAME]["marketplace"] == "official", f"{p}")


def test_install_again_no_change(w):
    """installing what is installed prints "no change" and exits 0"""
    before = w.plugins()
    r = w.lockctl("plugin", "install", NAME, "--cacert", w.ca, check_rc=0)
    check("no change" in r.stdout, r.stdout + r.stderr)
    r = w.lockctl("plugin", "install", NAME + "@1.0.0", "--marketplace", "official", "--cacert",
                  w.ca, check_rc=0)
    check("no change" in r.stdout, r.stdout + r.stderr)
    w.unchanged(before, "install again")


def test_without_cacert_refused(w):
    """without --cacert the private CA is not trusted: the system's CAs do not know it"""
    before = w.plugins()
    r = w.lockctl("plugin", "search")
    check(r.returncode == 1 and ("SSL" in r.stderr or "certificate" in r.stderr), r.stdout + r.stderr)
    w.unchanged(before, "no cacert")


def test_update(w):
    """plugin update installs a newer release; a MAJOR with changed texts names which changed
    and needs the typed name; a changed text without a new MAJOR is refused and says so"""
    w.official.release("1.0.1")
    w.official.index()
    r = w.lockctl("plugin", "update", "--cacert", w.ca, check_rc=0)
    check(f"installed {NAME} 1.0.1 from marketplace official, replacing 1.0.0" in r.stdout,
          r.stdout + r.stderr)
    r = w.lockctl("plugin", "update", "--cacert", w.ca, check_rc=0)
    check(f"{NAME} 1.0.1: up to date" in r.stdout, r.stdout + r.stderr)

    w.official.release("2.0.0", question="Does the file hold a byte or more?")
    w.official.index()
    r = w.lockctl("plugin", "update", NAME, "--cacert", w.ca)
    check(r.returncode == 1 and "changed: question\n" in r.stderr and "--accept-name" in r.stderr,
          r.stdout + r.stderr)
    check(w.plugins()[NAME]["version"] == "1.0.1", "refused update changed the plugin")
    r = w.lockctl("plugin", "update", NAME, "--accept-name", NAME, "--cacert", w.ca, check_rc=0)
    check(f"installed {NAME} 2.0.0" in r.stdout, r.stdout + r.stderr)

    w.official.release("2.1.0", question="Does the file hold a byte or more?",
                       one="it holds a byte")
    w.official.index()
    r = w.lockctl("plugin", "update", "--cacert", w.ca)
    check(r.returncode == 1 and "UPDATE_REFUSED_MEANING" in r.stderr and
          "changes the one of installed 2.0.0" in r.stderr and "3.0.0" in r.stderr,
          r.stdout + r.stderr)
    check(w.plugins()[NAME]["version"] == "2.0.0", "refused update changed the plugin")
    shutil.rmtree(os.path.join(w.official.dir, "releases", NAME, "2.1.0"))
    w.official.index()


def test_remove_version(w):
    """plugin remove --version names the installed version when another is asked for"""
    r = w.lockctl("plugin", "remove", NAME, "--version", "1.0.0")
    check(r.returncode == 1 and "1.0.0 is not installed; the installed version is 2.0.0" in r.stderr,
          r.stdout + r.stderr)
    w.lockctl("plugin", "remove", NAME, "--version", "2.0.0", check_rc=0)
    check(NAME not in w.plugins(), "still installed")
    w.lockctl("plugin", "install", NAME, "--cacert", w.ca, check_rc=0)


def test_file_url(w):
    """a file:// marketplace: search and install by name"""
    local = w.market("local")
    local.release("1.0.0")
    local.index()
    w.add("local", "file://" + local.dir)
    r = w.lockctl("plugin", "search", "--marketplace", "local", check_rc=0)
    check(f"{NAME} 1.0.0 local" in r.stdout, r.stdout + r.stderr)
    # Offered by two marketplaces: the human chooses.
    r = w.lockctl("plugin", "install", NAME + "@1.0.0", "--cacert", w.ca)
    check(r.returncode == 2 and "--marketplace" in r.stderr, r.stdout + r.stderr)


# ---------------------------------------------------------------------------------------------
# Attacks: each refused with its named error, nothing installed or changed


def attack_market(w, name, url=None):
    m = w.market(name)
    m.release("1.0.0")
    m.index()
    w.add(name, url or (w.url + "/" + name))
    # Another plugin name would be needed for a fresh install; remove ours so that an accepted
    # attack would show as an install.
    return m


def refused(w, args, code, what):
    before = w.plugins()
    r = w.lockctl(*args)
    check(r.returncode == 1 and code in r.stderr, f"{what}: exit {r.returncode}:\n{r.stdout}{r.stderr}")
    w.unchanged(before, what)
    for line in r.stderr.strip().splitlines()[-2:]:
        print(f"# {what}: {line}", flush=True)
    return r


def test_swapped_binary(w):
    """a binary swapped after signing is refused (its bundle no longer verifies)"""
    w.lockctl("plugin", "remove", NAME, check_rc=0)
    m = attack_market(w, "swapped")
    shutil.copy(os.path.join(PLUGINS, "good-zero"),
                os.path.join(m.dir, "releases", NAME, "1.0.0", "plugin"))
    refused(w, ["plugin", "install", NAME, "--marketplace", "swapped", "--cacert", w.ca],
            "RELEASE_E_", "swapped binary")
    check(NAME not in w.plugins(), "installed")


def test_index_other_digests(w):
    """an index listing other digests than the release's is refused: RELEASE_E_INDEX_MISMATCH"""
    m = attack_market(w, "digests")
    path = os.path.join(m.dir, "index.json")
    idx = json.load(open(path))
    idx["releases"][0]["binary_sha256"] = "ab" * 32
    with open(path, "w") as f:
        json.dump(idx, f)
    m.sign_index_as_is()
    refused(w, ["plugin", "install", NAME, "--marketplace", "digests", "--cacert", w.ca],
            "RELEASE_E_INDEX_MISMATCH", "other digests")


def test_release_path_dotdot(w):
    """an index naming a release path with '..' is refused by lockd before anything is fetched"""
    m = attack_market(w, "dotdot")
    path = os.path.join(m.dir, "index.json")
    idx = json.load(open(path))
    idx["releases"][0]["name"] = "../../etc.x"
    with open(path, "w") as f:
        json.dump(idx, f)
    m.sign_index_as_is()
    refused(w, ["plugin", "search", "--marketplace", "dotdot", "--cacert", w.ca],
            "RELEASE_E_INDEX", "'..' in a release path")


def test_rollback(w):
    """an older index signed by the same identity is refused (IndexRollback), after a restart too"""
    m = attack_market(w, "rolled")
    m.save_index("v1")
    m.release("1.0.1")
    m.index()
    w.lockctl("plugin", "search", "--marketplace", "rolled", "--cacert", w.ca, check_rc=0)
    m.restore_index("v1")
    args = ["plugin", "install", NAME, "--marketplace", "rolled", "--cacert", w.ca]
    r = refused(w, args, "rollback", "rollback")
    check("version 1, older than version 2" in r.stderr, r.stderr)
    refused(w, ["plugin", "search", "--marketplace", "rolled", "--cacert", w.ca], "rollback",
            "rollback search")
    r = w.d.console_call("io.lockd.Console.VerifyIndex", {"marketplace": "rolled", "index_fd": 0,
                                                          "index_bundle_fd": 1},
                         fds=[os.open(os.path.join(m.dir, "index.json"), os.O_RDONLY),
                              os.open(os.path.join(m.dir, "index.json.sigstore.json"), os.O_RDONLY)])
    check(r.get("error") == "io.lockd.Console.IndexRollback" and
          r["parameters"] == {"marketplace": "rolled", "version": 1, "newest": 2}, f"{r}")
    w.d.stop()
    w.d.start()
    refused(w, args, "rollback", "rollback after a restart")


def test_expired(w):
    """an expired index is refused (IndexExpired: a freeze)"""
    m = w.market("frozen")
    m.release("1.0.0")
    m.index("--expires", "2020-01-01T00:00:00Z")
    w.add("frozen", w.url + "/frozen")
    r = refused(w, ["plugin", "install", NAME, "--marketplace", "frozen", "--cacert", w.ca],
                "expired at 2020-01-01T00:00:00Z", "expired index")
    check("freeze" in r.stderr, r.stderr)


def test_huge_index(w):
    """a server that sends 2 GiB for the index is cut off at the 1 MiB cap"""
    w.add("huge", w.url + "/huge")
    t = time.monotonic()
    refused(w, ["plugin", "search", "--marketplace", "huge", "--cacert", w.ca],
            "larger than 1048576 bytes", "2 GiB index")
    check(time.monotonic() - t < 60, "the cap took over a minute")


def test_stalled_body(w):
    """a server that stalls mid-body is given up after the idle timeout"""
    w.add("stalled", w.url + "/stall")
    t = time.monotonic()
    refused(w, ["plugin", "search", "--marketplace", "stalled", "--cacert", w.ca],
            "no byte for 30 s", "stalled body")
    w.srv.stall_event.set()
    check(time.monotonic() - t < 90, "the idle timeout took over 90 s")


def test_redirect_to_file(w):
    """a redirect to file:// is not followed (the marketplace's files are there, valid)"""
    w.add("redirected", w.url + "/redirect/official")
    refused(w, ["plugin", "search", "--marketplace", "redirected", "--cacert", w.ca],
            "lockctl: https://", "redirect to file://")


def test_rogue_certificate(w):
    """a certificate the CA did not sign is refused"""
    w.add("rogue", w.rogue_url + "/official")
    refused(w, ["plugin", "search", "--marketplace", "rogue", "--cacert", w.ca],
            "SSL", "rogue certificate")


def main():
    require_environment()
    for tool in ("openssl",):
        if not shutil.which(tool):
            print(f"Bail out! {tool} is not installed")
            return 1
    tap = Tap()
    w = World()
    try:
        for t in (test_only_lockctl_fetches, test_add_and_list, test_search,
                  test_progress_on_a_terminal, test_install_by_name,
                  test_install_again_no_change, test_without_cacert_refused, test_update,
                  test_remove_version, test_file_url, test_swapped_binary,
                  test_index_other_digests, test_release_path_dotdot, test_rollback,
                  test_expired, test_huge_index, test_stalled_body, test_redirect_to_file,
                  test_rogue_certificate):
            tap.run(t, w)
    finally:
        w.d.stop()
        w.srv.stall_event.set()
        w.srv.shutdown()
        w.rogue_srv.shutdown()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
