#!/usr/bin/env python3
"""The agent's tools against a real lockd under a real systemd manager: lockask (every command
and exit status), lockask mcp driven by the official MCP client (the TypeScript SDK) and by
hand, and Varlink as the specification says, checked with the reference implementation
(python3-varlink). Agents are other uids. TAP on stdout. Run through
tests/integration/with-systemd."""

import json
import os
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lockdtest import (AGENT_UID, LOCKCTL, Failed, Tap, Varlink, World, call, check,  # noqa: E402
                       grant, grant_file, require_environment, wait_for)

LOCKASK = os.environ.get("LOCKASK", "")
HERE = os.path.dirname(os.path.abspath(__file__))
MCP_DIR = os.path.join(HERE, "mcp")
# Debian's python3, which has the Varlink reference implementation (python3-varlink).
DEBIAN_PYTHON = "/usr/bin/python3"


def as_agent(cmd, uid=AGENT_UID):
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *cmd]


def lockask(w, *args, rc=None, uid=AGENT_UID, socket_path=None, input=None, timeout=60):
    cmd = as_agent([LOCKASK, "--socket", socket_path or w.d.agent, *args], uid)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input)
    if rc is not None and r.returncode != rc:
        raise Failed(f"lockask {' '.join(args)}: exit {r.returncode}, want {rc}:\n"
                     f"stdout: {r.stdout}\nstderr: {r.stderr}")
    return r


def ticket_state(w, t):
    r = w.d.console_call("io.lockd.Console.GetTicket", {"ticket": t})
    check("parameters" in r, f"GetTicket: {r}")
    return r["parameters"]["ticket"]["state"]


class Fixture:
    """Plugins and grants the tests share: an auto grant with room in its budget and one that
    needs the human's approval."""

    def __init__(self, w):
        self.one = w.install("good-one")
        self.zero = w.install("good-zero")
        self.inputs = w.install("good-inputs")
        self.fail = w.install("fail")
        self.auto = grant(w.d, grant_file(w, "tools-auto.txt", b"content for the tools"), "--agent",
                          str(AGENT_UID), "--auto", "--budget", "8", "--label",
                          "auto file")["handle"]
        self.manual = grant(w.d, grant_file(w, "tools-manual.txt", b"needs approval"), "--agent",
                            str(AGENT_UID), "--budget", "8")["handle"]


def test_lockask_lists(w, fx):
    """lockask files and questions, for people and with --json (before or after the command)"""
    r = lockask(w, "files", rc=0)
    check(fx.auto in r.stdout and "auto file" in r.stdout and "BUDGET" in r.stdout, r.stdout)
    files = json.loads(lockask(w, "files", "--json", rc=0).stdout)["files"]
    mine = {f["handle"]: f for f in files}
    check(mine[fx.auto]["label"] == "auto file" and mine[fx.auto]["budget_left"] >= 1 and
          fx.manual in mine, f"files --json: {files}")
    check(json.loads(lockask(w, "--json", "files", rc=0).stdout)["files"] == files,
          "--json before the command")
    r = lockask(w, "questions", rc=0)
    check(fx.inputs in r.stdout and "question:" in r.stdout and "input needle" in r.stdout,
          r.stdout)
    qs = {q["name"]: q for q in json.loads(lockask(w, "questions", "--json", rc=0).stdout)
          ["questions"]}
    check(qs[fx.inputs]["inputs"][0]["name"] == "needle" and
          set(qs[fx.one]) == {"name", "version", "protocol", "question", "one", "zero",
                              "accepts", "inputs"}, f"questions --json: {qs}")


