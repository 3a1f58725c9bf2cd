// image.decodes-fully on GIF: its blocks are walked first, as Go's image/gif reads them, so that
// the decoder runs only on frames whose pixels fit under a cap.

package main

import (
	"bufio"
	"errors"
	"image/gif"
	"io"
)

// Caps on a GIF's frames: Go's decoder holds a frame's pixels (a byte each) and the first
// frame's; every pixel costs LZW decoding time.
const (
	gifFrameMax = 32 << 20
	gifTotalMax = 512 << 20
)

// errBadGIF says that the walk met what Go's decoder refuses too: every use answers 0.
var errBadGIF = errors.New("the GIF does not decode")

// gifWalk reads the GIF's blocks the way Go's decoder does (header and screen, colour tables,
// the extensions it knows with their fixed parts, image descriptors inside the screen with a
// colour table and an LZW code size of 2..8, data sub-blocks, the trailer after at least one
// image) without decoding pixel data, and returns errBadGIF for any of those the decoder would
// refuse, or errTooBig for a frame or a total number of pixels past the caps.
func gifWalk(r io.Reader) error {
	in := bufio.NewReader(r)
	buf := make([]byte, 3*256)
	full := func(n int) error {
		if _, err := io.ReadFull(in, buf[:n]); err != nil {
			return notGIF(err)
		}
		return nil
	}
	table := func(fields byte) error { return full(3 * (1 << (1 + uint(fields&7)))) }
	subBlocks := func() error {
		for {
			n, err := in.ReadByte()
			if err != nil {
				return notGIF(err)
			}
			if n == 0 {
				return nil
			}
			if err := full(int(n)); err != nil {
				return err
			}
		}
	}
	if err := full(13); err != nil {
		return err
	}
	width, height := int(buf[6])|int(buf[7])<<8, int(buf[8])|int(buf[9])<<8
	global := buf[10]&0x80 != 0
	if global {
		if err := table(buf[10]); err != nil {
			return err
		}
	}
	images := 0
	var total uint64
	for {
		c, err := in.ReadByte()
		if err != nil {
			return notGIF(err)
		}
		switch c {
		case 0x21:
			label, err := in.ReadByte()
			if err != nil {
				return notGIF(err)
			}
			switch label {
			case 0x01: // plain text: 13 bytes, then sub-blocks
				if err := full(13); err != nil {
					return err
				}
			case 0xF9: // graphic control: size 4, 4 bytes, terminator
				if err := full(6); err != nil {
					return err
				}
				if buf[0] != 4 || buf[5] != 0 {
					return errBadGIF
				}
				continue
			case 0xFE: // comment: sub-blocks
			case 0xFF: // application: a block of its own size, then sub-blocks
				n, err := in.ReadByte()
				if err != nil {
					return notGIF(err)
				}
				if err := full(int(n)); err != nil {
					return err
				}
			default:
				return errBadGIF
			}
			if err := subBlocks(); err != nil {
				return err
			}
		case 0x2C:
			if err := full(9); err != nil {
				return err
			}
			left, top := int(buf[0])|int(buf[1])<<8, int(buf[2])|int(buf[3])<<8
			w, h := int(buf[4])|int(buf[5])<<8, int(buf[6])|int(buf[7])<<8
			fields := buf[8]
			if left+w > width || top+h > height {
				return errBadGIF
			}
			if fields&0x80 != 0 {
				if err := table(fields); err != nil {
					return err
				}
			} else if !global {
				return errBadGIF
			}
			lit, err := in.ReadByte()
			if err != nil {
				return notGIF(err)
			}
			if lit < 2 || lit > 8 {
				return errBadGIF
			}
			area := uint64(w) * uint64(h)
			total += area
			if area > gifFrameMax || total > gifTotalMax {
				return errTooBig
			}
			if err := subBlocks(); err != nil {
				return err
			}
			images++
		case 0x3B:
			if images == 0 {
				return errBadGIF
			}
			return nil
		default:
			return errBadGIF
		}
	}
}

// notGIF turns the end of the file into errBadGIF and keeps a readError as it is.
func notGIF(err error) error {
	var re readError
	if errors.As(err, &re) {
		return err
	}
	return errBadGIF
}

// gifDecodes walks the GIF of size bytes at r and, when the walk passes, decodes every frame
// with image/gif's Decode (which checks each frame's LZW data, its amount and its colour
// indexes, and keeps only the first frame's pixels). It
// answers false when either refuses the file, and returns errTooBig past the caps and a
// readError for an error of the input.
func gifDecodes(r io.ReaderAt, size int64) (bool, error) {
	if err := gifWalk(source{io.NewSectionReader(r, 0, size)}); err == errBadGIF {
		return false, nil
	} else if err != nil {
		return false, err
	}
	_, err := gif.Decode(source{io.NewSectionReader(r, 0, size)})
	var re readError
	if errors.As(err, &re) {
		return false, err
	}
	return err == nil, nil
}
