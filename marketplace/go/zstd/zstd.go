// Package zstd is a Zstandard decoder (RFC 8878) in the standard library alone, for the tar
// archives and ZIP entries the archive plugins read: frames and skippable frames, raw, RLE and
// compressed blocks, Huffman-coded literals and FSE-coded sequences. Dictionaries are refused and
// the content checksum is not verified (the plugins judge structure, not integrity). Its memory is
// the window, refused above the reader's maxWindow.
package zstd

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"math/bits"
)

// ErrCorrupt is a stream that breaks the format.
var ErrCorrupt = errors.New("zstd: corrupt stream")

const (
	zstdMagic     = 0xFD2FB528
	BlockMax      = 128 << 10  // the most a block decompresses to, and so a Read returns
	zstdSkipMagic = 0x184D2A50 // the first of sixteen skippable frame magic numbers
)

// Code tables of RFC 8878, 3.1.1.3.2.1.1: each code's baseline and extra bits.
var (
	llBase = [36]uint32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 20, 22, 24,
		28, 32, 40, 48, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536}
	llBits = [36]uint8{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4,
		6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	mlBase = [53]uint32{3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
		23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 37, 39, 41, 43, 47, 51, 59, 67, 83,
		99, 131, 259, 515, 1027, 2051, 4099, 8195, 16387, 32771, 65539}
	mlBits = [53]uint8{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
)

// The predefined distributions of RFC 8878, 3.1.1.3.2.2.
var (
	llDefault = []int16{4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2,
		3, 2, 1, 1, 1, 1, 1, -1, -1, -1, -1}
	mlDefault = []int16{1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
		1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1}
	ofDefault = []int16{1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
		-1, -1, -1, -1, -1}
)

// fseEntry is one state of an FSE decoding table.
type fseEntry struct {
	sym    uint8
	nbBits uint8
	base   uint16
}

// fseTable is an FSE decoding table of 1<<acc states.
type fseTable []fseEntry

// buildFSE builds the decoding table of a normalized distribution (RFC 8878, 4.1.1): symbols of
// probability "less than 1" take the last states, the others are spread with the format's step.
func buildFSE(norm []int16, acc uint) (fseTable, error) {
	size := 1 << acc
	t := make(fseTable, size)
	next := make([]int, len(norm))
	high := size - 1
	for s, p := range norm {
		if p == -1 {
			if high < 0 {
				return nil, ErrCorrupt
			}
			t[high].sym = uint8(s)
			high--
			next[s] = 1
		} else {
			next[s] = int(p)
		}
	}
	pos, step, mask := 0, (size>>1)+(size>>3)+3, size-1
	for s, p := range norm {
		for i := 0; i < int(p); i++ {
			t[pos].sym = uint8(s)
			for pos = (pos + step) & mask; pos > high; pos = (pos + step) & mask {
			}
		}
	}
	if pos != 0 {
		return nil, ErrCorrupt
	}
	for i := range t {
		n := next[t[i].sym]
		next[t[i].sym]++
		if n <= 0 {
			return nil, ErrCorrupt
		}
		nb := int(acc) - (bits.Len(uint(n)) - 1)
		if nb < 0 {
			return nil, ErrCorrupt
		}
		t[i].nbBits = uint8(nb)
		t[i].base = uint16((n << uint(nb)) - size)
	}
	return t, nil
}

// fwdBits reads a bitstream forwards, little-endian from each byte's low bit (FSE table
// descriptions).
type fwdBits struct {
	b   []byte
	pos int // bits consumed
}

// peek returns the next n bits (n <= 32), zeros past the end.
func (r *fwdBits) peek(n uint) uint32 {
	var v uint64
	byteIdx := r.pos >> 3
	for i := 0; i < 5 && byteIdx+i < len(r.b); i++ {
		v |= uint64(r.b[byteIdx+i]) << (8 * uint(i))
	}
	return uint32(v>>(uint(r.pos)&7)) & (1<<n - 1)
}

// readFSEDescription reads a table description (RFC 8878, 4.1.1) of at most maxSym+1 symbols and
// an accuracy log of at most maxAcc, and returns the table and the bytes it took.
func readFSEDescription(b []byte, maxSym int, maxAcc uint) (fseTable, int, error) {
	r := &fwdBits{b: b}
	acc := uint(r.peek(4)) + 5
	r.pos += 4
	if acc > maxAcc {
		return nil, 0, ErrCorrupt
	}
	remaining := (1 << acc) + 1
	threshold := 1 << acc
	nb := acc + 1
	norm := make([]int16, 0, maxSym+1)
	previous0 := false
	for remaining > 1 && len(norm) <= maxSym {
		if previous0 {
			n := 0
			for {
				if r.pos > len(b)*8 {
					return nil, 0, ErrCorrupt
				}
				v := int(r.peek(2))
				r.pos += 2
				n += v
				if v != 3 {
					break
				}
			}
			if len(norm)+n > maxSym+1 {
				return nil, 0, ErrCorrupt
			}
			for ; n > 0; n-- {
				norm = append(norm, 0)
			}
			previous0 = false
			continue
		}
		max := (2*threshold - 1) - remaining
		var count int
		if v := int(r.peek(nb - 1)); v&(threshold-1) < max {
			count = v & (threshold - 1)
			r.pos += int(nb) - 1
		} else {
			count = int(r.peek(nb)) & (2*threshold - 1)
			if count >= threshold {
				count -= max
			}
			r.pos += int(nb)
		}
		count--
		if count < 0 {
			remaining--
		} else {
			remaining -= count
		}
		if remaining < 1 {
			return nil, 0, ErrCorrupt
		}
		norm = append(norm, int16(count))
		previous0 = count == 0
		for remaining < threshold && nb > 1 {
			nb--
			threshold >>= 1
		}
	}
	used := (r.pos + 7) / 8
	if remaining != 1 || used > len(b) {
		return nil, 0, ErrCorrupt
	}
	t, err := buildFSE(norm, acc)
	return t, used, err
}

// rleTable is the table of RLE mode: one state, always sym.
func rleTable(sym byte) fseTable {
	return fseTable{{sym: sym}}
}

// backBits reads a bitstream backwards (RFC 8878, 4.1): from the highest bit below the end
// mark of its last byte, towards its first byte; bits past the start read as zeros and make
// overflowed true.
type backBits struct {
	b   []byte
	pos int // bits left; negative once read past the start
}

// newBackBits starts a backward bitstream, failing when its last byte holds no end mark.
func newBackBits(b []byte) (*backBits, error) {
	if len(b) == 0 || b[len(b)-1] == 0 {
		return nil, ErrCorrupt
	}
	return &backBits{b: b, pos: (len(b)-1)*8 + bits.Len8(b[len(b)-1]) - 1}, nil
}

// peek returns the next n bits (n <= 56), the first of them the value's highest.
func (r *backBits) peek(n uint) uint64 {
	if n == 0 {
		return 0
	}
	lo := r.pos - int(n)
	start := lo
	if start < 0 {
		start = 0
	}
	var v uint64
	first := start >> 3
	last := (r.pos - 1) >> 3
	for i := last; i >= first && i >= 0; i-- {
		v = v<<8 | uint64(r.b[i])
	}
	v >>= uint(start) & 7
	if lo < 0 {
		v <<= uint(-lo)
	}
	return v & (1<<n - 1)
}

// read consumes and returns n bits.
func (r *backBits) read(n uint) uint64 {
	v := r.peek(n)
	r.pos -= int(n)
	return v
}

func (r *backBits) overflowed() bool { return r.pos < 0 }

// hufTable decodes a Huffman stream: entries indexed by maxBits bits.
type hufTable struct {
	maxBits uint
	sym     []uint8
	nbBits  []uint8
}

// readHuffman reads a Huffman tree description (RFC 8878, 4.2.1) and returns the table and the
// bytes it took.
func readHuffman(b []byte) (*hufTable, int, error) {
	if len(b) == 0 {
		return nil, 0, ErrCorrupt
	}
	var weights []uint8
	used := 0
	if h := int(b[0]); h >= 128 {
		n := h - 127
		used = 1 + (n+1)/2
		if used > len(b) {
			return nil, 0, ErrCorrupt
		}
		for i := 0; i < n; i++ {
			c := b[1+i/2]
			if i%2 == 0 {
				weights = append(weights, c>>4)
			} else {
				weights = append(weights, c&15)
			}
		}
	} else {
		used = 1 + h
		if used > len(b) || h == 0 {
			return nil, 0, ErrCorrupt
		}
		t, k, err := readFSEDescription(b[1:used], 255, 6)
		if err != nil {
			return nil, 0, err
		}
		r, err := newBackBits(b[1+k : used])
		if err != nil {
			return nil, 0, err
		}
		acc := uint(bits.Len(uint(len(t))) - 1)
		s1, s2 := r.read(acc), r.read(acc)
		for len(weights) < 255 {
			e := t[s1]
			weights = append(weights, e.sym)
			s1 = uint64(e.base) + r.read(uint(e.nbBits))
			if r.overflowed() {
				weights = append(weights, t[s2].sym)
				break
			}
			e = t[s2]
			weights = append(weights, e.sym)
			s2 = uint64(e.base) + r.read(uint(e.nbBits))
			if r.overflowed() {
				weights = append(weights, t[s1].sym)
				break
			}
		}
	}
	if len(weights) == 0 || len(weights) > 255 {
		return nil, 0, ErrCorrupt
	}
	total := 0
	for _, w := range weights {
		if w > 11 {
			return nil, 0, ErrCorrupt
		}
		if w > 0 {
			total += 1 << (w - 1)
		}
	}
	if total == 0 {
		return nil, 0, ErrCorrupt
	}
	maxBits := uint(bits.Len(uint(total)))
	rest := (1 << maxBits) - total
	if maxBits > 11 || rest&(rest-1) != 0 {
		return nil, 0, ErrCorrupt
	}
	weights = append(weights, uint8(bits.Len(uint(rest))))
	h := &hufTable{maxBits: maxBits, sym: make([]uint8, 1<<maxBits), nbBits: make([]uint8, 1<<maxBits)}
	var rank [13]int
	for _, w := range weights {
		rank[w]++
	}
	next := 0
	var start [13]int
	for w := 1; w <= int(maxBits); w++ {
		start[w] = next
		next += rank[w] << (w - 1)
	}
	if next != 1<<maxBits {
		return nil, 0, ErrCorrupt
	}
	for s, w := range weights {
		if w == 0 {
			continue
		}
		n := 1 << (w - 1)
		for i := start[w]; i < start[w]+n; i++ {
			h.sym[i] = uint8(s)
			h.nbBits[i] = uint8(maxBits + 1 - uint(w))
		}
		start[w] += n
	}
	return h, used, nil
}

// decode decodes one Huffman stream of n symbols into out, which must use the stream whole.
func (h *hufTable) decode(out []byte, stream []byte, n int) ([]byte, error) {
	r, err := newBackBits(stream)
	if err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		idx := r.peek(h.maxBits)
		out = append(out, h.sym[idx])
		r.pos -= int(h.nbBits[idx])
		if r.overflowed() {
			return nil, ErrCorrupt
		}
	}
	if r.pos != 0 {
		return nil, ErrCorrupt
	}
	return out, nil
}

