// Package zipread reads a ZIP archive's central directory and local headers through a window on
// the file (PKWARE's APPNOTE.TXT, 4.3), and is the window the file is read through.
package zipread

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
)

var (
	ErrTruncated = errors.New("the file ends inside its structure")
	// ErrEncryptedDirectory is a central directory encrypted by PKWARE's strong encryption
	// (APPNOTE.TXT, 7.3): its archive extra data record stands where the directory would.
	ErrEncryptedDirectory = errors.New("zip: the central directory is encrypted")
)

// WindowSize is how much of the file a window holds at once.
const WindowSize = 64 << 10

// Window reads a file at any offset through one buffer of WindowSize bytes, so that walking a
// structure costs no system call per record.
type Window struct {
	R    io.ReaderAt // the file
	Size int64       // its length
	buf  []byte      // the bytes at [off, off+len(buf))
	off  int64
}

// NewWindow returns a window of WindowSize bytes on r, whose length is size.
func NewWindow(r io.ReaderAt, size int64) *Window {
	return NewWindowOf(r, size, WindowSize)
}

// NewWindowOf returns a window of n bytes on r: a small one for reads scattered over the file
// (local headers a central directory points to), where each refill costs its size.
func NewWindowOf(r io.ReaderAt, size int64, n int) *Window {
	return &Window{R: r, Size: size, buf: make([]byte, 0, n)}
}

