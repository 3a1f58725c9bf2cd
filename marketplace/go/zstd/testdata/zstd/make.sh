#!/bin/sh
# Makes the zstd test vectors beside this script: synthetic inputs compressed by Debian's zstd at
# several levels, as a stream (no content size, no checksum), several frames in a row and after a
# skippable frame, each with the SHA-256 of what it decompresses to (zstd_test.go checks it).
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY'
import random, struct, sys
d = sys.argv[1]
r = random.Random(8878)
words = [b"archive", b"entry", b"path", b"zstd", b"frame", b"block", b"window", b"offset"]
with open(d + "/text", "wb") as f:
    f.write(b" ".join(r.choice(words) + b"%d" % r.randrange(100) for _ in range(3000)))
with open(d + "/bin", "wb") as f:
    for i in range(4000):
        f.write(struct.pack("<IHHd", i * 7919 % 65536, r.randrange(16), 3, r.random()))
with open(d + "/mixed", "wb") as f:
    f.write(b"\0" * 70000 + bytes(r.randrange(256) for _ in range(3000)))
PY
for f in text bin mixed; do
	zstd -q -f -1 "$tmp/$f" -o "$f.1.zst"
	zstd -q -f -19 "$tmp/$f" -o "$f.19.zst"
	zstd -q -f --no-check -3 <"$tmp/$f" >"$f.stream.zst"
	sha256sum <"$tmp/$f" | cut -d' ' -f1 >"$f.sha256"
done
cat text.1.zst bin.19.zst >multi.zst
cat "$tmp/text" "$tmp/bin" | sha256sum | cut -d' ' -f1 >multi.sha256
{ printf '\120\052\115\030\004\000\000\000skip'; cat text.1.zst; } >skippable.zst
cp text.sha256 skippable.sha256
