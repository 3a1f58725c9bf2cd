#!/usr/bin/env python3
# The engine's include-and-call graph: an edge from a.c to b.c when a.c includes "b.h" and b.c is
# one of the engine's files (daemon/*.c, daemon/api/*.c). Prints the graph's strongly connected
# components of more than one file; as a TAP test (--check), fails on any (a circle among the
# engine's files: ARCHITECTURE.md, Layout).
#
#   include-cycles.py [--check] SOURCE_ROOT
import argparse
import os
import re
import sys

FOLDERS = ("daemon", "daemon/api")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)\.h"', re.M)


def graph(root):
    files = {}
    for folder in FOLDERS:
        d = os.path.join(root, folder)
        for n in sorted(os.listdir(d)):
            if n.endswith(".c"):
                files[n[:-2]] = os.path.join(folder, n)
    edges = {}
    for stem, rel in files.items():
        text = open(os.path.join(root, rel), encoding="utf-8", errors="replace").read()
        targets = {os.path.basename(h) for h in INCLUDE.findall(text)}
        edges[rel] = sorted(files[t] for t in targets if t in files and t != stem)
    return edges


def components(edges):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(edges[w])))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    out.append(sorted(comp))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("root")
    a = ap.parse_args()
    edges = graph(a.root)
    circles = [c for c in components(edges) if len(c) > 1]
    if a.check:
        print(f"{'not ok' if circles else 'ok'} 1 - no circle among the engine's files")
        for c in circles:
            print(f"# {len(c)} files: {' '.join(c)}")
        print("1..1")
        return 1 if circles else 0
    for c in sorted(circles, key=len, reverse=True):
        print(f"{len(c)} files: {' '.join(c)}")
    print(f"{len(edges)} files, {sum(map(len, edges.values()))} edges, {len(circles)} circles",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
