// The package's entries counted before archive/zip reads them.
//
// countParts guards archive/zip, which holds every central directory entry in memory: it walks
// the central directory's headers itself, from the offset the end record (or its ZIP64 record)
// gives, and returns an error past partsMax entries. A directory it cannot find is left to
// archive/zip to refuse.

package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
)

// partsMax caps the entries of a package: Office writes a few hundred; each costs archive/zip
// about 700 bytes of memory (200 000 needed 184 MiB).
const partsMax = 50000

var errTooManyParts = errors.New("the package has more entries than the plugin reads")

// countParts returns an error when the ZIP archive of size bytes at r has more than partsMax
// central directory headers, counted one by one (the end record's count may lie).
func countParts(r io.ReaderAt, size int64) error {
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
		if n > partsMax {
			return errTooManyParts
		}
		if _, err := r.ReadAt(h, offset); err != nil || string(h[:4]) != "PK\x01\x02" {
			return nil
		}
		offset += 46 + int64(le.Uint16(h[28:])) + int64(le.Uint16(h[30:])) + int64(le.Uint16(h[32:]))
	}
}