def test_lockask_ask_answers(w, fx):
    """lockask ask: 1 and 0 exit 0, plugin_error exits 1, --json carries the ticket"""
    r = lockask(w, "ask", fx.auto, fx.one, rc=0)
    check(r.stdout == "1\n", f"stdout {r.stdout!r}")
    r = lockask(w, "ask", fx.auto, fx.zero, rc=0)
    check(r.stdout == "0\n", f"stdout {r.stdout!r}")
    r = lockask(w, "ask", fx.auto, fx.fail, rc=1)
    check(r.stdout == "plugin_error\n", f"stdout {r.stdout!r}")
    # The same through liblockd-agent, from a C program (examples/agent/ask-one.c).
    r = subprocess.run(as_agent([os.environ["LOCKD_EXAMPLE_ASK_ONE"], w.d.agent, fx.auto,
                                 fx.zero]), capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and r.stdout == "0\n", f"ask-one: {r.returncode} {r.stdout!r}")
    r = subprocess.run(as_agent([os.environ["LOCKD_EXAMPLE_ASK_ONE"], w.d.agent, "h-nope",
                                 fx.zero]), capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and "UnknownHandle" in r.stderr, f"ask-one: {r.stderr}")
    j = json.loads(lockask(w, "ask", fx.auto, fx.one, "--json", rc=0).stdout)
    check(j["state"] == "done" and j["final"] is True and
          j["outcomes"] == [{"step": 0, "result": 1, "error": None}] and j["ticket"], f"{j}")


def test_lockask_refusals(w, fx):
    """refusals and usage errors exit 2, an unreachable lockd 3; nothing is approved"""
    r = lockask(w, "ask", fx.auto, fx.inputs, "--input", "needle=hello", rc=2)
    check("LiteralInput" in r.stderr and "placeholder" in r.stderr and r.stdout == "",
          f"literal: {r.stderr}")
    j = json.loads(lockask(w, "ask", fx.auto, fx.inputs, "--input", "needle=hello", "--json",
                           rc=2).stdout)
    check(j["error"] == "LiteralInput" and j["parameters"] == {"step": 0, "input": "needle"},
          f"literal --json: {j}")
    r = lockask(w, "ask", fx.auto, fx.inputs, rc=2)
    check("MissingInput" in r.stderr, r.stderr)
    r = lockask(w, "ask", "h-nope", fx.one, rc=2)
    check("UnknownHandle" in r.stderr, r.stderr)
    r = lockask(w, "ask", fx.auto, "test.nope", rc=2)
    check("UnknownPlugin" in r.stderr, r.stderr)
    for args in (["ask"], ["ask", fx.auto], ["ask", fx.auto, fx.one, "--timeout", "soon"],
                 ["ask", fx.auto, fx.one, "--input", "novalue"], ["bogus"], [],
                 ["wait"], ["cancel"], ["files", "extra"], ["ask", "--plan", "/nonexistent"],
                 ["ask", "--plan", "-", fx.auto]):
        lockask(w, *args, rc=2)
    for cmd in ("files", "questions", "ask", "wait", "cancel", "mcp"):
        r = lockask(w, cmd, "--help", rc=0)
        check(r.stdout.startswith("usage: lockask " + cmd), f"{cmd} --help: {r.stdout}")
    lockask(w, "-h", rc=0)
    missing = os.path.join(w.dir, "no-such.sock")
    for args in (["files"], ["questions"], ["ask", fx.auto, fx.one], ["wait", "t"],
                 ["cancel", "t"]):
        r = lockask(w, *args, socket_path=missing, rc=3)
        check("cannot reach lockd" in r.stderr, f"{args}: {r.stderr}")


def test_lockask_plan(w, fx):
    """a plan of three steps prints one line per step, in order"""
    plan = [{"plugin": fx.one, "handle": fx.auto}, {"plugin": fx.zero, "handle": fx.auto},
            {"plugin": fx.fail, "handle": fx.auto}]
    path = os.path.join(w.dir, "plan.json")
    with open(path, "w") as f:
        json.dump({"steps": plan}, f)
    os.chmod(path, 0o644)
    r = lockask(w, "ask", "--plan", path, rc=1)
    check(r.stdout == "1\n0\nplugin_error\n", f"plan: {r.stdout!r}")
    r = lockask(w, "ask", "--plan", "-", input=json.dumps(plan[:2]), rc=0)
    check(r.stdout == "1\n0\n", f"plan on stdin: {r.stdout!r}")
    r = lockask(w, "ask", "--plan", "-", input='[{"plugin": 1}]', rc=2)
    check("step 0" in r.stderr, r.stderr)


