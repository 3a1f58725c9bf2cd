#!/usr/bin/env python3
"""A stand-in for lockd-engine that the spawner starts in the engine's place (`lockd --engine`):
it says HELLO like the real one, then does what its case names: one well-formed run ("ok"), a
malformed, oversized, truncated or out-of-order request, unsealed or writable memfds, the wrong
fds, limits out of range; or what an engine taken over would try against root: its terminal, a
spawner that outlives it, a burst of every run it may queue, binaries the spawner keeps, a dead
pidfd, a NOTIFY flood. The case comes from hostile.json beside the policy (`--config`): the
spawner passes the engine no variable of its own. It writes what it saw as JSON to the file
hostile.json names and waits for the spawner to hang up. Run by tests/integration/test-spawner.py,
never by hand."""

import ctypes
import errno
import fcntl
import json
import os
import resource
import socket
import struct
import sys
import termios
import time

MAGIC = 0x4c4b5350
SEALS = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL
conf_dir = os.path.dirname(sys.argv[sys.argv.index("--config") + 1])
conf = json.load(open(os.path.join(conf_dir, "hostile.json")))
case = conf["case"]
out_path = conf["out"]
seen = {"case": case}
ch = socket.socket(fileno=int(os.environ["LOCKD_SPAWNER_FD"]))


def hdr(t, size, version=1, zero=0, magic=MAGIC):
    return struct.pack("<IHHII", magic, version, t, size, zero)


def hello(pid=None):
    return hdr(1, 24) + struct.pack("<II", pid or os.getpid(), 0)


def run_msg(run_id=1, protocol=1, flags=0, cpu=5, memory=64 << 20, timeout=10):
    return hdr(2, 64) + struct.pack("<QQIIQQQ", run_id, 7, protocol, flags, cpu, memory, timeout)


def send(data, fds=()):
    if fds:
        socket.send_fds(ch, [data], list(fds))
    else:
        ch.send(data)


def recv(timeout=10):
    ch.settimeout(timeout)
    data, fds, _, _ = socket.recv_fds(ch, 1024, 8)
    for f in fds:
        os.close(f)
    return data


def memfd(data, seals=SEALS):
    fd = os.memfd_create("hostile", os.MFD_ALLOW_SEALING)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    if seals:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    return fd


def run_fds(binary_seals=SEALS, input_seals=SEALS, stdout_pipe=True, plugin="plugin"):
    binary = memfd(open(conf[plugin], "rb").read(), binary_seals)
    inp = memfd(b"hello", input_seals)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    if not stdout_pipe:
        out_w = memfd(b"", SEALS)
    return [binary, inp, out_w, err_w], (out_r, err_r)


def read_all(fd):
    chunks = []
    while True:
        b = os.read(fd, 4096)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def wait_hangup():
    """The spawner ends on a request it cannot believe: its end of the channel closes. An EXITED
    of a run an earlier, good request asked for may come first (a worker thread sends it while
    the loop reads the bad one): it is passed over, anything else is what the spawner answered
    instead of ending."""
    deadline = time.monotonic() + 15
    try:
        while True:
            m = recv(timeout=max(0.1, deadline - time.monotonic()))
            if len(m) >= 8 and struct.unpack_from("<H", m, 6)[0] == 0x82 and \
                    time.monotonic() < deadline:
                seen.setdefault("passed_over", []).append(m[:8].hex())
                continue
            seen["after"] = m.hex() or "eof"
            return
    except socket.timeout:
        seen["after"] = "timeout"
    except OSError as e:
        seen["after"] = f"error {e.errno}"


