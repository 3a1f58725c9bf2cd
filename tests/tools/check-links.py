#!/usr/bin/env python3
# The layout's promise, checked on the binaries (ARCHITECTURE.md, Layout): the engine contains no
# symbol of the spawner's or the sandbox's libraries, and the spawner (lockd, root) links no
# jansson, no OpenSSL, no libcurl and no Varlink. TAP on stdout.
#
#   check-links.py LOCKD_ENGINE LOCKD LIBLOCKD_SPAWNER.a LIBLOCKD_SANDBOX.a
import subprocess
import sys


def defined(path, archive=False):
    """The global symbols path defines (functions and data)."""
    out = subprocess.run(["nm", "--defined-only", "-g", path], capture_output=True, text=True,
                         check=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRtdbr":
            names.add(parts[2])
    return names


def all_symbols(path):
    """Every symbol path names, defined or not, local or not."""
    out = subprocess.run(["nm", "-a", path], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()}


def needed(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True,
                         check=True).stdout
    return [line.split("[")[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def main():
    engine, lockd, *root_libs = sys.argv[1:]
    n = 0
    failed = False

    def report(ok, what, detail=""):
        nonlocal n, failed
        n += 1
        print(f"{'ok' if ok else 'not ok'} {n} - {what}")
        if not ok:
            failed = True
            for line in detail.splitlines():
                print(f"# {line}")

    root = set()
    for lib in root_libs:
        root |= defined(lib, archive=True)
    # A check against an empty set would pass whatever the engine links.
    report(len(root) >= 50, f"the spawner's and the sandbox's libraries define {len(root)} symbols")
    leaked = sorted(root & all_symbols(engine))
    report(not leaked, "lockd-engine contains no symbol of the spawner or the sandbox",
           "in lockd-engine: " + " ".join(leaked[:40]))

    libs = needed(lockd)
    bad_libs = [l for l in libs if l.startswith(("libjansson", "libcrypto", "libssl", "libcurl"))]
    report(not bad_libs, "lockd links no jansson, OpenSSL or libcurl", " ".join(bad_libs))
    syms = all_symbols(lockd)
    bad = sorted(s for s in syms
                 if s.startswith(("json_", "EVP_", "OPENSSL_", "SSL_", "varlink_", "curl_",
                                  "toml_", "manifest_")))
    report(not bad, "lockd contains no jansson, OpenSSL, Varlink or TOML symbol",
           " ".join(bad[:40]))
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
