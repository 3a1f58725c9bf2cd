#!/usr/bin/env python3
"""The human's side against a real lockd under a real systemd manager: lockctl approve through
pinentry (a stand-in that records the Assuan commands, and the real pinentry-curses in tmux),
lockctl notify on a private session bus (dbus-daemon with no service directories) with
python3-dbusmock's notification server, the console's bell, cleared screen, outcome and key list,
and lockctl agent run passing no display. TAP on stdout. Run through
tests/integration/with-systemd."""

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lockdtest import (AGENT_UID, BUS, ISSUER, PATTERN, Daemon, Failed, Tap,  # noqa: E402
                       World, call_as, check, grant, grant_file, policy_text,
                       require_environment, systemctl, wait_for)

LOCKCTL = os.environ.get("LOCKCTL", "")
HERE = os.path.dirname(os.path.abspath(__file__))
STANDIN = os.path.join(HERE, "pinentry-standin.py")
# Debian's python3, which python3-dbusmock is installed for.
DEBIAN_PYTHON = "/usr/bin/python3"
# A typed value with what Assuan must escape on its way back ('%') and a '%XX' that must not be
# decoded twice: if it were, the plugin would look for another string and answer 0.
TYPED = "Zq7%41-typed 100%"
NOTIFY_PATH = "/org/freedesktop/Notifications"
NOTIFY_IFACE = "org.freedesktop.Notifications"
CONFINED_UID = 61019
CONFINED_USER = "lockd-test-human"


def get_ticket(d, t):
    r = d.console_call("io.lockd.Console.GetTicket", {"ticket": t})
    check("parameters" in r, f"GetTicket: {r}")
    return r["parameters"]["ticket"]


def submit(d, steps, uid=AGENT_UID):
    r = call_as(uid, d.agent, "io.lockd.Agent.Submit", {"steps": steps})
    check(r.get("parameters", {}).get("state") == "pending", f"Submit: {r}")
    return r["parameters"]["ticket"]


def submit_at_once(d, plans, uid=AGENT_UID):
    """Submits each plan on a connection of its own, all sent before any answer is read (one
    process of the agent's uid): the tickets arrive together. Their ids."""
    prog = ("import json,socket,sys\n"
            "plans=json.loads(sys.argv[2]);conns=[]\n"
            "for p in plans:\n"
            "  s=socket.socket(socket.AF_UNIX);s.settimeout(20);s.connect(sys.argv[1])\n"
            "  conns.append(s)\n"
            "for s,p in zip(conns,plans):\n"
            "  s.sendall(json.dumps({'method':'io.lockd.Agent.Submit',"
            "'parameters':{'steps':p}}).encode()+b'\\0')\n"
            "out=[]\n"
            "for s in conns:\n"
            "  b=b''\n"
            "  while b'\\0' not in b:\n"
            "    c=s.recv(65536)\n"
            "    if not c: break\n"
            "    b+=c\n"
            "  out.append(json.loads(b.split(b'\\0')[0]))\n"
            "print(json.dumps(out))\n")
    r = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                        sys.executable, "-c", prog, d.agent, json.dumps(plans)],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"submit_at_once: {r.stderr}")
    answers = json.loads(r.stdout)
    check(all(a.get("parameters", {}).get("state") == "pending" for a in answers),
          f"Submit: {answers}")
    return [a["parameters"]["ticket"] for a in answers]


def needle_ticket(w, content, placeholder, label="the needle file"):
    """A ticket asking test.good-inputs whether a newly granted file holds ${placeholder}."""
    path = grant_file(w, f"human-{time.monotonic_ns()}.txt", content)
    h = grant(w.d, path, "--agent", str(AGENT_UID), "--label", label)["handle"]
    return submit(w.d, [{"plugin": "test.good-inputs", "handle": h,
                         "inputs": {"needle": "${" + placeholder + "}"}}])