// Reader is a Zstandard stream of frames, read as decompressed bytes.
type Reader struct {
	in        *bufio.Reader
	maxWindow int
	hist      []byte // the window: decoded bytes that matches may copy
	out       []byte // decoded bytes not yet read (the tail of hist)
	err       error

	inFrame    bool
	window     int
	checksum   bool
	huf        *hufTable
	ll, of, ml fseTable
	rep        [3]int
	block      []byte
	lits       []byte
}

// NewReader returns a reader of the Zstandard stream r whose windows are at most maxWindow.
func NewReader(r io.Reader, maxWindow int) *Reader {
	return &Reader{in: bufio.NewReaderSize(r, 64<<10), maxWindow: maxWindow}
}

// Reset starts reading the stream r, keeping the buffers (their memory is set up once for many
// streams).
func (z *Reader) Reset(r io.Reader) {
	z.in.Reset(r)
	z.out, z.err, z.inFrame = nil, nil, false
}

// Read returns decompressed bytes.
func (z *Reader) Read(p []byte) (int, error) {
	for len(z.out) == 0 {
		if z.err != nil {
			return 0, z.err
		}
		z.err = z.step()
	}
	n := copy(p, z.out)
	z.out = z.out[n:]
	return n, nil
}

// step reads the next frame header or block.
func (z *Reader) step() error {
	if !z.inFrame {
		return z.frameHeader()
	}
	return z.nextBlock()
}