// At returns the n bytes (n <= WindowSize) at offset p, valid until the next call, or
// ErrTruncated when the file ends before p+n. More bytes than the window holds are read into a
// buffer of their own.
func (w *Window) At(p int64, n int) ([]byte, error) {
	if p < 0 || n < 0 || n > WindowSize || p > w.Size-int64(n) {
		return nil, ErrTruncated
	}
	if p >= w.off && p+int64(n) <= w.off+int64(len(w.buf)) {
		return w.buf[p-w.off : p-w.off+int64(n)], nil
	}
	if n > cap(w.buf) {
		b := make([]byte, n)
		if k, err := w.R.ReadAt(b, p); k < n {
			if err == nil || err == io.EOF {
				err = ErrTruncated
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
	if w.Size-start < m {
		m = w.Size - start
	}
	w.buf = w.buf[:m]
	if k, err := w.R.ReadAt(w.buf, start); k < len(w.buf) {
		w.buf = w.buf[:0]
		if err == nil || err == io.EOF {
			err = ErrTruncated
		}
		return nil, err
	}
	w.off = start
	return w.buf[p-start : p-start+int64(n)], nil
}

// LastIndex returns the offset of the last occurrence of pat that ends at or before limit, or -1.
// It reads backwards from limit, a window at a time; successive calls with a falling limit search
// what the window already holds first. A window that serves LastIndex should serve nothing else,
// or each call could refill it.
func (w *Window) LastIndex(pat []byte, limit int64) (int64, error) {
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
			if b, err = w.At(start, int(end-start)); err != nil {
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
	SigLocal        = 0x04034b50
	SigCentral      = 0x02014b50
	SigEnd          = 0x06054b50
	SigEnd64        = 0x06064b50
	SigEnd64Locator = 0x07064b50
	SigExtraData    = 0x08064b50
)

// IsZip tells whether head, a file's first bytes, starts as a ZIP archive does: a local header,
// an empty archive's end record, or the marker of a split archive made whole.
func IsZip(head []byte) bool {
	if len(head) < 4 {
		return false
	}
	s := binary.LittleEndian.Uint32(head)
	return s == SigLocal || s == SigEnd || s == 0x08074b50
}

// Directory is where an archive's central directory lies.
type Directory struct {
	Off, End int64 // the central directory is [Off, End)
	EndOff   int64 // the end of central directory record
	EndLen   int64 // its length with its declared comment
}

// maxEndCandidates bounds the end record signatures FindDirectory reads from the end of the file:
// an archive has one, and a comment or appended bytes seldom another.
const maxEndCandidates = 4096

// FindDirectory finds the archive's end of central directory record: the last one in the file
// that fits the archive (its comment within the file, no other disk, and the central directory
// it points to, through the ZIP64 locator and record when a field is saturated, ending where
// that record or the ZIP64 one begins). A candidate that does not fit (a signature inside a
// comment or in appended bytes) is passed over; an archive with none is malformed.
func FindDirectory(w *Window) (Directory, error) {
	scan := NewWindow(w.R, w.Size)
	limit := w.Size
	for tries := 0; ; tries++ {
		if tries == maxEndCandidates {
			return Directory{}, errors.New("zip: too many end of central directory signatures")
		}
		p, err := scan.LastIndex([]byte("PK\x05\x06"), limit)
		if err != nil {
			return Directory{}, err
		}
		if p < 0 {
			return Directory{}, errors.New("zip: no end of central directory record")
		}
		if d, ok := directoryAt(w, p); ok {
			return d, nil
		}
		limit = p + 3
	}
}

// directoryAt reads the end record candidate at p (FindDirectory), and tells whether it fits.
// A ZIP64 locator just before the record names the ZIP64 record, which then holds the
// directory's place (Info-ZIP writes one for a stream of unknown size, its own fields not
// saturated); when those do not fit, or there is no locator, the record's own fields must, and
// none of them may be saturated. (The 20 bytes before the record may be the end of a name that
// only looks like a locator.)
func directoryAt(w *Window, p int64) (Directory, bool) {
	e, err := w.At(p, 22)
	if err != nil {
		return Directory{}, false
	}
	d := Directory{EndOff: p, EndLen: 22 + int64(binary.LittleEndian.Uint16(e[20:]))}
	if p+d.EndLen > w.Size {
		return Directory{}, false
	}
	disk := uint32(binary.LittleEndian.Uint16(e[4:]))
	cdDisk := uint32(binary.LittleEndian.Uint16(e[6:]))
	entries := uint64(binary.LittleEndian.Uint16(e[10:]))
	cdSize := uint64(binary.LittleEndian.Uint32(e[12:]))
	cdOff := uint64(binary.LittleEndian.Uint32(e[16:]))
	loc, err := w.At(p-20, 20)
	if err == nil && binary.LittleEndian.Uint32(loc) == SigEnd64Locator &&
		binary.LittleEndian.Uint32(loc[4:]) == 0 && binary.LittleEndian.Uint32(loc[16:]) <= 1 {
		r64 := binary.LittleEndian.Uint64(loc[8:])
		if p >= 20+56 && r64 <= uint64(p-20-56) {
			e64, err := w.At(int64(r64), 56)
			if err == nil && binary.LittleEndian.Uint32(e64) == SigEnd64 {
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
		return Directory{}, false
	}
	return directoryFits(w, d, disk, cdDisk, entries, cdSize, cdOff, p)
}

// directoryFits tells whether a central directory of the given place, ending at cdEnd (where
// the end record, or the ZIP64 one, begins), fits the archive: on the only disk, ending there,
// with a central header (or an archive extra data record) at its start unless it is empty.
func directoryFits(w *Window, d Directory, disk, cdDisk uint32, entries, cdSize, cdOff uint64,
	cdEnd int64) (Directory, bool) {
	if disk != 0 || cdDisk != 0 || cdOff > uint64(cdEnd) || cdSize != uint64(cdEnd)-cdOff {
		return Directory{}, false
	}
	if entries > 0 || cdSize > 0 {
		h, err := w.At(int64(cdOff), 4)
		if err != nil {
			return Directory{}, false
		}
		if s := binary.LittleEndian.Uint32(h); s != SigCentral && s != SigExtraData {
			return Directory{}, false
		}
	}
	d.Off, d.End = int64(cdOff), cdEnd
	return d, true
}

// Entry is one central directory header, with the sizes and offset of its ZIP64 extra field
// when a field is saturated.
type Entry struct {
	MadeBy  uint16 // version made by: its high byte is the host system (3 is Unix)
	Flags   uint16 // general purpose bit flags
	Method  uint16 // compression method
	CSize   uint64 // compressed size as declared
	USize   uint64 // uncompressed size as declared
	Offset  int64  // the local header's offset
	ExtAttr uint32 // external attributes: on Unix, the mode in the high 16 bits
	Name    []byte
	Extra   []byte
}

// EachEntry calls f with every central directory header of d, in order, as long as f returns
// nil; the entry's slices are f's to keep. Every header between the directory's start and its
// end counts, whatever number the end record declares. A directory whose headers do not fill it
// exactly is malformed; one that starts with an archive extra data record is encrypted
// (ErrEncryptedDirectory).
func EachEntry(w *Window, d Directory, f func(e *Entry) error) error {
	p := d.Off
	for p < d.End {
		h, err := w.At(p, 46)
		if err != nil {
			return err
		}
		switch binary.LittleEndian.Uint32(h) {
		case SigCentral:
		case SigExtraData:
			if p == d.Off {
				return ErrEncryptedDirectory
			}
			fallthrough
		default:
			return errors.New("zip: no central header where one must be")
		}
		e := &Entry{
			MadeBy:  binary.LittleEndian.Uint16(h[4:]),
			Flags:   binary.LittleEndian.Uint16(h[8:]),
			Method:  binary.LittleEndian.Uint16(h[10:]),
			CSize:   uint64(binary.LittleEndian.Uint32(h[20:])),
			USize:   uint64(binary.LittleEndian.Uint32(h[24:])),
			ExtAttr: binary.LittleEndian.Uint32(h[38:]),
			Offset:  int64(binary.LittleEndian.Uint32(h[42:])),
		}
		nameLen := int(binary.LittleEndian.Uint16(h[28:]))
		extraLen := int(binary.LittleEndian.Uint16(h[30:]))
		commentLen := int64(binary.LittleEndian.Uint16(h[32:]))
		if e.Name, err = CopyAt(w, p+46, nameLen); err != nil {
			return err
		}
		if e.Extra, err = CopyAt(w, p+46+int64(nameLen), extraLen); err != nil {
			return err
		}
		if err := e.Zip64(); err != nil {
			return err
		}
		p += 46 + int64(nameLen) + int64(extraLen) + commentLen
		if p > d.End {
			return errors.New("zip: a central header runs past the directory")
		}
		if err := f(e); err != nil {
			return err
		}
	}
	return nil
}

// CopyAt returns a copy of the n bytes at p.
func CopyAt(w *Window, p int64, n int) ([]byte, error) {
	b, err := w.At(p, n)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), b...), nil
}

// ExtraField returns the data of the first field with the given id in an extra block
// (APPNOTE.TXT, 4.5), or nil. A field that runs past the block ends the walk.
func ExtraField(extra []byte, id uint16) []byte {
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

// Zip64 replaces the saturated sizes and offset of a central header with the values of its
// ZIP64 extended information field (APPNOTE.TXT, 4.5.3), which holds exactly those, in that
// order. A saturated field with no value for it is malformed.
func (e *Entry) Zip64() error {
	if e.USize != 0xFFFFFFFF && e.CSize != 0xFFFFFFFF && e.Offset != 0xFFFFFFFF {
		return nil
	}
	z := ExtraField(e.Extra, 0x0001)
	next := func() (uint64, error) {
		if len(z) < 8 {
			return 0, errors.New("zip: a saturated field has no ZIP64 value")
		}
		v := binary.LittleEndian.Uint64(z)
		z = z[8:]
		return v, nil
	}
	var err error
	if e.USize == 0xFFFFFFFF {
		if e.USize, err = next(); err != nil {
			return err
		}
	}
	if e.CSize == 0xFFFFFFFF {
		if e.CSize, err = next(); err != nil {
			return err
		}
	}
	if e.Offset == 0xFFFFFFFF {
		v, err := next()
		if err != nil {
			return err
		}
		if v > 1<<62 {
			return errors.New("zip: local header offset out of range")
		}
		e.Offset = int64(v)
	}
	return nil
}

// Local is an entry's local header (APPNOTE.TXT, 4.3.7).
type Local struct {
	Flags   uint16
	Method  uint16
	Name    []byte
	Extra   []byte
	DataOff int64 // where the entry's data starts
}

// LocalWindowSize is the size of the window local headers are read through (NewLocalWindow).
const LocalWindowSize = 4 << 10

// NewLocalWindow returns a window for LocalHeader, apart from the one the central directory is
// walked with: the two walks would otherwise refill a shared window at every entry.
func NewLocalWindow(w *Window) *Window {
	return NewWindowOf(w.R, w.Size, LocalWindowSize)
}

// LocalHeader reads the local header at off, through a window of its own (NewLocalWindow).
func LocalHeader(w *Window, off int64) (*Local, error) {
	h, err := w.At(off, 30)
	if err != nil {
		return nil, err
	}
	if binary.LittleEndian.Uint32(h) != SigLocal {
		return nil, errors.New("zip: no local header where the central directory says")
	}
	l := &Local{
		Flags:  binary.LittleEndian.Uint16(h[6:]),
		Method: binary.LittleEndian.Uint16(h[8:]),
	}
	nameLen := int(binary.LittleEndian.Uint16(h[26:]))
	extraLen := int(binary.LittleEndian.Uint16(h[28:]))
	if l.Name, err = CopyAt(w, off+30, nameLen); err != nil {
		return nil, err
	}
	if l.Extra, err = CopyAt(w, off+30+int64(nameLen), extraLen); err != nil {
		return nil, err
	}
	l.DataOff = off + 30 + int64(nameLen) + int64(extraLen)
	return l, nil
}