def plain_ticket(w, label="a plain file"):
    """A ticket asking test.good-one about a newly granted file: no value to type."""
    path = grant_file(w, f"plain-{time.monotonic_ns()}.txt", b"plain\n")
    h = grant(w.d, path, "--agent", str(AGENT_UID), "--label", label)["handle"]
    return submit(w.d, [{"plugin": "test.good-one", "handle": h}])


def wait_state(d, t, states, timeout=30):
    return wait_for(lambda: get_ticket(d, t) if get_ticket(d, t)["state"] in states else None,
                    timeout=timeout, what=f"{t} in {states}")


def agent_outcomes(d, t):
    """The agent's outcomes once the ticket is done."""
    r = wait_for(lambda: (lambda x: x["parameters"] if x.get("parameters", {}).get("state") in
                          ("done", "denied") else None)(
        call_as(AGENT_UID, d.agent, "io.lockd.Agent.Wait", {"ticket": t})),
        timeout=30, what=f"{t} final")
    return [(o["result"], o["error"]) for o in r["outcomes"]]


# ---------------------------------------------------------------------------------------------
# pinentry


def approve_standin(w, t, answers):
    """lockctl approve --pinentry=the stand-in, with no terminal; (result, commands it got)."""
    log = os.path.join(w.dir, f"pinentry-{time.monotonic_ns()}.log")
    env = dict(os.environ, PINENTRY_STANDIN_LOG=log, PINENTRY_STANDIN_ANSWERS=",".join(answers))
    r = subprocess.run([LOCKCTL, "--socket", w.d.console, "approve", t, f"--pinentry={STANDIN}"],
                       capture_output=True, text=True, timeout=60, start_new_session=True,
                       stdin=subprocess.DEVNULL, env=env)
    with open(log) as f:
        commands = [json.loads(line) for line in f]
    return r, commands


def unescape(s):
    out, i = b"", 0
    while i < len(s):
        if s[i] == "%":
            out += bytes([int(s[i + 1:i + 3], 16)])
            i += 3
        else:
            out += s[i].encode()
            i += 1
    return out.decode()


def arg_before(commands, verb, index):
    """The argument of the last `verb` command before commands[index], unescaped."""
    for c in reversed(commands[:index]):
        if c.split(" ", 1)[0] == verb:
            return unescape(c.split(" ", 1)[1]) if " " in c else ""
    return None


def test_pinentry_standin(w):
    """approve --pinentry speaks Assuan: CONFIRM with the question, the file's label and the
    agent, then one GETPIN per value prompted by the plugin's input (name, kind, max bytes), the
    agent's placeholder only quoted as its wording; never SETKEYINFO or a cache option; the value
    (percent-escaped both ways) answers the question"""
    w.install("good-inputs")
    t = needle_ticket(w, f"xx {TYPED} yy\n".encode(), "pin_a", label="the needle file 100%")
    r, cmds = approve_standin(w, t, ["ok", "value:" + TYPED])
    check(r.returncode == 0, f"approve --pinentry: {r.returncode}\n{r.stdout}{r.stderr}")
    verbs = [c.split(" ", 1)[0] for c in cmds]
    check(verbs.count("CONFIRM") == 1 and verbs.count("GETPIN") == 1 and
          verbs.index("CONFIRM") < verbs.index("GETPIN"), f"the commands: {cmds}")
    check("SETKEYINFO" not in verbs and not any("cache" in c.lower() for c in cmds) and
          verbs[-1] == "BYE", f"a cache option or SETKEYINFO: {cmds}")
    desc = arg_before(cmds, "SETDESC", verbs.index("CONFIRM"))
    for s in ("Does the file contain ${needle}?", '"the needle file 100%"', f"uid {AGENT_UID}",
              "test.good-inputs"):
        check(s in desc, f"{s!r} not in CONFIRM's description: {desc!r}")
    # Sent percent-escaped: the label's '%' and the description's line feeds.
    raw = [c for c in cmds[:verbs.index("CONFIRM")] if c.startswith("SETDESC ")][-1]
    check("100%25" in raw and "%0A" in raw and "\n" not in raw, f"SETDESC as sent: {raw!r}")
    check(arg_before(cmds, "SETOK", verbs.index("CONFIRM")) == "Approve" and
          arg_before(cmds, "SETCANCEL", verbs.index("CONFIRM")) == "Deny", f"buttons: {cmds}")
    prompt = arg_before(cmds, "SETPROMPT", verbs.index("GETPIN"))
    check(prompt == "needle (text, at most 64 bytes):", f"GETPIN's prompt: {prompt!r}")
    desc = arg_before(cmds, "SETDESC", verbs.index("GETPIN"))
    check("Does the file contain ${needle}?" in desc and
          "(the agent's wording, not the plugin's): \"${pin_a}\"" in desc and
          "pin_a" not in prompt, f"GETPIN's description: {desc!r}")
    check(TYPED not in r.stdout + r.stderr, "the value was echoed")
    check(agent_outcomes(w.d, t) == [(1, None)], f"{t}: the value did not reach the plugin")