// frameHeader reads a frame's header, or skips a skippable frame; io.EOF at the stream's clean
// end.
func (z *Reader) frameHeader() error {
	var m [4]byte
	if _, err := io.ReadFull(z.in, m[:]); err != nil {
		if err == io.EOF {
			return io.EOF
		}
		return ErrCorrupt
	}
	magic := binary.LittleEndian.Uint32(m[:])
	if magic&0xFFFFFFF0 == zstdSkipMagic {
		if _, err := io.ReadFull(z.in, m[:]); err != nil {
			return ErrCorrupt
		}
		n := int64(binary.LittleEndian.Uint32(m[:]))
		if k, _ := z.in.Discard(int(n)); int64(k) != n {
			return ErrCorrupt
		}
		return nil
	}
	if magic != zstdMagic {
		return ErrCorrupt
	}
	d, err := z.in.ReadByte()
	if err != nil {
		return ErrCorrupt
	}
	fcsFlag, single, dictFlag := d>>6, d&0x20 != 0, d&3
	if d&0x08 != 0 {
		return ErrCorrupt // the reserved bit
	}
	z.checksum = d&0x04 != 0
	window := uint64(0)
	if !single {
		wd, err := z.in.ReadByte()
		if err != nil {
			return ErrCorrupt
		}
		exp := uint(wd >> 3)
		base := uint64(1) << (10 + exp)
		window = base + base/8*uint64(wd&7)
	}
	if dictFlag != 0 {
		return errors.New("zstd: a frame that needs a dictionary")
	}
	fcsSize := [4]int{0, 2, 4, 8}[fcsFlag]
	if fcsFlag == 0 && single {
		fcsSize = 1
	}
	var f [8]byte
	if _, err := io.ReadFull(z.in, f[:fcsSize]); err != nil {
		return ErrCorrupt
	}
	fcs := binary.LittleEndian.Uint64(f[:])
	if fcsSize == 2 {
		fcs += 256
	}
	if single {
		window = fcs
	}
	if window > uint64(z.maxWindow) {
		return errors.New("zstd: the window is over what this plugin decodes")
	}
	z.window = int(window)
	if z.window < 1 {
		z.window = 1
	}
	z.inFrame = true
	if need := z.window + z.window/4 + 2*BlockMax; cap(z.hist) < need {
		z.hist = make([]byte, 0, need)
	}
	z.hist = z.hist[:0]
	z.huf, z.ll, z.of, z.ml = nil, nil, nil, nil
	z.rep = [3]int{1, 4, 8}
	return nil
}

