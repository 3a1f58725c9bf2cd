// office.has-macros on OLE2 compound files ([MS-CFB]): a VBA storage anywhere in the directory
// tree, or, in an Excel workbook, a sheet whose type is macro sheet ([MS-XLS] BoundSheet8).

package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf16"
)

// Sector numbers with a meaning of their own ([MS-CFB] 2.1).
const (
	maxRegSect = 0xFFFFFFFA
	endOfChain = 0xFFFFFFFE
	noStream   = 0xFFFFFFFF
)

// Directory entry types ([MS-CFB] 2.6.1).
const (
	typeStorage = 1
	typeStream  = 2
	typeRoot    = 5
)

// BIFF record types ([MS-XLS] 2.3).
const (
	recBOF        = 0x0809
	recEOF        = 0x000A
	recFilePass   = 0x002F
	recBoundSheet = 0x0085
	sheetMacro    = 0x01 // BoundSheet8.dt: macro sheet
)

var (
	errCFB       = errors.New("damaged OLE2 compound file")
	errNotOffice = errors.New("an OLE2 compound file that is neither a Word document nor an Excel workbook")
	errEncrypted = errors.New("an encrypted Excel workbook without a VBA storage: its sheet types cannot be read")
	errBIFF      = errors.New("damaged Excel workbook stream")
)

// compound is an open OLE2 compound file: its sectors, its FAT and mini FAT, its directory.
type compound struct {
	r          io.ReaderAt
	size       int64
	sectorSize int64
	sectors    uint32   // the sectors the file holds, a partial last one included
	fat        []uint32 // the next sector of every sector
	miniFAT    []uint32 // the next mini sector of every mini sector
	miniChain  []uint32 // the sectors of the mini stream (the root entry's stream)
	dir        []dirEntry
}

// dirEntry is one directory entry ([MS-CFB] 2.6).
type dirEntry struct {
	name               string
	typ                byte
	left, right, child uint32
	start              uint32
	size               uint64
}

// sector reads sector n whole into b, zero-padding a partial last sector of the file.
func (c *compound) sector(n uint32, b []byte) error {
	if n >= c.sectors {
		return fmt.Errorf("%w: sector %d past the end", errCFB, n)
	}
	k, err := c.r.ReadAt(b, (int64(n)+1)*c.sectorSize)
	if k == 0 && err != nil {
		return fmt.Errorf("%w: %v", errCFB, err)
	}
	for i := k; i < len(b); i++ {
		b[i] = 0
	}
	return nil
}

// chain follows the sector chain from start through next and returns its sectors. A chain that
// leaves the table, or is longer than the table (a loop), is an error.
func chain(start uint32, next []uint32) ([]uint32, error) {
	var out []uint32
	for s := start; s != endOfChain; s = next[s] {
		if s >= uint32(len(next)) || len(out) >= len(next) {
			return nil, fmt.Errorf("%w: a sector chain leaves its table or loops", errCFB)
		}
		out = append(out, s)
	}
	return out, nil
}

