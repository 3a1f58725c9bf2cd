// image.decodes-fully on PNG (ISO/IEC 15948): a streaming check of everything a decoder reads,
// in constant memory.

package main

import (
	"bufio"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"hash"
	"hash/crc32"
	"io"
)

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// inflateMax caps the pixel data a PNG may inflate to: past it the image has no answer (the
// check would take longer than the manifest's CPU limit), however its header's size claims it.
const inflateMax = 1 << 30

// errBadPNG is how the checker says "does not decode": every use answers 0.
var errBadPNG = errors.New("the PNG does not decode")

// pngReader reads a PNG's chunks in order and the data of consecutive IDAT chunks as one stream
// (Read, ReadByte: a flate.Reader, so that zlib never reads past the stream's end), checking
// every chunk's CRC-32 as its data ends.
type pngReader struct {
	in      *bufio.Reader
	crc     hash.Hash32
	left    uint32 // data bytes left in the current chunk
	typ     string // the current chunk's type
	pending bool   // a chunk header was read past the IDAT run: typ and left are its own
}

// header reads the next chunk's length and type. EOF here means the file ends before IEND.
func (p *pngReader) header() error {
	var h [8]byte
	if _, err := io.ReadFull(p.in, h[:]); err != nil {
		return notDecoding(err)
	}
	n := binary.BigEndian.Uint32(h[:4])
	if n > 1<<31-1 {
		return errBadPNG
	}
	for _, c := range h[4:] {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return errBadPNG
		}
	}
	p.left, p.typ = n, string(h[4:])
	p.crc.Reset()
	p.crc.Write(h[4:])
	return nil
}

// end reads the current chunk's CRC once its data is read and compares it.
func (p *pngReader) end() error {
	var c [4]byte
	if _, err := io.ReadFull(p.in, c[:]); err != nil {
		return notDecoding(err)
	}
	if binary.BigEndian.Uint32(c[:]) != p.crc.Sum32() {
		return errBadPNG
	}
	return nil
}

// data reads the current chunk's data whole (a chunk other than IDAT, at most 2^31-1 bytes,
// read in pieces) and checks its CRC; keep, when not nil, receives its first len(keep) bytes.
func (p *pngReader) data(keep []byte) error {
	buf := make([]byte, 32*1024)
	first := true
	for p.left > 0 {
		b := buf
		if uint32(len(b)) > p.left {
			b = b[:p.left]
		}
		if _, err := io.ReadFull(p.in, b); err != nil {
			return notDecoding(err)
		}
		if first && keep != nil {
			copy(keep, b)
		}
		first = false
		p.crc.Write(b)
		p.left -= uint32(len(b))
	}
	return p.end()
}