def test_lockask_wait_cancel(w, fx):
    """--no-wait, wait with a timeout, wait after the approval, cancel and its refusals"""
    t = lockask(w, "ask", fx.manual, fx.one, "--no-wait", rc=0).stdout.strip()
    check(re.fullmatch(r"[A-Za-z0-9_-]+", t) and ticket_state(w, t) == "pending", f"ticket {t!r}")
    started = time.monotonic()
    r = lockask(w, "wait", t, "--timeout", "300ms", rc=1)
    check("still pending" in r.stderr and time.monotonic() - started < 10, r.stderr)
    r = lockask(w, "wait", t, "--timeout", "300ms", "--json", rc=1)
    j = json.loads(r.stdout)
    check(j["state"] == "pending" and j["timed_out"] is True, f"{j}")
    # --json: the steps shown to the human go to stderr, one object to stdout.
    r = w.d.lockctl("approve", t, "--yes", "--json", check_rc=0)
    j = json.loads(r.stdout)
    check(j["ticket"] == t and j["state"] in ("running", "done") and "step 0" in r.stderr,
          f"approve --json: {r.stdout!r} {r.stderr!r}")
    r = lockask(w, "wait", t, rc=0)
    check(r.stdout == "1\n", f"after approval: {r.stdout!r}")
    t2 = json.loads(lockask(w, "ask", fx.manual, fx.zero, "--no-wait", "--json",
                            rc=0).stdout)["ticket"]
    lockask(w, "cancel", t2, rc=0)
    check(ticket_state(w, t2) == "cancelled", "cancel did not cancel")
    r = lockask(w, "wait", t2, rc=1)
    check(r.stdout == "cancelled\n", f"wait on a cancelled ticket: {r.stdout!r}")
    r = lockask(w, "cancel", t2, rc=2)
    check("TicketNotPending" in r.stderr, r.stderr)
    r = lockask(w, "cancel", "nosuchticket", rc=2)
    check("UnknownTicket" in r.stderr, r.stderr)
    # A ticket that waits while the human approves it: ask says it waits, blocks, then prints
    # the answer. The human approves once lockask said so: the console may list the ticket as
    # pending before its Submit is answered (the answer waits for the durable record), and an
    # approval before that answer leaves nothing to wait for.
    p = subprocess.Popen(as_agent([LOCKASK, "--socket", w.d.agent, "ask", fx.manual, fx.zero]),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        said = p.stderr.readline()
        check("waits for the human" in said, f"ask said: {said!r}")
        t3 = re.search(r"ticket (\S+) waits", said).group(1)
        w.d.lockctl("approve", t3, "--yes", check_rc=0)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    check(p.returncode == 0 and out == "0\n", f"ask while approved: {p.returncode} {out!r} "
          f"{said!r}{err!r}")


def mcp_env(w, fx):
    return dict(os.environ, AUTO_HANDLE=fx.auto, APPROVE_HANDLE=fx.manual, PLUGIN_ONE=fx.one,
                PLUGIN_ZERO=fx.zero, PLUGIN_INPUTS=fx.inputs, LOCKCTL=LOCKCTL,
                CONSOLE_SOCKET=w.d.console)


def test_mcp_sdk(w, fx):
    """the official MCP client: tools, an auto answer, a refused literal, progress then the
    answer after approval, a cancel that cancels the ticket"""
    script = os.path.join(MCP_DIR, "mcp-client.mjs")
    check(os.path.isdir(os.path.join(MCP_DIR, "node_modules", "@modelcontextprotocol", "sdk")),
          "the MCP SDK is not installed (scripts/deps installs it)")
    r = subprocess.run(["node", script, *as_agent([LOCKASK, "--socket", w.d.agent, "mcp"])],
                       capture_output=True, text=True, timeout=300, env=mcp_env(w, fx))
    check(r.returncode == 0, f"node client failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    names = [t["name"] for t in out["tools"]]
    check(names == ["list_files", "list_questions", "ask", "ticket_status", "cancel"],
          f"tools: {names}")
    ask = next(t for t in out["tools"] if t["name"] == "ask")
    check("${" in ask["description"] and "literal" in ask["description"].lower() and
          "budget" in ask["description"] and "plugin_error" in ask["description"],
          "ask's description does not tell the rules")
    check(out["server"]["name"] == "lockask", f"server: {out['server']}")
    check(not out["auto"]["isError"] and out["auto"]["structured"]["outcomes"] ==
          [{"step": 0, "result": 1, "error": None}] and "step 0: 1" in out["auto"]["text"],
          f"auto: {out['auto']}")
    check(out["literal"]["isError"] and "LiteralInput" in out["literal"]["text"] and
          out["literal"]["structured"]["error"] == "LiteralInput", f"literal: {out['literal']}")
    a = out["approval"]
    check(a["approved"] and len(a["progress"]) >= 1 and not a["isError"] and
          a["structured"]["state"] == "done" and
          a["structured"]["outcomes"] == [{"step": 0, "result": 1, "error": None}],
          f"approval: {a}")
    progress = [p["progress"] for p in a["progress"]]
    check(progress == sorted(set(progress)), f"progress does not increase: {progress}")
    c = out["cancel"]
    check(c["ticket"] and "error" in c, f"cancel: {c}")
    wait_for(lambda: ticket_state(w, c["ticket"]) == "cancelled", timeout=10,
             what="the cancelled call's ticket to be cancelled")
    check(out["ping"] == {} and fx.auto in json.dumps(out["files"]), f"after: {out['files']}")


def mcp_raw(w, lines, wait=0.0):
    """Sends lines to lockask mcp by hand, closes stdin, returns the messages it wrote."""
    p = subprocess.Popen(as_agent([LOCKASK, "--socket", w.d.agent, "mcp"]),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    out, err = p.communicate("".join(line + "\n" for line in lines), timeout=60)
    check(p.returncode == 0, f"lockask mcp exited {p.returncode}: {err}")
    return [json.loads(x) for x in out.splitlines() if x.strip()]


INIT = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t",
                                                                         "version": "1"}}})