// nextBlock decodes the frame's next block into the window.
func (z *Reader) nextBlock() error {
	var h [3]byte
	if _, err := io.ReadFull(z.in, h[:]); err != nil {
		return ErrCorrupt
	}
	v := uint32(h[0]) | uint32(h[1])<<8 | uint32(h[2])<<16
	last, kind, size := v&1 != 0, (v>>1)&3, int(v>>3)
	blockMax := BlockMax
	if z.window < blockMax {
		blockMax = z.window
	}
	// Make room for the block, keeping the window before it (what a match may reach): the
	// buffer holds a quarter window more, so that the window moves once per quarter window.
	if len(z.hist)+BlockMax > cap(z.hist) && len(z.hist) > z.window {
		n := copy(z.hist, z.hist[len(z.hist)-z.window:])
		z.hist = z.hist[:n]
	}
	start := len(z.hist)
	switch kind {
	case 0: // raw
		if size > blockMax {
			return ErrCorrupt
		}
		z.hist = append(z.hist, make([]byte, size)...)
		if _, err := io.ReadFull(z.in, z.hist[start:]); err != nil {
			return ErrCorrupt
		}
	case 1: // RLE
		if size > blockMax {
			return ErrCorrupt
		}
		c, err := z.in.ReadByte()
		if err != nil {
			return ErrCorrupt
		}
		for i := 0; i < size; i++ {
			z.hist = append(z.hist, c)
		}
	case 2: // compressed
		if size > blockMax {
			return ErrCorrupt
		}
		if cap(z.block) < size {
			z.block = make([]byte, size)
		}
		b := z.block[:size]
		if _, err := io.ReadFull(z.in, b); err != nil {
			return ErrCorrupt
		}
		if err := z.compressed(b, blockMax); err != nil {
			return err
		}
	default:
		return ErrCorrupt
	}
	z.out = z.hist[start:]
	if last {
		z.inFrame = false
		if z.checksum {
			var c [4]byte
			if _, err := io.ReadFull(z.in, c[:]); err != nil {
				return ErrCorrupt
			}
		}
	}
	return nil
}

