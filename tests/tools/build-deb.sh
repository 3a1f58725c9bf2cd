#!/bin/sh
# Builds the Debian packages from a clean copy of the source tree (what git tracks, or the tree
# without build directories) with Debian's default flags and without the package's own tests
# (the caller runs the real ones). The .debs and .changes land in OUTDIR; the log in OUTDIR/log.
# usage: build-deb.sh SOURCE_DIR OUTDIR
set -eu
src=$1
out=$2
mkdir -p "$out/lockd"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        (cd "$src" && git ls-files -z --cached --others --exclude-standard |
                xargs -0 cp --parents -P -t "$out/lockd")
else
        (cd "$src" && tar --exclude='./build*' --exclude=node_modules -cf - .) | tar -xf - -C "$out/lockd"
fi
cd "$out/lockd"
DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -us -uc -b >"$out/log" 2>&1
