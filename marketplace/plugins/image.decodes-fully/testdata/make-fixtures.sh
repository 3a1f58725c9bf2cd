#!/bin/sh
# How image.decodes-fully's committed fixtures were made, with Debian's imagemagick and python3
# for the damaged and hostile ones. Run from the plugin's directory.
set -eu
one=fixtures/one zero=fixtures/zero err=fixtures/error
mkdir -p $one $zero $err
c() { convert -seed 7 -size 48x32 plasma:fractal "$@"; }
# Answer 1: each format whole, in its variants.
c -quality 85 "$one/baseline.jpg"
c -interlace JPEG "$one/progressive.jpg"
c -colorspace Gray "$one/grayscale.jpg"
c -colorspace CMYK "$one/cmyk.jpg"
c -sampling-factor 4:4:4 "$one/sampling-444.jpg"
c -define jpeg:restart-interval=1 "$one/restart-markers.jpg"
c -define png:color-type=2 "$one/rgb.png"
c -colors 16 -define png:color-type=3 "$one/palette.png"
c -interlace PNG "$one/interlaced.png"
c -depth 16 "$one/16-bit.png"
c -monochrome "$one/1-bit-gray.png"
c "$one/single.gif"
c -interlace GIF "$one/interlaced.gif"
convert -delay 10 -size 32x24 xc:red xc:green xc:blue -loop 0 "$one/animated.gif"
c "GIF87:$one/gif87a.gif"
python3 - <<'PY'
import struct, zlib
def chunk(typ, data):
    return struct.pack('>I', len(data)) + typ + data + struct.pack('>I', zlib.crc32(typ + data))
def png(ihdr, idat_chunks, extra=b'', end=True):
    out = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', ihdr) + extra + b''.join(chunk(b'IDAT', d) for d in idat_chunks)
    return out + (chunk(b'IEND', b'') if end else b'')
