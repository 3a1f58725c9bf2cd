#!/bin/sh
# Writes office.has-external-refs' hostile fixtures, too big to commit, into DIR (zero/, error/)
# at build time with python3: a package of 50 000 entries, the most the plugin reads (6.8 MB;
# 83 MiB of memory needed), and one of 50 001 entries whose end record claims only one (the
# plugin counts the central directory's headers itself: plugin_error, before archive/zip holds
# them).
# usage: make-fixtures.sh DIR
set -eu
mkdir -p "$1/zero" "$1/error"
python3 - "$1" <<'PY'
import struct, sys, zipfile
out = sys.argv[1]
def package(path, n):
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_STORED) as z:
        z.writestr('[Content_Types].xml', '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>')
        for i in range(n - 1):
            z.writestr('p/_rels/%d.xml.rels' % i, '<Relationships/>')
package(out + '/zero/50000-entries.docx', 50000)
package(out + '/error/50001-entries-count-lies.docx', 50001)
b = bytearray(open(out + '/error/50001-entries-count-lies.docx', 'rb').read())
e = b.rfind(b'PK\x05\x06')
struct.pack_into('<HH', b, e + 8, 1, 1)
open(out + '/error/50001-entries-count-lies.docx', 'wb').write(b)
PY
