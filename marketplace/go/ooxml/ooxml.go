// Package ooxml is what the Office plugins share to open an Office Open XML package (an OPC
// package: a ZIP archive with a [Content_Types].xml part) with bounded work: its entries counted
// before archive/zip reads them, a reader that caps what a part may expand to, and the part names
// compared as OPC compares them.
//
// CountParts guards archive/zip, which holds every central directory entry in memory: it walks
// the central directory's headers itself, from the offset the end record (or its ZIP64 record)
// gives, and returns an error past PartsMax entries. A directory it cannot find is left to
// archive/zip to refuse.
package ooxml

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"path"
	"strings"
)

// PartsMax caps the entries of a package: Office writes a few hundred; each costs archive/zip
// about 700 bytes of memory (200 000 needed 184 MiB).
const PartsMax = 50000

var (
	// ErrTooManyParts is a package with more than PartsMax entries.
	ErrTooManyParts = errors.New("the package has more entries than the plugin reads")
	// ErrNotOPC is a ZIP archive without a [Content_Types].xml part.
	ErrNotOPC = errors.New("not an Office Open XML package: no [Content_Types].xml part")
)

// CountParts returns an error when the ZIP archive of size bytes at r has more than PartsMax
// central directory headers, counted one by one (the end record's count may lie).
func CountParts(r io.ReaderAt, size int64) error {
	tail := int64(65535 + 22)
	if tail > size {
		tail = size
	}
	buf := make([]byte, tail)
	if _, err := r.ReadAt(buf, size-tail); err != nil && err != io.EOF {
		return err
	}
	le := binary.LittleEndian
	i := bytes.LastIndex(buf, []byte("PK\x05\x06"))
	if i < 0 || i+22 > len(buf) {
		return nil
	}
	offset := int64(le.Uint32(buf[i+16:]))
	if offset == 0xFFFFFFFF && i >= 20 && string(buf[i-20:i-16]) == "PK\x06\x07" {
		z := make([]byte, 56)
		if _, err := r.ReadAt(z, int64(le.Uint64(buf[i-12:]))); err != nil || string(z[:4]) != "PK\x06\x06" {
			return nil
		}
		offset = int64(le.Uint64(z[48:]))
	}
	if offset < 0 || offset >= size {
		return nil
	}
	h := make([]byte, 46)
	for n := 0; ; n++ {
		if n > PartsMax {
			return ErrTooManyParts
		}
		if _, err := r.ReadAt(h, offset); err != nil || string(h[:4]) != "PK\x01\x02" {
			return nil
		}
		offset += 46 + int64(le.Uint16(h[28:])) + int64(le.Uint16(h[30:])) + int64(le.Uint16(h[32:]))
	}
}

// Open reads the central directory of the ZIP archive of size bytes at r with archive/zip, once
// CountParts has found no more than PartsMax entries in it.
func Open(r io.ReaderAt, size int64) (*zip.Reader, error) {
	if err := CountParts(r, size); err != nil {
		return nil, err
	}
	return zip.NewReader(r, size)
}

// CappedReader reads at most *Left bytes from R, then fails with Err: a part that expands past
// it is refused rather than read on. It decreases *Left by what it reads.
type CappedReader struct {
	R    io.Reader
	Left *int64
	Err  error
}

// Read reads what is left of the cap, then fails with Err.
func (c CappedReader) Read(p []byte) (int, error) {
	if *c.Left <= 0 {
		return 0, c.Err
	}
	if int64(len(p)) > *c.Left {
		p = p[:*c.Left]
	}
	n, err := c.R.Read(p)
	*c.Left -= int64(n)
	return n, err
}

// PartName is the ZIP entry name as an OPC part name for comparison: lowercase (part names
// compare case-insensitively), without a leading slash.
func PartName(name string) string {
	return strings.ToLower(strings.TrimPrefix(name, "/"))
}

// RelationshipPart says whether the lowercase part name n is a relationship part: a name ending
// in .rels in a folder named _rels.
func RelationshipPart(n string) bool {
	return strings.HasSuffix(n, ".rels") && path.Base(path.Dir(n)) == "_rels"
}
