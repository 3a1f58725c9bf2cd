// image.has-gps' container walkers: JPEG segments, PNG chunks, WebP RIFF chunks, each handing the
// EXIF and XMP it finds to the metadata readers.

package main

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"strconv"
	"strings"
)

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// Caps that bound the work on a hostile file: the metadata one chunk may expand to, what all of
// a PNG's compressed text chunks may expand to together, and the extended XMP a JPEG may
// assemble.
const (
	metadataMax    = 16 << 20
	inflatedMax    = 64 << 20
	extendedXMPMax = 16 << 20
)

var (
	errJPEG = errors.New("damaged JPEG structure")
	errPNG  = errors.New("damaged PNG structure")
	errWebP = errors.New("damaged WebP structure")
	errBig  = errors.New("metadata expands past the plugin's cap")
)

// The APP1 signatures of EXIF and of XMP, main and extended (XMP Specification Part 3, 1.1.3).
var (
	jpegEXIF        = []byte("Exif\x00")
	jpegXMP         = []byte("http://ns.adobe.com/xap/1.0/\x00")
	jpegExtendedXMP = []byte("http://ns.adobe.com/xmp/extension/\x00")
)

// jpeg walks the JPEG's marker segments from SOI to the first SOS (or EOI), reading the EXIF and
// XMP of APP1 segments, and the extended XMP's chunks, assembled by GUID. A file that ends
// before its first scan, a segment that runs past the file, or extended XMP past its cap is an
// error.
func (p *position) jpeg(r io.ReaderAt, size int64) error {
	in := bufio.NewReader(io.NewSectionReader(r, 2, size-2))
	extended := map[string][]byte{}
	total := 0
	for {
		b, err := in.ReadByte()
		if err != nil {
			return fmt.Errorf("%w: it ends before its first scan", errJPEG)
		}
		if b != 0xFF {
			return fmt.Errorf("%w: a segment does not start with a marker", errJPEG)
		}
		m, err := in.ReadByte()
		for err == nil && m == 0xFF {
			m, err = in.ReadByte() // fill bytes
		}
		if err != nil {
			return fmt.Errorf("%w: it ends before its first scan", errJPEG)
		}
		if m == 0xDA || m == 0xD9 {
			break // SOS: metadata comes before the scans; EOI: an image without one
		}
		if m == 0x01 || m >= 0xD0 && m <= 0xD7 {
			continue // TEM and RSTn stand alone
		}
		var l [2]byte
		if _, err := io.ReadFull(in, l[:]); err != nil {
			return fmt.Errorf("%w: it ends inside a segment", errJPEG)
		}
		n := int(binary.BigEndian.Uint16(l[:]))
		if n < 2 {
			return fmt.Errorf("%w: a segment length below 2", errJPEG)
		}
		if m != 0xE1 {
			if _, err := in.Discard(n - 2); err != nil {
				return fmt.Errorf("%w: it ends inside a segment", errJPEG)
			}
			continue
		}
		seg := make([]byte, n-2)
		if _, err := io.ReadFull(in, seg); err != nil {
			return fmt.Errorf("%w: it ends inside a segment", errJPEG)
		}
		switch {
		case bytes.HasPrefix(seg, jpegEXIF):
			err = p.exif(seg)
		case bytes.HasPrefix(seg, jpegXMP):
			err = p.xmp(seg[len(jpegXMP):])
		case bytes.HasPrefix(seg, jpegExtendedXMP):
			// GUID (32 bytes), full length and offset (big-endian), then this chunk's data.
			c := seg[len(jpegExtendedXMP):]
			if len(c) < 40 {
				return fmt.Errorf("%w: an extended XMP chunk without its header", errJPEG)
			}
			guid := string(c[:32])
			full := int(binary.BigEndian.Uint32(c[32:]))
			off := int(binary.BigEndian.Uint32(c[36:]))
			buf, ok := extended[guid]
			if !ok {
				if full > extendedXMPMax-total {
					return errBig
				}
				total += full
				buf = make([]byte, full)
				extended[guid] = buf
			}
			if off > len(buf) || len(c)-40 > len(buf)-off {
				return fmt.Errorf("%w: an extended XMP chunk outside its packet", errJPEG)
			}
			copy(buf[off:], c[40:])
		}
		if err != nil {
			return err
		}
	}
	for _, x := range extended {
		if err := p.xmp(x); err != nil {
			return err
		}
	}
	return nil
}

