// image.decodes-fully on JPEG: Go's image/jpeg decodes it, once its frame header shows that the
// buffers the decoder will allocate fit under a cap.

package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"image/jpeg"
	"io"
)

// jpegMemoryMax caps what Go's JPEG decoder may allocate for one image: its planes, a
// progressive image's coefficients, and a CMYK or RGB image's conversion.
const jpegMemoryMax = 150 << 20

// jpegFrame is what the first SOF0, SOF1 or SOF2 header says: the size, the progressive mode,
// and each component's sampling factors.
type jpegFrame struct {
	width, height int
	progressive   bool
	h, v          []int
	rgb           bool // three components that Go's decoder converts to RGBA (not YCbCr)
}

// jpegFindFrame walks the marker segments as Go's decoder does (junk before a marker skipped,
// fill bytes, standalone RSTn) and returns the first SOF0/SOF1/SOF2 header, or ok false when
// the walk meets anything else first: the end of the file, EOI, SOS, or another SOF. Go's
// decoder allocates nothing for an image before its SOF, so a walk that finds none is left to
// it.
func jpegFindFrame(r io.Reader) (f jpegFrame, ok bool) {
	in := bufio.NewReader(r)
	var two [2]byte
	jfif, adobeRGB := false, false
	if _, err := io.ReadFull(in, two[:]); err != nil {
		return f, false
	}
	for {
		if _, err := io.ReadFull(in, two[:]); err != nil {
			return f, false
		}
		for two[0] != 0xFF {
			b, err := in.ReadByte()
			if err != nil {
				return f, false
			}
			two[0], two[1] = two[1], b
		}
		m := two[1]
		if m == 0 {
			continue
		}
		for m == 0xFF {
			b, err := in.ReadByte()
			if err != nil {
				return f, false
			}
			m = b
		}
		if m >= 0xD0 && m <= 0xD7 {
			continue
		}
		if m == 0xD9 || m == 0xDA {
			return f, false
		}
		if _, err := io.ReadFull(in, two[:]); err != nil {
			return f, false
		}
		n := int(binary.BigEndian.Uint16(two[:])) - 2
		if n < 0 {
			return f, false
		}
		if m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC {
			if m > 0xC2 || n < 6 {
				return f, false
			}
			b := make([]byte, n)
			if _, err := io.ReadFull(in, b); err != nil {
				return f, false
			}
			f = jpegFrame{height: int(binary.BigEndian.Uint16(b[1:])), width: int(binary.BigEndian.Uint16(b[3:])),
				progressive: m == 0xC2}
			var ids []byte
			for i := 0; i < int(b[5]) && 6+3*i+2 < n; i++ {
				s := b[6+3*i+1]
				ids = append(ids, b[6+3*i])
				f.h = append(f.h, max1(int(s>>4)))
				f.v = append(f.v, max1(int(s&15)))
			}
			// As Go's isRGB: never with a JFIF marker; with Adobe's transform 0, or
			// components named R, G, B.
			f.rgb = len(ids) == 3 && !jfif && (adobeRGB || string(ids) == "RGB")
			return f, len(f.h) > 0
		}
		if m == 0xE0 || m == 0xEE {
			b := make([]byte, n)
			if _, err := io.ReadFull(in, b); err != nil {
				return f, false
			}
			if m == 0xE0 && n >= 5 && string(b[:5]) == "JFIF\x00" {
				jfif = true
			}
			if m == 0xEE && n >= 12 && string(b[:5]) == "Adobe" {
				adobeRGB = b[11] == 0
			}
			continue
		}
		if _, err := in.Discard(n); err != nil {
			return f, false
		}
	}
}

// max1 is n, or 1 when n is smaller.
func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

// memory estimates, from above, what Go's decoder allocates for f: every component's plane in
// whole MCUs, 64 four-byte coefficients per block of a progressive image, and four bytes per
// pixel for the conversion of an RGB or a CMYK image.
func (f jpegFrame) memory() uint64 {
	mxx := uint64((f.width + 8*f.h[0] - 1) / (8 * f.h[0]))
	myy := uint64((f.height + 8*f.v[0] - 1) / (8 * f.v[0]))
	var total uint64
	for i := range f.h {
		blocks := mxx * myy * uint64(f.h[i]) * uint64(f.v[i])
		total += blocks * 64
		if f.progressive {
			total += blocks * 64 * 4
		}
	}
	if f.rgb || len(f.h) == 4 {
		total += 4 * uint64(f.width) * uint64(f.height)
	}
	return total
}

// jpegDecodes decodes the JPEG of size bytes at r with image/jpeg, which reads it through its
// EOI marker, after checking its frame against jpegMemoryMax. It answers false for a format
// error or the file's end before EOI, and returns an error for an image past the cap, for a
// feature the decoder does not support (jpeg.UnsupportedError: arithmetic coding, lossless,
// 12-bit...), and for an error reading the input.
func jpegDecodes(r io.ReaderAt, size int64) (bool, error) {
	if f, ok := jpegFindFrame(source{io.NewSectionReader(r, 0, size)}); ok && f.memory() > jpegMemoryMax {
		return false, errTooBig
	}
	_, err := jpeg.Decode(source{io.NewSectionReader(r, 0, size)})
	var unsupported jpeg.UnsupportedError
	var re readError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &unsupported), errors.As(err, &re):
		return false, err
	}
	return false, nil
}
