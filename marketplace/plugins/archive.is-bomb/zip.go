// A ZIP archive's central directory and local headers, read through a window on the file
// (PKWARE's APPNOTE.TXT, 4.3), and the window the file is read through. The plugins
// archive.has-encrypted-entry, archive.has-unsafe-path, archive.is-bomb and
// file.has-trailing-data each carry this same file: each plugin is a module of its own, reviewed
// and signed alone.
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
)

var (
	errTruncated = errors.New("the file ends inside its structure")
	// errEncryptedDirectory is a central directory encrypted by PKWARE's strong encryption
	// (APPNOTE.TXT, 7.3): its archive extra data record stands where the directory would.
	errEncryptedDirectory = errors.New("zip: the central directory is encrypted")
)

// windowSize is how much of the file a window holds at once.
const windowSize = 64 << 10

// window reads a file at any offset through one buffer of windowSize bytes, so that walking a
// structure costs no system call per record.
type window struct {
	r    io.ReaderAt
	size int64
	buf  []byte // the bytes at [off, off+len(buf))
	off  int64
}

// newWindow returns a window of windowSize bytes on r, whose length is size.
func newWindow(r io.ReaderAt, size int64) *window {
	return newWindowOf(r, size, windowSize)
}

// newWindowOf returns a window of n bytes on r: a small one for reads scattered over the file
// (local headers a central directory points to), where each refill costs its size.
func newWindowOf(r io.ReaderAt, size int64, n int) *window {
	return &window{r: r, size: size, buf: make([]byte, 0, n)}
}

// at returns the n bytes (n <= windowSize) at offset p, valid until the next call, or
// errTruncated when the file ends before p+n. More bytes than the window holds are read into a
// buffer of their own.
func (w *window) at(p int64, n int) ([]byte, error) {
	if p < 0 || n < 0 || n > windowSize || p > w.size-int64(n) {
		return nil, errTruncated
	}
	if p >= w.off && p+int64(n) <= w.off+int64(len(w.buf)) {
		return w.buf[p-w.off : p-w.off+int64(n)], nil
	}
	if n > cap(w.buf) {
		b := make([]byte, n)
		if k, err := w.r.ReadAt(b, p); k < n {
			if err == nil || err == io.EOF {
				err = errTruncated
			}
			return nil, err
		}
		return b, nil
	}
	// Reading forward, the window starts at p; reading backward (p before the window), it ends at
	// p+n, so that a walk in either direction refills once per window.
	start := p
	if p < w.off {
		start = p + int64(n) - int64(cap(w.buf))
		if start < 0 {
			start = 0
		}
	}
	m := int64(cap(w.buf))
	if w.size-start < m {
		m = w.size - start
	}
	w.buf = w.buf[:m]
	if k, err := w.r.ReadAt(w.buf, start); k < len(w.buf) {
		w.buf = w.buf[:0]
		if err == nil || err == io.EOF {
			err = errTruncated
		}
		return nil, err
	}
	w.off = start
	return w.buf[p-start : p-start+int64(n)], nil
}

// lastIndex returns the offset of the last occurrence of pat that ends at or before limit, or -1.
// It reads backwards from limit, a window at a time; successive calls with a falling limit search
// what the window already holds first. A window that serves lastIndex should serve nothing else,
// or each call could refill it.
func (w *window) lastIndex(pat []byte, limit int64) (int64, error) {
	end := limit
	for end >= int64(len(pat)) {
		var b []byte
		start := w.off
		if end-w.off >= int64(len(pat)) && end <= w.off+int64(len(w.buf)) {
			b = w.buf[:end-w.off]
		} else {
			start = end - int64(cap(w.buf))
			if start < 0 {
				start = 0
			}
			var err error
			if b, err = w.at(start, int(end-start)); err != nil {
				return -1, err
			}
		}
		if i := bytes.LastIndex(b, pat); i >= 0 {
			return start + int64(i), nil
		}
		if start == 0 {
			break
		}
		// The next window overlaps this one by len(pat)-1 bytes: a match across the border.
		end = start + int64(len(pat)) - 1
	}
	return -1, nil
}