def main():
    if case != "run-before-hello":
        send(hello(os.getpid() + 1 if case == "hello-wrong-pid" else None))
        if case == "hello-wrong-pid":
            wait_hangup()
            return
        reply = recv()
        seen["hello"] = list(struct.unpack("<IIII", reply[16:32]))
    if case == "ok":
        fds, (out_r, err_r) = run_fds()
        send(run_msg(), fds)
        for f in fds:
            os.close(f)
        seen["stdout"] = read_all(out_r).decode(errors="replace")
        read_all(err_r)
        x = recv()
        seen["type"] = hex(struct.unpack("<H", x[6:8])[0])
        seen["unit"] = x[96:224].rstrip(b"\0").decode(errors="replace")  # a scoped run's
        (run_id, error, flags, exit_status, sig, stage, errno_, wall, cpu, rss, uid,
         abi) = struct.unpack("<QiIiiIiQQQIi", x[16:80])
        seen["exited"] = {"run_id": run_id, "error": error, "flags": flags,
                          "exit_status": exit_status, "signal": sig, "uid": uid}
        send(hdr(4, 16))  # STOP, then our end closes: a clean end
        return
    bad = {
        "bad-magic": lambda: send(hdr(4, 16, magic=0xdeadbeef)),
        "bad-version": lambda: send(hdr(4, 16, version=2)),
        "oversized": lambda: send(hdr(4, 600) + b"\0" * 584),
        "truncated": lambda: send(hdr(2, 64)[:10]),
        "unknown-type": lambda: send(hdr(9, 16)),
        "size-field": lambda: send(hdr(4, 24) + b"\0" * 8),
        "reserved-field": lambda: send(hdr(4, 16, zero=1)),
        "run-before-hello": lambda: send_run(),
        "hello-twice": lambda: send(hello()),
        "unsealed-binary": lambda: send_run(binary_seals=0),
        "writable-input": lambda: send_run(input_seals=fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK),
        "fd-count": lambda: send_run(drop_fd=True),
        "too-many-fds": lambda: send_run(extra_fds=12),
        "memory-too-small": lambda: send_run(msg=run_msg(memory=1 << 20)),
        "timeout-zero": lambda: send_run(msg=run_msg(timeout=0)),
        "cpu-too-large": lambda: send_run(msg=run_msg(cpu=100000)),
        "protocol-3": lambda: send_run(msg=run_msg(protocol=3)),
        "flags-protocol-1": lambda: send_run(msg=run_msg(flags=1), extra_fds=1),
        "run-id-zero": lambda: send_run(msg=run_msg(run_id=0)),
        "stdout-not-pipe": lambda: send_run(stdout_pipe=False),
        "duplicate-id": lambda: (send_run(plugin="slow"), send_run()),
        "run-after-stop": lambda: (send(hdr(4, 16)), send_run()),
        "notify-bad-state": lambda: send(hdr(6, 32) + struct.pack("<IIII", 9, 0, 0, 0)),
        "warm-memory-too-small": lambda: send(hdr(7, 32) + struct.pack("<QQ", 1 << 20, 3)),
        "warm-after-stop": lambda: (send(hdr(4, 16)),
                                    send(hdr(7, 32) + struct.pack("<QQ", 128 << 20, 3))),
        "confine-no-pidfd": lambda: send(hdr(5, 32) + struct.pack("<QII", 1, os.getpid(), 0),
                                         [memfd(b"x")]),
        # A /proc/<pid> directory takes pidfd_send_signal() too, and names no pid.
        "confine-proc-dir": lambda: send(hdr(5, 32) + struct.pack("<QII", 1, os.getpid(), 0),
                                         [os.open(f"/proc/{os.getpid()}",
                                                  os.O_RDONLY | os.O_DIRECTORY)]),
    }
    if case in ATTACKS:
        ATTACKS[case]()
        return
    bad[case]()
    wait_hangup()


def phase(name):
    """Tells the test a step is done (a file beside the policy) and waits for its go-ahead."""
    open(os.path.join(conf_dir, "phase-" + name), "w").close()
    go = os.path.join(conf_dir, "go-" + name)
    deadline = time.monotonic() + 60
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.05)


def recv_reply(timeout=30):
    """One reply: (type, bytes)."""
    x = recv(timeout)
    if len(x) < 16:
        return 0, x  # the spawner hung up
    return struct.unpack("<H", x[6:8])[0], x


def wait_exited(ids, timeout=120):
    """Reads replies until every run id in ids has its EXITED: {id: error}."""
    got = {}
    deadline = time.monotonic() + timeout
    while len(got) < len(ids) and time.monotonic() < deadline:
        t, x = recv_reply(max(1, deadline - time.monotonic()))
        if t == 0:
            seen["hangup"] = True
            break
        if t == 0x82:
            run_id, error = struct.unpack("<Qi", x[16:28])
            got[run_id] = error
    return got


def attack_terminal():
    """Root's terminal: what of it the engine holds (its session, fds 0-2, /dev/tty, TIOCSTI)
    and what of root's environment reached it."""
    seen["pid"], seen["sid"] = os.getpid(), os.getsid(0)
    seen["fds"] = {}
    for n in os.listdir("/proc/self/fd"):
        try:
            seen["fds"][n] = os.readlink(f"/proc/self/fd/{n}")
        except OSError:
            pass
    seen["isatty"] = [os.isatty(i) for i in range(3)]
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
        seen["dev_tty"] = "opened"
        os.close(fd)
    except OSError as e:
        seen["dev_tty"] = e.errno
    seen["tiocsti"] = []
    for i in range(3):
        try:
            for c in b"echo pwned\n":
                fcntl.ioctl(i, termios.TIOCSTI, bytes([c]))
            seen["tiocsti"].append("pushed")
        except OSError as e:
            seen["tiocsti"].append(e.errno)
    # What the spawner passed at the exec (Python adds LC_CTYPE to os.environ itself).
    seen["environ"] = sorted(x.split(b"=", 1)[0].decode()
                             for x in open("/proc/self/environ", "rb").read().split(b"\0") if x)
    send(hdr(4, 16))


def attack_engine_dies():
    """The engine exits while a child of its keeps the channel: the child then asks for a run."""
    child = os.fork()
    if child == 0:
        res = {}
        try:
            time.sleep(1.0)
            fds, _ = run_fds()
            send(run_msg(run_id=7), fds)
            try:
                t, x = recv_reply(8)
                res["reply"] = hex(t)
            except socket.timeout:
                res["reply"] = "timeout"
            except OSError as e:
                res["reply"] = f"error {e.errno}"
            else:
                if res["reply"] == hex(0):
                    res["reply"] = "eof"
        except OSError as e:
            res["reply"] = f"send error {e.errno}"
        with open(out_path + ".child", "w") as f:
            json.dump(res, f)
        os._exit(0)
    seen["child"] = child
    with open(out_path, "w") as f:
        json.dump(seen, f)
    os._exit(0)


