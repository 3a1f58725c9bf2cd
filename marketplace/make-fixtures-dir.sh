#!/bin/sh
# Runs a plugin's make-fixtures.sh into a fresh directory OUT (fixtures too big or awkward to
# commit, made from Debian's tools): it writes OUT/one, OUT/zero and OUT/error as it needs.
# usage: make-fixtures-dir.sh MAKE_FIXTURES_SH OUT
set -eu
out=$2
rm -rf "$out" "$out.tmp"
mkdir -p "$out.tmp"
sh "$1" "$out.tmp"
mv "$out.tmp" "$out"