// openCompound reads the header, the FAT (through the DIFAT), the directory and the mini FAT of
// the compound file of size bytes at r.
func openCompound(r io.ReaderAt, size int64) (*compound, error) {
	h := make([]byte, 512)
	if _, err := r.ReadAt(h, 0); err != nil {
		return nil, fmt.Errorf("%w: header: %v", errCFB, err)
	}
	le := binary.LittleEndian
	shift := le.Uint16(h[30:])
	if le.Uint16(h[28:]) != 0xFFFE || (shift != 9 && shift != 12) || le.Uint16(h[32:]) != 6 {
		return nil, fmt.Errorf("%w: header fields", errCFB)
	}
	c := &compound{r: r, size: size, sectorSize: 1 << shift}
	if size <= c.sectorSize {
		return nil, fmt.Errorf("%w: no sectors", errCFB)
	}
	n := (size - c.sectorSize + c.sectorSize - 1) / c.sectorSize
	if n > maxRegSect {
		n = maxRegSect
	}
	c.sectors = uint32(n)
	numFAT := le.Uint32(h[44:])
	if numFAT == 0 || numFAT > c.sectors {
		return nil, fmt.Errorf("%w: %d FAT sectors", errCFB, numFAT)
	}
	// The FAT's sectors: 109 in the header, the rest in the DIFAT chain.
	per := uint32(c.sectorSize / 4)
	fatSectors := make([]uint32, 0, numFAT)
	for i := 0; i < 109 && uint32(len(fatSectors)) < numFAT; i++ {
		fatSectors = append(fatSectors, le.Uint32(h[76+4*i:]))
	}
	buf := make([]byte, c.sectorSize)
	d := le.Uint32(h[68:])
	for steps := uint32(0); uint32(len(fatSectors)) < numFAT; steps++ {
		if d >= c.sectors || steps > c.sectors {
			return nil, fmt.Errorf("%w: DIFAT chain", errCFB)
		}
		if err := c.sector(d, buf); err != nil {
			return nil, err
		}
		for i := uint32(0); i < per-1 && uint32(len(fatSectors)) < numFAT; i++ {
			fatSectors = append(fatSectors, le.Uint32(buf[4*i:]))
		}
		d = le.Uint32(buf[4*(per-1):])
	}
	c.fat = make([]uint32, 0, int(numFAT)*int(per))
	for _, s := range fatSectors {
		if err := c.sector(s, buf); err != nil {
			return nil, err
		}
		for i := uint32(0); i < per; i++ {
			c.fat = append(c.fat, le.Uint32(buf[4*i:]))
		}
	}
	if uint32(len(c.fat)) > c.sectors {
		c.fat = c.fat[:c.sectors]
	}
	// The directory.
	dirSectors, err := chain(le.Uint32(h[48:]), c.fat)
	if err != nil {
		return nil, err
	}
	for _, s := range dirSectors {
		if err := c.sector(s, buf); err != nil {
			return nil, err
		}
		for off := 0; off+128 <= len(buf); off += 128 {
			c.dir = append(c.dir, parseEntry(buf[off:off+128], shift == 9))
		}
	}
	if len(c.dir) == 0 || c.dir[0].typ != typeRoot {
		return nil, fmt.Errorf("%w: no root entry", errCFB)
	}
	// The mini FAT and the mini stream, when there are any.
	if start := le.Uint32(h[60:]); start != endOfChain && start != noStream {
		miniSectors, err := chain(start, c.fat)
		if err != nil {
			return nil, err
		}
		for _, s := range miniSectors {
			if err := c.sector(s, buf); err != nil {
				return nil, err
			}
			for i := uint32(0); i < per; i++ {
				c.miniFAT = append(c.miniFAT, le.Uint32(buf[4*i:]))
			}
		}
		if c.dir[0].start != endOfChain {
			if c.miniChain, err = chain(c.dir[0].start, c.fat); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// parseEntry decodes one 128-byte directory entry; v3 files ignore the size's high 32 bits.
func parseEntry(b []byte, v3 bool) dirEntry {
	le := binary.LittleEndian
	e := dirEntry{typ: b[66], left: le.Uint32(b[68:]), right: le.Uint32(b[72:]),
		child: le.Uint32(b[76:]), start: le.Uint32(b[116:]), size: le.Uint64(b[120:])}
	if v3 {
		e.size &= 0xFFFFFFFF
	}
	n := int(le.Uint16(b[64:]))
	if n > 64 {
		n = 64
	}
	u := make([]uint16, 0, n/2)
	for i := 0; i+1 < n; i += 2 {
		if c := le.Uint16(b[i:]); c != 0 {
			u = append(u, c)
		}
	}
	e.name = string(utf16.Decode(u))
	return e
}

// children returns the entries of the storage s (the red-black tree under its child), each
// once: a tree that loops or points outside the directory is an error.
func (c *compound) children(s uint32, seen map[uint32]bool) ([]uint32, error) {
	var out []uint32
	stack := []uint32{c.dir[s].child}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i == noStream {
			continue
		}
		if i >= uint32(len(c.dir)) || seen[i] {
			return nil, fmt.Errorf("%w: the directory tree loops or leaves the directory", errCFB)
		}
		seen[i] = true
		out = append(out, i)
		stack = append(stack, c.dir[i].left, c.dir[i].right)
	}
	return out, nil
}

// streamReader reads the stream of entry e: from the mini stream when it is smaller than the
// cutoff (4096 bytes), from the file's sectors otherwise.
type streamReader struct {
	c     *compound
	chain []uint32
	mini  bool
	left  uint64
	buf   []byte
}

// openStream returns a reader of e's stream. A chain shorter than the size says is an error.
func (c *compound) openStream(e dirEntry) (*streamReader, error) {
	s := &streamReader{c: c, left: e.size}
	unit := uint64(c.sectorSize)
	var err error
	if e.size < 4096 {
		s.mini, unit = true, 64
		if e.size > 0 {
			s.chain, err = chain(e.start, c.miniFAT)
		}
	} else {
		s.chain, err = chain(e.start, c.fat)
	}
	if err != nil {
		return nil, err
	}
	if uint64(len(s.chain))*unit < e.size {
		return nil, fmt.Errorf("%w: a stream's chain is shorter than its size", errCFB)
	}
	return s, nil
}

// Read reads the stream's next bytes, a sector (or mini sector) at a time, up to its size.
func (s *streamReader) Read(p []byte) (int, error) {
	if s.left == 0 {
		return 0, io.EOF
	}
	if len(s.buf) == 0 {
		sec := s.chain[0]
		s.chain = s.chain[1:]
		if s.mini {
			// Mini sector sec is 64 bytes at sec*64 in the mini stream.
			off := int64(sec) * 64
			i := off / s.c.sectorSize
			if i >= int64(len(s.c.miniChain)) {
				return 0, fmt.Errorf("%w: a mini sector past the mini stream", errCFB)
			}
			b := make([]byte, s.c.sectorSize)
			if err := s.c.sector(s.c.miniChain[i], b); err != nil {
				return 0, err
			}
			o := off % s.c.sectorSize
			s.buf = b[o : o+64]
		} else {
			s.buf = make([]byte, s.c.sectorSize)
			if err := s.c.sector(sec, s.buf); err != nil {
				return 0, err
			}
		}
		if uint64(len(s.buf)) > s.left {
			s.buf = s.buf[:s.left]
		}
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	s.left -= uint64(n)
	return n, nil
}

// cfbMacros reads the compound file of size bytes at r and says whether it carries macros: a
// storage named VBA anywhere in its directory tree, or an Excel 4.0 macro sheet in the sheet
// list of its Workbook (or Book) stream. It returns an error for a damaged file, for one that is
// neither Word (a WordDocument stream) nor Excel, and for an encrypted workbook without a VBA
// storage.
func cfbMacros(r io.ReaderAt, size int64) (bool, error) {
	c, err := openCompound(r, size)
	if err != nil {
		return false, err
	}
	seen := map[uint32]bool{0: true}
	storages := []uint32{0}
	var word, workbook bool
	var book dirEntry
	for len(storages) > 0 {
		s := storages[len(storages)-1]
		storages = storages[:len(storages)-1]
		kids, err := c.children(s, seen)
		if err != nil {
			return false, err
		}
		for _, k := range kids {
			e := c.dir[k]
			switch {
			case e.typ == typeStorage && strings.EqualFold(e.name, "VBA"):
				return true, nil
			case e.typ == typeStorage:
				storages = append(storages, k)
			case e.typ == typeStream && s == 0 && e.name == "WordDocument":
				word = true
			case e.typ == typeStream && s == 0 && (e.name == "Workbook" || e.name == "Book" && !workbook):
				workbook, book = true, e
			}
		}
	}
	if workbook {
		return macroSheet(c, book)
	}
	if word {
		return false, nil
	}
	return false, errNotOffice
}

// macroSheet reads the workbook stream e's globals substream, up to its EOF record, and says
// whether a BoundSheet8 record has the macro sheet type. A stream that does not start with a
// BIFF5/BIFF8 BOF, or ends before the globals' EOF, is an error, and so is a FILEPASS record
// (encryption) before a sheet's type could be read.
func macroSheet(c *compound, e dirEntry) (bool, error) {
	s, err := c.openStream(e)
	if err != nil {
		return false, err
	}
	head := make([]byte, 4)
	data := make([]byte, 0xFFFF)
	encrypted := false
	for i := 0; ; i++ {
		if _, err := io.ReadFull(s, head); err != nil {
			return false, fmt.Errorf("%w: the globals end before their EOF record: %v", errBIFF, err)
		}
		typ := binary.LittleEndian.Uint16(head)
		n := int(binary.LittleEndian.Uint16(head[2:]))
		if _, err := io.ReadFull(s, data[:n]); err != nil {
			return false, fmt.Errorf("%w: a record is cut short: %v", errBIFF, err)
		}
		if i == 0 && typ != recBOF {
			return false, fmt.Errorf("%w: no BIFF5 or BIFF8 BOF record", errBIFF)
		}
		switch typ {
		case recEOF:
			return false, nil
		case recFilePass:
			encrypted = true
		case recBoundSheet:
			if encrypted {
				return false, errEncrypted
			}
			if n >= 6 && data[5] == sheetMacro {
				return true, nil
			}
		}
	}
}
