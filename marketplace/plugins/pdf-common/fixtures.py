#!/usr/bin/env python3
# fixtures.py: the PDF plugins' fixtures. `fixtures.py PLUGIN DIR` writes the small ones that are
# committed (DIR/one, DIR/zero, DIR/error; run it to remake them), `fixtures.py PLUGIN DIR
# --hostile` the large and hostile ones that make-fixtures.sh makes at build time. qpdf makes
# the encrypted and object-stream variants. Every file is synthetic.
import json
import os
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mkpdf import pages, pdf, stream  # noqa: E402

TEXT = b"BT /F1 12 Tf 72 720 Td (Quarterly report of Jane Roe) Tj ET"
NEEDLE = "Jane Roe"


def qpdf(data, *args):
    """data run through qpdf with args (encryption, object streams)."""
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "in.pdf"), os.path.join(d, "out.pdf")
        open(src, "wb").write(data)
        r = subprocess.run(["qpdf", *args, src, dst], stderr=subprocess.PIPE)
        if r.returncode not in (0, 3):  # 3: warnings
            raise SystemExit("qpdf: " + r.stderr.decode())
        return open(dst, "rb").read()


def user_password(data):
    return qpdf(data, "--encrypt", "secret-user", "secret-owner", "256", "--")


def owner_only(data, bits="256"):
    return qpdf(data, "--encrypt", "", "secret-owner", bits, "--")


def objstm(data):
    return qpdf(data, "--object-streams=generate", "--compress-streams=y")


def image(w, h, value, cs=b"/DeviceGray"):
    """An uncompressed w x h image XObject, every sample `value`."""
    n = 3 if cs == b"/DeviceRGB" else 1
    return stream(bytes([value]) * (w * h * n),
                  b" /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace %s"
                  b" /BitsPerComponent 8" % (w, h, cs))


def with_image(content, img, extra=()):
    """One page drawing image object 5+2 (after the page and its content) as /Im1."""
    return pages([content], resources=b"<< /Font << /F1 4 0 R >> /XObject << /Im1 7 0 R >> >>",
                 extra_objects=[img, *extra])[0]


def text_pdf(*contents):
    return pages(list(contents))[0]