// ZIP's record signatures (APPNOTE.TXT, 4.3).
const (
	sigLocal        = 0x04034b50
	sigCentral      = 0x02014b50
	sigEnd          = 0x06054b50
	sigEnd64        = 0x06064b50
	sigEnd64Locator = 0x07064b50
	sigExtraData    = 0x08064b50
)

// isZip tells whether head, a file's first bytes, starts as a ZIP archive does: a local header,
// an empty archive's end record, or the marker of a split archive made whole.
func isZip(head []byte) bool {
	if len(head) < 4 {
		return false
	}
	s := binary.LittleEndian.Uint32(head)
	return s == sigLocal || s == sigEnd || s == 0x08074b50
}

// zipDirectory is where an archive's central directory lies.
type zipDirectory struct {
	off, end int64 // the central directory is [off, end)
	endOff   int64 // the end of central directory record
	endLen   int64 // its length with its declared comment
}

// maxEndCandidates bounds the end record signatures findDirectory reads from the end of the file:
// an archive has one, and a comment or appended bytes seldom another.
const maxEndCandidates = 4096

// findDirectory finds the archive's end of central directory record: the last one in the file
// that fits the archive (its comment within the file, no other disk, and the central directory
// it points to, through the ZIP64 locator and record when a field is saturated, ending where
// that record or the ZIP64 one begins). A candidate that does not fit (a signature inside a
// comment or in appended bytes) is passed over; an archive with none is malformed.
func findDirectory(w *window) (zipDirectory, error) {
	scan := newWindow(w.r, w.size)
	limit := w.size
	for tries := 0; ; tries++ {
		if tries == maxEndCandidates {
			return zipDirectory{}, errors.New("zip: too many end of central directory signatures")
		}
		p, err := scan.lastIndex([]byte("PK\x05\x06"), limit)
		if err != nil {
			return zipDirectory{}, err
		}
		if p < 0 {
			return zipDirectory{}, errors.New("zip: no end of central directory record")
		}
		if d, ok := directoryAt(w, p); ok {
			return d, nil
		}
		limit = p + 3
	}
}

// directoryAt reads the end record candidate at p (findDirectory), and tells whether it fits.
// A ZIP64 locator just before the record names the ZIP64 record, which then holds the
// directory's place (Info-ZIP writes one for a stream of unknown size, its own fields not
// saturated); when those do not fit, or there is no locator, the record's own fields must, and
// none of them may be saturated. (The 20 bytes before the record may be the end of a name that
// only looks like a locator.)
func directoryAt(w *window, p int64) (zipDirectory, bool) {
	e, err := w.at(p, 22)
	if err != nil {
		return zipDirectory{}, false
	}
	d := zipDirectory{endOff: p, endLen: 22 + int64(binary.LittleEndian.Uint16(e[20:]))}
	if p+d.endLen > w.size {
		return zipDirectory{}, false
	}
	disk := uint32(binary.LittleEndian.Uint16(e[4:]))
	cdDisk := uint32(binary.LittleEndian.Uint16(e[6:]))
	entries := uint64(binary.LittleEndian.Uint16(e[10:]))
	cdSize := uint64(binary.LittleEndian.Uint32(e[12:]))
	cdOff := uint64(binary.LittleEndian.Uint32(e[16:]))
	loc, err := w.at(p-20, 20)
	if err == nil && binary.LittleEndian.Uint32(loc) == sigEnd64Locator &&
		binary.LittleEndian.Uint32(loc[4:]) == 0 && binary.LittleEndian.Uint32(loc[16:]) <= 1 {
		r64 := binary.LittleEndian.Uint64(loc[8:])
		if p >= 20+56 && r64 <= uint64(p-20-56) {
			e64, err := w.at(int64(r64), 56)
			if err == nil && binary.LittleEndian.Uint32(e64) == sigEnd64 {
				disk64 := binary.LittleEndian.Uint32(e64[16:])
				cdDisk64 := binary.LittleEndian.Uint32(e64[20:])
				entries64 := binary.LittleEndian.Uint64(e64[32:])
				cdSize64 := binary.LittleEndian.Uint64(e64[40:])
				cdOff64 := binary.LittleEndian.Uint64(e64[48:])
				dir, ok := directoryFits(w, d, disk64, cdDisk64, entries64, cdSize64, cdOff64,
					int64(r64))
				if ok {
					return dir, true
				}
			}
		}
	}
	if entries == 0xFFFF || cdSize == 0xFFFFFFFF || cdOff == 0xFFFFFFFF || disk == 0xFFFF ||
		cdDisk == 0xFFFF {
		return zipDirectory{}, false
	}
	return directoryFits(w, d, disk, cdDisk, entries, cdSize, cdOff, p)
}

