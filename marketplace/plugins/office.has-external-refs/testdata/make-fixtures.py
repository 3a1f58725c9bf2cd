#!/usr/bin/env python3
# How office.has-external-refs' committed fixtures were made: minimal OPC packages written with
# the standard library, each holding the case its name says. Run from the plugin's directory.
import os, struct, zipfile, zlib

R = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
PKG = 'http://schemas.openxmlformats.org/package/2006/relationships'
CT = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
      '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
      '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
      '<Default Extension="xml" ContentType="application/xml"/>'
      '<Override PartName="/%s" ContentType="%s"/></Types>')
MAIN = {'docx': ('word/document.xml', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml',
                 '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p/></w:body></w:document>'),
        'xlsx': ('xl/workbook.xml', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml',
                 '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheets/></workbook>'),
        'pptx': ('ppt/presentation.xml', 'application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml',
                 '<p:presentation xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"/>')}

def rels(*items):
    out = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="%s">' % PKG
    for i, (typ, target, mode) in enumerate(items):
        out += '<Relationship Id="rId%d" Type="%s" Target="%s"%s/>' % (
            i + 1, typ, target, ' TargetMode="%s"' % mode if mode else '')
    return out + '</Relationships>'

def package(path, kind, parts, content_types=True):
    main, ctype, body = MAIN[kind]
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
        if content_types:
            z.writestr('[Content_Types].xml', CT % (main, ctype))
        z.writestr('_rels/.rels', rels((R + 'officeDocument', main, None)))
        z.writestr(main, body)
        for name, data in parts.items():
            z.writestr(name, data)

def docrels(name):
    return 'word/_rels/%s.rels' % name

os.makedirs('fixtures/one', exist_ok=True)
os.makedirs('fixtures/zero', exist_ok=True)
os.makedirs('fixtures/error', exist_ok=True)
# Answer 1.
package('fixtures/one/remote-template.docx', 'docx', {
    'word/settings.xml': '<w:settings xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"/>',
    docrels('settings.xml'): rels((R + 'attachedTemplate', 'https://templates.example.org/t.dotm', 'External'))})
package('fixtures/one/linked-picture.docx', 'docx', {
    docrels('document.xml'): rels((R + 'hyperlink', 'https://example.org/', 'External'),
                                  (R + 'image', 'https://img.example.org/pixel.png', 'External'))})
package('fixtures/one/frame.docx', 'docx', {
    docrels('webSettings.xml'): rels((R + 'frame', 'https://example.org/frame.html', 'External'))})
package('fixtures/one/external-workbook-link.xlsx', 'xlsx', {
    'xl/externalLinks/externalLink1.xml': '<externalLink xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"/>',
    'xl/_rels/workbook.xml.rels': rels((R + 'externalLink', 'externalLinks/externalLink1.xml', None)),
    'xl/externalLinks/_rels/externalLink1.xml.rels': rels((R + 'externalLinkPath', 'file:///C:/books/budget.xlsx', 'External'))})
package('fixtures/one/linked-ole-object.pptx', 'pptx', {
    'ppt/slides/slide1.xml': '<p:sld xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"/>',
    'ppt/slides/_rels/slide1.xml.rels': rels((R + 'oleObject', 'file://server/share/sheet.xlsx', 'External'))})
package('fixtures/one/custom-external-type.docx', 'docx', {
    docrels('document.xml'): rels(('http://example.org/custom/relationship', 'https://example.org/x', 'External'))})
# Answer 0.
package('fixtures/zero/plain.docx', 'docx', {})
package('fixtures/zero/hyperlinks-only.docx', 'docx', {
    docrels('document.xml'): rels((R + 'hyperlink', 'https://example.org/', 'External'),
                                  (R + 'hyperlink', 'file://server/share/doc.pdf', 'External'),
                                  ('http://purl.oclc.org/ooxml/officeDocument/relationships/hyperlink', 'mailto:a@example.org', 'External'))})
package('fixtures/zero/internal-links.xlsx', 'xlsx', {
    'xl/worksheets/sheet1.xml': '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"/>',
    'xl/_rels/workbook.xml.rels': rels((R + 'worksheet', 'worksheets/sheet1.xml', None),
                                       (R + 'styles', 'styles.xml', 'Internal'))})