def test_mcp_protocol_errors(w, fx):
    """malformed lines, a request before initialize, unknown methods and tools: the protocol's
    errors, and the server keeps running"""
    msgs = mcp_raw(w, [
        "{not json",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
        INIT,
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "no/such/method"}),
        json.dumps([1, 2]),
        json.dumps({"jsonrpc": "1.0", "id": 4, "method": "ping"}),
        json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                    "params": {"name": "no_such_tool", "arguments": {}}}),
        json.dumps({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                    "params": {"name": "ask", "arguments": {"handle": 1}}}),
        json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/unknown"}),
        json.dumps({"jsonrpc": "2.0", "id": 8, "method": "initialize", "params": {}}),
        json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                    "params": {"name": "ask", "arguments": {"handle": fx.auto,
                                                            "plugin": fx.one}}}),
    ])
    by_id = {m.get("id"): m for m in msgs if m.get("id") is not None}
    nulls = [m for m in msgs if m.get("id") is None]
    check([m["error"]["code"] for m in nulls] == [-32700, -32600], f"id-less errors: {nulls}")
    check(by_id[1]["error"]["code"] == -32002, f"before initialize: {by_id[1]}")
    check(by_id[2]["result"] == {}, f"ping before initialize: {by_id[2]}")
    check(by_id[0]["result"]["protocolVersion"] == "2025-06-18" and
          by_id[0]["result"]["capabilities"]["tools"] is not None, f"initialize: {by_id[0]}")
    check(by_id[3]["error"]["code"] == -32601, f"unknown method: {by_id[3]}")
    check(by_id[4]["error"]["code"] == -32600, f"jsonrpc 1.0: {by_id[4]}")
    check(by_id[5]["error"]["code"] == -32602, f"unknown tool: {by_id[5]}")
    check(by_id[6]["result"]["isError"] is True and
          by_id[6]["result"]["structuredContent"]["error"] == "InvalidArguments",
          f"bad arguments: {by_id[6]}")
    check(len(by_id[7]["result"]["tools"]) == 5, f"tools/list: {by_id[7]}")
    check(by_id[8]["error"]["code"] == -32600, f"a second initialize: {by_id[8]}")
    # stdin closed right after the call: it still gets its answer before lockask exits.
    check(by_id[9]["result"]["structuredContent"]["outcomes"][0]["result"] == 1,
          f"a call in flight at the end of stdin: {by_id[9]}")
    check(not any(m.get("method") for m in msgs), "a notification was answered")


