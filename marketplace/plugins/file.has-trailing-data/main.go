// Official plugin file.has-trailing-data (protocol 1): are there bytes after the file format's
// logical end?
//
// The format is told by the file's first bytes (PNG, GIF, JPEG and ZIP by their signature at
// offset 0, PDF by "%PDF-" in its first 1024 bytes); the logical end is then found by walking the
// format's structure: PNG's chunks up to IEND, GIF's blocks up to its trailer, JPEG's segments
// and entropy-coded data up to EOI, ZIP's end of central directory record and the comment it
// declares, PDF's last %%EOF that closes a cross-reference section (startxref), past whitespace.
// A file in none of these formats, or whose structure breaks before its end (truncated,
// malformed), fails the run: it has no answer. Memory does not grow with the input: the file is
// read through a window of 64 KiB.
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"

	"lockd/marketplace/zipread"
	"lockd/sdk"
)

var errUnknown = errors.New("not a PDF, ZIP, PNG, JPEG or GIF file")

// byteAt returns the byte at offset p of the window w.
func byteAt(w *zipread.Window, p int64) (byte, error) {
	b, err := w.At(p, 1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

// trailing answers the question for the file r of length size: whether bytes follow the
// format's logical end. It fails for a file in no format it knows and for a structure that
// breaks before its end.
func trailing(r io.ReaderAt, size int64) (bool, error) {
	w := zipread.NewWindow(r, size)
	n := int64(1024)
	if size < n {
		n = size
	}
	head, err := w.At(0, int(n))
	if err != nil {
		return false, err
	}
	head = append([]byte(nil), head...)
	var end int64
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		end, err = pngEnd(w)
	case bytes.HasPrefix(head, []byte("GIF87a")) || bytes.HasPrefix(head, []byte("GIF89a")):
		end, err = gifEnd(w)
	case bytes.HasPrefix(head, []byte{0xFF, 0xD8, 0xFF}):
		end, err = jpegEnd(w)
	case zipread.IsZip(head):
		end, err = zipEnd(w)
	case bytes.Contains(head, []byte("%PDF-")):
		end, err = pdfEnd(w)
	default:
		return false, errUnknown
	}
	if err != nil {
		return false, err
	}
	if end > size {
		return false, zipread.ErrTruncated
	}
	return end < size, nil
}

// pngEnd returns the offset just past a PNG file's IEND chunk: the chunks are walked by their
// lengths from the signature on (PNG, 5.3). A chunk type that is not four ASCII letters, a length
// over 2^31-1 or a chunk past the end of the file is a malformed file.
func pngEnd(w *zipread.Window) (int64, error) {
	p := int64(8)
	for {
		h, err := w.At(p, 8)
		if err != nil {
			return 0, err
		}
		length := binary.BigEndian.Uint32(h[0:4])
		if length > 1<<31-1 {
			return 0, errors.New("png: chunk length over 2^31-1")
		}
		for _, c := range h[4:8] {
			if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
				return 0, errors.New("png: chunk type is not four letters")
			}
		}
		next := p + 12 + int64(length)
		if next > w.Size {
			return 0, zipread.ErrTruncated
		}
		if string(h[4:8]) == "IEND" {
			return next, nil
		}
		p = next
	}
}

// gifEnd returns the offset just past a GIF file's trailer (0x3B): the header, the logical
// screen descriptor and its global colour table, then blocks (images with their local colour
// tables and data sub-blocks, extensions with their sub-blocks) up to the trailer (GIF89a, 17-27).
// A block introducer that is none of these is a malformed file.
func gifEnd(w *zipread.Window) (int64, error) {
	lsd, err := w.At(6, 7)
	if err != nil {
		return 0, err
	}
	p := int64(13)
	if lsd[4]&0x80 != 0 {
		p += 3 << (uint(lsd[4]&7) + 1)
	}
	for {
		b, err := byteAt(w, p)
		if err != nil {
			return 0, err
		}
		switch b {
		case 0x3B:
			return p + 1, nil
		case 0x21: // an extension: its label, then sub-blocks
			if p, err = skipSubBlocks(w, p+2); err != nil {
				return 0, err
			}
		case 0x2C: // an image descriptor, a local colour table, the LZW code size, sub-blocks
			d, err := w.At(p, 10)
			if err != nil {
				return 0, err
			}
			p += 10
			if d[9]&0x80 != 0 {
				p += 3 << (uint(d[9]&7) + 1)
			}
			if p, err = skipSubBlocks(w, p+1); err != nil {
				return 0, err
			}
		default:
			return 0, errors.New("gif: unknown block introducer")
		}
	}
}

// skipSubBlocks returns the offset past the data sub-blocks that start at p, the last of them
// the empty block terminator.
func skipSubBlocks(w *zipread.Window, p int64) (int64, error) {
	for {
		n, err := byteAt(w, p)
		if err != nil {
			return 0, err
		}
		p += 1 + int64(n)
		if n == 0 {
			return p, nil
		}
	}
}

