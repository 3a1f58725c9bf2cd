#!/usr/bin/env python3
"""Prints the ninja targets the chosen tests of a configured build directory need (their programs
and what they depend on), as `meson test` would rebuild them, so that scripts/test can build them
on their own (at a lower priority) before running the tests with --no-rebuild.

usage: test-targets.py BUILDDIR [--suite SUITE]... [TEST_NAME]..."""

import json
import os
import subprocess
import sys


def introspect(builddir, what):
    out = subprocess.run(["meson", "introspect", builddir, what], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)


def main():
    builddir, args = sys.argv[1], sys.argv[2:]
    suites, names = set(), set()
    while args:
        a = args.pop(0)
        if a == "--suite":
            suites.add(args.pop(0))
        else:
            names.add(a)
    files = {t["id"]: t["filename"] for t in introspect(builddir, "--targets")}
    root = os.path.abspath(builddir)
    wanted = set()
    for t in introspect(builddir, "--tests"):
        # A suite is "project:suite" in the introspection, as meson test names it.
        if t["name"] in names or any(s.split(":")[-1] in suites for s in t["suite"]):
            for dep in t["depends"]:
                for f in files.get(dep, []):
                    wanted.add(os.path.relpath(f, root))
    print(" ".join(sorted(wanted)))


if __name__ == "__main__":
    main()