def test_pinentry_cancel(w):
    """GETPIN's Cancel leaves the ticket pending and sends nothing; CONFIRM's Cancel (Deny)
    denies it; an error that is no cancel (the program is not there) leaves it pending"""
    w.install("good-inputs")
    w.install("good-one")
    t = needle_ticket(w, b"cancel\n", "pin_b")
    r, cmds = approve_standin(w, t, ["ok", "cancel"])
    check(r.returncode == 1 and "pinentry's Cancel" in r.stderr and
          get_ticket(w.d, t)["state"] == "pending", f"GETPIN cancel: {r.stderr} {cmds}")
    r, cmds = approve_standin(w, t, ["cancel"])
    verbs = [c.split(" ", 1)[0] for c in cmds]
    check("GETPIN" not in verbs and "denied" in r.stdout, f"CONFIRM cancel: {r.stdout} {cmds}")
    check(get_ticket(w.d, t)["state"] == "denied", "CONFIRM's Cancel did not deny")
    t2 = plain_ticket(w)
    r = subprocess.run([LOCKCTL, "--socket", w.d.console, "approve", t2,
                        "--pinentry=/nonexistent/pinentry"], capture_output=True, text=True,
                       timeout=60, start_new_session=True, stdin=subprocess.DEVNULL)
    check(r.returncode == 1 and get_ticket(w.d, t2)["state"] == "pending",
          f"a missing pinentry: {r.returncode} {r.stderr}")


class Pane:
    """A command on a terminal of its own: a tmux session (100x40) on a private server, typed at
    with send-keys and read with capture-pane."""

    def __init__(self, w, name, argv, env=None):
        self.sock = os.path.join(w.dir, "tmux-human.sock")
        self.name = name
        inner = " ".join(shlex.quote(a) for a in argv)
        script = f"{inner}; echo EXIT=$?; sleep 600"
        r = self.run_tmux("new-session", "-d", "-s", name, "-x", "100", "-y", "40", "sh", "-c",
                          script)
        if r.returncode != 0 and "server exited unexpectedly" in r.stderr:
            time.sleep(0.5)
            r = self.run_tmux("new-session", "-d", "-s", name, "-x", "100", "-y", "40", "sh",
                              "-c", script)
        check(r.returncode == 0, f"tmux new-session: {r.stderr}")

    def run_tmux(self, *args):
        env = dict(os.environ, TERM="xterm-256color")
        return subprocess.run(["tmux", "-f", "/dev/null", "-S", self.sock, *args],
                              capture_output=True, text=True, timeout=20, env=env)

    def tmux(self, *args):
        r = self.run_tmux(*args)
        check(r.returncode == 0, f"tmux {args[0]}: {r.stderr}")
        return r.stdout

    def text(self):
        return self.tmux("capture-pane", "-p", "-J", "-S", "-1000", "-t", self.name)

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def wait(self, s, timeout=20, screen=False):
        try:
            return wait_for(lambda: s in (self.screen() if screen else self.text()),
                            timeout=timeout, what=repr(s))
        except Failed:
            raise Failed(f"no {s!r} on the pane:\n{self.text()}")

    def wait_screen(self, parts, timeout=20):
        """One capture of the screen that holds every one of parts, returned: a curses program
        may clear and redraw its dialog, so a second capture can find it blank."""
        seen = {}

        def whole():
            seen["screen"] = self.screen()
            return all(x in seen["screen"] for x in parts)
        try:
            wait_for(whole, timeout=timeout, what=repr(parts))
        except Failed:
            raise Failed(f"no screen with all of {parts!r}:\n{seen.get('screen', '')}")
        return seen["screen"]

    def type(self, text, enter=True):
        self.tmux("send-keys", "-t", self.name, "-l", text)
        if enter:
            self.tmux("send-keys", "-t", self.name, "Enter")

    def key(self, *keys):
        self.tmux("send-keys", "-t", self.name, *keys)

    def close(self):
        subprocess.run(["tmux", "-S", self.sock, "kill-session", "-t", self.name],
                       capture_output=True, timeout=20)


