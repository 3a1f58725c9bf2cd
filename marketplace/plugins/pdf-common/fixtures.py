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
    put("zero", "text.pdf", text_pdf(TEXT))
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


def hostile(plugin, put):
    """The hostile inputs, each in the directory its answer belongs to for this plugin."""
    painted = b"0 g 10 10 5 5 re f"
    if plugin == "pdf.has-blank-page":
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
        put("one", "100000-pages-last-has-aa.pdf", hostile_pages(
            put, 100000, painted, painted,
            b" /AA << /O << /S /JavaScript /JS (app.alert(1)) >> >>"))
        put("zero", "100000-pages.pdf", hostile_pages(put, 100000, painted, painted))
        put("zero", "deflate-bomb-content.pdf", deflate_bomb())
        put("zero", "page-tree-loop.pdf", page_tree_loop())
    elif plugin == "pdf.has-embedded-files":
        put("one", "100000-pages-last-has-attachment.pdf", hostile_pages(
            put, 100000, painted, painted,
            b" /Annots [<< /Type /Annot /Subtype /FileAttachment /Rect [0 0 10 10]"
            b" /FS << /Type /Filespec /F (a.txt) >> >>]"))
        put("zero", "100000-pages.pdf", hostile_pages(put, 100000, painted, painted))
        put("zero", "deflate-bomb-content.pdf", deflate_bomb())
    if plugin in ("pdf.has-blank-page", "pdf.contains", "pdf.has-text-layer",
                  "pdf.has-embedded-files"):
        put("error", "page-tree-loop.pdf", page_tree_loop())


SMALL = {"pdf.has-blank-page": blank_page}


def main():
    plugin, out = sys.argv[1], sys.argv[2]
    needle = plugin == "pdf.contains"

    def put(kind, name, data):
        os.makedirs(os.path.join(out, kind), exist_ok=True)
        path = os.path.join(out, kind, name)
        open(path, "wb").write(data)
        if needle:
            open(path + ".inputs.json", "w").write(json.dumps({"needle": NEEDLE}) + "\n")

    if sys.argv[3:] == ["--hostile"]:
        hostile(plugin, put)
    else:
        SMALL[plugin](put)


if __name__ == "__main__":
    main()