def test_varlink_reference(w, fx):
    """the reference implementation calls every agent and console method; each answer and
    error is declared in the interface lockd serves"""
    check(os.path.exists(DEBIAN_PYTHON), "no Debian python3")
    r = subprocess.run([DEBIAN_PYTHON, "-c", "import varlink"], capture_output=True)
    check(r.returncode == 0, "python3-varlink is not installed (scripts/deps installs it)")
    t = lockask(w, "ask", fx.manual, fx.one, "--no-wait", rc=0).stdout.strip()
    t_cancel = lockask(w, "ask", fx.manual, fx.one, "--no-wait", rc=0).stdout.strip()
    agent_calls = [
        {"method": "io.lockd.Agent.ListPlugins"},
        {"method": "io.lockd.Agent.ListHandles"},
        {"method": "io.lockd.Agent.Submit",
         "parameters": {"steps": [{"plugin": fx.one, "handle": fx.auto}]}},
        {"method": "io.lockd.Agent.Submit",
         "parameters": {"steps": [{"plugin": fx.inputs, "handle": fx.auto,
                                   "inputs": {"needle": "literal"}}]}},
        {"method": "io.lockd.Agent.Wait", "parameters": {"ticket": t}},
        {"method": "io.lockd.Agent.Wait", "parameters": {"ticket": "nosuch"}},
        {"method": "io.lockd.Agent.Cancel", "parameters": {"ticket": t_cancel}},
        {"method": "io.lockd.Agent.Cancel", "parameters": {"ticket": t_cancel}},
        {"method": "io.lockd.Console.Status"},
    ]
    r = subprocess.run(as_agent([DEBIAN_PYTHON, os.path.join(HERE, "varlink-check.py"),
                                 w.d.agent, json.dumps(agent_calls)]),
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"varlink-check as the agent: {r.stderr}")
    out = json.loads(r.stdout)
    check(out["info"]["interfaces"] == ["org.varlink.service", "io.lockd.Agent"] and
          out["info"]["url"] != "https://varlink.org" and out["info"]["url"].startswith("http"),
          f"GetInfo as the agent: {out['info']}")
    res = out["results"]
    for x in res:
        check(not x["problems"], f"{x['method']}: {x['problems']}")
    check([x["error"] for x in res] == [
        None, None, None, "io.lockd.Agent.LiteralInput", None, "io.lockd.Agent.UnknownTicket",
        None, "io.lockd.Agent.TicketNotPending", "org.varlink.service.InterfaceNotFound"],
        f"agent errors: {[x['error'] for x in res]}")

    w.d.lockctl("approve", t, "--yes", check_rc=0)
    console_calls = [
        {"method": "io.lockd.Console.Status"},
        {"method": "io.lockd.Console.ListPlugins"},
        {"method": "io.lockd.Console.InstallPlugin", "parameters": {"manifest_fd": 0,
                                                                     "binary_fd": 1}},
        {"method": "io.lockd.Console.RemovePlugin", "parameters": {"name": "test.nope"}},
        {"method": "io.lockd.Console.AddMarketplace", "parameters": {
            "name": "m2", "issuer": "https://x", "identity": "^x$", "trusted_root_fd": 0}},
        {"method": "io.lockd.Console.ListMarketplaces"},
        {"method": "io.lockd.Console.RemoveMarketplace", "parameters": {"name": "nope"}},
        {"method": "io.lockd.Console.VerifyIndex", "parameters": {
            "marketplace": "nope", "index_fd": 0, "index_bundle_fd": 1}},
        {"method": "io.lockd.Console.TestPlugin", "parameters": {"name": fx.one,
                                                                 "file_fd": 0}},
        {"method": "io.lockd.Console.Grant", "parameters": {"file_fd": 0,
                                                            "agent": str(AGENT_UID)}},
        {"method": "io.lockd.Console.Revoke", "parameters": {"handle": "h-nope"}},
        {"method": "io.lockd.Console.ListHandles"},
        {"method": "io.lockd.Console.ListTickets"},
        {"method": "io.lockd.Console.GetTicket", "parameters": {"ticket": t}},
        {"method": "io.lockd.Console.Deny", "parameters": {"ticket": t}},
        {"method": "io.lockd.Console.Approve", "parameters": {"ticket": "nosuch"}},
        {"method": "io.lockd.Console.Results", "parameters": {"ticket": t}},
        {"method": "io.lockd.Console.EndSession"},
        {"method": "io.lockd.Console.ListBudgets"},
        {"method": "io.lockd.Console.ResetBudget", "parameters": {"sha256": "0" * 64}},
    ]
    described = subprocess.run(
        [DEBIAN_PYTHON, "-c", "import sys,varlink\n"
         "c=varlink.Client(address='unix:'+sys.argv[1])\n"
         "c.open('io.lockd.Console')\n"
         "print(' '.join(m for m,v in c._interfaces['io.lockd.Console'].members.items() "
         "if type(v).__name__=='_Method'))", w.d.console],
        capture_output=True, text=True, timeout=60)
    methods = set(described.stdout.split())
    covered = {c["method"].rsplit(".", 1)[1] for c in console_calls} | {"WatchTickets"}
    check(methods and methods <= covered, f"console methods not called: {methods - covered}")
    r = subprocess.run([DEBIAN_PYTHON, os.path.join(HERE, "varlink-check.py"), w.d.console,
                        json.dumps(console_calls)], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"varlink-check as the console: {r.stderr}")
    out = json.loads(r.stdout)
    for x in out["results"]:
        check(not x["problems"], f"{x['method']}: {x['problems']} {x.get('parameters')}")
    check("io.lockd.Console" in out["info"]["interfaces"] and
          "io.lockd.Agent" not in out["info"]["interfaces"], f"console GetInfo: {out['info']}")
    # WatchTickets streams until the peer goes: its first answer, checked the same way.
    v = Varlink(w.d.console)
    try:
        v.send_raw(json.dumps({"method": "io.lockd.Console.WatchTickets", "more": True}).encode()
                   + b"\0")
        first = v.read_message()
        check("parameters" in first and first.get("continues") is True, f"WatchTickets: {first}")
    finally:
        v.close()