// directoryFits tells whether a central directory of the given place, ending at cdEnd (where
// the end record, or the ZIP64 one, begins), fits the archive: on the only disk, ending there,
// with a central header (or an archive extra data record) at its start unless it is empty.
func directoryFits(w *window, d zipDirectory, disk, cdDisk uint32, entries, cdSize, cdOff uint64,
	cdEnd int64) (zipDirectory, bool) {
	if disk != 0 || cdDisk != 0 || cdOff > uint64(cdEnd) || cdSize != uint64(cdEnd)-cdOff {
		return zipDirectory{}, false
	}
	if entries > 0 || cdSize > 0 {
		h, err := w.at(int64(cdOff), 4)
		if err != nil {
			return zipDirectory{}, false
		}
		if s := binary.LittleEndian.Uint32(h); s != sigCentral && s != sigExtraData {
			return zipDirectory{}, false
		}
	}
	d.off, d.end = int64(cdOff), cdEnd
	return d, true
}

// zipEntry is one central directory header, with the sizes and offset of its ZIP64 extra field
// when a field is saturated.
type zipEntry struct {
	madeBy  uint16 // version made by: its high byte is the host system (3 is Unix)
	flags   uint16 // general purpose bit flags
	method  uint16 // compression method
	csize   uint64 // compressed size as declared
	usize   uint64 // uncompressed size as declared
	offset  int64  // the local header's offset
	extAttr uint32 // external attributes: on Unix, the mode in the high 16 bits
	name    []byte
	extra   []byte
}

// eachEntry calls f with every central directory header of d, in order, as long as f returns
// nil; the entry's slices are f's to keep. Every header between the directory's start and its
// end counts, whatever number the end record declares. A directory whose headers do not fill it
// exactly is malformed; one that starts with an archive extra data record is encrypted
// (errEncryptedDirectory).
func eachEntry(w *window, d zipDirectory, f func(e *zipEntry) error) error {
	p := d.off
	for p < d.end {
		h, err := w.at(p, 46)
		if err != nil {
			return err
		}
		switch binary.LittleEndian.Uint32(h) {
		case sigCentral:
		case sigExtraData:
			if p == d.off {
				return errEncryptedDirectory
			}
			fallthrough
		default:
			return errors.New("zip: no central header where one must be")
		}
		e := &zipEntry{
			madeBy:  binary.LittleEndian.Uint16(h[4:]),
			flags:   binary.LittleEndian.Uint16(h[8:]),
			method:  binary.LittleEndian.Uint16(h[10:]),
			csize:   uint64(binary.LittleEndian.Uint32(h[20:])),
			usize:   uint64(binary.LittleEndian.Uint32(h[24:])),
			extAttr: binary.LittleEndian.Uint32(h[38:]),
			offset:  int64(binary.LittleEndian.Uint32(h[42:])),
		}
		nameLen := int(binary.LittleEndian.Uint16(h[28:]))
		extraLen := int(binary.LittleEndian.Uint16(h[30:]))
		commentLen := int64(binary.LittleEndian.Uint16(h[32:]))
		if e.name, err = copyAt(w, p+46, nameLen); err != nil {
			return err
		}
		if e.extra, err = copyAt(w, p+46+int64(nameLen), extraLen); err != nil {
			return err
		}
		if err := e.zip64(); err != nil {
			return err
		}
		p += 46 + int64(nameLen) + int64(extraLen) + commentLen
		if p > d.end {
			return errors.New("zip: a central header runs past the directory")
		}
		if err := f(e); err != nil {
			return err
		}
	}
	return nil
}