def test_pinentry_curses(w):
    """the real pinentry-curses, driven in tmux: the CONFIRM dialog shows the question and the
    file, OK approves; the GETPIN dialog's prompt is the plugin's input; the typed value (never
    shown) answers the question"""
    program = shutil.which("pinentry-curses")
    check(program, "pinentry-curses is not installed (scripts/deps --test)")
    w.install("good-inputs")
    t = needle_ticket(w, b"curses: Zq7-curses-typed\n", "pin_c", label="curses file")
    p = Pane(w, "pinentry", [LOCKCTL, "--socket", w.d.console, "approve", t,
                             f"--pinentry={program}"])
    try:
        # The CONFIRM dialog: the question, the file's label and the button, on one screen.
        p.wait_screen(["Does the file contain ${needle}?", '"curses file"', "Approve"])
        p.key("Enter")
        p.wait_screen(["needle (text, at most 64 bytes):", '"${pin_c}"'])
        p.type("Zq7-curses-typed")
        p.wait("EXIT=")
        check("EXIT=0" in p.text() and "Zq7-curses-typed" not in p.text(),
              f"after pinentry-curses:\n{p.text()}")
    finally:
        p.close()
    check(agent_outcomes(w.d, t) == [(1, None)], f"{t}: pinentry-curses' value")


# ---------------------------------------------------------------------------------------------
# The console


def test_console_bell_clear_outcome(w):
    """lockctl console rings the bell for a new pending ticket, lists its keys on ?, clears the
    screen before an approval's prompts (labelled by the plugin's input, the agent's name only
    quoted), comes back at once and shows the outcome when the ticket ends"""
    w.install("good-inputs")
    p = Pane(w, "console-h", [LOCKCTL, "--socket", w.d.console, "console"])
    try:
        p.wait("lockd console:", screen=True)
        check(p.tmux("display-message", "-p", "-t", p.name, "#{window_bell_flag}").strip() == "0",
              "a bell before any ticket")
        t = needle_ticket(w, b"console needle-value\n", "console_h")
        p.wait(t[:12], screen=True)
        wait_for(lambda: p.tmux("display-message", "-p", "-t", p.name,
                                "#{window_bell_flag}").strip() == "1", what="the bell")
        title = p.tmux("display-message", "-p", "-t", p.name, "#{pane_title}").strip()
        check(title.startswith("lockd console: ") and title.endswith(" waiting") and
              title != "lockd console: 0 waiting", f"the window's title: {title!r}")
        p.key("?")
        p.wait("keys:", screen=True)
        check("approve the selected ticket" in p.screen() and "q                quit" in
              p.screen(), f"the key list:\n{p.screen()}")
        p.key("x")
        p.wait(t[:12], screen=True)
        p.type("j" * 200, enter=False)
        p.key("a")
        p.wait("Approve this ticket? [y/N]")
        lines = [x for x in p.text().splitlines() if x.strip()]
        check(lines[0].startswith(f"ticket {t} from agent uid"),
              f"the screen was not cleared before the prompt:\n{p.text()}")
        p.type("y")
        p.wait("value of needle (text, at most 64 bytes): ")
        check('the agent\'s name for this value (the agent\'s wording, not the plugin\'s): '
              '"${console_h}"' in p.text() and "${console_h}:" not in p.text(),
              f"the value's label:\n{p.text()}")
        p.type("needle-value")
        p.wait(f"{t[:12]} ended: done", screen=True)
        check("needle-value" not in p.screen(), "the value was echoed")
        p.key("q")
        p.wait("EXIT=0")
    finally:
        p.close()