// Read reads IDAT data, moving across consecutive IDAT chunks. At a chunk that is not IDAT it
// returns io.EOF and leaves that chunk's header pending.
func (p *pngReader) Read(b []byte) (int, error) {
	for p.left == 0 {
		if p.pending {
			return 0, io.EOF
		}
		if err := p.end(); err != nil {
			return 0, err
		}
		if err := p.header(); err != nil {
			return 0, err
		}
		if p.typ != "IDAT" {
			p.pending = true
			return 0, io.EOF
		}
	}
	if uint32(len(b)) > p.left {
		b = b[:p.left]
	}
	n, err := p.in.Read(b)
	p.crc.Write(b[:n])
	p.left -= uint32(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// ReadByte is Read for one byte.
func (p *pngReader) ReadByte() (byte, error) {
	var b [1]byte
	for {
		n, err := p.Read(b[:])
		if n == 1 {
			return b[0], nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// notDecoding turns an error met while decoding into errBadPNG (truncation, a zlib error or a
// wrong Adler-32 answers 0), and keeps a readError (the input's own) and errTooBig as they are.
func notDecoding(err error) error {
	var re readError
	if errors.As(err, &re) || err == errTooBig {
		return err
	}
	return errBadPNG
}

// pngHeader is what IHDR says.
type pngHeader struct {
	width, height    uint32
	depth, colorType byte
	interlaced       bool
}

// parseIHDR checks IHDR's 13 bytes (sizes 1..2^31-1, a depth allowed for the colour type,
// compression and filter method 0, interlace 0 or 1).
func parseIHDR(b []byte) (pngHeader, bool) {
	h := pngHeader{width: binary.BigEndian.Uint32(b), height: binary.BigEndian.Uint32(b[4:]),
		depth: b[8], colorType: b[9], interlaced: b[12] == 1}
	depths := map[byte][]byte{0: {1, 2, 4, 8, 16}, 2: {8, 16}, 3: {1, 2, 4, 8}, 4: {8, 16}, 6: {8, 16}}
	ok := false
	for _, d := range depths[h.colorType] {
		ok = ok || d == h.depth
	}
	return h, ok && h.width >= 1 && h.height >= 1 && h.width <= 1<<31-1 && h.height <= 1<<31-1 &&
		b[10] == 0 && b[11] == 0 && b[12] <= 1
}

// rows returns, for each pass (one, or Adam7's seven), the number of rows and the bytes of each
// row after its filter byte; passes without pixels are left out.
func (h pngHeader) rows() [][2]uint64 {
	channels := map[byte]uint64{0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[h.colorType]
	bits := channels * uint64(h.depth)
	passes := [][4]uint64{{0, 0, 1, 1}}
	if h.interlaced {
		passes = [][4]uint64{{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}}
	}
	var out [][2]uint64
	for _, p := range passes {
		w := (uint64(h.width) + p[2] - 1 - p[0]) / p[2]
		n := (uint64(h.height) + p[3] - 1 - p[1]) / p[3]
		if uint64(h.width) <= p[0] || uint64(h.height) <= p[1] || w == 0 || n == 0 {
			continue
		}
		out = append(out, [2]uint64{n, (w*bits + 7) / 8})
	}
	return out
}

// pixels inflates the zlib stream z and checks that it holds exactly the rows h asks for, each
// starting with a filter type 0..4, and ends there with its Adler-32 right. Past inflateMax
// bytes it gives up with errTooBig.
func pixels(z io.Reader, h pngHeader) error {
	buf := make([]byte, 64*1024)
	var total uint64
	for _, pass := range h.rows() {
		for row := uint64(0); row < pass[0]; row++ {
			var f [1]byte
			if _, err := io.ReadFull(z, f[:]); err != nil {
				return notDecoding(err)
			}
			if f[0] > 4 {
				return errBadPNG
			}
			for left := pass[1]; left > 0; {
				b := buf
				if uint64(len(b)) > left {
					b = b[:left]
				}
				n, err := io.ReadFull(z, b)
				left -= uint64(n)
				total += uint64(n)
				if err != nil {
					return notDecoding(err)
				}
				if total > inflateMax {
					return errTooBig
				}
			}
			total++
		}
	}
	// The stream must end here: one more byte is too much pixel data, and the end of the
	// stream is where zlib checks its Adler-32.
	var one [1]byte
	if n, err := z.Read(one[:]); n != 0 || err != io.EOF {
		if err != nil && err != io.EOF {
			return notDecoding(err)
		}
		return errBadPNG
	}
	return nil
}

// pngDecodes checks the PNG read from in (after which nothing is read): the signature, IHDR
// first, PLTE at most once before the image data and only where the colour type allows it
// (required for palette images), one run of IDAT chunks whose zlib stream inflates to exactly
// the image's rows and ends with the run, no unknown critical chunk, every CRC-32 right, and
// IEND, empty. It answers false for any failure of those, and returns errTooBig past
// inflateMax and a readError for an error of the input.
func pngDecodes(in io.Reader) (bool, error) {
	p := &pngReader{in: bufio.NewReaderSize(in, 64*1024), crc: crc32.NewIEEE()}
	var sig [8]byte
	if _, err := io.ReadFull(p.in, sig[:]); err != nil {
		return false, nil
	}
	err := p.chunks()
	if err == errBadPNG {
		return false, nil
	}
	return err == nil, err
}

// chunks is pngDecodes' walk over the chunks after the signature.
func (p *pngReader) chunks() error {
	var h pngHeader
	seenIHDR, seenPLTE, seenIDAT := false, false, false
	for {
		if p.pending {
			p.pending = false
		} else if err := p.header(); err != nil {
			return err
		}
		if !seenIHDR && p.typ != "IHDR" {
			return errBadPNG
		}
		switch p.typ {
		case "IHDR":
			if seenIHDR || p.left != 13 {
				return errBadPNG
			}
			b := make([]byte, 13)
			if err := p.data(b); err != nil {
				return err
			}
			var ok bool
			if h, ok = parseIHDR(b); !ok {
				return errBadPNG
			}
			seenIHDR = true
		case "PLTE":
			if seenPLTE || seenIDAT || p.left%3 != 0 || p.left == 0 || p.left > 3*256 ||
				h.colorType == 0 || h.colorType == 4 {
				return errBadPNG
			}
			seenPLTE = true
			if err := p.data(nil); err != nil {
				return err
			}
		case "IDAT":
			if seenIDAT || h.colorType == 3 && !seenPLTE {
				return errBadPNG
			}
			seenIDAT = true
			z, err := zlib.NewReader(p)
			if err != nil {
				return notDecoding(err)
			}
			if err := pixels(z, h); err != nil {
				return err
			}
			// The zlib stream ended; the IDAT run must end with it.
			var one [1]byte
			if n, err := p.Read(one[:]); n != 0 || err != io.EOF {
				if err != nil && err != io.EOF {
					return err
				}
				return errBadPNG
			}
		case "IEND":
			if !seenIDAT || p.left != 0 {
				return errBadPNG
			}
			return p.end()
		default:
			// An unknown critical chunk (its first letter upper case) cannot be decoded past.
			if p.typ[0] >= 'A' && p.typ[0] <= 'Z' {
				return errBadPNG
			}
			if err := p.data(nil); err != nil {
				return err
			}
		}
	}
}
