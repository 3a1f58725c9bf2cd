#!/bin/sh
# How image.has-gps' committed fixtures were made, with Debian's imagemagick and
# libimage-exiftool-perl and python3 for the damaged and hostile ones. Run from the plugin's
# directory.
set -eu
one=fixtures/one zero=fixtures/zero err=fixtures/error
mkdir -p $one $zero $err
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
x() { exiftool -q -overwrite_original "$@"; }
pos='-GPSLatitude=48.8584 -GPSLatitudeRef=N -GPSLongitude=2.2945 -GPSLongitudeRef=E'
for f in jpg png tif webp; do
	convert -size 16x16 gradient:red-blue -strip "$t/plain.$f"
done
# Answer 1: EXIF GPS in each format, XMP-only GPS, ImageMagick's raw profile in PNG.
for f in jpg png tif webp; do
	cp "$t/plain.$f" "$one/exif-gps.$f"
	# shellcheck disable=SC2086
	x $pos -Model=Synthetic "$one/exif-gps.$f"
done
cp "$t/plain.jpg" "$one/xmp-only-gps.jpg"
x -XMP-exif:GPSLatitude='48,51.5N' -XMP-exif:GPSLongitude='2,17.67E' "$one/xmp-only-gps.jpg"
cp "$t/plain.png" "$one/xmp-only-gps.png"
x -XMP-exif:GPSLatitude='48,51.5N' -XMP-exif:GPSLongitude='2,17.67E' "$one/xmp-only-gps.png"
cp "$t/plain.webp" "$one/xmp-only-gps.webp"
x -XMP-exif:GPSLatitude='48,51.5N' -XMP-exif:GPSLongitude='2,17.67E' "$one/xmp-only-gps.webp"
cp "$t/plain.tif" "$one/xmp-only-gps.tif"
x -XMP-exif:GPSLatitude='48,51.5N' -XMP-exif:GPSLongitude='2,17.67E' "$one/xmp-only-gps.tif"
# ImageMagick without eXIf writes the EXIF tags as text properties (tEXt exif:GPSLatitude...).
convert "$one/exif-gps.jpg" -define png:exclude-chunk=eXIf "$one/imagemagick-exif-properties.png"
cp "$t/plain.jpg" "$one/exif-gps-big-endian.jpg"
# shellcheck disable=SC2086
x -ExifByteOrder=MM $pos "$one/exif-gps-big-endian.jpg"
# Answer 0: no metadata, EXIF without GPS, a GPS IFD without a position, XMP without GPS.
for f in jpg png tif webp; do
	cp "$t/plain.$f" "$zero/plain.$f"
	cp "$t/plain.$f" "$zero/exif-without-gps.$f"
	x -Model=Synthetic -DateTimeOriginal='2024:01:02 03:04:05' "$zero/exif-without-gps.$f"
done
cp "$t/plain.jpg" "$zero/gps-ifd-without-position.jpg"
x -GPSAltitude=35 -GPSAltitudeRef=0 -GPSDateStamp=2024:01:02 "$zero/gps-ifd-without-position.jpg"
cp "$t/plain.jpg" "$zero/latitude-only.jpg"
x -GPSLatitude=48.8584 -GPSLatitudeRef=N "$zero/latitude-only.jpg"
cp "$t/plain.png" "$zero/xmp-without-gps.png"
x -XMP-dc:Title='Synthetic' -XMP-exif:GPSAltitude=35 "$zero/xmp-without-gps.png"
python3 - "$t" <<'PY'
import struct, sys, zlib
t = sys.argv[1]
def chunk(typ, data):
    return struct.pack('>I', len(data)) + typ + data + struct.pack('>I', zlib.crc32(typ + data))
# A PNG whose header claims 65535x65535 pixels: its structure is walked, never decoded.
huge = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 65535, 65535, 8, 6, 0, 0, 0)) \
    + chunk(b'IDAT', zlib.compress(b'\0' * 1000)) + chunk(b'IEND', b'')
open('fixtures/zero/claims-65535x65535.png', 'wb').write(huge)
jpg = open('fixtures/one/exif-gps.jpg', 'rb').read()
png = open('fixtures/one/exif-gps.png', 'rb').read()
webp = open('fixtures/one/exif-gps.webp', 'rb').read()
open('fixtures/error/truncated-before-scan.jpg', 'wb').write(jpg[:jpg.find(b'\xff\xda') - 40])
open('fixtures/error/truncated-before-iend.png', 'wb').write(png[:-12])
open('fixtures/error/truncated.webp', 'wb').write(webp[:len(webp) - 20])
# An EXIF whose GPS IFD offset points past the EXIF blob.
i = jpg.find(b'Exif\0\0') + 6
order = '<' if jpg[i:i + 2] == b'II' else '>'
b = bytearray(jpg)
ifd = i + struct.unpack(order + 'I', b[i + 4:i + 8])[0]
n = struct.unpack(order + 'H', b[ifd:ifd + 2])[0]
for k in range(n):
    e = ifd + 2 + 12 * k
    if struct.unpack(order + 'H', b[e:e + 2])[0] == 0x8825:
        struct.pack_into(order + 'I', b, e + 8, 0x7FFFFFF0)
