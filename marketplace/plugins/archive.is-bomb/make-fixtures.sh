#!/bin/sh
# Makes archive.is-bomb's fixtures too big to commit, at build time, into the directory $1
# (one/, zero/): streams of zeros past 1 GiB compressed by Debian's gzip, xz, zstd and zip, and
# the two sides of the 1 GiB bound for a file too large for the ratio (over 10 MiB, where 100
# times its size is above 1 GiB). Random bytes make those files large; their exact content does
# not matter.
# usage: make-fixtures.sh DIR
set -eu
out=$1
mkdir -p "$out/one" "$out/zero"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 2 GiB of zeros: the bomb the definition names, in each compressor.
head -c 2G /dev/zero | gzip -9 -n >"$out/one/zeros-2g.gz"
head -c 2G /dev/zero | zstd -q -19 -T1 >"$out/one/zeros-2g.zst"
head -c 2G /dev/zero | xz -6 -T1 >"$out/one/zeros-2g.xz"
head -c 2G /dev/zero | zip -q -9 - - >"$out/one/zeros-2g.zip"

# 20 MiB of random bytes, then zeros: 1.1 GiB in all passes 1 GiB (at 1.1 GiB / 21 MiB, far from
# 100 times); 0.9 GiB in all stays under it.
head -c 20M /dev/urandom >"$tmp/noise"
{ cat "$tmp/noise"; head -c 1160M /dev/zero; } | gzip -1 -n >"$out/one/noise-then-1.1g-zeros.gz"
{ cat "$tmp/noise"; head -c 900M /dev/zero; } | gzip -1 -n >"$out/zero/noise-then-0.9g-zeros.gz"
