// Package decompress reads the compressed streams a tar archive comes in (gzip, xz, zstd,
// bzip2), told by their magic numbers, with bounded memory: zstd by the zstd package, xz by
// Debian's Go package; and tells a tar header.
package decompress

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"io"
	"strconv"

	"github.com/ulikunitz/xz"
	"lockd/marketplace/zstd"
)

// MaxWindow bounds the dictionary (xz) or window (zstd) a stream may ask for: what the
// compressors' strongest presets use (xz -9: 64 MiB; zstd up to --ultra -21 and --long=26; -22
// and --long=27 ask for 128 MiB and are refused). A stream asking for more fails: its decoder
// would need that much memory.
const MaxWindow = 64 << 20

// Compression names a compressed stream's format.
type Compression string

const (
	None  Compression = ""
	Gzip  Compression = "gzip"
	Xz    Compression = "xz"
	Zstd  Compression = "zstd"
	Bzip2 Compression = "bzip2"
)

// HeadSize is how many of a file's first bytes the plugins read to tell its format: enough for an
// xz stream's first block header with its filters.
const HeadSize = 2048

// Of tells the format of a stream from its first bytes, or None.
func Of(head []byte) Compression {
	switch {
	case bytes.HasPrefix(head, []byte{0x1F, 0x8B}):
		return Gzip
	case bytes.HasPrefix(head, []byte{0xFD, '7', 'z', 'X', 'Z', 0x00}):
		return Xz
	case bytes.HasPrefix(head, []byte{0x28, 0xB5, 0x2F, 0xFD}):
		return Zstd
	case len(head) >= 4 && bytes.HasPrefix(head, []byte("BZh")) && head[3] >= '1' && head[3] <= '9':
		return Bzip2
	}
	return None
}

// NewReader returns a reader of the decompressed stream r (whose first bytes are head), in the
// format c: every gzip member, xz stream and zstd frame in turn, as gunzip, xz -d and zstd -d
// write them. An xz stream whose first block asks for a dictionary over MaxWindow, or a zstd
// frame whose window is over it, fails; a later xz block that asks for more fails with the
// runtime's out of memory under the plugin's limit.
func NewReader(c Compression, head []byte, r io.Reader) (io.Reader, error) {
	switch c {
	case Gzip:
		return newGzipMembers(r)
	case Xz:
		if _, err := XzFirstDict(head); err != nil {
			return nil, err
		}
		return NewXzReader(r)
	case Zstd:
		return zstd.NewReader(r, MaxWindow), nil
	case Bzip2:
		return bzip2.NewReader(r), nil
	}
	return nil, errors.New("not a compressed stream")
}

// ErrXzPanic is an xz stream whose index made the xz package panic (a record count out of
// range): a malformed stream.
var ErrXzPanic = errors.New("xz: malformed stream")

// xzReader reads an xz stream, a panic of the xz package on a malformed one turned into
// ErrXzPanic.
type xzReader struct {
	r io.Reader
}

// NewXzReader returns a reader of the xz stream r.
func NewXzReader(r io.Reader) (x *xzReader, err error) {
	defer func() {
		if recover() != nil {
			x, err = nil, ErrXzPanic
		}
	}()
	xr, err := xz.ReaderConfig{DictCap: XzMinDict}.NewReader(r)
	if err != nil {
		return nil, err
	}
	return &xzReader{r: xr}, nil
}

// Read reads decompressed bytes.
func (x *xzReader) Read(p []byte) (n int, err error) {
	defer func() {
		if recover() != nil {
			n, err = 0, ErrXzPanic
		}
	}()
	return x.r.Read(p)
}

// XzMinDict is the dictionary an xz decoder is given at least: the decoder takes the larger of
// it and the stream's own (the package's default, 8 MiB, would make every small stream cost
// that much).
const XzMinDict = 4096

