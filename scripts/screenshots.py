#!/usr/bin/env python3
"""scripts/screenshots' inner part, run under tests/integration/with-systemd: a real lockd with
the test plugins, one ticket asking whether a granted file contains the value the agent calls
${email}; on an X server of its own (Xvfb) and a session bus of its own (dbus-daemon, no service
directory), dunst shows lockctl notify's notification and pinentry-gtk2 lockctl approve's two
dialogs; each is taken with xwd and cropped to what it shows. Usage: screenshots.py OUTDIR"""

import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
from lockdtest import AGENT_UID, LOCKCTL, World, call_as, grant, grant_file  # noqa: E402

DISPLAY = ":73"
SIZE = "900x600x24"


def shot(out, path):
    """The screen, cropped to what is not background, as a PNG."""
    xwd = subprocess.run(["xwd", "-root", "-silent", "-display", DISPLAY], capture_output=True,
                         check=True).stdout
    pnm = subprocess.run(["xwdtopnm"], input=xwd, capture_output=True, check=True).stdout
    cropped = subprocess.run(["pnmcrop"], input=pnm, capture_output=True, check=True).stdout
    png = subprocess.run(["pnmtopng", "-compression", "9"], input=cropped, capture_output=True,
                         check=True).stdout
    with open(os.path.join(out, path), "wb") as f:
        f.write(png)
    print(f"wrote {path} ({len(png)} bytes)")


def start(argv, env, **kw):
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, **kw)


def end(proc):
    """Ends proc's whole session (each was started in one of its own)."""
    if proc and proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main():
    out = os.path.abspath(sys.argv[1])
    w = World()
    procs = []
    try:
        w.install("good-inputs")
        path = grant_file(w, "q3-report.txt", b"Quarterly report\nContact: alice@example.org\n")
        h = grant(w.d, path, "--agent", str(AGENT_UID), "--label", "q3-report.txt")["handle"]
        r = call_as(AGENT_UID, w.d.agent, "io.lockd.Agent.Submit", {"steps": [
            {"plugin": "test.good-inputs", "handle": h, "inputs": {"needle": "${email}"}}]})
        ticket = r["parameters"]["ticket"]

        bus_dir = os.path.join(w.dir, "bus")
        os.makedirs(bus_dir)
        with open(os.path.join(bus_dir, "session.conf"), "w") as f:
            f.write(f"""<busconfig><type>session</type><listen>unix:path={bus_dir}/bus</listen>
<auth>EXTERNAL</auth><policy context="default"><allow send_destination="*" eavesdrop="true"/>
<allow eavesdrop="true"/><allow own="*"/></policy></busconfig>
""")
        # dunst wide enough for a question, with a frame; critical in a dark red.
        os.makedirs(os.path.join(w.dir, "config", "dunst"))
        with open(os.path.join(w.dir, "config", "dunst", "dunstrc"), "w") as f:
            f.write("""[global]
width = 560
height = 400
offset = 12x12
origin = top-right
font = DejaVu Sans 10
frame_width = 2
padding = 10
horizontal_padding = 12
[urgency_critical]
background = "#3b1113"
foreground = "#ffffff"
frame_color = "#ff5555"
timeout = 0
""")
        env = dict(os.environ, DISPLAY=DISPLAY, DBUS_SESSION_BUS_ADDRESS=f"unix:path={bus_dir}/bus",
                   HOME=w.dir, XDG_CONFIG_HOME=os.path.join(w.dir, "config"))
        procs.append(start(["Xvfb", DISPLAY, "-screen", "0", SIZE, "-nolisten", "tcp"], env))
        procs.append(start(["dbus-daemon", f"--config-file={bus_dir}/session.conf", "--nofork",
                            "--nopidfile"], env))
        for _ in range(100):
            if os.path.exists(f"/tmp/.X11-unix/X{DISPLAY[1:]}") and \
                    os.path.exists(f"{bus_dir}/bus"):
                break
            time.sleep(0.1)
        procs.append(start(["dunst"], env))
        time.sleep(1.5)

        notify = start([LOCKCTL, "--socket", w.d.console, "notify"], env)
        procs.append(notify)
        time.sleep(3)
        shot(out, "screenshot-notify.png")
        end(notify)
        subprocess.run(["dunstctl", "close-all"], env=env, capture_output=True)
        time.sleep(1)

        approve = start([LOCKCTL, "--socket", w.d.console, "approve", ticket,
                         "--pinentry=pinentry-gtk-2"], env, stdin=subprocess.DEVNULL)
        time.sleep(3)
        shot(out, "screenshot-pinentry-confirm.png")
        end(approve)
        approve = start([LOCKCTL, "--socket", w.d.console, "approve", ticket, "--yes",
                         "--pinentry=pinentry-gtk-2"], env, stdin=subprocess.DEVNULL)
        time.sleep(3)
        shot(out, "screenshot-pinentry-value.png")
        end(approve)
    finally:
        for p in reversed(procs):
            end(p)
        w.d.stop()


if __name__ == "__main__":
    main()
