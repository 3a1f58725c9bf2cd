#!/usr/bin/env python3
"""The demo's human at a terminal: runs COMMAND on a new pseudo-terminal (its controlling
terminal, so /dev/tty is this one), waits for each PROMPT to show and then types its REPLY and
Enter, as a person would, and prints everything the terminal showed. A reply typed before its
prompt would be discarded by lockctl, so nothing is typed ahead.

Usage: demo-tty.py PROMPT REPLY [PROMPT REPLY]... -- COMMAND [ARG]...
Exit status: COMMAND's; 1 when a prompt did not show within 60 seconds."""

import os
import pty
import select
import sys
import time


def read_some(fd, deadline):
    """What the terminal shows next: bytes, b"" at the end, None when the deadline passed."""
    left = deadline - time.monotonic()
    if left <= 0 or not select.select([fd], [], [], left)[0]:
        return None
    try:
        return os.read(fd, 4096)
    except OSError:  # EIO: every process holding the terminal is gone
        return b""


def main():
    split = sys.argv.index("--")
    pairs = sys.argv[1:split]
    command = sys.argv[split + 1:]
    script = [(pairs[i].encode(), pairs[i + 1].encode()) for i in range(0, len(pairs), 2)]

    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)

    shown = b""
    seen = 0  # what was shown before is no longer searched for the next prompt
    status = 0
    for prompt, reply in script:
        deadline = time.monotonic() + 60
        while prompt not in shown[seen:]:
            chunk = read_some(fd, deadline)
            if not chunk:
                sys.stdout.write(shown.decode(errors="replace").replace("\r\n", "\n"))
                print(f"\ndemo-tty: the prompt {prompt.decode()!r} did not show")
                status = 1
                break
            shown += chunk
        if status:
            break
        seen = shown.index(prompt, seen) + len(prompt)
        time.sleep(0.2)  # a human's reaction time; the prompt's echo-off is set before it shows
        os.write(fd, reply + b"\r")
    deadline = time.monotonic() + 60
    while not status:
        chunk = read_some(fd, deadline)
        if not chunk:
            break
        shown += chunk
    if status:
        os.kill(pid, 9)
    _, wstatus = os.waitpid(pid, 0)
    os.close(fd)
    if not status:
        sys.stdout.write(shown.decode(errors="replace").replace("\r\n", "\n"))
        status = os.waitstatus_to_exitcode(wstatus)
    return status


if __name__ == "__main__":
    sys.exit(main())