// XzFirstDict checks the dictionary the first block of an xz stream asks for (the xz file
// format, 3.1 and 5.3.1): its LZMA2 filter's dictionary size must be at most MaxWindow. It
// returns that size (0 when it cannot tell: a block header that does not fit in head, the
// stream's first bytes, is left to the decoder).
func XzFirstDict(head []byte) (uint64, error) {
	if len(head) < 13 {
		return 0, nil // too short to tell
	}
	if head[12] == 0 {
		// An empty stream: its index comes first and must list no block (the xz package
		// would allocate for as many records as it says, before reading them).
		if len(head) < 14 || head[13] != 0 {
			return 0, errors.New("xz: an empty stream whose index lists blocks")
		}
		return 0, nil
	}
	size := (int(head[12]) + 1) * 4
	if len(head) < 12+size {
		return 0, nil
	}
	h := head[12 : 12+size]
	filters := int(h[1]&3) + 1
	p := 2
	varint := func() (uint64, bool) {
		var v uint64
		for i := 0; i < 9 && p < len(h); i++ {
			b := h[p]
			p++
			v |= uint64(b&0x7F) << (7 * uint(i))
			if b&0x80 == 0 {
				return v, true
			}
		}
		return 0, false
	}
	if h[1]&0x40 != 0 {
		if _, ok := varint(); !ok {
			return 0, errors.New("xz: malformed block header")
		}
	}
	if h[1]&0x80 != 0 {
		if _, ok := varint(); !ok {
			return 0, errors.New("xz: malformed block header")
		}
	}
	var dict uint64
	for i := 0; i < filters; i++ {
		id, ok1 := varint()
		n, ok2 := varint()
		if !ok1 || !ok2 || uint64(len(h)-p) < n {
			return 0, errors.New("xz: malformed block header")
		}
		if id == 0x21 && n == 1 {
			bits := h[p] & 0x3F
			if bits > 40 {
				return 0, errors.New("xz: malformed LZMA2 dictionary size")
			}
			dict = uint64(2|bits&1) << (bits/2 + 11)
			if bits == 40 {
				dict = 0xFFFFFFFF
			}
			if dict > MaxWindow {
				return 0, errors.New("xz: the dictionary is over what this plugin decodes")
			}
		}
		p += int(n)
	}
	return dict, nil
}

// gzipMembers reads every member of a gzip file in turn, as gunzip does: bytes after the last
// member that do not start another one (zeros a tape blocking added, say) end the file instead
// of failing it.
type gzipMembers struct {
	br   *bufio.Reader
	z    *gzip.Reader
	done bool // the last member ended
}

// newGzipMembers returns a reader of the gzip file r's members.
func newGzipMembers(r io.Reader) (*gzipMembers, error) {
	br := bufio.NewReader(r)
	z, err := gzip.NewReader(br)
	if err != nil {
		return nil, err
	}
	z.Multistream(false)
	return &gzipMembers{br: br, z: z}, nil
}

// Read reads the current member's data, going on to the next member at its end.
func (g *gzipMembers) Read(p []byte) (int, error) {
	for {
		if g.done {
			return 0, io.EOF
		}
		n, err := g.z.Read(p)
		if err != io.EOF {
			return n, err
		}
		if err := g.z.Reset(g.br); err != nil {
			if err == io.EOF || err == gzip.ErrHeader {
				g.done = true
				return n, io.EOF
			}
			return n, err
		}
		g.z.Multistream(false)
		if n > 0 {
			return n, nil
		}
	}
}

// IsTarHeader tells whether block, 512 bytes, is a tar header: its checksum (the sum of its bytes
// with the checksum field taken as spaces, unsigned or signed as old tars made it) matches the
// octal number in that field; or it is the zero block that ends an archive (an empty one).
func IsTarHeader(block []byte) bool {
	if len(block) < 512 {
		return false
	}
	zero := true
	var sum, ssum int64
	for i, c := range block[:512] {
		if c != 0 {
			zero = false
		}
		if i >= 148 && i < 156 {
			c = ' '
		}
		sum += int64(c)
		ssum += int64(int8(c))
	}
	if zero {
		return true
	}
	field := bytes.Trim(block[148:156], " \x00")
	v, err := strconv.ParseInt(string(field), 8, 64)
	return err == nil && len(field) > 0 && (v == sum || v == ssum)
}