def test_console_pinentry(w):
    """lockctl console --pinentry: a asks through pinentry (CONFIRM, then GETPIN), and the
    outcome shows when the ticket ends"""
    w.install("good-inputs")
    log = os.path.join(w.dir, f"console-pinentry-{time.monotonic_ns()}.log")
    p = Pane(w, "console-p", ["env", f"PINENTRY_STANDIN_LOG={log}",
                              f"PINENTRY_STANDIN_ANSWERS=ok,value:{TYPED}", LOCKCTL, "--socket",
                              w.d.console, "console", f"--pinentry={STANDIN}"])
    try:
        p.wait("lockd console:", screen=True)
        t = needle_ticket(w, f"console {TYPED}\n".encode(), "console_p")
        p.wait(t[:12], screen=True)
        p.type("j" * 200, enter=False)
        p.key("a")
        p.wait(f"{t[:12]} ended: done", screen=True)
        with open(log) as f:
            verbs = [json.loads(line).split(" ", 1)[0] for line in f]
        check(verbs.count("CONFIRM") == 1 and verbs.count("GETPIN") == 1 and
              verbs.index("CONFIRM") < verbs.index("GETPIN"), f"pinentry: {verbs}")
        p.key("q")
        p.wait("EXIT=0")
    finally:
        p.close()
    check(agent_outcomes(w.d, t) == [(1, None)], f"{t}: the value typed in pinentry")


# ---------------------------------------------------------------------------------------------
# lockctl notify on a private session bus