// jpegEnd returns the offset just past a JPEG file's EOI marker: markers and their segments are
// walked by their lengths from SOI on, and after each SOS the entropy-coded data is scanned to
// the next marker (ITU T.81, B.1: 0xFF00 is a stuffed byte, RST0-7 belong to the data, more 0xFF
// are fill). A segment inside another one (an EXIF thumbnail's own EOI) is skipped with it. A
// byte that is not a marker where one must be, a second SOI or a truncated segment is a malformed
// file.
func jpegEnd(w *zipread.Window) (int64, error) {
	p := int64(2)
	for {
		b, err := byteAt(w, p)
		if err != nil {
			return 0, err
		}
		if b != 0xFF {
			return 0, errors.New("jpeg: no marker where one must be")
		}
		// Fill bytes: any number of 0xFF before the marker's code.
		var m byte
		for {
			p++
			if m, err = byteAt(w, p); err != nil {
				return 0, err
			}
			if m != 0xFF {
				break
			}
		}
		p++ // past the code
		switch {
		case m == 0xD9: // EOI
			return p, nil
		case m == 0xD8 || m == 0x00:
			return 0, errors.New("jpeg: SOI or a stuffed byte where a marker must be")
		case m >= 0xD0 && m <= 0xD7 || m == 0x01: // RSTn and TEM stand alone
			continue
		}
		l, err := w.At(p, 2)
		if err != nil {
			return 0, err
		}
		length := int64(binary.BigEndian.Uint16(l))
		if length < 2 {
			return 0, errors.New("jpeg: segment length under 2")
		}
		p += length
		if p > w.Size {
			return 0, zipread.ErrTruncated
		}
		if m == 0xDA { // SOS: entropy-coded data up to the next marker
			if p, err = scanEntropy(w, p); err != nil {
				return 0, err
			}
		}
	}
}

// scanEntropy returns the offset of the marker that ends the entropy-coded data starting at p:
// the first 0xFF followed by a code other than 0x00 (a stuffed byte), RST0-7 or 0xFF (fill).
func scanEntropy(w *zipread.Window, p int64) (int64, error) {
	for {
		// Skip to the next 0xFF a window at a time.
		n := int64(zipread.WindowSize)
		if w.Size-p < n {
			n = w.Size - p
		}
		if n <= 0 {
			return 0, zipread.ErrTruncated
		}
		chunk, err := w.At(p, int(n))
		if err != nil {
			return 0, err
		}
		i := bytes.IndexByte(chunk, 0xFF)
		if i < 0 {
			p += n
			continue
		}
		p += int64(i)
		c, err := byteAt(w, p+1)
		if err != nil {
			return 0, err
		}
		switch {
		case c == 0x00 || c >= 0xD0 && c <= 0xD7:
			p += 2
		case c == 0xFF:
			p++
		default:
			return p, nil
		}
	}
}

// zipEnd returns the offset just past a ZIP archive's end of central directory record and the
// comment it declares (APPNOTE.TXT, 4.3.16), the record zipread.FindDirectory finds.
func zipEnd(w *zipread.Window) (int64, error) {
	d, err := zipread.FindDirectory(w)
	if err != nil {
		return 0, err
	}
	return d.EndOff + d.EndLen, nil
}

// isPDFSpace tells whether c is PDF white-space (ISO 32000-1, 7.2.2): NUL, HT, LF, FF, CR, SP.
func isPDFSpace(c byte) bool {
	return c == 0 || c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' '
}

// pdfEnd returns the offset of a PDF file's logical end past the whitespace that follows it: the
// last %%EOF that closes a cross-reference section ("startxref", an offset, "%%EOF"; ISO
// 32000-1, 7.5.5), so that an incremental update (7.5.6) or a linearized file's first-page
// section (Annex F), each closed the same way, is part of the file, and a %%EOF among appended
// bytes is not. A file with no such %%EOF ends at its last %%EOF; a file with no %%EOF at all is
// truncated.
func pdfEnd(w *zipread.Window) (int64, error) {
	pat := []byte("%%EOF")
	scan := zipread.NewWindow(w.R, w.Size)
	last := int64(-1)
	limit := w.Size
	for {
		p, err := scan.LastIndex(pat, limit)
		if err != nil {
			return 0, err
		}
		if p < 0 {
			break
		}
		if last < 0 {
			last = p
		}
		closes, err := closesXref(w, p)
		if err != nil {
			return 0, err
		}
		if closes {
			return skipPDFSpace(w, p+int64(len(pat)))
		}
		limit = p + int64(len(pat)) - 1
	}
	if last < 0 {
		return 0, errors.New("pdf: no %%EOF")
	}
	return skipPDFSpace(w, last+int64(len(pat)))
}

// closesXref tells whether the %%EOF at p follows "startxref", white-space, an offset in digits
// and white-space.
func closesXref(w *zipread.Window, p int64) (bool, error) {
	start := p - 64
	if start < 0 {
		start = 0
	}
	b, err := w.At(start, int(p-start))
	if err != nil {
		return false, err
	}
	b = append([]byte(nil), b...)
	i := len(b)
	for i > 0 && isPDFSpace(b[i-1]) {
		i--
	}
	j := i
	for j > 0 && b[j-1] >= '0' && b[j-1] <= '9' {
		j--
	}
	if j == i {
		return false, nil
	}
	k := j
	for k > 0 && isPDFSpace(b[k-1]) {
		k--
	}
	return k < j && bytes.HasSuffix(b[:k], []byte("startxref")), nil
}

// skipPDFSpace returns the offset of the first byte at or after p that is not white-space.
func skipPDFSpace(w *zipread.Window, p int64) (int64, error) {
	for p < w.Size {
		c, err := byteAt(w, p)
		if err != nil {
			return 0, err
		}
		if !isPDFSpace(c) {
			return p, nil
		}
		p++
	}
	return p, nil
}

// check answers for the input file.
func check(in *os.File) (bool, error) {
	st, err := in.Stat()
	if err != nil {
		return false, err
	}
	return trailing(in, st.Size())
}

func main() {
	sdk.Run(check)
}