def raw_calls(path, messages, fds=(), read=None):
    """Sends raw messages on one connection; reads `read` answers (default one per message)."""
    v = Varlink(path, timeout=5)
    try:
        for i, m in enumerate(messages):
            data = (m if isinstance(m, bytes) else json.dumps(m).encode()) + b"\0"
            v.send_raw(data, fds if i == 0 else ())
        n = len(messages) if read is None else read
        return [v.read_message() for _ in range(n)], v
    except Exception:
        v.close()
        raise


def agent_raw(w, messages, fds=(), read=None):
    """raw_calls as the agent uid: a small client run through setpriv."""
    prog = ("import json,socket,sys,array\n"
            "s=socket.socket(socket.AF_UNIX);s.settimeout(5);s.connect(sys.argv[1])\n"
            "msgs=json.loads(sys.argv[2]);fd=int(sys.argv[3]);n=int(sys.argv[4])\n"
            "for i,m in enumerate(msgs):\n"
            "  b=json.dumps(m).encode()+b'\\0'\n"
            "  if i==0 and fd>=0: socket.send_fds(s,[b],[fd])\n"
            "  else: s.sendall(b)\n"
            "buf=b'';out=[]\n"
            "try:\n"
            "  while len(out)<n:\n"
            "    while b'\\0' not in buf:\n"
            "      c=s.recv(65536)\n"
            "      if not c: raise EOFError\n"
            "      buf+=c\n"
            "    m,buf=buf.split(b'\\0',1);out.append(json.loads(m))\n"
            "except (OSError,EOFError): out.append('closed')\n"
            "print(json.dumps(out))\n")
    fd = os.open("/dev/null", os.O_RDONLY) if fds else -1
    try:
        r = subprocess.run(as_agent([sys.executable, "-c", prog, w.d.agent, json.dumps(messages),
                                     str(fd), str(len(messages) if read is None else read)]),
                           capture_output=True, text=True, timeout=60,
                           pass_fds=(fd,) if fd >= 0 else ())
    finally:
        if fd >= 0:
            os.close(fd)
    check(r.returncode == 0, f"agent client: {r.stderr}")
    return json.loads(r.stdout)


