#!/usr/bin/env python3
# How office.has-macros' committed fixtures were made: minimal OPC packages and OLE2 compound
# files written with the standard library, each holding the case its name says. Run from the
# plugin's directory.
import os, struct, zipfile

R = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
MS = 'http://schemas.microsoft.com/office/2006/relationships/'
PKG = 'http://schemas.openxmlformats.org/package/2006/relationships'
VBA_CT = 'application/vnd.ms-office.vbaProject'
MAIN = {
    'docx': ('word/document.xml', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml'),
    'docm': ('word/document.xml', 'application/vnd.ms-word.document.macroEnabled.main+xml'),
    'xlsx': ('xl/workbook.xml', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml'),
    'xlsm': ('xl/workbook.xml', 'application/vnd.ms-excel.sheet.macroEnabled.main+xml'),
    'xlsb': ('xl/workbook.bin', 'application/vnd.ms-excel.sheet.binary.macroEnabled.main'),
    'pptm': ('ppt/presentation.xml', 'application/vnd.ms-powerpoint.presentation.macroEnabled.main+xml'),
}

def rels(*items):
    out = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="%s">' % PKG
    for i, (typ, target) in enumerate(items):
        out += '<Relationship Id="rId%d" Type="%s" Target="%s"/>' % (i + 1, typ, target)
    return out + '</Relationships>'

def package(path, kind, parts, overrides=(), defaults=(), main_rels=(), content_types=True):
    """An OPC package: parts {name: data}, extra content types, and the main part's relationships."""
    main, ctype = MAIN[kind]
    ct = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
          '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
          '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
          '<Default Extension="xml" ContentType="application/xml"/>')
    for ext, t in defaults:
        ct += '<Default Extension="%s" ContentType="%s"/>' % (ext, t)
    ct += '<Override PartName="/%s" ContentType="%s"/>' % (main, ctype)
    for name, t in overrides:
        ct += '<Override PartName="/%s" ContentType="%s"/>' % (name, t)
    ct += '</Types>'
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
        if content_types:
            z.writestr('[Content_Types].xml', ct)
        z.writestr('_rels/.rels', rels((R + 'officeDocument', main)))
        z.writestr(main, '<doc/>')
        if main_rels:
            d, b = os.path.split(main)
            z.writestr('%s/_rels/%s.rels' % (d, b), rels(*main_rels))
        for name, data in parts.items():
            z.writestr(name, data)

# OLE2 compound files ([MS-CFB]), version 3 (512-byte sectors); streams under 4096 bytes go to
# the mini stream. entries: (name, type, parent index, data); entry 0 is the root.
FREE, END, FATSECT = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD

def cfb(entries):
    S = 512
    mini, big = bytearray(), []
    starts, minifat = {}, []
    for i, (name, typ, parent, data) in enumerate(entries):
        if typ != 2:
            continue
        if len(data) < 4096:
            n = (len(data) + 63) // 64
            starts[i] = len(minifat) if n else END
            minifat += [len(minifat) + k + 1 for k in range(n - 1)] + ([END] if n else [])
            mini += data + bytes(-len(data) % 64)
        else:
            big.append(i)
    ndir = (len(entries) * 128 + S - 1) // S
    nminifat = (len(minifat) * 4 + S - 1) // S
    nmini = (len(mini) + S - 1) // S
    nbig = sum((len(entries[i][3]) + S - 1) // S for i in big)
    nfat = 1
    while nfat * 128 < nfat + ndir + nminifat + nmini + nbig:
        nfat += 1
    fat, sec = [FATSECT] * nfat, nfat
    def run(n):
        nonlocal sec
        start = sec if n else END
        fat.extend([sec + k + 1 for k in range(n - 1)] + ([END] if n else []))
        sec += n
        return start
    dirstart, minifatstart, ministart = run(ndir), run(nminifat), run(nmini)
    for i in big:
        starts[i] = run((len(entries[i][3]) + S - 1) // S)
    fat += [FREE] * (nfat * 128 - len(fat))
    # Children of each storage chained through their right siblings.
    child = {}
    right = {}
    for i, (name, typ, parent, data) in enumerate(entries):
        if i == 0:
            continue
        if parent in child:
            j = child[parent]
            while j in right:
                j = right[j]
            right[j] = i
        else:
            child[parent] = i
    d = bytearray()
    for i, (name, typ, parent, data) in enumerate(entries):
        u = name.encode('utf-16-le') + b'\0\0'
        start, size = (ministart, len(mini)) if i == 0 else (starts.get(i, 0), len(data) if typ == 2 else 0)
        d += u + bytes(64 - len(u)) + struct.pack('<HBBIII', len(u), typ, 1, FREE, right.get(i, FREE),
                                                   child.get(i, FREE)) + bytes(36) + struct.pack('<IQ', start, size)
    d += bytes(-len(d) % S)
    h = bytes.fromhex('d0cf11e0a1b11ae1') + bytes(16) + struct.pack('<HHHHH', 0x3E, 3, 0xFFFE, 9, 6) + bytes(6)
    h += struct.pack('<IIIIIIIII', 0, nfat, dirstart, 0, 4096, minifatstart if nminifat else END, nminifat, END, 0)
    h += b''.join(struct.pack('<I', k) for k in range(nfat)) + b'\xff' * 4 * (109 - nfat)
    out = bytearray(h)
    out += b''.join(struct.pack('<I', x) for x in fat)
    out += d
    mf = b''.join(struct.pack('<I', x) for x in minifat)
    out += mf + bytes(-len(mf) % S) if nminifat else b''
    out += mini + bytes(-len(mini) % S)
    for i in big:
        data = entries[i][3]
        out += data + bytes(-len(data) % S)
    return out

def biff(sheets, filepass=False):
    """An Excel workbook stream: the globals (BOF, FILEPASS, one BoundSheet8 per (name, dt), EOF)."""
    def rec(t, data):
        return struct.pack('<HH', t, len(data)) + data
    out = rec(0x0809, struct.pack('<HHHHII', 0x0600, 0x0005, 0x0DBB, 0x07CC, 0, 0))
    if filepass:
        out += rec(0x002F, struct.pack('<HHH', 1, 1, 1) + bytes(48))
    for name, dt in sheets:
        out += rec(0x0085, struct.pack('<IBBBB', 0, 0, dt, len(name), 0) + name.encode('latin-1'))
    out += rec(0x000A, b'')
    for name, dt in sheets:
        out += rec(0x0809, struct.pack('<HHHHII', 0x0600, 0x0010, 0x0DBB, 0x07CC, 0, 0)) + rec(0x000A, b'')
    return out

def vba_storage(parent_index, first):
    """Entries of a VBA storage under parent_index, numbered from first."""
    return [('VBA', 1, parent_index, b''), ('dir', 2, first, b'\x01' * 300),
            ('_VBA_PROJECT', 2, first, b'\xcc\x61\xff\xff\x00\x00\x00'), ('ThisDocument', 2, first, b'\x00' * 700)]

def write(path, data):
    with open(path, 'wb') as f:
        f.write(data)

for d in ('one', 'zero', 'error'):
    os.makedirs('fixtures/' + d, exist_ok=True)
VBA = b'\xd0\xcf\x11\xe0 a VBA project would be here'
# Answer 1: OOXML.
package('fixtures/one/docm-named-docx.docx', 'docm', {'word/vbaProject.bin': VBA},
        overrides=[('word/vbaProject.bin', VBA_CT)], main_rels=[(MS + 'vbaProject', 'vbaProject.bin')])
package('fixtures/one/vba.xlsm', 'xlsm', {'xl/vbaProject.bin': VBA},
        defaults=[('bin', VBA_CT)], main_rels=[(MS + 'vbaProject', 'vbaProject.bin')])
package('fixtures/one/vba.pptm', 'pptm', {'ppt/vbaProject.bin': VBA},
        defaults=[('bin', VBA_CT)], main_rels=[(MS + 'vbaProject', 'vbaProject.bin')])
package('fixtures/one/vba-by-content-type-only.docx', 'docx', {'word/macros.dat': VBA},
        overrides=[('word/macros.dat', VBA_CT)])
package('fixtures/one/vba-by-relationship-only.docx', 'docx', {'word/vbaProject.bin': VBA},
        main_rels=[(MS + 'vbaProject', '/word/vbaProject.bin')])
package('fixtures/one/excel4-macro-sheet.xlsx', 'xlsx', {'xl/macrosheets/sheet1.xml': '<xm:macrosheet xmlns:xm="http://schemas.microsoft.com/office/excel/2006/main"/>'},
        overrides=[('xl/macrosheets/sheet1.xml', 'application/vnd.ms-excel.macrosheet+xml')],
        main_rels=[(MS + 'xlMacrosheet', 'macrosheets/sheet1.xml')])
package('fixtures/one/excel4-intl-macro-sheet.xlsx', 'xlsx', {'xl/macrosheets/intl1.xml': '<x/>'},
        overrides=[('xl/macrosheets/intl1.xml', 'application/vnd.ms-excel.intlmacrosheet+xml')])
package('fixtures/one/excel4-macro-sheet.xlsb', 'xlsb', {'xl/macrosheets/sheet1.bin': b'\x00\x01'},
        defaults=[('bin', 'application/vnd.ms-excel.macrosheet')])
# Answer 1: OLE2.
write('fixtures/one/vba.doc', cfb([('Root Entry', 5, None, b''), ('WordDocument', 2, 0, b'\xec\xa5' + bytes(5000)),
                                   ('1Table', 2, 0, bytes(600)), ('Macros', 1, 0, b''), ('PROJECT', 2, 3, b'ID="{0}"\r\n')]
                                  + vba_storage(3, 5)))
write('fixtures/one/vba.xls', cfb([('Root Entry', 5, None, b''), ('Workbook', 2, 0, biff([('Sheet1', 0)])),
                                   ('_VBA_PROJECT_CUR', 1, 0, b'')] + vba_storage(2, 3)))
write('fixtures/one/excel4-macro-sheet.xls', cfb([('Root Entry', 5, None, b''), ('SummaryInformation', 2, 0, bytes(200)),
                                                  ('Workbook', 2, 0, biff([('Sheet1', 0), ('Macro1', 1)]))]))
write('fixtures/one/excel4-macro-sheet-big-workbook.xls', cfb([('Root Entry', 5, None, b''),
      ('Workbook', 2, 0, biff([('Sheet%d' % i, 0) for i in range(400)] + [('Auto_Open', 1)]))]))
write('fixtures/one/vba-in-encrypted.xls', cfb([('Root Entry', 5, None, b''), ('Workbook', 2, 0, biff([('Sheet1', 0)], filepass=True)),
                                                ('_VBA_PROJECT_CUR', 1, 0, b'')] + vba_storage(2, 3)))
# Answer 0.
package('fixtures/zero/plain.docx', 'docx', {})
package('fixtures/zero/macro-enabled-without-macros.xlsm', 'xlsm', {'xl/worksheets/sheet1.xml': '<worksheet/>'},
        overrides=[('xl/worksheets/sheet1.xml', 'application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml')],
        main_rels=[(R + 'worksheet', 'worksheets/sheet1.xml')])
package('fixtures/zero/activex-control.docx', 'docx', {'word/activeX/activeX1.bin': b'\x00' * 64, 'word/activeX/activeX1.xml': '<ax/>'},
        defaults=[('bin', 'application/vnd.ms-office.activeX')],
        overrides=[('word/activeX/activeX1.xml', 'application/vnd.ms-office.activeX+xml')],
        main_rels=[(R + 'control', 'activeX/activeX1.xml')])
package('fixtures/zero/vba-default-but-no-bin-part.docx', 'docx', {'word/media/image1.png': b'\x89PNG'},
        defaults=[('bin', VBA_CT), ('png', 'image/png')])
write('fixtures/zero/plain.doc', cfb([('Root Entry', 5, None, b''), ('WordDocument', 2, 0, b'\xec\xa5' + bytes(5000)),
                                      ('1Table', 2, 0, bytes(600)), ('SummaryInformation', 2, 0, bytes(200))]))
write('fixtures/zero/worksheets-and-chart.xls', cfb([('Root Entry', 5, None, b''),
      ('Workbook', 2, 0, biff([('Sheet1', 0), ('Chart1', 2), ('Sheet2', 0)]))]))
write('fixtures/zero/big-workbook.xls', cfb([('Root Entry', 5, None, b''), ('Workbook', 2, 0, biff([('S%d' % i, 0) for i in range(600)]))]))
# Not a document this plugin reads, or one that cannot be read: plugin_error.
package('fixtures/error/zip-without-content-types.zip', 'docx', {}, content_types=False)
write('fixtures/error/not-office.pdf', b'%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n')
write('fixtures/error/encrypted-ooxml.docx', cfb([('Root Entry', 5, None, b''), ('EncryptionInfo', 2, 0, bytes(300)),
                                                  ('EncryptedPackage', 2, 0, bytes(5000))]))
write('fixtures/error/powerpoint.ppt', cfb([('Root Entry', 5, None, b''), ('PowerPoint Document', 2, 0, bytes(5000)),
                                            ('Current User', 2, 0, bytes(60))]))
write('fixtures/error/encrypted-without-vba.xls', cfb([('Root Entry', 5, None, b''),
      ('Workbook', 2, 0, biff([('Sheet1', 0)], filepass=True))]))
b = cfb([('Root Entry', 5, None, b''), ('WordDocument', 2, 0, b'\xec\xa5' + bytes(5000)), ('1Table', 2, 0, bytes(600))])
write('fixtures/error/truncated.doc', b[:2048])
# The FAT sends the directory's chain back to itself.
fatloop = bytearray(b)
struct.pack_into('<I', fatloop, 512 + 4 * 1, 1)
write('fixtures/error/fat-loop.doc', fatloop)
# The root's child is the root itself.
treeloop = bytearray(b)
struct.pack_into('<I', treeloop, 1024 + 76, 0)
write('fixtures/error/directory-loop.doc', treeloop)
# The header claims two million FAT sectors.
fatclaim = bytearray(b)
struct.pack_into('<I', fatclaim, 44, 2000000)
write('fixtures/error/fat-count-lies.doc', fatclaim)
# A workbook stream cut before its globals' EOF record.
x = biff([('Sheet1', 0), ('Sheet2', 0)])
write('fixtures/error/workbook-without-eof.xls', cfb([('Root Entry', 5, None, b''), ('Workbook', 2, 0, x[:x.find(struct.pack('<HH', 0x000A, 0))])]))
d = open('fixtures/zero/plain.docx', 'rb').read()
write('fixtures/error/truncated.docx', d[:len(d) // 2])
dl = bytearray(d)
e = dl.rfind(b'PK\x05\x06')
struct.pack_into('<HH', dl, e + 8, 60000, 60000)
write('fixtures/error/lying-central-directory.docx', dl)
package('fixtures/error/content-types-bomb.docx', 'docx', {}, overrides=[('word/x.xml', 'application/xml' + ' ' * (20 << 20))])
package('fixtures/error/malformed-content-types.docx', 'docx', {}, overrides=[('word/x.xml', 'a"b<')])
