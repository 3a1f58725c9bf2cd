// Official plugin image.decodes-fully (protocol 1): does the JPEG, PNG or GIF image decode to its
// end without error?
//
// Each format is decoded without ever holding more than a bounded amount of memory, whatever
// size the image claims: a PNG is checked as a stream (png.go: every chunk's CRC-32, the zlib
// stream inflated to its end with its Adler-32, exactly the bytes the header's size asks for,
// valid filter types, the chunks' order), never holding its pixels; a GIF's block structure is
// walked first, so that Go's image/gif decodes only frames whose size is under a cap (gif.go); a
// JPEG's frame header is read first, so that Go's image/jpeg runs only when the memory its
// decoding needs is under a cap (jpeg.go). An image past a cap, or a JPEG feature Go's decoder
// does not support (arithmetic coding, 12-bit or lossless), has no answer here and fails the
// run, as does a file that is not JPEG, PNG or GIF. Truncation, a wrong checksum and damaged
// coded data answer 0.
package main

import (
	"bytes"
	"errors"
	"io"
	"os"

	"lockd/sdk"
)

// errFormat is the error for a file that is not JPEG, PNG or GIF.
var errFormat = errors.New("not a JPEG, PNG or GIF image")

// errTooBig is the error for an image whose decoding would pass one of the plugin's caps.
var errTooBig = errors.New("the image is too large to decode within the plugin's limits")

// readError marks an error of the input itself (not of the image's data): it fails the run.
type readError struct{ err error }

// Error says that reading the input failed, and why.
func (e readError) Error() string { return "reading the input: " + e.err.Error() }

// source reads the input, turning any error but io.EOF into a readError, so that a decoder's
// error can be told from the file's.
type source struct{ r io.Reader }

// Read reads from the input, wrapping its errors but io.EOF.
func (s source) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		err = readError{err}
	}
	return n, err
}

// decodes reads the image from r (size bytes) and says whether it decodes to its end. It returns
// an error for a file that is not JPEG, PNG or GIF, for an image past the plugin's caps, for a
// JPEG that uses a feature Go's decoder does not support, and for an error reading the input.
func decodes(r io.ReaderAt, size int64) (bool, error) {
	head := make([]byte, 8)
	n, _ := r.ReadAt(head, 0)
	head = head[:n]
	in := source{io.NewSectionReader(r, 0, size)}
	var ok bool
	var err error
	switch {
	case bytes.HasPrefix(head, []byte{0xFF, 0xD8}):
		ok, err = jpegDecodes(r, size)
	case bytes.Equal(head, pngSignature):
		ok, err = pngDecodes(in)
	case bytes.HasPrefix(head, []byte("GIF87a")) || bytes.HasPrefix(head, []byte("GIF89a")):
		ok, err = gifDecodes(r, size)
	default:
		return false, errFormat
	}
	var re readError
	if errors.As(err, &re) {
		return false, re
	}
	return ok, err
}

func main() {
	sdk.Run(func(in *os.File) (bool, error) {
		st, err := in.Stat()
		if err != nil {
			return false, err
		}
		return decodes(in, st.Size())
	})
}