def attack_nofile_burst():
    """Every run the spawner allows in flight at once (runs_max), each with the most fds a run
    has: four slow ones hold the workers, the rest wait in the queue holding theirs."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    runs_max = seen["hello"][2]
    slow = memfd(open(conf["slow"], "rb").read())
    good = memfd(open(conf["plugin"], "rb").read())
    inp = memfd(b"hello")
    keep = []
    for i in range(1, runs_max + 1):
        pipes = [os.pipe() for _ in range(3)]
        if i <= 4:
            fds = [slow, inp, pipes[0][1], pipes[1][1]]
            msg = run_msg(run_id=i)
        else:
            fds = [good, inp, inp, pipes[0][1], pipes[1][1], pipes[2][1]]
            msg = run_msg(run_id=i, protocol=2, flags=3)
        try:
            send(msg, fds)
        except OSError as e:
            seen["send_error"] = [i, e.errno]
            break
        for r, w in pipes:
            os.close(w)
            keep.append(r)
    seen["sent"] = i
    phase("queued")
    got = wait_exited(set(range(1, runs_max + 1)), timeout=240)
    seen["exited"] = len(got)
    seen["errors"] = sorted({e for e in got.values()})
    for r in keep:
        os.close(r)
    send(hdr(4, 16))


def attack_cache():
    """Eight large binaries (64 MiB each: good-one padded), each run once and then closed."""
    body = open(conf["plugin"], "rb").read()
    phase("idle")
    for i in range(1, 9):
        binary = memfd(body + bytes([i]) * ((64 << 20) - len(body)))
        inp = memfd(b"hello")
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        send(run_msg(run_id=i), [binary, inp, out_w, err_w])
        for f in (binary, inp, out_w, err_w):
            os.close(f)
        got = wait_exited({i}, timeout=60)
        seen.setdefault("errors", []).append(got.get(i))
        os.close(out_r)
        os.close(err_r)
    phase("released")
    send(hdr(4, 16))


def attack_dead_pidfd():
    """CONFINE with a pidfd whose process is gone, naming a live pid (our own)."""
    child = os.fork()
    if child == 0:
        os._exit(0)
    pidfd = os.pidfd_open(child)
    os.waitpid(child, 0)
    send(hdr(5, 32) + struct.pack("<QII", 1, os.getpid(), 0), [pidfd])
    t, x = recv_reply(15)
    check_id, error, ok, reason = struct.unpack("<QiII", x[16:36])
    seen["confined"] = {"type": hex(t), "check_id": check_id, "error": error, "ok": ok,
                        "reason": reason, "unit": x[40:296].rstrip(b"\0").decode()}
    send(hdr(4, 16))


def attack_notify_flood():
    """2000 NOTIFYs, then one run: how long its answer takes."""
    t0 = time.monotonic()
    for i in range(2000):
        send(hdr(6, 32) + struct.pack("<IIII", 2, i, 0, 0))
    seen["notify_s"] = time.monotonic() - t0
    fds, (out_r, err_r) = run_fds()
    t0 = time.monotonic()
    send(run_msg(run_id=1), fds)
    for f in fds:
        os.close(f)
    got = wait_exited({1}, timeout=90)
    seen["run_s"] = time.monotonic() - t0
    seen["run_error"] = got.get(1)
    seen["stdout"] = read_all(out_r).decode(errors="replace")
    send(hdr(4, 16))


def attack_namespaces():
    """The engine's own filter, loaded as lockd-engine loads it (tests/tools/engine-probe), then
    clone with each namespace flag, clone3, unshare and sockets of other families."""
    import subprocess
    r = subprocess.run([conf["probe"]], capture_output=True, text=True, timeout=30)
    seen["probe"] = json.loads(r.stdout) if r.returncode == 0 else {"rc": r.returncode,
                                                                     "err": r.stderr}
    send(hdr(4, 16))


ATTACKS = {
    "namespaces": attack_namespaces,
    "terminal": attack_terminal,
    "engine-dies": attack_engine_dies,
    "nofile-burst": attack_nofile_burst,
    "cache": attack_cache,
    "dead-pidfd": attack_dead_pidfd,
    "notify-flood": attack_notify_flood,
}


def send_run(msg=None, drop_fd=False, extra_fds=0, plugin="plugin", **kw):
    fds, _ = run_fds(plugin=plugin, **kw)
    if drop_fd:
        fds = fds[:-1]
    fds += [memfd(b"extra") for _ in range(extra_fds)]
    send(msg or run_msg(), fds)


if __name__ == "__main__":
    try:
        main()
    finally:
        with open(out_path, "w") as f:
            json.dump(seen, f)
    time.sleep(0.2)
    sys.exit(0)
