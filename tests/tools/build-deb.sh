#!/bin/sh
# Builds the Debian packages from a clean copy of the source tree (what git tracks, or the tree
# without build directories) with Debian's default flags and without the package's own tests
# (the caller runs the real ones). The .debs, .changes and .buildinfo land in OUTDIR; the log in
# OUTDIR/log.
#
# With SHARED_DIR (the package and installed suites pass the build tree's deb/), the packages are
# built there once per source: the clean copy's contents (names, modes, bytes) are hashed, and a
# build of the same hash is copied instead of built again. The suites take SHARED_DIR/lock in
# turn, so the second one waits for the first one's build and then takes its packages.
# usage: build-deb.sh SOURCE_DIR OUTDIR [SHARED_DIR]
set -eu
src=$1
out=$2
shared=${3:-}

# The clean copy of the source tree in $1/lockd.
copy_tree() {
        mkdir -p "$1/lockd"
        if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
                (cd "$src" && git ls-files -z --cached --others --exclude-standard |
                        xargs -0 cp --parents -P -t "$1/lockd")
        else
                (cd "$src" && tar --exclude='./build*' --exclude=node_modules -cf - .) |
                        tar -xf - -C "$1/lockd"
        fi
}

# Builds in $1 (holding the clean copy at $1/lockd): the packages land in $1, the log in $2.
build() {
        (cd "$1/lockd" && DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -us -uc -b) \
                >"$2" 2>&1
}

mkdir -p "$out"
if [ -z "$shared" ]; then
        copy_tree "$out"
        build "$out" "$out/log"
        exit 0
fi

mkdir -p "$shared"
exec 9>"$shared/lock"
flock 9
rm -rf "$shared/next"
copy_tree "$shared/next"
key=$(cd "$shared/next/lockd" && tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
        -cf - . | sha256sum | cut -d' ' -f1)
if [ "$(cat "$shared/built/key" 2>/dev/null)" = "$key" ] &&
        ls "$shared"/built/lockd_*_amd64.deb >/dev/null 2>&1; then
        rm -rf "$shared/next"
        echo "# the packages of this source were built already ($shared/built)" >"$out/log"
        cat "$shared/built/log" >>"$out/log"
else
        rm -rf "$shared/built"
        if ! build "$shared/next" "$shared/next/log"; then
                cp "$shared/next/log" "$out/log"
                exit 1
        fi
        # The packages and the log are what is kept; the build tree goes.
        rm -rf "$shared/next/lockd"
        echo "$key" >"$shared/next/key"
        mv "$shared/next" "$shared/built"
        cp "$shared/built/log" "$out/log"
fi
cp "$shared"/built/*.deb "$shared"/built/*.changes "$shared"/built/*.buildinfo "$out/"
