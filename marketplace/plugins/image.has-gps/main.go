// Official plugin image.has-gps (protocol 1): does the image's metadata record a GPS position,
// in EXIF or in an XMP packet?
//
// It walks the container's structure without decoding pixels: a JPEG's segments up to the first
// scan, a PNG's chunks up to IEND, a TIFF's IFD chain, a WebP's RIFF chunks. EXIF is read where
// each format keeps it (JPEG APP1 "Exif"; PNG eXIf, ImageMagick's "Raw profile type exif" text
// chunk, or its exif: text properties; the TIFF file itself; the WebP EXIF chunk), XMP likewise
// (JPEG APP1, extended XMP included; PNG iTXt "XML:com.adobe.xmp" or a raw profile; TIFF tag
// 700; the WebP "XMP " chunk). A position is a latitude and a longitude both there: in EXIF's
// GPS IFD, tags GPSLatitude and GPSLongitude each with rationals whose denominators are not
// zero; in XMP, the properties exif:GPSLatitude and exif:GPSLongitude with a value; in a PNG's
// text chunks, ImageMagick's properties of the same names. A file that is none of these
// formats, or whose structure or metadata cannot be read whole, fails the run: it has no
// answer.
package main

import (
	"bytes"
	"errors"
	"io"
	"os"

	"lockd/sdk"
)

var errFormat = errors.New("not a JPEG, PNG, TIFF or WebP image")

// position records what a file's metadata has shown so far: a position, the halves of one seen
// in a PNG's text properties, the bytes its compressed text chunks expanded to, and the buffer
// they expand into.
type position struct {
	found             bool
	textLat, textLong bool
	inflated          int64
	scratch           []byte
}

// gps reads the image of size bytes at r and says whether its metadata records a GPS position.
// It returns an error for a file that is not JPEG, PNG, TIFF or WebP, and for one whose
// structure or metadata cannot be read whole.
func gps(r io.ReaderAt, size int64) (bool, error) {
	head := make([]byte, 12)
	n, _ := r.ReadAt(head, 0)
	head = head[:n]
	var p position
	var err error
	switch {
	case bytes.HasPrefix(head, []byte{0xFF, 0xD8, 0xFF}):
		err = p.jpeg(r, size)
	case bytes.HasPrefix(head, pngSignature):
		err = p.png(r, size)
	case bytes.HasPrefix(head, []byte("II*\x00")) || bytes.HasPrefix(head, []byte("MM\x00*")):
		err = p.tiff(r, size, true)
	case len(head) == 12 && bytes.HasPrefix(head, []byte("RIFF")) && string(head[8:]) == "WEBP":
		err = p.webp(r, size)
	default:
		err = errFormat
	}
	if err != nil {
		return false, err
	}
	return p.found, nil
}

func main() {
	sdk.Run(func(in *os.File) (bool, error) {
		st, err := in.Stat()
		if err != nil {
			return false, err
		}
		return gps(in, st.Size())
	})
}