class SessionBus:
    """A private dbus-daemon whose configuration has no service directories (nothing is
    activated), with python3-dbusmock's notification server on it."""

    def __init__(self, w):
        self.dir = os.path.join(w.dir, f"bus-{time.monotonic_ns()}")
        os.makedirs(self.dir)
        conf = os.path.join(self.dir, "session.conf")
        with open(conf, "w") as f:
            f.write(f"""<busconfig>
  <type>session</type>
  <listen>unix:path={self.dir}/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
""")
        self.address = f"unix:path={self.dir}/bus"
        self.daemon = subprocess.Popen(["dbus-daemon", f"--config-file={conf}", "--nofork",
                                        "--nopidfile"], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE)
        wait_for(lambda: os.path.exists(f"{self.dir}/bus"), what="the session bus")
        self.env = dict(os.environ, DBUS_SESSION_BUS_ADDRESS=self.address)
        self.mock = None

    def start_server(self, caps):
        self.stop_server()
        self.mock = subprocess.Popen([DEBIAN_PYTHON, "-m", "dbusmock", "--template",
                                      "notification_daemon", "--parameters",
                                      json.dumps({"capabilities": caps})],
                                     env=self.env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        wait_for(lambda: self.busctl("status", "org.freedesktop.Notifications").returncode == 0,
                 what="the notification server")
        self.clear()

    def stop_server(self):
        if self.mock:
            self.mock.terminate()
            self.mock.wait(10)
            self.mock = None

    def busctl(self, *args):
        return subprocess.run(["busctl", f"--address={self.address}", *args],
                              capture_output=True, text=True, timeout=20)

    def mock_call(self, method, signature="", *args):
        r = self.busctl("--json=short", "call", "org.freedesktop.Notifications", NOTIFY_PATH,
                        "org.freedesktop.DBus.Mock", method, signature, *args)
        check(r.returncode == 0, f"{method}: {r.stderr}")
        return json.loads(r.stdout) if r.stdout.strip() else None

    def calls(self, name):
        """The server's calls of method name, each its argument list."""
        data = self.mock_call("GetCalls")["data"][0]
        return [[a["data"] for a in c[2]] for c in data if c[1] == name]

    def clear(self):
        self.mock_call("ClearCalls")

    def emit_as_owner(self, signal_name, signature, *args):
        """A signal sent by the notification server's own connection."""
        self.mock_call("EmitSignal", "sssav", NOTIFY_IFACE, signal_name, signature,
                       str(len(args)), *[x for a in args for x in a])

    def close(self):
        self.stop_server()
        self.daemon.terminate()
        self.daemon.wait(10)


def start_notify(w, bus):
    return subprocess.Popen([LOCKCTL, "--socket", w.d.console, "notify", "--terminal", "true"],
                            env=bus.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.stderr.read() if proc.stderr else ""


def notify_for(bus, text, n=1, timeout=15):
    """The Notify calls whose body holds text, once there are n of them."""
    return wait_for(lambda: (lambda c: c if len(c) >= n else None)(
        [c for c in bus.calls("Notify") if text in c[4]]), timeout=timeout,
        what=f"a Notify about {text!r}")


def test_notify_actions(w):
    """lockctl notify: one Notify per pending ticket, urgency critical, the question, the file's
    label, the agent and the plugin's input, actions Review… and Deny (no Approve); ActionInvoked
    "deny" from another connection does nothing, from the server's own name denies; a
    NotificationClosed (expired) decides nothing; a ticket approved elsewhere has its
    notification closed"""
    w.install("good-inputs")
    w.install("good-one")
    bus = SessionBus(w)
    proc = None
    try:
        bus.start_server("body actions")
        proc = start_notify(w, bus)
        time.sleep(1)  # the watch is live (nothing pending is shown twice either way)
        t = needle_ticket(w, b"notify\n", "notify_a", label="notify <b>file</b> & co")
        calls = notify_for(bus, '"notify <b>file</b> & co"')
        time.sleep(1.5)  # the ticket's later changes make no second notification
        calls = [c for c in bus.calls("Notify") if "notify <b>file</b>" in c[4]]
        check(len(calls) == 1, f"Notify calls: {calls}")
        app, replaces, icon, summary, body, actions, hints, timeout = calls[0]
        check(app == "lockd" and replaces == 0 and timeout == 0, f"Notify: {calls[0]}")
        check(actions == ["default", "Review…", "deny", "Deny"] and
              not any("approve" in a.lower() for a in actions), f"actions: {actions}")
        check(hints.get("urgency", {}).get("data") == 2, f"hints: {hints}")
        check("needs a typed value" in summary, f"summary: {summary!r}")
        for s in ("Does the file contain ${needle}?", f"uid {AGENT_UID}", "test.good-inputs",
                  'needle (text, at most 64 bytes), which the agent calls "${notify_a}" '
                  "(its wording)"):
            check(s in body, f"{s!r} not in the body: {body!r}")
        # dbusmock numbers its notifications 1, 2, ... in the order of the Notify calls.
        nid = len(bus.calls("Notify"))
        # Another connection sends the same signal: nothing happens.
        r = bus.busctl("emit", NOTIFY_PATH, NOTIFY_IFACE, "ActionInvoked", "us", str(nid), "deny")
        check(r.returncode == 0, f"busctl emit: {r.stderr}")
        time.sleep(1.5)
        check(get_ticket(w.d, t)["state"] == "pending", "a stranger's ActionInvoked denied")
        # The server closes it on a timeout: nothing is decided.
        bus.emit_as_owner("NotificationClosed", "uu", ("u", str(nid)), ("u", "1"))
        time.sleep(1.5)
        check(get_ticket(w.d, t)["state"] == "pending", "a timeout decided the ticket")
        # The server's own ActionInvoked "deny": denied.
        bus.emit_as_owner("ActionInvoked", "us", ("u", str(nid)), ("s", "deny"))
        wait_state(w.d, t, ("denied",), timeout=10)

        # Approved elsewhere: its notification is closed.
        t2 = plain_ticket(w, label="approved in the console")
        notify_for(bus, '"approved in the console"')
        nid2 = len(bus.calls("Notify"))
        r = w.d.console_call("io.lockd.Console.Approve", {"ticket": t2})
        check(r.get("parameters", {}).get("state") in ("running", "done"), f"Approve: {r}")
        wait_for(lambda: [nid2] in bus.calls("CloseNotification"), timeout=10,
                 what="CloseNotification")
        plain = [c for c in bus.calls("Notify") if "approved in the console" in c[4]][0]
        check(plain[5] == ["default", "Review…", "deny", "Deny"] and
              "needs a typed value" not in plain[3], f"a ticket with no value: {plain}")
        check(proc.poll() is None, f"lockctl notify ended: {stop(proc)}")
    finally:
        if proc:
            stop(proc)
        bus.close()


def test_notify_review(w):
    """Review… on a notification (its default action, from the server's own name) opens the
    approval in pinentry: the stand-in confirms and types the value, and the ticket is answered
    with it"""
    w.install("good-inputs")
    bus = SessionBus(w)
    log = os.path.join(w.dir, f"review-{time.monotonic_ns()}.log")
    env = dict(bus.env, PINENTRY_STANDIN_LOG=log, PINENTRY_STANDIN_ANSWERS="ok,value:" + TYPED)
    proc = None
    try:
        bus.start_server("body actions")
        proc = subprocess.Popen([LOCKCTL, "--socket", w.d.console, "notify",
                                 f"--pinentry={STANDIN}"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(1)
        t = needle_ticket(w, f"review {TYPED}\n".encode(), "review_a", label="review me")
        notify_for(bus, '"review me"')
        nid = len(bus.calls("Notify"))
        bus.emit_as_owner("ActionInvoked", "us", ("u", str(nid)), ("s", "default"))
        wait_state(w.d, t, ("running", "done"), timeout=20)
        with open(log) as f:
            verbs = [json.loads(line).split(" ", 1)[0] for line in f]
        check(verbs.count("CONFIRM") == 1 and verbs.count("GETPIN") == 1, f"pinentry: {verbs}")
        check(agent_outcomes(w.d, t) == [(1, None)], f"{t}: the value typed through Review")
        wait_for(lambda: [nid] in bus.calls("CloseNotification"), timeout=10,
                 what="the reviewed ticket's notification closed")
    finally:
        if proc:
            stop(proc)
        bus.close()


def test_notify_expired(w):
    """a ticket that expires while its notification shows has the notification closed, and
    nothing else is done"""
    top = os.path.join(w.dir, "d-expire")
    os.makedirs(top, exist_ok=True)
    d = Daemon(top, policy=policy_text(top).replace("limits:\n",
                                                    "limits:\n  ticket_timeout: 2s\n"))
    d.start()
    bus = SessionBus(w)
    proc = None
    try:
        d.lockctl("marketplace", "add", "local", "--issuer", ISSUER, "--identity", PATTERN,
                  "--trusted-root", w.signer.root, check_rc=0)
        d.lockctl("plugin", "install", w.release("good-one"), "--marketplace", "local",
                  check_rc=0)
        bus.start_server("body actions")
        proc = subprocess.Popen([LOCKCTL, "--socket", d.console, "notify", "--terminal", "true"],
                                env=bus.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        time.sleep(1)
        h = grant(d, grant_file(w, "expiring.txt", b"x\n"), "--agent", str(AGENT_UID), "--label",
                  "expiring soon")["handle"]
        t = submit(d, [{"plugin": "test.good-one", "handle": h}])
        notify_for(bus, '"expiring soon"')
        nid = len(bus.calls("Notify"))
        wait_state(d, t, ("expired",), timeout=20)
        wait_for(lambda: [nid] in bus.calls("CloseNotification"), timeout=10,
                 what="the expired ticket's notification closed")
        check(proc.poll() is None, f"lockctl notify ended: {stop(proc)}")
    finally:
        if proc:
            stop(proc)
        bus.close()
        d.stop()


def test_notify_fallback_and_group(w):
    """a server without the actions capability gets notifications without actions that say to
    run lockctl console; many tickets at once make one grouped notification"""
    w.install("good-one")
    bus = SessionBus(w)
    proc = None
    try:
        bus.start_server("body")
        proc = start_notify(w, bus)
        time.sleep(1)
        plain_ticket(w, label="no buttons here")
        c = notify_for(bus, '"no buttons here"')[0]
        check(c[5] == [] and "To approve or deny it, run: lockctl console" in c[4],
              f"the fallback: {c}")
        bus.clear()
        handles = [grant(w.d, grant_file(w, f"burst-{i}.txt", b"burst\n"), "--agent",
                         str(AGENT_UID), "--label", f"burst {i}")["handle"] for i in range(6)]
        burst = submit_at_once(w.d, [[{"plugin": "test.good-one", "handle": h}]
                                     for h in handles])
        wait_for(lambda: bus.calls("Notify"), timeout=15, what="the burst's notification")
        time.sleep(1)  # and no other
        calls = bus.calls("Notify")
        check(len(calls) == 1 and "6 agents' questions wait for you" in calls[0][3] and
              "lockctl console" in calls[0][4], f"a burst: {calls}")
        for t in burst:
            w.d.console_call("io.lockd.Console.Deny", {"ticket": t})
        wait_for(lambda: len(bus.calls("CloseNotification")) == 1, timeout=10,
                 what="the group's notification closed")
    finally:
        if proc:
            stop(proc)
        bus.close()


# ---------------------------------------------------------------------------------------------
# lockctl agent run


def test_agent_run_no_display(w):
    """lockctl agent run passes the agent none of DISPLAY, WAYLAND_DISPLAY, XAUTHORITY and
    DBUS_SESSION_BUS_ADDRESS, even when the manager's environment has them, and refuses an
    Environment property that sets one"""
    names = ("DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS")
    values = [f"{n}=human-{n.lower()}" for n in names]
    from lockdtest import add_user, remove_user
    add_user(CONFINED_USER, CONFINED_UID)
    # The private manager of with-systemd gets the human's session in its environment, as a
    # graphical session's user manager does; the host's system manager is never changed.
    private = BUS != "system"
    try:
        if private:
            r = systemctl("set-environment", *values)
            check(r.returncode == 0, f"set-environment: {r.stderr}")
        env = dict(os.environ, **dict(v.split("=", 1) for v in values))
        r = subprocess.run([LOCKCTL, "--socket", w.d.console, "agent", "run", "--bus", BUS,
                            "--user", CONFINED_USER, "--", "/usr/bin/env"], capture_output=True,
                           text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)
        check(r.returncode == 0, f"agent run: {r.returncode} {r.stderr}")
        seen = [line for line in r.stdout.splitlines() if line.split("=", 1)[0] in names]
        check(seen == [] and "PATH=" in r.stdout, f"the agent's environment:\n{r.stdout}")
        for v in ("DISPLAY=:0", "TZ=UTC XAUTHORITY=/home/h/.Xauthority"):
            r = subprocess.run([LOCKCTL, "--socket", w.d.console, "agent", "run", "--bus", BUS,
                                "--user", CONFINED_USER, "--property", f"Environment={v}", "--",
                                "/usr/bin/env"], capture_output=True, text=True, timeout=60,
                               stdin=subprocess.DEVNULL)
            check(r.returncode == 2 and "an agent gets no" in r.stderr,
                  f"Environment={v}: {r.returncode} {r.stderr}")
    finally:
        if private:
            systemctl("unset-environment", *names)
        remove_user(CONFINED_USER)


def main():
    require_environment()
    tap = Tap()
    w = World()
    try:
        for t in (test_pinentry_standin, test_pinentry_cancel, test_pinentry_curses,
                  test_console_bell_clear_outcome, test_console_pinentry, test_notify_actions,
                  test_notify_review, test_notify_expired,
                  test_notify_fallback_and_group, test_agent_run_no_display):
            tap.run(t, w)
    finally:
        w.d.stop()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
