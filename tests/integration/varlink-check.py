"""Calls lockd's methods through the Varlink reference implementation (python3-varlink) and
checks every answer, raw, against the interface lockd serves, as that implementation parses it.

usage: varlink-check.py SOCKET CALLS_JSON
CALLS_JSON: [{"method": "io.lockd.Agent.ListPlugins", "parameters": {...}, "more": false}, ...]
Prints one JSON object: {"results": [{"method", "ok", "error", "problems", "replies"}...],
"info": GetInfo's answer}. Run it with Debian's python3 (the module comes from
bookworm-backports) under the uid whose view is being checked."""

import copy
import json
import sys

import varlink
from varlink import scanner

SERVICE_ERRORS = {"InterfaceNotFound", "MethodNotFound", "MethodNotImplemented", "InvalidParameter",
                  "PermissionDenied", "ExpectedMore"}


def check(value, vtype, iface, path, problems):
    """Strict: every declared field of a struct present unless nullable, nothing undeclared."""
    if isinstance(vtype, scanner._Maybe):
        if value is not None:
            check(value, vtype.element_type, iface, path, problems)
        return
    if value is None:
        problems.append(f"{path}: null for a non-nullable type")
        return
    if isinstance(vtype, scanner._CustomType):
        member = iface.members.get(vtype.name)
        if member is None:
            problems.append(f"{path}: undeclared type {vtype.name}")
            return
        check(value, member.type, iface, path, problems)
    elif isinstance(vtype, scanner._Alias):
        check(value, vtype.type, iface, path, problems)
    elif isinstance(vtype, scanner._Object):
        pass
    elif isinstance(vtype, scanner._Dict):
        if not isinstance(value, dict):
            problems.append(f"{path}: not a map")
            return
        for k, v in value.items():
            check(v, vtype.element_type, iface, f"{path}[{k}]", problems)
    elif isinstance(vtype, scanner._Array):
        if not isinstance(value, list):
            problems.append(f"{path}: not an array")
            return
        for i, v in enumerate(value):
            check(v, vtype.element_type, iface, f"{path}[{i}]", problems)
    elif isinstance(vtype, scanner._Enum):
        if value not in list(vtype.fields):
            problems.append(f"{path}: {value!r} not in the enum")
    elif isinstance(vtype, scanner._Struct):
        if not isinstance(value, dict):
            problems.append(f"{path}: not an object")
            return
        for name, ftype in vtype.fields.items():
            if name not in value and not isinstance(ftype, scanner._Maybe):
                problems.append(f"{path}.{name}: missing")
            elif name in value:
                check(value[name], ftype, iface, f"{path}.{name}", problems)
        for name in value:
            if name not in vtype.fields:
                problems.append(f"{path}.{name}: not declared")
    elif isinstance(vtype, bool):
        if not isinstance(value, bool):
            problems.append(f"{path}: not a bool")
    elif isinstance(vtype, int):
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append(f"{path}: not an int")
    elif isinstance(vtype, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            problems.append(f"{path}: not a float")
    elif isinstance(vtype, str):
        if not isinstance(value, str):
            problems.append(f"{path}: not a string")
    else:
        problems.append(f"{path}: type {vtype!r} unknown to this check")


def main():
    path, calls = sys.argv[1], json.loads(sys.argv[2])
    client = varlink.Client(address="unix:" + path)
    out = {"results": []}
    with client.open("org.varlink.service") as service:
        out["info"] = service.GetInfo()
    for c in calls:
        name, member = c["method"].rsplit(".", 1)
        res = {"method": c["method"], "ok": False, "error": None, "problems": [], "replies": []}
        raw = []
        try:
            conn = client.open(name)
            # The reference client filters answers through the interface before handing them on:
            # the check looks at what lockd sent.
            inner = conn._next_varlink_message

            def recording(inner=inner):
                params, more = inner()
                raw.append(copy.deepcopy(params))
                return params, more

            conn._next_varlink_message = recording
            iface = client._interfaces[name]
            method = iface.get_method(member)
            fn = getattr(conn, member)
            params = c.get("parameters") or {}
            if c.get("more"):
                for _ in fn(**params, _more=True):
                    pass
            else:
                fn(**params)
            for i, r in enumerate(raw):
                check(r, method.out_type, iface, f"{c['method']}#{i}", res["problems"])
            res["ok"] = True
            res["replies"] = raw
        except varlink.VarlinkError as e:
            ename = e.error()
            res["error"] = ename
            res["parameters"] = e.parameters()
            iname, ename_short = ename.rsplit(".", 1)
            if iname == "org.varlink.service":
                if ename_short not in SERVICE_ERRORS:
                    res["problems"].append(f"{ename}: not an org.varlink.service error")
            elif iname != name:
                res["problems"].append(f"{ename}: declared in another interface than {name}")
            else:
                member_decl = client._interfaces[name].members.get(ename_short)
                if not isinstance(member_decl, scanner._Error):
                    res["problems"].append(f"{ename}: not declared in {name}")
                else:
                    check(e.parameters() or {}, member_decl.type, client._interfaces[name],
                          ename, res["problems"])
        except Exception as e:  # noqa: BLE001 - reported, the harness decides
            res["error"] = f"{type(e).__name__}: {e}"
            res["problems"].append(res["error"])
        out["results"].append(res)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
