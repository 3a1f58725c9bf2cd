#!/usr/bin/env python3
# Lists the C functions of the tree's own code (not tests, fuzzers or fixtures) longer than a
# limit, counted from the line that names the function to its closing brace; with --check, a TAP
# test that fails on any function over the limit (ARCHITECTURE.md, Layout: no function over 120
# lines).
#
#   function-lengths.py [--check] [--limit N] [--over N] SOURCE_ROOT
import argparse
import os
import re
import sys

FOLDERS = ("common", "policy", "daemon", "client", "examples", "marketplace/plugins")
SKIP = ("/tests/", "/fuzz/", "/testdata/")
START = re.compile(r"^[A-Za-z_][\w \*]*?\b(\w+)\s*\(")


def functions(path):
    """(name, first line, length) of each function defined at file scope in path."""
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    # An attribute before the declaration is not the function's name.
    lines = [re.sub(r"^__attribute__\(\((?:[^()]|\([^()]*\))*\)\)\s*", "", line) for line in lines]
    i = 0
    while i < len(lines):
        m = START.match(lines[i])
        if not m or lines[i].rstrip().endswith(";"):
            i += 1
            continue
        # The signature may span lines; the body opens with "{" at the end of one of them.
        j = i
        while j < len(lines) and not lines[j].rstrip().endswith("{"):
            if lines[j].rstrip().endswith(";") or (j > i and lines[j] == ""):
                break
            j += 1
        if j >= len(lines) or not lines[j].rstrip().endswith("{") or "=" in lines[i].split("(")[0]:
            i += 1
            continue
        k = j + 1
        while k < len(lines) and lines[k] != "}":
            k += 1
        yield m.group(1), i + 1, k - i + 1
        i = k + 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--limit", type=int, default=120)
    ap.add_argument("--over", type=int, default=None, help="list functions over N lines")
    ap.add_argument("root")
    a = ap.parse_args()
    over = a.over if a.over is not None else a.limit
    found = []
    for folder in FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(a.root, folder)):
            if any(s in dirpath + "/" for s in SKIP):
                continue
            for n in sorted(names):
                if n.endswith(".c"):
                    p = os.path.join(dirpath, n)
                    for name, line, length in functions(p):
                        if length > over:
                            found.append((length, os.path.relpath(p, a.root), line, name))
    found.sort(reverse=True)
    if a.check:
        bad = [f for f in found if f[0] > a.limit]
        print(f"{'not ok' if bad else 'ok'} 1 - no function over {a.limit} lines")
        for length, p, line, name in bad:
            print(f"# {p}:{line} {name}: {length} lines")
        print("1..1")
        return 1 if bad else 0
    for length, p, line, name in found:
        print(f"{length:4d} {p}:{line} {name}")
    print(f"{len(found)} functions over {over} lines", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