// compressed decodes a compressed block (RFC 8878, 3.1.1.3): its literals, then its sequences
// executed against the window.
func (z *Reader) compressed(b []byte, blockMax int) error {
	lits, n, err := z.literals(b)
	if err != nil {
		return err
	}
	if len(lits) > blockMax {
		return ErrCorrupt
	}
	b = b[n:]
	if len(b) == 0 {
		return ErrCorrupt
	}
	nseq := int(b[0])
	switch {
	case nseq == 0:
		b = b[1:]
	case nseq < 128:
		b = b[1:]
	case nseq < 255:
		if len(b) < 2 {
			return ErrCorrupt
		}
		nseq = (nseq-128)<<8 + int(b[1])
		b = b[2:]
	default:
		if len(b) < 3 {
			return ErrCorrupt
		}
		nseq = int(b[1]) + int(b[2])<<8 + 0x7F00
		b = b[3:]
	}
	start := len(z.hist)
	if nseq == 0 {
		z.hist = append(z.hist, lits...)
		return nil
	}
	if len(b) == 0 {
		return ErrCorrupt
	}
	modes := b[0]
	b = b[1:]
	if modes&3 != 0 {
		return ErrCorrupt
	}
	for _, t := range []struct {
		mode   byte
		table  *fseTable
		def    []int16
		defAcc uint
		maxSym int
		maxAcc uint
	}{
		{modes >> 6, &z.ll, llDefault, 6, 35, 9},
		{(modes >> 4) & 3, &z.of, ofDefault, 5, 31, 8},
		{(modes >> 2) & 3, &z.ml, mlDefault, 6, 52, 9},
	} {
		switch t.mode {
		case 0:
			if *t.table, err = buildFSE(t.def, t.defAcc); err != nil {
				return err
			}
		case 1:
			if len(b) == 0 || int(b[0]) > t.maxSym {
				return ErrCorrupt
			}
			*t.table = rleTable(b[0])
			b = b[1:]
		case 2:
			tab, k, err := readFSEDescription(b, t.maxSym, t.maxAcc)
			if err != nil {
				return err
			}
			*t.table = tab
			b = b[k:]
		case 3:
			if *t.table == nil {
				return ErrCorrupt
			}
		}
	}
	r, err := newBackBits(b)
	if err != nil {
		return err
	}
	accOf := func(t fseTable) uint { return uint(bits.Len(uint(len(t))) - 1) }
	llS, ofS, mlS := r.read(accOf(z.ll)), r.read(accOf(z.of)), r.read(accOf(z.ml))
	for i := 0; i < nseq; i++ {
		ofCode, mlCode, llCode := z.of[ofS].sym, z.ml[mlS].sym, z.ll[llS].sym
		if ofCode > 31 || mlCode > 52 || llCode > 35 {
			return ErrCorrupt
		}
		ofValue := int(1)<<ofCode + int(r.read(uint(ofCode)))
		ml := int(mlBase[mlCode]) + int(r.read(uint(mlBits[mlCode])))
		ll := int(llBase[llCode]) + int(r.read(uint(llBits[llCode])))
		if i != nseq-1 {
			e := z.ll[llS]
			llS = uint64(e.base) + r.read(uint(e.nbBits))
			e = z.ml[mlS]
			mlS = uint64(e.base) + r.read(uint(e.nbBits))
			e = z.of[ofS]
			ofS = uint64(e.base) + r.read(uint(e.nbBits))
		}
		if r.overflowed() {
			return ErrCorrupt
		}
		// The offset: a new one, or one of the three repeated (RFC 8878, 3.1.1.5).
		var offset int
		if ofValue > 3 {
			offset = ofValue - 3
			z.rep = [3]int{offset, z.rep[0], z.rep[1]}
		} else {
			idx := ofValue
			if ll == 0 {
				idx++
			}
			switch idx {
			case 1:
				offset = z.rep[0]
			case 2:
				offset = z.rep[1]
				z.rep = [3]int{offset, z.rep[0], z.rep[2]}
			case 3:
				offset = z.rep[2]
				z.rep = [3]int{offset, z.rep[0], z.rep[1]}
			default:
				offset = z.rep[0] - 1
				z.rep = [3]int{offset, z.rep[0], z.rep[1]}
			}
		}
		if ll > len(lits) || len(z.hist)-start+ll+ml > blockMax {
			return ErrCorrupt
		}
		z.hist = append(z.hist, lits[:ll]...)
		lits = lits[ll:]
		if offset <= 0 || offset > len(z.hist) || offset > z.window {
			return ErrCorrupt
		}
		// Copy in chunks that are multiples of the offset: the bytes from `from` on repeat
		// with that period, so each chunk may be as long as all copied so far.
		from := len(z.hist) - offset
		for left := ml; left > 0; {
			n := (len(z.hist) - from) / offset * offset
			if n > left {
				n = left
			}
			z.hist = append(z.hist, z.hist[from:from+n]...)
			left -= n
		}
	}
	if r.pos != 0 {
		return ErrCorrupt
	}
	if len(z.hist)-start+len(lits) > blockMax {
		return ErrCorrupt
	}
	z.hist = append(z.hist, lits...)
	return nil
}

