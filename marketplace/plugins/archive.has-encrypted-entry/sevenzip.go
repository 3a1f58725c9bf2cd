// A 7z archive's coders, read from its header (7-Zip's 7zFormat.txt): the signature header
// names the next header; a plain header (kHeader) holds the main streams' folders, each a chain
// of coders; an encoded header (kEncodedHeader) describes how the real header is packed, with
// folders of its own. Only as much of the header is read as reaches the last folder: the file
// names after it are never decoded.
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"

	"github.com/ulikunitz/xz/lzma"
	"lockd/marketplace/zipread"
)

// sevenMagic is the first six bytes of a 7z archive.
var sevenMagic = []byte{'7', 'z', 0xBC, 0xAF, 0x27, 0x1C}

// The header's property ids (7zFormat.txt, "Property IDs").
const (
	kEnd                   = 0x00
	kHeader                = 0x01
	kArchiveProperties     = 0x02
	kAdditionalStreamsInfo = 0x03
	kMainStreamsInfo       = 0x04
	kFilesInfo             = 0x05
	kPackInfo              = 0x06
	kUnPackInfo            = 0x07
	kSubStreamsInfo        = 0x08
	kSize                  = 0x09
	kCRC                   = 0x0A
	kFolder                = 0x0B
	kCodersUnPackSize      = 0x0C
	kEncodedHeader         = 0x17
)

// Coder ids (7-Zip's Methods.txt).
var (
	coderAES   = []byte{0x06, 0xF1, 0x07, 0x01} // 7zAES: AES-256 with a SHA-256 key derivation
	coderCopy  = []byte{0x00}
	coderLZMA  = []byte{0x03, 0x01, 0x01}
	coderLZMA2 = []byte{0x21}
)

// Bounds on what a header may declare before it is refused as malformed: far above what 7-Zip
// writes, low enough that nothing they size can exhaust the plugin's memory.
const (
	maxCoders       = 64       // coders in one folder
	maxStreams      = 64       // in or out streams of one coder
	maxFolders      = 1 << 20  // folders in one streams info
	maxHeaderSize   = 1 << 30  // an encoded header's unpacked size
	maxHeaderDict   = 16 << 20 // the dictionary given to a header's LZMA decoder
	maxHeaderLevels = 4        // encoded headers inside encoded headers
)

var errSevenFormat = errors.New("7z: malformed header")

// sevenReader reads a header's numbers and bytes from a stream.
type sevenReader struct {
	r *bufio.Reader
}

// byte1 reads one byte.
func (s *sevenReader) byte1() (byte, error) {
	b, err := s.r.ReadByte()
	if err == io.EOF {
		err = errSevenFormat
	}
	return b, err
}

// number reads a 7z UINT64: the first byte's leading one bits count the bytes that follow
// (little-endian), its remaining bits are the value's high bits.
func (s *sevenReader) number() (uint64, error) {
	first, err := s.byte1()
	if err != nil {
		return 0, err
	}
	var v uint64
	mask := byte(0x80)
	for i := 0; i < 8; i++ {
		if first&mask == 0 {
			high := uint64(first) & (uint64(mask) - 1)
			return v | high<<(8*uint(i)), nil
		}
		b, err := s.byte1()
		if err != nil {
			return 0, err
		}
		v |= uint64(b) << (8 * uint(i))
		mask >>= 1
	}
	return v, nil
}

// bounded reads a number and refuses one above max.
func (s *sevenReader) bounded(max uint64) (uint64, error) {
	v, err := s.number()
	if err == nil && v > max {
		err = errSevenFormat
	}
	return v, err
}

// skip discards n bytes.
func (s *sevenReader) skip(n uint64) error {
	m, err := s.r.Discard(int(min64(n, 1<<40)))
	if err != nil || uint64(m) != n {
		return errSevenFormat
	}
	return nil
}