// copyAt returns a copy of the n bytes at p.
func copyAt(w *window, p int64, n int) ([]byte, error) {
	b, err := w.at(p, n)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), b...), nil
}

// extraField returns the data of the first field with the given id in an extra block
// (APPNOTE.TXT, 4.5), or nil. A field that runs past the block ends the walk.
func extraField(extra []byte, id uint16) []byte {
	for len(extra) >= 4 {
		fid := binary.LittleEndian.Uint16(extra)
		n := int(binary.LittleEndian.Uint16(extra[2:]))
		if 4+n > len(extra) {
			return nil
		}
		if fid == id {
			return extra[4 : 4+n]
		}
		extra = extra[4+n:]
	}
	return nil
}

// zip64 replaces the saturated sizes and offset of a central header with the values of its
// ZIP64 extended information field (APPNOTE.TXT, 4.5.3), which holds exactly those, in that
// order. A saturated field with no value for it is malformed.
func (e *zipEntry) zip64() error {
	if e.usize != 0xFFFFFFFF && e.csize != 0xFFFFFFFF && e.offset != 0xFFFFFFFF {
		return nil
	}
	z := extraField(e.extra, 0x0001)
	next := func() (uint64, error) {
		if len(z) < 8 {
			return 0, errors.New("zip: a saturated field has no ZIP64 value")
		}
		v := binary.LittleEndian.Uint64(z)
		z = z[8:]
		return v, nil
	}
	var err error
	if e.usize == 0xFFFFFFFF {
		if e.usize, err = next(); err != nil {
			return err
		}
	}
	if e.csize == 0xFFFFFFFF {
		if e.csize, err = next(); err != nil {
			return err
		}
	}
	if e.offset == 0xFFFFFFFF {
		v, err := next()
		if err != nil {
			return err
		}
		if v > 1<<62 {
			return errors.New("zip: local header offset out of range")
		}
		e.offset = int64(v)
	}
	return nil
}

// zipLocal is an entry's local header (APPNOTE.TXT, 4.3.7).
type zipLocal struct {
	flags   uint16
	method  uint16
	name    []byte
	extra   []byte
	dataOff int64 // where the entry's data starts
}

// localWindowSize is the size of the window local headers are read through (newLocalWindow).
const localWindowSize = 4 << 10

// newLocalWindow returns a window for localHeader, apart from the one the central directory is
// walked with: the two walks would otherwise refill a shared window at every entry.
func newLocalWindow(w *window) *window {
	return newWindowOf(w.r, w.size, localWindowSize)
}

// localHeader reads the local header at off, through a window of its own (newLocalWindow).
func localHeader(w *window, off int64) (*zipLocal, error) {
	h, err := w.at(off, 30)
	if err != nil {
		return nil, err
	}
	if binary.LittleEndian.Uint32(h) != sigLocal {
		return nil, errors.New("zip: no local header where the central directory says")
	}
	l := &zipLocal{
		flags:  binary.LittleEndian.Uint16(h[6:]),
		method: binary.LittleEndian.Uint16(h[8:]),
	}
	nameLen := int(binary.LittleEndian.Uint16(h[26:]))
	extraLen := int(binary.LittleEndian.Uint16(h[28:]))
	if l.name, err = copyAt(w, off+30, nameLen); err != nil {
		return nil, err
	}
	if l.extra, err = copyAt(w, off+30+int64(nameLen), extraLen); err != nil {
		return nil, err
	}
	l.dataOff = off + 30 + int64(nameLen) + int64(extraLen)
	return l, nil
}
