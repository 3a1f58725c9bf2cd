// image.has-gps' metadata readers: EXIF (a TIFF structure, in a file or in a blob) and XMP.

package main

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// TIFF and EXIF tags and types (TIFF 6.0; EXIF 2.32, 4.6.3 and 4.6.6).
const (
	tagGPSIFD       = 0x8825
	tagXMP          = 0x02BC
	tagGPSLatitude  = 2
	tagGPSLongitude = 4
	typeRational    = 5
	typeSRational   = 10
	ifdMax          = 64 // IFDs followed in one chain; real files have a few
)

// The XMP namespaces whose GPSLatitude and GPSLongitude properties are a position: EXIF's as
// Adobe's XMP specification maps it, and CIPA's EXIF 2.3 mapping.
var xmpGPSNamespaces = map[string]bool{
	"http://ns.adobe.com/exif/1.0/": true,
	"http://cipa.jp/exif/1.0/":      true,
}

var (
	errTIFF = errors.New("damaged TIFF or EXIF structure")
	errXMP  = errors.New("an XMP packet is not well-formed XML")
)

// tiffReader reads a TIFF structure: a file, or an EXIF blob, of size bytes at r.
type tiffReader struct {
	r     io.ReaderAt
	size  int64
	order binary.ByteOrder
}

// read returns n bytes at off, or an error when they are not all inside the structure.
func (t *tiffReader) read(off int64, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off > t.size || n > t.size-off {
		return nil, fmt.Errorf("%w: %d bytes at %d past its end", errTIFF, n, off)
	}
	b := make([]byte, n)
	if _, err := t.r.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("%w: %v", errTIFF, err)
	}
	return b, nil
}

// entry is one 12-byte IFD entry; value holds its value or offset field as it was stored.
type entry struct {
	tag, typ uint16
	count    uint32
	value    []byte
}

// ifd reads the IFD at off: its entries and the offset of the next IFD (0 when there is none,
// or when the IFD ends where the structure does).
func (t *tiffReader) ifd(off int64) ([]entry, int64, error) {
	b, err := t.read(off, 2)
	if err != nil {
		return nil, 0, err
	}
	n := int64(t.order.Uint16(b))
	b, err = t.read(off+2, n*12+4)
	if err != nil {
		// Some writers end the last IFD of an EXIF blob without its next-IFD offset.
		if b, err = t.read(off+2, n*12); err != nil {
			return nil, 0, err
		}
		b = append(b, 0, 0, 0, 0)
	}
	es := make([]entry, n)
	for i := range es {
		e := b[i*12:]
		es[i] = entry{tag: t.order.Uint16(e), typ: t.order.Uint16(e[2:]), count: t.order.Uint32(e[4:]), value: e[8:12]}
	}
	return es, int64(t.order.Uint32(b[n*12:])), nil
}

// data returns the bytes of e's value, size bytes per count, from the entry itself when they
// fit in 4 bytes and from its offset otherwise.
func (t *tiffReader) data(e entry, size int64) ([]byte, error) {
	n := int64(e.count) * size
	if n <= 4 {
		return e.value[:n], nil
	}
	return t.read(int64(t.order.Uint32(e.value)), n)
}

// tiff reads the TIFF structure of size bytes at r (a TIFF file when file is set, an EXIF blob
// otherwise) and notes a position found in the GPS IFD of any IFD of its chain and, for a file,
// in the XMP packet of tag 700. A structure that cannot be read where it is followed, or whose
// chain loops or runs past ifdMax IFDs, is an error.
func (p *position) tiff(r io.ReaderAt, size int64, file bool) error {
	t := &tiffReader{r: r, size: size}
	h, err := t.read(0, 8)
	if err != nil {
		return err
	}
	switch string(h[:4]) {
	case "II*\x00":
		t.order = binary.LittleEndian
	case "MM\x00*":
		t.order = binary.BigEndian
	default:
		return fmt.Errorf("%w: no TIFF header", errTIFF)
	}
	seen := map[int64]bool{}
	for off := int64(t.order.Uint32(h[4:])); off != 0; {
		if seen[off] || len(seen) == ifdMax {
			return fmt.Errorf("%w: the IFD chain loops or is too long", errTIFF)
		}
		seen[off] = true
		es, next, err := t.ifd(off)
		if err != nil {
			return err
		}
		for _, e := range es {
			switch {
			case e.tag == tagGPSIFD:
				if err := p.gpsIFD(t, int64(t.order.Uint32(e.value))); err != nil {
					return err
				}
			case e.tag == tagXMP && file:
				b, err := t.data(e, 1)
				if err != nil {
					return err
				}
				if err := p.xmp(b); err != nil {
					return err
				}
			}
		}
		off = next
	}
	return nil
}

// gpsIFD reads the GPS IFD at off and notes a position when it has both GPSLatitude and
// GPSLongitude as rationals, every denominator non-zero (0/0 is how some writers say unknown).
func (p *position) gpsIFD(t *tiffReader, off int64) error {
	es, _, err := t.ifd(off)
	if err != nil {
		return err
	}
	lat, long := false, false
	for _, e := range es {
		if e.tag != tagGPSLatitude && e.tag != tagGPSLongitude {
			continue
		}
		if (e.typ != typeRational && e.typ != typeSRational) || e.count == 0 || e.count > 3 {
			continue
		}
		b, err := t.data(e, 8)
		if err != nil {
			return err
		}
		ok := true
		for i := 0; i < int(e.count); i++ {
			if t.order.Uint32(b[8*i+4:]) == 0 {
				ok = false
			}
		}
		if e.tag == tagGPSLatitude {
			lat = lat || ok
		} else {
			long = long || ok
		}
	}
	p.found = p.found || lat && long
	return nil
}

// exif reads an EXIF blob: a TIFF structure, after the "Exif\0\0" prefix some writers keep.
func (p *position) exif(b []byte) error {
	if bytes.HasPrefix(b, []byte("Exif\x00")) && len(b) >= 6 {
		b = b[6:]
	}
	return p.tiff(bytes.NewReader(b), int64(len(b)), false)
}

// xmp reads an XMP packet and notes a position when it has both a GPSLatitude and a
// GPSLongitude property of an EXIF namespace (xmpGPSNamespaces) with a non-empty value, as an
// attribute (rdf:Description's short form) or as an element. A packet that is not well-formed
// XML is an error; trailing NUL bytes and whitespace, which some writers pad with, are not.
func (p *position) xmp(b []byte) error {
	b = bytes.TrimRight(b, "\x00 \t\r\n")
	dec := xml.NewDecoder(bytes.NewReader(b))
	lat, long := false, false
	note := func(local, value string) {
		if strings.TrimSpace(value) == "" {
			return
		}
		switch local {
		case "GPSLatitude":
			lat = true
		case "GPSLongitude":
			long = true
		}
	}
	var open string // the GPS property whose element is open, collecting its text
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: %v", errXMP, err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			for _, a := range el.Attr {
				if xmpGPSNamespaces[a.Name.Space] {
					note(a.Name.Local, a.Value)
				}
			}
			if xmpGPSNamespaces[el.Name.Space] && (el.Name.Local == "GPSLatitude" || el.Name.Local == "GPSLongitude") {
				open = el.Name.Local
				text.Reset()
			}
		case xml.CharData:
			if open != "" && text.Len() < 1024 {
				text.Write(el)
			}
		case xml.EndElement:
			if open != "" && el.Name.Local == open && xmpGPSNamespaces[el.Name.Space] {
				note(open, text.String())
				open = ""
			}
		}
	}
	p.found = p.found || lat && long
	return nil
}