// inflate returns the zlib stream b expanded, or an error past metadataMax, past what is left
// of inflatedMax for the whole file (p.inflated counts it), or for a damaged stream. The bytes
// are in p.scratch, one buffer for every chunk, grown as needed and valid until the next call.
func (p *position) inflate(b []byte) ([]byte, error) {
	z, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	limit := int64(metadataMax)
	if left := inflatedMax - p.inflated; left < limit {
		limit = left
	}
	buf := bytes.NewBuffer(p.scratch[:0])
	n, err := buf.ReadFrom(io.LimitReader(z, limit+1))
	p.scratch = buf.Bytes()
	if err != nil {
		return nil, err
	}
	p.inflated += n
	if n > limit {
		return nil, errBig
	}
	// The stream must end where its data does, with its Adler-32 right.
	if _, err := z.Read(make([]byte, 1)); err != io.EOF {
		if err == nil {
			err = errors.New("zlib: data after the stream's length")
		}
		return nil, err
	}
	return p.scratch, nil
}

// rawProfile decodes ImageMagick's "Raw profile type NAME" text: a newline, the profile's name,
// a newline, its length in decimal, a newline, then the bytes in hexadecimal across lines.
func rawProfile(text []byte) ([]byte, error) {
	f := strings.SplitN(strings.TrimLeft(string(text), "\n"), "\n", 3)
	if len(f) != 3 {
		return nil, fmt.Errorf("%w: a raw profile without its header", errPNG)
	}
	n, err := strconv.Atoi(strings.TrimSpace(f[1]))
	if err != nil || n < 0 || n > metadataMax {
		return nil, fmt.Errorf("%w: a raw profile's length", errPNG)
	}
	digits := strings.Map(func(c rune) rune {
		if c == '\n' || c == '\r' || c == ' ' {
			return -1
		}
		return c
	}, f[2])
	out, err := hex.DecodeString(digits)
	if err != nil || len(out) != n {
		return nil, fmt.Errorf("%w: a raw profile's data", errPNG)
	}
	return out, nil
}

// pngText handles a tEXt, zTXt or iTXt chunk's data: XMP in iTXt "XML:com.adobe.xmp",
// ImageMagick's raw EXIF, APP1 and XMP profiles in any of them, and ImageMagick's EXIF text
// properties exif:GPSLatitude and exif:GPSLongitude (a position when both have a value).
func (p *position) pngText(typ string, data []byte) error {
	k := bytes.IndexByte(data, 0)
	if k < 0 {
		return fmt.Errorf("%w: a %s chunk without its keyword", errPNG, typ)
	}
	keyword, rest := string(data[:k]), data[k+1:]
	var text []byte
	var err error
	switch typ {
	case "tEXt":
		text = rest
	case "zTXt":
		if len(rest) < 1 {
			return fmt.Errorf("%w: a zTXt chunk without its method", errPNG)
		}
		text, err = p.inflate(rest[1:])
	case "iTXt":
		// Compression flag, method, language tag\0, translated keyword\0, text.
		if len(rest) < 2 {
			return fmt.Errorf("%w: an iTXt chunk cut short", errPNG)
		}
		compressed := rest[0] == 1
		f := bytes.SplitN(rest[2:], []byte{0}, 3)
		if len(f) != 3 {
			return fmt.Errorf("%w: an iTXt chunk cut short", errPNG)
		}
		text = f[2]
		if compressed {
			text, err = p.inflate(text)
		}
	}
	if err == errBig {
		return err
	}
	if err != nil {
		return fmt.Errorf("%w: %s %q: %v", errPNG, typ, keyword, err)
	}
	if len(text) > 1<<20 {
		// What parsing a large chunk left is garbage now: collect it before the next
		// chunk, so that the heap stays within the manifest's memory however many such
		// chunks follow.
		defer runtime.GC()
	}
	switch {
	case typ == "iTXt" && keyword == "XML:com.adobe.xmp":
		return p.xmp(text)
	case keyword == "Raw profile type exif" || keyword == "Raw profile type APP1":
		b, err := rawProfile(text)
		if err != nil {
			return err
		}
		if keyword == "Raw profile type APP1" && !bytes.HasPrefix(b, jpegEXIF) {
			return nil // an APP1 profile may be XMP or another application's
		}
		return p.exif(b)
	case keyword == "exif:GPSLatitude" || keyword == "exif:GPSLongitude":
		// ImageMagick writes an image's EXIF tags as text properties, one chunk each.
		if len(bytes.TrimSpace(text)) > 0 {
			p.textLat = p.textLat || keyword == "exif:GPSLatitude"
			p.textLong = p.textLong || keyword == "exif:GPSLongitude"
			p.found = p.found || p.textLat && p.textLong
		}
		return nil
	case keyword == "Raw profile type xmp":
		b, err := rawProfile(text)
		if err != nil {
			return err
		}
		return p.xmp(b)
	}
	return nil
}