// literals decodes a block's literals section (RFC 8878, 3.1.1.3.1) and returns them and the
// bytes the section took.
func (z *Reader) literals(b []byte) ([]byte, int, error) {
	if len(b) == 0 {
		return nil, 0, ErrCorrupt
	}
	kind, format := b[0]&3, (b[0]>>2)&3
	if kind < 2 {
		var size, hl int
		switch format {
		case 0, 2:
			size, hl = int(b[0]>>3), 1
		case 1:
			if len(b) < 2 {
				return nil, 0, ErrCorrupt
			}
			size, hl = int(b[0]>>4)+int(b[1])<<4, 2
		case 3:
			if len(b) < 3 {
				return nil, 0, ErrCorrupt
			}
			size, hl = int(b[0]>>4)+int(b[1])<<4+int(b[2])<<12, 3
		}
		if size > BlockMax {
			return nil, 0, ErrCorrupt
		}
		z.lits = z.lits[:0]
		if kind == 0 {
			if hl+size > len(b) {
				return nil, 0, ErrCorrupt
			}
			z.lits = append(z.lits, b[hl:hl+size]...)
			return z.lits, hl + size, nil
		}
		if hl+1 > len(b) {
			return nil, 0, ErrCorrupt
		}
		for i := 0; i < size; i++ {
			z.lits = append(z.lits, b[hl])
		}
		return z.lits, hl + 1, nil
	}
	var regen, comp, hl int
	streams := 4
	switch format {
	case 0, 1:
		if len(b) < 3 {
			return nil, 0, ErrCorrupt
		}
		v := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
		regen, comp, hl = (v>>4)&0x3FF, (v>>14)&0x3FF, 3
		if format == 0 {
			streams = 1
		}
	case 2:
		if len(b) < 4 {
			return nil, 0, ErrCorrupt
		}
		v := int(binary.LittleEndian.Uint32(b))
		regen, comp, hl = (v>>4)&0x3FFF, (v>>18)&0x3FFF, 4
	case 3:
		if len(b) < 5 {
			return nil, 0, ErrCorrupt
		}
		v := int(binary.LittleEndian.Uint32(b)) | int(b[4])<<32
		regen, comp, hl = (v>>4)&0x3FFFF, (v>>22)&0x3FFFF, 5
	}
	if regen > BlockMax || hl+comp > len(b) {
		return nil, 0, ErrCorrupt
	}
	data := b[hl : hl+comp]
	if kind == 2 {
		h, k, err := readHuffman(data)
		if err != nil {
			return nil, 0, err
		}
		z.huf = h
		data = data[k:]
	} else if z.huf == nil {
		return nil, 0, ErrCorrupt
	}
	z.lits = z.lits[:0]
	var err error
	if streams == 1 {
		if z.lits, err = z.huf.decode(z.lits, data, regen); err != nil {
			return nil, 0, err
		}
		return z.lits, hl + comp, nil
	}
	if len(data) < 6 {
		return nil, 0, ErrCorrupt
	}
	s1 := int(binary.LittleEndian.Uint16(data))
	s2 := int(binary.LittleEndian.Uint16(data[2:]))
	s3 := int(binary.LittleEndian.Uint16(data[4:]))
	data = data[6:]
	if s1+s2+s3 > len(data) {
		return nil, 0, ErrCorrupt
	}
	seg := (regen + 3) / 4
	if 3*seg > regen {
		return nil, 0, ErrCorrupt
	}
	parts := [4][]byte{data[:s1], data[s1 : s1+s2], data[s1+s2 : s1+s2+s3], data[s1+s2+s3:]}
	for i, part := range parts {
		n := seg
		if i == 3 {
			n = regen - 3*seg
		}
		if z.lits, err = z.huf.decode(z.lits, part, n); err != nil {
			return nil, 0, err
		}
	}
	return z.lits, hl + comp, nil
}