package('fixtures/zero/internal-picture.pptx', 'pptx', {
    'ppt/media/image1.png': b'\x89PNG\r\n\x1a\n',
    'ppt/slides/_rels/slide1.xml.rels': rels((R + 'image', '../media/image1.png', None))})
# Not an OPC package, or one whose relationships cannot be read whole: plugin_error.
package('fixtures/error/zip-without-content-types.zip', 'docx', {}, content_types=False)
with open('fixtures/error/not-a-zip.pdf', 'wb') as f:
    f.write(b'%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n')
with open('fixtures/error/ole2-compound-file.doc', 'wb') as f:
    f.write(bytes.fromhex('d0cf11e0a1b11ae1') + bytes(504))
package('fixtures/error/malformed-rels.docx', 'docx', {
    docrels('document.xml'): '<Relationships><Relationship Type="x" TargetMode="External"></Relationships>'})
data = open('fixtures/zero/plain.docx', 'rb').read()
open('fixtures/error/truncated.docx', 'wb').write(data[:len(data) // 2])
# A relationship part that expands to 20 MiB of whitespace: past the plugin's cap per part.
package('fixtures/error/rels-bomb.docx', 'docx', {
    docrels('document.xml'): rels((R + 'hyperlink', 'https://example.org/', 'External')) + ' ' * (20 << 20)})
# A relationship part whose stored CRC-32 is wrong.
package('fixtures/error/bad-crc.docx', 'docx', {docrels('document.xml'): rels()})
b = bytearray(open('fixtures/error/bad-crc.docx', 'rb').read())
name = docrels('document.xml').encode()
for sig, off in ((b'PK\x03\x04', 14), (b'PK\x01\x02', 16)):
    i = 0
    while True:
        i = b.find(sig, i)
        if i < 0:
            break
        n = struct.unpack_from('<H', b, i + (26 if sig == b'PK\x03\x04' else 28))[0]
        nm = b[i + (30 if sig == b'PK\x03\x04' else 46):][:n]
        if nm == name:
            b[i + off] ^= 0xFF
        i += 4
open('fixtures/error/bad-crc.docx', 'wb').write(b)
# A central directory that lies: its end record claims more entries than it holds.
b = bytearray(open('fixtures/zero/plain.docx', 'rb').read())
e = b.rfind(b'PK\x05\x06')
struct.pack_into('<HH', b, e + 8, 60000, 60000)
open('fixtures/error/lying-central-directory.docx', 'wb').write(b)
# A deflate stream that never ends: the relationship part's data is a run of non-final stored
# and compressed blocks cut off where its sizes say it ends, with no final block.
comp = zlib.compressobj(9, zlib.DEFLATED, -15)
stream = comp.compress(b' ' * (1 << 20)) + comp.flush(zlib.Z_SYNC_FLUSH)
with zipfile.ZipFile('fixtures/error/endless-deflate.docx', 'w', zipfile.ZIP_DEFLATED) as z:
    z.writestr('[Content_Types].xml', CT % MAIN['docx'][:2])
    z.writestr('_rels/.rels', rels((R + 'officeDocument', 'word/document.xml', None)))
    z.writestr('word/document.xml', MAIN['docx'][2])
    z.writestr(docrels('document.xml'), b'')
b = bytearray(open('fixtures/error/endless-deflate.docx', 'rb').read())
# Rebuild by hand: replace the empty part's deflate data with the endless stream.
with zipfile.ZipFile('fixtures/error/endless-deflate.docx') as z:
    info = z.getinfo(docrels('document.xml'))
start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
head, tail = b[:start], b[start + info.compress_size:]
delta = len(stream) - info.compress_size
out = head + stream + tail
struct.pack_into('<II', out, info.header_offset + 18, len(stream), 0xFFFFFFFF & (1 << 30))
cd = out.rfind(b'PK\x05\x06')
cdoff = struct.unpack_from('<I', out, cd + 16)[0] + delta
struct.pack_into('<I', out, cd + 16, cdoff)
i = cdoff
while out[i:i + 4] == b'PK\x01\x02':
    n, m, k = struct.unpack_from('<HHH', out, i + 28)
    if out[i + 46:i + 46 + n] == name:
        struct.pack_into('<II', out, i + 20, len(stream), 1 << 30)
    i += 46 + n + m + k
open('fixtures/error/endless-deflate.docx', 'wb').write(out)