// bytesN reads n bytes (n small: a coder's id or properties).
func (s *sevenReader) bytesN(n uint64) ([]byte, error) {
	if n > 1<<16 {
		return nil, errSevenFormat
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(s.r, b); err != nil {
		return nil, errSevenFormat
	}
	return b, nil
}

// min64 returns the smaller of a and b.
func min64(a, b uint64) uint64 {
	if a < b {
		return a
	}
	return b
}

// sevenCoder is one coder of a folder.
type sevenCoder struct {
	id    []byte
	props []byte
}

// sevenFolder is a chain of coders and the sizes of its unpacked streams.
type sevenFolder struct {
	coders      []sevenCoder
	packed      int      // how many packed streams it reads
	unpackSizes []uint64 // one per out stream of every coder
}

// sevenStreams is what a streams info says that the check needs: whether a folder uses 7zAES,
// where the packed streams are and, for an encoded header, its first folder. A header of a
// million folders keeps only this.
type sevenStreams struct {
	encrypted bool // a folder uses 7zAES (the rest of the streams info is then left unread)
	packPos   uint64
	firstPack uint64 // the first packed stream's size
	packs     uint64 // how many packed streams
	folders   uint64 // how many folders
	first     sevenFolder
}

// usesAES tells whether a coder of f is 7zAES.
func usesAES(f *sevenFolder) bool {
	for _, c := range f.coders {
		if bytes.Equal(c.id, coderAES) {
			return true
		}
	}
	return false
}

// digests skips a digests record of n items: a defined-all byte or a bit vector, then a CRC per
// defined item.
func (s *sevenReader) digests(n uint64) error {
	all, err := s.byte1()
	if err != nil {
		return err
	}
	defined := n
	if all == 0 {
		defined = 0
		for i := uint64(0); i < (n+7)/8; i++ {
			b, err := s.byte1()
			if err != nil {
				return err
			}
			for ; b != 0; b &= b - 1 {
				defined++
			}
		}
	}
	return s.skip(4 * defined)
}

// streamsInfo reads a streams info up to and including its folders (PackInfo, UnPackInfo); what
// follows them (SubStreamsInfo, the end) is left unread: nothing after it is needed.
func (s *sevenReader) streamsInfo() (*sevenStreams, error) {
	si := &sevenStreams{}
	id, err := s.byte1()
	if err != nil {
		return nil, err
	}
	if id == kPackInfo {
		if si.packPos, err = s.number(); err != nil {
			return nil, err
		}
		n, err := s.bounded(maxFolders)
		if err != nil {
			return nil, err
		}
		si.packs = n
		for {
			if id, err = s.byte1(); err != nil {
				return nil, err
			}
			if id == kEnd {
				break
			}
			switch id {
			case kSize:
				for i := uint64(0); i < n; i++ {
					v, err := s.number()
					if err != nil {
						return nil, err
					}
					if i == 0 {
						si.firstPack = v
					}
				}
			case kCRC:
				if err := s.digests(n); err != nil {
					return nil, err
				}
			default:
				return nil, errSevenFormat
			}
		}
		if id, err = s.byte1(); err != nil {
			return nil, err
		}
	}
	if id == kUnPackInfo {
		if err := s.unpackInfo(si); err != nil {
			return nil, err
		}
		return si, nil
	}
	if id == kSubStreamsInfo || id == kEnd {
		return si, nil
	}
	return nil, errSevenFormat
}

// unpackInfo reads the folders of an UnPackInfo and the first one's unpacked sizes; it stops at
// the first folder that uses 7zAES.
func (s *sevenReader) unpackInfo(si *sevenStreams) error {
	if id, err := s.byte1(); err != nil || id != kFolder {
		return errSevenFormat
	}
	n, err := s.bounded(maxFolders)
	if err != nil {
		return err
	}
	if external, err := s.byte1(); err != nil || external != 0 {
		// Folders kept in an additional stream: 7-Zip never writes them.
		return errors.New("7z: folders in an additional stream are not supported")
	}
	si.folders = n
	outs := make([]uint16, 0, 16)
	for i := uint64(0); i < n; i++ {
		f, out, err := s.folder()
		if err != nil {
			return err
		}
		if usesAES(&f) {
			si.encrypted = true
			return nil
		}
		if i == 0 {
			si.first = f
		}
		outs = append(outs, uint16(out))
	}
	if id, err := s.byte1(); err != nil || id != kCodersUnPackSize {
		return errSevenFormat
	}
	for i, out := range outs {
		for j := uint16(0); j < out; j++ {
			v, err := s.number()
			if err != nil {
				return err
			}
			if i == 0 {
				si.first.unpackSizes = append(si.first.unpackSizes, v)
			}
		}
	}
	return nil
}

// folder reads one folder: its coders, bind pairs and packed stream indexes. It returns the
// folder and its number of out streams.
func (s *sevenReader) folder() (sevenFolder, uint64, error) {
	var f sevenFolder
	n, err := s.bounded(maxCoders)
	if err != nil || n == 0 {
		return f, 0, errSevenFormat
	}
	var ins, outs uint64
	for i := uint64(0); i < n; i++ {
		flags, err := s.byte1()
		if err != nil {
			return f, 0, err
		}
		if flags&0x80 != 0 {
			return f, 0, errors.New("7z: alternative coder methods are not supported")
		}
		var c sevenCoder
		if c.id, err = s.bytesN(uint64(flags & 0x0F)); err != nil {
			return f, 0, err
		}
		in, out := uint64(1), uint64(1)
		if flags&0x10 != 0 {
			if in, err = s.bounded(maxStreams); err != nil {
				return f, 0, err
			}
			if out, err = s.bounded(maxStreams); err != nil {
				return f, 0, err
			}
		}
		ins += in
		outs += out
		if flags&0x20 != 0 {
			size, err := s.number()
			if err != nil {
				return f, 0, err
			}
			if c.props, err = s.bytesN(size); err != nil {
				return f, 0, err
			}
		}
		f.coders = append(f.coders, c)
	}
	if outs == 0 || ins+1 < outs {
		return f, 0, errSevenFormat
	}
	bindPairs := outs - 1
	for i := uint64(0); i < 2*bindPairs; i++ {
		if _, err := s.number(); err != nil {
			return f, 0, err
		}
	}
	packed := ins - bindPairs
	if packed > 1 {
		for i := uint64(0); i < packed; i++ {
			if _, err := s.number(); err != nil {
				return f, 0, err
			}
		}
	}
	f.packed = int(packed)
	return f, outs, nil
}

// sevenEncrypted answers for a 7z archive of length size: whether a folder of its main streams,
// of its additional streams or of its encoded header uses the 7zAES coder. A header packed with
// LZMA, LZMA2 or nothing is unpacked (only as far as needed) and read in turn; one packed any
// other way, a CRC that does not match or a structure that breaks is an error.
func sevenEncrypted(r io.ReaderAt, size int64) (bool, error) {
	sh := make([]byte, 32)
	if _, err := r.ReadAt(sh, 0); err != nil {
		return false, zipread.ErrTruncated
	}
	if crc32.ChecksumIEEE(sh[12:32]) != binary.LittleEndian.Uint32(sh[8:]) {
		return false, errors.New("7z: the start header's CRC does not match")
	}
	off := binary.LittleEndian.Uint64(sh[12:])
	n := binary.LittleEndian.Uint64(sh[20:])
	if n == 0 {
		return false, nil // an empty archive: no header, no entry
	}
	if off > uint64(size) || n > uint64(size) || 32+off+n > uint64(size) {
		return false, zipread.ErrTruncated
	}
	start := int64(32 + off)
	crc := crc32.NewIEEE()
	if _, err := io.Copy(crc, io.NewSectionReader(r, start, int64(n))); err != nil {
		return false, err
	}
	if crc.Sum32() != binary.LittleEndian.Uint32(sh[28:]) {
		return false, errors.New("7z: the next header's CRC does not match")
	}
	var in io.Reader = io.NewSectionReader(r, start, int64(n))
	for level := 0; level <= maxHeaderLevels; level++ {
		s := &sevenReader{r: bufio.NewReader(in)}
		id, err := s.byte1()
		if err != nil {
			return false, err
		}
		switch id {
		case kHeader:
			return s.header()
		case kEncodedHeader:
			si, err := s.streamsInfo()
			if err != nil {
				return false, err
			}
			if si.encrypted {
				return true, nil
			}
			if in, err = unpackHeader(r, size, si); err != nil {
				return false, err
			}
		default:
			return false, errSevenFormat
		}
	}
	return false, errors.New("7z: encoded headers nested too deep")
}

// header reads a plain header up to its main streams' folders and tells whether a folder of its
// additional or main streams uses 7zAES.
func (s *sevenReader) header() (bool, error) {
	id, err := s.byte1()
	if err != nil {
		return false, err
	}
	if id == kArchiveProperties {
		for {
			t, err := s.byte1()
			if err != nil {
				return false, err
			}
			if t == kEnd {
				break
			}
			n, err := s.number()
			if err != nil {
				return false, err
			}
			if err := s.skip(n); err != nil {
				return false, err
			}
		}
		if id, err = s.byte1(); err != nil {
			return false, err
		}
	}
	if id == kAdditionalStreamsInfo {
		si, err := s.streamsInfo()
		if err != nil {
			return false, err
		}
		if si.encrypted {
			return true, nil
		}
		// The main streams follow the rest of this streams info, which streamsInfo leaves
		// unread; 7-Zip never writes additional streams.
		return false, errors.New("7z: additional streams are not supported")
	}
	switch id {
	case kMainStreamsInfo:
		si, err := s.streamsInfo()
		if err != nil {
			return false, err
		}
		return si.encrypted, nil
	case kFilesInfo, kEnd:
		return false, nil // no streams: every entry is empty or a directory
	}
	return false, errSevenFormat
}

// unpackHeader returns a reader of the header an encoded header's streams info describes: its
// one folder of one coder (LZMA, LZMA2 or copy) reading the first packed stream. The LZMA
// dictionary is capped at maxHeaderDict: the part of the header read (up to the folders) sits at
// its start, where no match reaches further back.
func unpackHeader(r io.ReaderAt, size int64, si *sevenStreams) (io.Reader, error) {
	if si.folders != 1 || len(si.first.coders) != 1 || si.first.packed != 1 || si.packs < 1 ||
		len(si.first.unpackSizes) != 1 {
		return nil, errors.New("7z: an encoded header of more than one coder is not supported")
	}
	f := si.first
	c := f.coders[0]
	unpacked := f.unpackSizes[0]
	if unpacked > maxHeaderSize {
		return nil, errSevenFormat
	}
	if si.packPos > uint64(size) || si.firstPack > uint64(size) ||
		32+si.packPos+si.firstPack > uint64(size) {
		return nil, zipread.ErrTruncated
	}
	packed := io.NewSectionReader(r, int64(32+si.packPos), int64(si.firstPack))
	dict := uint64(maxHeaderDict)
	if unpacked < dict {
		dict = unpacked
	}
	if dict < lzma.MinDictCap {
		dict = lzma.MinDictCap
	}
	switch {
	case bytes.Equal(c.id, coderCopy):
		return io.LimitReader(packed, int64(unpacked)), nil
	case bytes.Equal(c.id, coderLZMA):
		if len(c.props) != 5 {
			return nil, errSevenFormat
		}
		// A classic .lzma header: the properties byte, the dictionary, the unpacked size.
		h := make([]byte, 13)
		h[0] = c.props[0]
		declared := uint64(binary.LittleEndian.Uint32(c.props[1:]))
		if declared < dict {
			dict = declared
		}
		if dict < lzma.MinDictCap {
			dict = lzma.MinDictCap
		}
		binary.LittleEndian.PutUint32(h[1:], uint32(dict))
		binary.LittleEndian.PutUint64(h[5:], unpacked)
		lr, err := lzma.NewReader(io.MultiReader(bytes.NewReader(h), packed))
		if err != nil {
			return nil, err
		}
		return lr, nil
	case bytes.Equal(c.id, coderLZMA2):
		lr, err := lzma.Reader2Config{DictCap: int(dict)}.NewReader2(packed)
		if err != nil {
			return nil, err
		}
		return io.LimitReader(lr, int64(unpacked)), nil
	}
	return nil, errors.New("7z: an encoded header packed by an unsupported coder")
}