// png walks the PNG's chunks from the signature to IEND, reading eXIf and the text chunks (their
// CRC-32 checked) and skipping the others. A file that ends before IEND, or a metadata chunk
// whose CRC does not match, is an error.
func (p *position) png(r io.ReaderAt, size int64) error {
	in := bufio.NewReader(io.NewSectionReader(r, 8, size-8))
	var h [8]byte
	for {
		if _, err := io.ReadFull(in, h[:]); err != nil {
			return fmt.Errorf("%w: it ends before IEND", errPNG)
		}
		n := int64(binary.BigEndian.Uint32(h[:4]))
		typ := string(h[4:])
		if n > 1<<31-1 {
			return fmt.Errorf("%w: a chunk length past 2^31-1", errPNG)
		}
		switch typ {
		case "eXIf", "tEXt", "zTXt", "iTXt":
			if n > metadataMax {
				return errBig
			}
			b := make([]byte, n+4)
			if _, err := io.ReadFull(in, b); err != nil {
				return fmt.Errorf("%w: it ends inside a chunk", errPNG)
			}
			data := b[:n]
			if crc32.Update(crc32.ChecksumIEEE(h[4:]), crc32.IEEETable, data) != binary.BigEndian.Uint32(b[n:]) {
				return fmt.Errorf("%w: %s chunk CRC mismatch", errPNG, typ)
			}
			var err error
			if typ == "eXIf" {
				err = p.exif(data)
			} else {
				err = p.pngText(typ, data)
			}
			if err != nil {
				return err
			}
		default:
			if _, err := in.Discard(int(n) + 4); err != nil {
				return fmt.Errorf("%w: it ends inside a chunk", errPNG)
			}
			if typ == "IEND" {
				return nil
			}
		}
	}
}

// webp walks the RIFF chunks of a WebP file, reading its EXIF and "XMP " chunks. A RIFF size
// past the file's end, or a chunk past the RIFF's end, is an error.
func (p *position) webp(r io.ReaderAt, size int64) error {
	var h [8]byte
	if _, err := r.ReadAt(h[:], 0); err != nil {
		return fmt.Errorf("%w: %v", errWebP, err)
	}
	end := int64(binary.LittleEndian.Uint32(h[4:])) + 8
	if end > size || end < 12 {
		return fmt.Errorf("%w: the RIFF size is past the file's end", errWebP)
	}
	for off := int64(12); off < end; {
		if end-off < 8 {
			return fmt.Errorf("%w: a chunk header past the RIFF's end", errWebP)
		}
		if _, err := r.ReadAt(h[:], off); err != nil {
			return fmt.Errorf("%w: %v", errWebP, err)
		}
		n := int64(binary.LittleEndian.Uint32(h[4:]))
		if n > end-off-8 {
			return fmt.Errorf("%w: a chunk past the RIFF's end", errWebP)
		}
		switch string(h[:4]) {
		case "EXIF", "XMP ":
			if n > metadataMax {
				return errBig
			}
			b := make([]byte, n)
			if _, err := r.ReadAt(b, off+8); err != nil {
				return fmt.Errorf("%w: %v", errWebP, err)
			}
			var err error
			if h[0] == 'E' {
				err = p.exif(b)
			} else {
				err = p.xmp(b)
			}
			if err != nil {
				return err
			}
		}
		off += 8 + n + n&1
	}
	return nil
}