# Common error cases: not a PDF, empty, cut before anything can be repaired.
def common_errors(put, locked_is_error=True):
    put("error", "not-a-pdf.txt", b"Quarterly report of Jane Roe\nnot a PDF at all\n")
    put("error", "empty.pdf", b"")
    put("error", "png-named-pdf.pdf", b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    put("error", "truncated-header-only.pdf", b"%PDF-1.7\n1 0 obj\n<< /Type /Cat")
    put("error", "no-pages.pdf", pdf([b"<< /Type /Catalog >>"]))
    if locked_is_error:
        put("error", "user-password.pdf", user_password(text_pdf(TEXT)))


def blank_page(put):
    put("one", "empty-content.pdf", text_pdf(TEXT, b""))
    put("one", "no-contents.pdf",
        pdf([b"<< /Type /Catalog /Pages 2 0 R >>",
             b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
             b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"]))
    put("one", "white-fill-rgb.pdf", text_pdf(b"1 1 1 rg 0 0 612 792 re f"))
    put("one", "white-fill-cmyk.pdf", text_pdf(b"0 0 0 0 k 0 0 612 792 re f 0 0 0 0 K 2 w 10 10 m 600 780 l S"))
    put("one", "white-fill-gray.pdf", text_pdf(b"1 g 100 100 200 200 re f"))
    put("one", "white-separation.pdf", pages(
        [b"/CS0 cs 0 scn 0 0 612 792 re f"],
        resources=b"<< /ColorSpace << /CS0 [/Separation /Spot /DeviceCMYK 7 0 R] >> >>",
        extra_objects=[b"<< /FunctionType 2 /Domain [0 1] /C0 [0 0 0 0] /C1 [0 0 0 1] /N 1 >>"])[0])
    put("one", "invisible-text.pdf", text_pdf(b"BT 3 Tr /F1 12 Tf 72 720 Td (OCR layer only) Tj ET"))
    put("one", "outside-crop-box.pdf", pages(
        [b"0 g 400 400 100 100 re f BT /F1 12 Tf 450 700 Td (outside) Tj ET"],
        extra_page=b" /CropBox [0 0 300 300]")[0])
    put("one", "outside-media-box.pdf", text_pdf(b"0 g 1000 1000 50 50 re f"))
    put("one", "white-image.pdf", with_image(b"q 200 0 0 200 100 100 cm /Im1 Do Q", image(8, 8, 255)))
    put("one", "white-image-rgb.pdf",
        with_image(b"q 200 0 0 200 100 100 cm /Im1 Do Q", image(4, 4, 255, b"/DeviceRGB")))
    put("one", "transparent-fill.pdf", pages(
        [b"/GS0 gs 0 g 0 0 612 792 re f"],
        resources=b"<< /ExtGState << /GS0 << /ca 0 >> >> >>")[0])
    put("one", "clip-only.pdf", text_pdf(b"q 0 0 100 100 re W n Q"))
    put("one", "zero-area-fill.pdf", text_pdf(b"0 g 100 100 m 300 100 l f"))
    put("one", "second-of-three.pdf", text_pdf(TEXT, b"1 g 0 0 612 792 re f", TEXT))
    put("one", "only-spaces.pdf", text_pdf(b"BT /F1 12 Tf 72 720 Td (     ) Tj ET"))
    put("one", "clipped-away.pdf", text_pdf(b"q 0 0 0 0 re W n 0 g 0 0 612 792 re f Q"))
    put("one", "clipped-outside-page.pdf", text_pdf(b"q 700 700 10 10 re W n 0 g 0 0 612 792 re f Q"))
    cell = b" /PatternType 1 /PaintType 1 /TilingType 1 /BBox [0 0 10 10] /XStep 20 /YStep 20"
    patterned = b"<< /Pattern << /P0 7 0 R >> >>"
    put("one", "tiling-pattern-white.pdf", pages(
        [b"/Pattern cs /P0 scn 300 300 200 200 re f"], resources=patterned,
        extra_objects=[stream(b"1 g 0 0 10 10 re f", cell + b" /Resources << >>")])[0])
    put("zero", "tiling-pattern.pdf", pages(
        [b"/Pattern cs /P0 scn 300 300 200 200 re f"], resources=patterned,
        extra_objects=[stream(b"0 g 0 0 10 10 re f", cell + b" /Resources << >>")])[0])
    put("zero", "tiling-pattern-in-clip.pdf", pages(
        [b"q 250 250 300 300 re W n /Pattern cs /P0 scn 300 300 200 200 re f Q"],
        resources=patterned,
        extra_objects=[stream(b"0 g 0 0 10 10 re f", cell + b" /Resources << >>")])[0])
    put("zero", "clipped-partly.pdf", text_pdf(b"q 0 0 100 100 re W n 0 g 0 0 612 792 re f Q"))
    put("zero", "text.pdf", text_pdf(TEXT))
    put("zero", "annotation-appearance-only.pdf", pages(
        [b""], extra_page=b" /Annots [<< /Type /Annot /Subtype /Square /Rect [100 100 200 200]"
        b" /AP << /N 7 0 R >> >>]",
        extra_objects=[stream(b"1 0 0 RG 4 w 2 2 96 96 re S",
                              b" /Type /XObject /Subtype /Form /BBox [0 0 100 100]")])[0])
    put("one", "hidden-annotation.pdf", pages(
        [b""], extra_page=b" /Annots [<< /Type /Annot /Subtype /Square /F 2 /Rect [100 100 200 200]"
        b" /AP << /N 7 0 R >> >>]",
        extra_objects=[stream(b"1 0 0 RG 4 w 2 2 96 96 re S",
                              b" /Type /XObject /Subtype /Form /BBox [0 0 100 100]")])[0])
    put("zero", "black-line.pdf", text_pdf(b"0 G 1 w 72 72 m 540 72 l S"))
    put("zero", "light-gray-fill.pdf", text_pdf(b"0.9 g 0 0 612 792 re f"))
    put("zero", "dark-image.pdf", with_image(b"q 200 0 0 200 100 100 cm /Im1 Do Q", image(8, 8, 40)))
    put("zero", "white-image-one-dark-pixel.pdf", with_image(
        b"q 200 0 0 200 100 100 cm /Im1 Do Q",
        stream(b"\xff" * 27 + b"\x00" + b"\xff" * 36,
               b" /Type /XObject /Subtype /Image /Width 8 /Height 8 /ColorSpace /DeviceGray"
               b" /BitsPerComponent 8")))
    put("zero", "image-mask-black.pdf", with_image(
        b"0 g q 200 0 0 200 100 100 cm /Im1 Do Q",
        stream(b"\x00" * 8, b" /Type /XObject /Subtype /Image /Width 8 /Height 8 /ImageMask true"
               b" /BitsPerComponent 1")))
    put("zero", "axial-shading.pdf", pages(
        [b"/Sh0 sh"],
        resources=b"<< /Shading << /Sh0 << /ShadingType 2 /ColorSpace /DeviceGray"
                  b" /Coords [0 0 612 0] /Function << /FunctionType 2 /Domain [0 1] /C0 [0] /C1 [1]"
                  b" /N 1 >> >> >> >>")[0])
    put("zero", "cmyk-text.pdf", text_pdf(b"0 0 0 1 k " + TEXT))
    put("zero", "partly-inside-crop-box.pdf", pages(
        [b"0 g 250 250 100 100 re f"], extra_page=b" /CropBox [0 0 300 300]")[0])
    put("zero", "all-pages-painted.pdf", text_pdf(TEXT, b"1 0 0 rg 10 10 5 5 re f", TEXT))
    put("zero", "white-and-black.pdf", text_pdf(b"1 g 0 0 612 792 re f 0 g 300 300 2 2 re f"))
    put("zero", "objstm-text.pdf", objstm(text_pdf(TEXT, TEXT)))
    common_errors(put)


def hostile_pages(put, n, page_content, last_content, extra_last=b""):
    """n pages sharing one content stream and their resources (inherited from the page tree),
    the last with its own content: a file of n small page objects in one flat Kids array."""
    kids = b" ".join(b"%d 0 R" % (6 + i) for i in range(n))
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [" + kids + b"] /Count %d /MediaBox [0 0 612 792]"
            b" /Resources << /Font << /F1 5 0 R >> >> >>" % n,
            stream(page_content), stream(last_content),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    for i in range(n):
        last = i == n - 1
        objs.append(b"<< /Type /Page /Parent 2 0 R /Contents %d 0 R%s >>"
                    % (4 if last else 3, extra_last if last else b""))
    return pdf(objs)


def page_tree_loop():
    """Pages whose Kids name the Pages node itself, with a /Count that lies."""
    return pdf([b"<< /Type /Catalog /Pages 2 0 R >>",
                b"<< /Type /Pages /Kids [3 0 R 2 0 R] /Count 2 >>",
                b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
                stream(TEXT)])


def deflate_bomb():
    """One page whose content stream inflates to 1 GiB of spaces (1 MiB deflated)."""
    z = zlib.compressobj(9)
    chunk = b" " * (1 << 20)
    data = b"".join(z.compress(chunk) for _ in range(1024)) + z.flush()
    return pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream"])


def scan_600dpi():
    """A letter page scanned at 600 dpi: a 5100 x 6600 RGB image (101 MB decoded), all white."""
    w, h = 5100, 6600
    z = zlib.compressobj(9)
    row = b"\xff" * (w * 3)
    data = b"".join(z.compress(row) for _ in range(h)) + z.flush()
    img = (b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceRGB"
           b" /BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n" % (w, h, len(data))
           + data + b"\nendstream")
    return with_image(b"q 612 0 0 792 0 0 cm /Im1 Do Q", img)


def image_65535():
    """An image claiming 65535 x 65535 RGB pixels (12 GiB) with 1000 bytes of data."""
    data = zlib.compress(b"\0" * 1000)
    img = (b"<< /Type /XObject /Subtype /Image /Width 65535 /Height 65535 /ColorSpace /DeviceRGB"
           b" /BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n" % len(data)
           + data + b"\nendstream")
    return with_image(b"q 612 0 0 792 0 0 cm /Im1 Do Q", img)


def ghostscript_pages(n):
    """n pages of text as Ghostscript's pdfwrite makes them (embedded subset fonts, compressed
    streams), NEEDLE on the last page only."""
    ps = ("/Times-Roman findfont 11 scalefont setfont 1 1 %d { /n exch def 72 720 moveto"
          " (Page ) show n 10 string cvs show 40 { 72 700 moveto (The quick brown fox jumps over"
          " the lazy dog, line after line.) show } repeat n %d eq { 72 100 moveto (%s) show } if"
          " showpage } for\n" % (n, n, NEEDLE))
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.pdf")
        subprocess.run(["gs", "-q", "-dNOPAUSE", "-dBATCH", "-dSAFER", "-sDEVICE=pdfwrite",
                        "-sOutputFile=" + out, "-"], input=ps.encode(), check=True)
        return open(out, "rb").read()


def hostile(plugin, put):
    """The hostile inputs, each in the directory its answer belongs to for this plugin."""
    painted = b"0 g 10 10 5 5 re f"
    if plugin == "pdf.has-blank-page":
        put("one", "gstate-nesting-50000.pdf", text_pdf(b"q " * 50000 + b"1 g 0 0 612 792 re f"))
        put("one", "100000-pages-last-blank.pdf", hostile_pages(put, 100000, painted, b""))
        put("zero", "100000-pages-painted.pdf", hostile_pages(put, 100000, painted, painted))
        put("one", "deflate-bomb-content.pdf", deflate_bomb())
    elif plugin == "pdf.contains":
        put("one", "100000-pages-last-has-it.pdf", hostile_pages(put, 100000, painted, TEXT))
        put("zero", "100000-pages-none.pdf", hostile_pages(put, 100000, painted, painted))
        put("zero", "deflate-bomb-content.pdf", deflate_bomb())
    elif plugin == "pdf.has-text-layer":
        put("one", "100000-pages-last-has-text.pdf", hostile_pages(put, 100000, painted, TEXT))
        put("zero", "100000-pages-no-text.pdf", hostile_pages(put, 100000, painted, painted))
        put("zero", "deflate-bomb-content.pdf", deflate_bomb())
    elif plugin == "pdf.is-encrypted":
        put("zero", "100000-pages.pdf", hostile_pages(put, 100000, painted, painted))
        put("zero", "deflate-bomb-content.pdf", deflate_bomb())
        put("zero", "page-tree-loop.pdf", page_tree_loop())
    elif plugin == "pdf.has-javascript":
        put("zero", "array-nesting-200000.pdf", pages(
            [TEXT], catalog_extra=b" /Deep 7 0 R",
            extra_objects=[b"[" * 200000 + b"]" * 200000])[0])
        put("one", "100000-pages-last-has-aa.pdf", hostile_pages(
            put, 100000, painted, painted,
            b" /AA << /O << /S /JavaScript /JS (app.alert(1)) >> >>"))
        put("zero", "100000-pages.pdf", hostile_pages(put, 100000, painted, painted))
        put("zero", "deflate-bomb-content.pdf", deflate_bomb())
    elif plugin == "pdf.has-embedded-files":
        put("one", "100000-pages-last-has-attachment.pdf", hostile_pages(
            put, 100000, painted, painted,
            b" /Annots [<< /Type /Annot /Subtype /FileAttachment /Rect [0 0 10 10]"
            b" /FS << /Type /Filespec /F (a.txt) >> >>]"))
        put("zero", "100000-pages.pdf", hostile_pages(put, 100000, painted, painted))
        put("zero", "deflate-bomb-content.pdf", deflate_bomb())
    # Large and hostile documents every plugin reads: the answer each gives.
    answers = {"pdf.has-blank-page": ("zero", "one", "zero"), "pdf.contains": ("one", "zero", "zero"),
               "pdf.has-text-layer": ("one", "zero", "zero")}
    text3000, scan, huge = answers.get(plugin, ("zero", "zero", "zero"))
    put(text3000, "ghostscript-3000-pages.pdf", ghostscript_pages(3000))
    put(scan, "scan-600dpi-white.pdf", scan_600dpi())
    put(huge, "image-65535x65535.pdf", image_65535())
    if plugin != "pdf.is-encrypted":
        put("error", "page-tree-loop.pdf", page_tree_loop())


def contains(put):
    put("one", "one-line.pdf", text_pdf(TEXT))
    put("one", "across-lines.pdf", text_pdf(
        b"BT /F1 12 Tf 72 720 Td (Report of Jane) Tj 0 -14 Td (Roe and others) Tj ET"))
    put("one", "kerned-segments.pdf", text_pdf(
        b"BT /F1 12 Tf 72 720 Td [(Ja) -20 (ne) -250 (R) 10 (oe)] TJ ET"))
    put("one", "on-third-page.pdf", text_pdf(b"BT /F1 12 Tf 72 720 Td (nothing) Tj ET",
                                             b"", TEXT))
    put("one", "invisible-ocr-layer.pdf", with_image(
        b"q 612 0 0 792 0 0 cm /Im1 Do Q BT 3 Tr /F1 12 Tf 72 720 Td (Jane Roe) Tj ET",
        image(8, 8, 200)))
    put("one", "form-xobject.pdf", pages(
        [b"/Fm1 Do"],
        resources=b"<< /XObject << /Fm1 7 0 R >> >>",
        extra_objects=[stream(TEXT, b" /Type /XObject /Subtype /Form /BBox [0 0 612 792]"
                                    b" /Resources << /Font << /F1 4 0 R >> >>")])[0])
    put("one", "compressed-objstm.pdf", objstm(text_pdf(TEXT)))
    put("one", "owner-password-only.pdf", owner_only(text_pdf(TEXT)))
    put("one", "extra-spaces.pdf", text_pdf(b"BT /F1 12 Tf 72 720 Td (Jane     Roe) Tj ET"))
    winansi = (b"<< /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica"
               b" /Encoding /WinAnsiEncoding >> >> >>")
    put("one", "non-ascii-winansi.pdf", pages(
        [b"BT /F1 12 Tf 72 720 Td (Zo\353 Garc\355a) Tj ET"], resources=winansi)[0],
        "Zo\u00eb Garc\u00eda")
    put("zero", "non-ascii-without-accents.pdf", pages(
        [b"BT /F1 12 Tf 72 720 Td (Zoe Garcia) Tj ET"], resources=winansi)[0],
        "Zo\u00eb Garc\u00eda")
    put("zero", "absent.pdf", text_pdf(b"BT /F1 12 Tf 72 720 Td (Quarterly report) Tj ET"))
    put("zero", "other-case.pdf", text_pdf(b"BT /F1 12 Tf 72 720 Td (jane roe) Tj ET"))
    put("zero", "split-across-pages.pdf", text_pdf(b"BT /F1 12 Tf 72 720 Td (Jane) Tj ET",
                                                   b"BT /F1 12 Tf 72 720 Td (Roe) Tj ET"))
    put("zero", "scan-only.pdf", with_image(b"q 612 0 0 792 0 0 cm /Im1 Do Q", image(8, 8, 90)))
    put("zero", "only-in-metadata.pdf", pages(
        [b"BT /F1 12 Tf 72 720 Td (Quarterly report) Tj ET"],
        extra_objects=[b"<< /Title (Jane Roe) /Author (Jane Roe) >>"],
        trailer_extra=b" /Info 7 0 R")[0])
    put("zero", "outside-media-box.pdf", text_pdf(b"BT /F1 12 Tf 900 900 Td (Jane Roe) Tj ET"))
    put("zero", "in-a-comment.pdf", text_pdf(b"% Jane Roe\nBT /F1 12 Tf 72 720 Td (report) Tj ET"))
    put("zero", "without-space.pdf", text_pdf(b"BT /F1 12 Tf 72 720 Td (JaneRoe) Tj ET"))
    common_errors(put)


def text_layer(put):
    put("one", "text.pdf", text_pdf(TEXT))
    put("one", "invisible-ocr-layer.pdf", with_image(
        b"q 612 0 0 792 0 0 cm /Im1 Do Q BT 3 Tr /F1 12 Tf 72 720 Td (scanned words) Tj ET",
        image(8, 8, 200)))
    put("one", "white-text.pdf", text_pdf(b"1 g " + TEXT))
    put("one", "text-on-second-page.pdf", text_pdf(b"", TEXT))
    put("one", "one-character.pdf", text_pdf(b"BT /F1 12 Tf 72 720 Td (x) Tj ET"))
    put("one", "owner-password-only.pdf", owner_only(text_pdf(TEXT)))
    put("zero", "scan-only.pdf", with_image(b"q 612 0 0 792 0 0 cm /Im1 Do Q", image(8, 8, 90)))
    put("zero", "blank.pdf", text_pdf(b""))
    put("zero", "vector-drawing.pdf", text_pdf(b"0 G 2 w 72 72 m 540 720 l S 0 0 1 rg 100 100 50 50 re f"))
    put("zero", "only-spaces.pdf", text_pdf(b"BT /F1 12 Tf 72 720 Td (    ) Tj ET"))
    put("zero", "text-outside-media-box.pdf", text_pdf(b"BT /F1 12 Tf 900 900 Td (far away) Tj ET"))
    put("zero", "text-only-in-metadata.pdf", pages(
        [b""], extra_objects=[b"<< /Title (A title) >>"], trailer_extra=b" /Info 7 0 R")[0])
    common_errors(put)


def is_encrypted(put):
    plain = text_pdf(TEXT)
    put("one", "user-password-aes256.pdf", user_password(plain))
    put("one", "user-password-aes128.pdf", qpdf(plain, "--encrypt", "u", "o", "128", "--use-aes=y", "--"))
    put("one", "user-password-rc4-128.pdf", qpdf(plain, "--allow-weak-crypto", "--encrypt", "u", "o", "128", "--use-aes=n", "--"))
    put("one", "owner-only-aes256.pdf", owner_only(plain))
    put("one", "owner-only-rc4-40.pdf", qpdf(plain, "--allow-weak-crypto", "--encrypt", "", "o", "40", "--"))
    put("one", "owner-only-objstm.pdf", qpdf(plain, "--object-streams=generate", "--encrypt", "", "o", "256", "--"))
    put("one", "unknown-security-handler.pdf", pages(
        [TEXT], extra_objects=[b"<< /Filter /FooSec /V 9 /R 9 /Length 128 >>"],
        trailer_extra=b" /Encrypt 7 0 R /ID [<00112233445566778899aabbccddeeff>"
                      b" <00112233445566778899aabbccddeeff>]")[0])
    put("zero", "plain.pdf", plain)
    put("zero", "objstm.pdf", objstm(plain))
    put("zero", "encrypt-in-text.pdf", text_pdf(b"BT /F1 12 Tf 72 720 Td (/Encrypt 5 0 R) Tj ET"))
    put("zero", "encrypt-in-info.pdf", pages(
        [TEXT], extra_objects=[b"<< /Title (Encrypt) /Encrypt (no) >>"],
        trailer_extra=b" /Info 7 0 R")[0])
    common_errors(put, locked_is_error=False)


JS = b"<< /S /JavaScript /JS (app.alert\\(1\\)) >>"


def has_javascript(put):
    put("one", "open-action.pdf", pages([TEXT], catalog_extra=b" /OpenAction " + JS)[0])
    put("one", "name-tree.pdf", pages(
        [TEXT], catalog_extra=b" /Names << /JavaScript << /Names [(init) 7 0 R] >> >>",
        extra_objects=[JS])[0])
    put("one", "name-tree-kids.pdf", pages(
        [TEXT], catalog_extra=b" /Names << /JavaScript << /Kids [7 0 R] >> >>",
        extra_objects=[b"<< /Limits [(a) (z)] /Names [(init) 8 0 R] >>", JS])[0])
    put("one", "link-annotation.pdf", pages(
        [TEXT], extra_page=b" /Annots [<< /Type /Annot /Subtype /Link /Rect [0 0 100 100] /A "
        + JS + b" >>]")[0])
    put("one", "page-open-aa.pdf", pages([TEXT], extra_page=b" /AA << /O " + JS + b" >>")[0])
    put("one", "widget-keystroke-aa.pdf", pages(
        [TEXT], extra_page=b" /Annots [7 0 R]",
        catalog_extra=b" /AcroForm << /Fields [7 0 R] >>",
        extra_objects=[b"<< /Type /Annot /Subtype /Widget /FT /Tx /T (f) /Rect [0 0 100 20]"
                       b" /P 5 0 R /AA << /K " + JS + b" >> >>"])[0])
    put("one", "next-chain.pdf", pages(
        [TEXT], catalog_extra=b" /OpenAction << /S /URI /URI (https://example.org/) /Next [<< /S"
        b" /Named /N /NextPage >> " + JS + b"] >>")[0])
    put("one", "outline-item.pdf", pages(
        [TEXT], catalog_extra=b" /Outlines 7 0 R",
        extra_objects=[b"<< /Type /Outlines /First 8 0 R /Last 8 0 R /Count 1 >>",
                       b"<< /Title (Start) /Parent 7 0 R /A " + JS + b" >>"])[0])
    put("one", "document-aa.pdf", pages([TEXT], catalog_extra=b" /AA << /WC " + JS + b" >>")[0])
    put("one", "in-object-stream.pdf", objstm(pages([TEXT], catalog_extra=b" /OpenAction 7 0 R",
                                                    extra_objects=[JS])[0]))
    put("one", "owner-password-only.pdf", owner_only(
        pages([TEXT], catalog_extra=b" /OpenAction 7 0 R", extra_objects=[JS])[0]))
    put("one", "js-stream.pdf", pages(
        [TEXT], catalog_extra=b" /OpenAction << /S /JavaScript /JS 7 0 R >>",
        extra_objects=[stream(b"app.alert(1);")])[0])
    put("zero", "plain.pdf", text_pdf(TEXT))
    put("zero", "javascript-in-text.pdf", text_pdf(
        b"BT /F1 12 Tf 72 720 Td (/S /JavaScript /JS app.alert) Tj ET"))
    put("zero", "uri-action.pdf", pages(
        [TEXT], catalog_extra=b" /OpenAction << /S /URI /URI (https://example.org/) >>")[0])
    put("zero", "unreachable-object.pdf", pages([TEXT], extra_objects=[JS])[0])
    put("zero", "empty-name-tree.pdf", pages(
        [TEXT], catalog_extra=b" /Names << /JavaScript << /Names [] >> >>")[0])
    put("zero", "named-destinations.pdf", pages(
        [TEXT], catalog_extra=b" /Names << /Dests << /Names [(intro) [5 0 R /Fit]] >> >>")[0])
    put("zero", "owner-password-only.pdf", owner_only(text_pdf(TEXT)))
    common_errors(put)
    put("error", "user-password-with-javascript.pdf", user_password(
        pages([TEXT], catalog_extra=b" /OpenAction " + JS)[0]))


FILESPEC = (b"<< /Type /Filespec /F (notes.txt) /UF (notes.txt) /EF << /F 8 0 R >> >>")
EMBEDDED = stream(b"hello\n", b" /Type /EmbeddedFile")


def has_embedded_files(put):
    put("one", "name-tree.pdf", pages(
        [TEXT], catalog_extra=b" /Names << /EmbeddedFiles << /Names [(notes.txt) 7 0 R] >> >>",
        extra_objects=[FILESPEC, EMBEDDED])[0])
    put("one", "name-tree-kids.pdf", pages(
        [TEXT], catalog_extra=b" /Names << /EmbeddedFiles << /Kids [9 0 R] >> >>",
        extra_objects=[FILESPEC, EMBEDDED,
                       b"<< /Limits [(a) (z)] /Names [(notes.txt) 7 0 R] >>"])[0])
    put("one", "file-attachment-annotation.pdf", pages(
        [TEXT, TEXT], extra_page=[b"", b" /Annots [<< /Type /Annot /Subtype /FileAttachment"
                                        b" /Rect [0 0 20 20] /FS 9 0 R >>]"],
        extra_objects=[FILESPEC.replace(b"8 0 R", b"10 0 R"), EMBEDDED])[0])
    put("one", "in-object-stream.pdf", objstm(pages(
        [TEXT], catalog_extra=b" /Names << /EmbeddedFiles << /Names [(notes.txt) 7 0 R] >> >>",
        extra_objects=[FILESPEC, EMBEDDED])[0]))
    put("one", "owner-password-only.pdf", owner_only(pages(
        [TEXT], catalog_extra=b" /Names << /EmbeddedFiles << /Names [(notes.txt) 7 0 R] >> >>",
        extra_objects=[FILESPEC, EMBEDDED])[0]))
    put("zero", "plain.pdf", text_pdf(TEXT))
    put("zero", "empty-name-tree.pdf", pages(
        [TEXT], catalog_extra=b" /Names << /EmbeddedFiles << /Names [] >> >>")[0])
    put("zero", "link-annotation.pdf", pages(
        [TEXT], extra_page=b" /Annots [<< /Type /Annot /Subtype /Link /Rect [0 0 100 100]"
        b" /A << /S /URI /URI (https://example.org/) >> >>]")[0])
    put("zero", "launch-action-external-file.pdf", pages(
        [TEXT], catalog_extra=b" /OpenAction << /S /Launch /F (notes.txt) >>")[0])
    put("zero", "unreachable-filespec.pdf", pages([TEXT], extra_objects=[FILESPEC, EMBEDDED])[0])
    put("zero", "embeddedfiles-in-text.pdf", text_pdf(
        b"BT /F1 12 Tf 72 720 Td (/EmbeddedFiles /FileAttachment) Tj ET"))
    common_errors(put)


SMALL = {"pdf.has-blank-page": blank_page, "pdf.contains": contains,
         "pdf.has-text-layer": text_layer, "pdf.is-encrypted": is_encrypted,
         "pdf.has-javascript": has_javascript, "pdf.has-embedded-files": has_embedded_files}


def main():
    plugin, out = sys.argv[1], sys.argv[2]
    needle = plugin == "pdf.contains"

    def put(kind, name, data, value=NEEDLE):
        os.makedirs(os.path.join(out, kind), exist_ok=True)
        path = os.path.join(out, kind, name)
        open(path, "wb").write(data)
        if needle:
            open(path + ".inputs.json", "w").write(json.dumps({"needle": value}) + "\n")

    if sys.argv[3:] == ["--hostile"]:
        hostile(plugin, put)
    else:
        SMALL[plugin](put)


if __name__ == "__main__":
    main()