def test_varlink_spec(w, fx):
    """more on a plain method, upgrade, null parameters, any method spelling, oneway, GetInfo's
    url, fds on the agent socket"""
    ping = {"method": "io.lockd.Agent.ListPlugins"}
    out = agent_raw(w, [
        {"method": "io.lockd.Agent.ListPlugins", "more": True},
        {"method": "io.lockd.Agent.ListPlugins", "upgrade": False},
        {"method": "io.lockd.Agent.ListPlugins", "upgrade": True},
        {"method": "io.lockd.Agent.ListPlugins", "parameters": None},
        {"method": "io.lockd.Agent.listPlugins"},
        {"method": "io.lockd.Agent.LISTPLUGINS"},
        {"method": "io.lockd.agent.ListPlugins"},
        {"method": "io.lockd.Console.Status"},
        {"method": "io.lockd.Agent.Wait", "oneway": True, "parameters": {"bogus": 1}},
        {"method": "io.lockd.Agent.Nope", "oneway": True},
        {"method": "io.lockd.Agent.ListPlugins", "oneway": True, "more": True},
        {"method": "org.varlink.service.GetInfo"},
        ping,
    ], read=10)
    check("parameters" in out[0] and "plugins" in out[0]["parameters"] and
          "continues" not in out[0], f"more on a plain method: {out[0]}")
    check("plugins" in out[1].get("parameters", {}), f"upgrade false: {out[1]}")
    check(out[2].get("error") == "org.varlink.service.InvalidParameter" and
          out[2]["parameters"] == {"parameter": "upgrade"}, f"upgrade true: {out[2]}")
    check("plugins" in out[3].get("parameters", {}), f"parameters null: {out[3]}")
    check(out[4].get("error") == "org.varlink.service.MethodNotFound" and
          out[5].get("error") == "org.varlink.service.MethodNotFound", f"{out[4]} {out[5]}")
    check(out[6].get("error") == "org.varlink.service.InterfaceNotFound" and
          out[7] == {"error": "org.varlink.service.InterfaceNotFound",
                     "parameters": {"interface": "io.lockd.Console"}}, f"{out[6]} {out[7]}")
    # The three oneway calls are not answered: GetInfo's answer comes next, then the last call's.
    check(out[8]["parameters"]["url"] not in ("", "https://varlink.org") and
          "plugins" in out[9]["parameters"], f"after the oneway calls: {out[8:]}")
    out = agent_raw(w, [{"method": "io.lockd.Agent.ListPlugins"}, ping], fds=True)
    check(out[0].get("error") == "io.lockd.Agent.InvalidRequest" and
          "file descriptors" in out[0]["parameters"]["reason"] and
          "plugins" in out[1]["parameters"], f"an fd on the agent socket: {out}")


def main():
    require_environment()
    check(os.access(LOCKASK, os.X_OK), "LOCKASK names no program")
    tap = Tap()
    w = World()
    try:
        fx = Fixture(w)
        for t in (test_lockask_lists, test_lockask_ask_answers, test_lockask_refusals,
                  test_lockask_plan, test_lockask_wait_cancel, test_mcp_sdk,
                  test_mcp_protocol_errors, test_varlink_reference, test_varlink_spec):
            tap.run(t, w, fx)
    finally:
        w.d.stop()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