w, h = 40, 30
raw = b''.join(b'\x01' + bytes((x * 7 + y) & 255 for x in range(w * 3)) for y in range(h))
z = zlib.compress(raw, 9)
ihdr = struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)
# One zlib stream cut across many IDAT chunks, some of them empty.
parts = [z[i:i + 7] for i in range(0, len(z), 7)]
open('fixtures/one/many-idat-chunks.png', 'wb').write(png(ihdr, parts[:3] + [b''] + parts[3:]))
# Data after IEND is not the decoder's concern (file.has-trailing-data's).
open('fixtures/one/data-after-iend.png', 'wb').write(png(ihdr, [z]) + b'appended bytes')
good = png(ihdr, [z])
# Answer 0: truncation, checksums, damaged data.
open('fixtures/zero/truncated-in-idat.png', 'wb').write(good[:len(good) // 2])
open('fixtures/zero/no-iend.png', 'wb').write(png(ihdr, [z], end=False))
b = bytearray(good); b[good.find(b'IDAT') + 4 + 10] ^= 0x01
open('fixtures/zero/idat-crc-mismatch.png', 'wb').write(b)
t = chunk(b'tEXt', b'Comment\0synthetic')
t = t[:-1] + bytes([t[-1] ^ 0xFF])
open('fixtures/zero/ancillary-crc-mismatch.png', 'wb').write(png(ihdr, [z], extra=t))
bad_adler = z[:-4] + bytes(x ^ 0xFF for x in z[-4:])
open('fixtures/zero/adler32-mismatch.png', 'wb').write(png(ihdr, [bad_adler]))
bad_filter = b''.join(b'\x07' + bytes(w * 3) for y in range(h))
open('fixtures/zero/bad-filter-type.png', 'wb').write(png(ihdr, [zlib.compress(bad_filter)]))
open('fixtures/zero/too-little-pixel-data.png', 'wb').write(png(ihdr, [zlib.compress(raw[:-100])]))
open('fixtures/zero/too-much-pixel-data.png', 'wb').write(png(ihdr, [zlib.compress(raw + b'\0' * 121)]))
open('fixtures/zero/palette-without-plte.png', 'wb').write(png(struct.pack('>IIBBBBB', w, h, 8, 3, 0, 0, 0), [zlib.compress(b''.join(b'\0' + bytes(w) for y in range(h)))]))
open('fixtures/zero/unknown-critical-chunk.png', 'wb').write(png(ihdr, [z], extra=chunk(b'ZZZZ', b'x')))
# An image claiming 65535x65535 RGBA pixels with a few rows of data: decoded as a stream, it
# runs out of data at once (no 16 GiB buffer).
big = struct.pack('>IIBBBBB', 65535, 65535, 8, 6, 0, 0, 0)
open('fixtures/zero/claims-65535x65535.png', 'wb').write(png(big, [zlib.compress(b'\0' * (65535 * 4 + 1) * 4)]))
# A deflate stream that never ends: non-final empty stored blocks until the IDAT run ends.
endless = b'\x78\x01' + b'\x00\x00\x00\xff\xff' * 2000
open('fixtures/zero/endless-deflate.png', 'wb').write(png(ihdr, [endless]))
jpg = open('fixtures/one/baseline.jpg', 'rb').read()
open('fixtures/zero/truncated-in-scan.jpg', 'wb').write(jpg[:jpg.find(b'\xff\xda') + 60])
open('fixtures/zero/no-eoi.jpg', 'wb').write(jpg[:-2])
prog = open('fixtures/one/progressive.jpg', 'rb').read()
open('fixtures/zero/progressive-truncated.jpg', 'wb').write(prog[:len(prog) * 2 // 3])
k = jpg.find(b'\xff\xc4')
open('fixtures/zero/huffman-table-cut.jpg', 'wb').write(jpg[:k + 4] + b'\x00' * 3 + jpg[k + 7:jpg.find(b'\xff\xda')] + jpg[jpg.find(b'\xff\xda'):])
gif = open('fixtures/one/single.gif', 'rb').read()
open('fixtures/zero/no-trailer.gif', 'wb').write(gif[:-1])
open('fixtures/zero/truncated-in-frame.gif', 'wb').write(gif[:len(gif) // 2])
# A frame whose LZW data goes on past its pixels: clear codes, forever.
hdr = b'GIF89a' + struct.pack('<HHBBB', 4, 4, 0x80, 0, 0) + b'\0\0\0\xff\xff\xff'
desc = b',' + struct.pack('<HHHHB', 0, 0, 4, 4, 0) + b'\x02'
def lzw_clears(n):
    # 3-bit codes, LSB first: code 4 is the clear code.
    bits, acc, out = 0, 0, bytearray()
    for _ in range(n):
        acc |= 4 << bits; bits += 3
        while bits >= 8:
            out.append(acc & 255); acc >>= 8; bits -= 8
    return bytes(out)
data = lzw_clears(2000)
blocks = b''.join(bytes([len(data[i:i + 255])]) + data[i:i + 255] for i in range(0, len(data), 255)) + b'\0'
open('fixtures/zero/lzw-without-pixels.gif', 'wb').write(hdr + desc + blocks + b';')
PY
# Not JPEG, PNG or GIF; or past the plugin's caps; or unsupported by Go's decoder: plugin_error.
c "$err/not-accepted.bmp"
c "$err/not-accepted.webp"
python3 - <<'PY'
import struct
jpg = open('fixtures/one/baseline.jpg', 'rb').read()
k = jpg.find(b'\xff\xc0')
b = bytearray(jpg); struct.pack_into('>HH', b, k + 5, 65535, 65535)
open('fixtures/error/jpeg-claims-65535x65535.jpg', 'wb').write(b)
# Frame headers of processes Go's decoder does not support: arithmetic coding (SOF9), lossless
# (SOF3).
for m, name in ((0xC9, 'arithmetic-coding-sof9'), (0xC3, 'lossless-sof3')):
    b = bytearray(jpg); b[k + 1] = m
    open('fixtures/error/%s.jpg' % name, 'wb').write(b)
hdr = b'GIF89a' + struct.pack('<HHBBB', 65535, 65535, 0x80, 0, 0) + b'\0\0\0\xff\xff\xff'
desc = b',' + struct.pack('<HHHHB', 0, 0, 65535, 65535, 0) + b'\x02'
open('fixtures/error/gif-frame-65535x65535.gif', 'wb').write(hdr + desc + b'\x02\x4c\x01\x00;')
open('fixtures/error/text.txt', 'wb').write(b'not an image\n')
PY
