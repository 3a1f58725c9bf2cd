# mkpdf.py: writes small PDF files object by object, for the PDF plugins' fixtures
# (fixtures.py). Objects are bytes; streams are (dict bytes, data bytes); the cross-reference
# table and the trailer are computed, so that a fixture is a well-formed file unless it is meant
# to be broken.
import zlib


def stream(data, extra=b"", compress=False):
    """A stream object: its dictionary (with /Length) and its data, deflated when asked."""
    if compress:
        data = zlib.compress(data)
        extra += b" /Filter /FlateDecode"
    return b"<< /Length %d%s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"


def pdf(objects, root=1, trailer_extra=b"", version=b"1.7"):
    """The file: objects numbered from 1, a classic xref table, a trailer naming `root`."""
    out = bytearray(b"%PDF-" + version + b"\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root %d 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, root, trailer_extra, xref)
    return bytes(out)


def pages(contents, extra_page=b"", extra_objects=(), catalog_extra=b"", box=b"[0 0 612 792]",
          resources=b"<< /Font << /F1 4 0 R >> >>", trailer_extra=b"", compress=False):
    """A document of one page per content stream: 1 catalog, 2 pages, 3 unused, 4 Helvetica,
    then for each page its page object and its content stream, then extra_objects (numbered on
    from there). extra_page is added to every page dictionary (a bytes, or a list per page)."""
    n = len(contents)
    first = 5
    extra_first = first + 2 * n
    kids = b" ".join(b"%d 0 R" % (first + 2 * i) for i in range(n))
    objs = [b"<< /Type /Catalog /Pages 2 0 R" + catalog_extra + b" >>",
            b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % n,
            b"<< >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    for i, c in enumerate(contents):
        ep = extra_page[i] if isinstance(extra_page, list) else extra_page
        objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox " + box + b" /Resources " +
                    resources + b" /Contents %d 0 R" % (first + 2 * i + 1) + ep + b" >>")
        objs.append(stream(c, compress=compress))
    objs.extend(extra_objects)
    return pdf(objs, trailer_extra=trailer_extra), extra_first
