#!/usr/bin/env python3
"""A stand-in for lockd-engine that the spawner starts in the engine's place (`lockd --engine`):
it says HELLO like the real one, then does what HOSTILE_CASE names: one well-formed run ("ok"),
or a malformed, oversized, truncated or out-of-order request, unsealed or writable memfds, the
wrong fds, limits out of range. It writes what it saw as JSON to HOSTILE_OUT and waits for the
spawner to hang up. Run by tests/integration/test-spawner.py, never by hand."""

import fcntl
import json
import os
import socket
import struct
import sys
import time

MAGIC = 0x4c4b5350
SEALS = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL
case = os.environ["HOSTILE_CASE"]
out_path = os.environ["HOSTILE_OUT"]
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


def run_fds(binary_seals=SEALS, input_seals=SEALS, stdout_pipe=True, plugin="HOSTILE_PLUGIN"):
    binary = memfd(open(os.environ[plugin], "rb").read(), binary_seals)
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
    """The spawner ends on a request it cannot believe: its end of the channel closes."""
    try:
        seen["after"] = recv(timeout=15).hex() or "eof"
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
        if struct.unpack("<H", x[6:8])[0] == 0x84:  # STARTED, with the unit
            seen["started"] = x[32:160].rstrip(b"\0").decode()
            x = recv()
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
        "duplicate-id": lambda: (send_run(plugin="HOSTILE_SLOW"), send_run()),
        "run-after-stop": lambda: (send(hdr(4, 16)), send_run()),
        "notify-bad-state": lambda: send(hdr(6, 32) + struct.pack("<IIII", 9, 0, 0, 0)),
        "warm-memory-too-small": lambda: send(hdr(7, 32) + struct.pack("<QQ", 1 << 20, 3)),
        "warm-after-stop": lambda: (send(hdr(4, 16)),
                                    send(hdr(7, 32) + struct.pack("<QQ", 128 << 20, 3))),
        "confine-no-pidfd": lambda: send(hdr(5, 32) + struct.pack("<QII", 1, os.getpid(), 0),
                                         [memfd(b"x")]),
    }
    bad[case]()
    wait_hangup()


def send_run(msg=None, drop_fd=False, extra_fds=0, plugin="HOSTILE_PLUGIN", **kw):
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