open('fixtures/error/gps-ifd-offset-past-end.jpg', 'wb').write(b)
# An IFD chain that loops: IFD0's next offset points at IFD0.
b = bytearray(jpg)
struct.pack_into(order + 'I', b, ifd + 2 + 12 * n, ifd - i)
open('fixtures/error/ifd-loop.jpg', 'wb').write(b)
# An XMP packet that is not well-formed.
x = open('fixtures/one/xmp-only-gps.jpg', 'rb').read()
k = x.find(b'</x:xmpmeta>')
open('fixtures/error/malformed-xmp.jpg', 'wb').write(x[:k] + b'<broken' + x[k + 7:])
# A PNG eXIf chunk whose CRC does not match.
b = bytearray(png)
k = b.find(b'eXIf')
n = struct.unpack('>I', b[k - 4:k])[0]
b[k + 4 + n] ^= 0xFF
open('fixtures/error/exif-bad-crc.png', 'wb').write(b)
# ImageMagick's older form: the EXIF as a hex "Raw profile type exif" in a zTXt chunk.
i = jpg.find(b'Exif\0\0')
exif = jpg[i:i + struct.unpack('>H', jpg[i - 2:i])[0] - 2]
h = exif.hex()
text = ('\nexif\n%8d\n' % len(exif) + '\n'.join(h[k:k + 72] for k in range(0, len(h), 72)) + '\n').encode()
plain = open(t + '/plain.png', 'rb').read()
raw = plain[:-12] + chunk(b'zTXt', b'Raw profile type exif\0\0' + zlib.compress(text)) + plain[-12:]
open('fixtures/one/raw-profile-exif-gps.png', 'wb').write(raw)
# XMP written by hand: the attribute form, and GPS only in extended XMP split over two chunks.
plainjpg = open(t + '/plain.jpg', 'rb').read()
def app1(payload):
    return b'\xff\xe1' + struct.pack('>H', len(payload) + 2) + payload
def xmp(body):
    return ('<?xpacket begin="\ufeff" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/">'
            '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">%s</rdf:RDF></x:xmpmeta>'
            '<?xpacket end="w"?>' % body).encode()
attr = xmp('<rdf:Description rdf:about="" xmlns:exif="http://ns.adobe.com/exif/1.0/" '
           'exif:GPSLatitude="48,51.5N" exif:GPSLongitude="2,17.67E"/>')
open('fixtures/one/xmp-attribute-form.jpg', 'wb').write(plainjpg[:2] + app1(b'http://ns.adobe.com/xap/1.0/\0' + attr) + plainjpg[2:])
guid = b'0123456789ABCDEF0123456789ABCDEF'
main = xmp('<rdf:Description rdf:about="" xmlns:xmpNote="http://ns.adobe.com/xmp/note/" '
           'xmpNote:HasExtendedXMP="%s"/>' % guid.decode())
ext = ('<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
       '<rdf:Description rdf:about="" xmlns:exif="http://ns.adobe.com/exif/1.0/">'
       '<exif:GPSLatitude>48,51.5N</exif:GPSLatitude><exif:GPSLongitude>2,17.67E</exif:GPSLongitude>'
       '</rdf:Description></rdf:RDF></x:xmpmeta>').encode()
half = len(ext) // 2
chunks = b''.join(app1(b'http://ns.adobe.com/xmp/extension/\0' + guid + struct.pack('>II', len(ext), o) + ext[o:o + n])
                  for o, n in ((half, len(ext) - half), (0, half)))
open('fixtures/one/extended-xmp-gps.jpg', 'wb').write(plainjpg[:2] + app1(b'http://ns.adobe.com/xap/1.0/\0' + main) + chunks + plainjpg[2:])
# An extended XMP chunk that claims a 4 GiB packet.
open('fixtures/error/extended-xmp-claims-4gib.jpg', 'wb').write(plainjpg[:2] + app1(b'http://ns.adobe.com/xmp/extension/\0' + guid + struct.pack('>II', 0xFFFFFFFF, 0) + b'<x/>') + plainjpg[2:])
# Hostile compressed XMP in PNG iTXt chunks: one that expands to 16 MiB less a little (under the
# cap per chunk: read, answers 0), and five of 15 MiB (75 MiB, past the 64 MiB all of a file's
# compressed text may expand to: plugin_error).
png = open('fixtures/zero/plain.png', 'rb').read()
def itxt(n):
    t = b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><r>' + b' ' * n + b'</r></x:xmpmeta>'
    return chunk(b'iTXt', b'XML:com.adobe.xmp\0\x01\x00\0\0' + zlib.compress(t, 9))
open('fixtures/zero/xmp-itxt-expanding-to-16-mib.png', 'wb').write(png[:-12] + itxt((16 << 20) - 100) + png[-12:])
open('fixtures/error/xmp-itxt-chunks-expanding-past-64-mib.png', 'wb').write(png[:-12] + itxt(15 << 20) * 5 + png[-12:])
open('fixtures/error/gif-not-accepted.gif', 'wb').write(b'GIF89a\x01\x00\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;')
open('fixtures/error/not-an-image.txt', 'wb').write(b'latitude 48.8584, longitude 2.2945\n')
PY
