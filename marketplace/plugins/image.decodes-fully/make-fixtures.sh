#!/bin/sh
# Writes image.decodes-fully's hostile fixtures, too big or slow to commit, into DIR (one/,
# error/) at build time with python3: GIF frames up to the plugin's pixel caps (their LZW data
# is runs of 4091 pixels a code, so 31 megapixels take 11 KB) and a PNG whose zlib stream
# inflates past 1 GiB.
# usage: make-fixtures.sh DIR
set -eu
mkdir -p "$1/one" "$1/error"
python3 - "$1" <<'PY'
import struct, sys, zlib
out = sys.argv[1]

def lzw_runs(total):
    """A frame of total zero pixels as (code, width) pairs, 2-bit literals, as compress/lzw
    reads them: codes 6, 7, ... each one pixel longer than the last, then code 4095 (4091
    pixels) over and over once the table is full (a deferred clear), then literals."""
    codes = [(4, 3)]
    state = {'hi': 5, 'width': 3, 'overflow': 8, 'last': False, 'done': 0}
    def emit(code, length):
        codes.append((code, state['width']))
        state['done'] += length
        state['last'] = True
        state['hi'] += 1
        if state['hi'] >= state['overflow']:
            if state['width'] == 12:
                state['last'] = False
                state['hi'] -= 1
            else:
                state['width'] += 1
                state['overflow'] <<= 1
    emit(0, 1)
    while state['last'] and state['hi'] <= 4095 and state['done'] + state['hi'] - 4 <= total:
        emit(state['hi'], state['hi'] - 4)
    while not state['last'] and state['hi'] == 4095 and state['done'] + 4091 <= total:
        emit(4095, 4091)
    while state['done'] < total:
        emit(0, 1)
    codes.append((5, state['width']))
    acc = bits = 0
    data = bytearray()
    for c, w in codes:
        acc |= c << bits
        bits += w
        while bits >= 8:
            data.append(acc & 255)
            acc >>= 8
            bits -= 8
    if bits:
        data.append(acc & 255)
    return bytes(data)

def gif(side, frames):
    data = lzw_runs(side * side)
    blocks = b''.join(bytes([len(data[i:i + 255])]) + data[i:i + 255] for i in range(0, len(data), 255)) + b'\0'
    g = b'GIF89a' + struct.pack('<HHBBB', side, side, 0x80, 0, 0) + b'\0\0\0\xff\xff\xff'
    for _ in range(frames):
        g += b',' + struct.pack('<HHHHB', 0, 0, side, side, 0) + b'\x02' + blocks
    return g + b';'

# 16 frames of 5600x5600: 502 million pixels, under the total cap (512 Mi), each frame under
# the frame cap (32 Mi): it decodes, in about 2 s of CPU.
open(out + '/one/gif-16-frames-under-the-caps.gif', 'wb').write(gif(5600, 16))
# 18 such frames pass the total cap: refused before decoding.
open(out + '/error/gif-past-the-pixel-cap.gif', 'wb').write(gif(5600, 18))

def chunk(typ, data):
    return struct.pack('>I', len(data)) + typ + data + struct.pack('>I', zlib.crc32(typ + data))
# 65535x65535 RGBA rows of zeros, 1.1 GB of them from a 1 MB zlib stream: past the 1 GiB the
# plugin inflates, plugin_error (about 1 s of CPU).
co = zlib.compressobj(9)
row = b'\0' * (65535 * 4 + 1)
z = b''.join(co.compress(row) for _ in range(4200)) + co.flush()
ihdr = struct.pack('>IIBBBBB', 65535, 65535, 8, 6, 0, 0, 0)
open(out + '/error/png-inflates-past-1-gib.png', 'wb').write(
    b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', ihdr) + chunk(b'IDAT', z) + chunk(b'IEND', b''))
PY
